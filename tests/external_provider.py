"""A database provider defined outside the package: ``provider: shelf``.

Importing this module registers it (``register_backend`` registers its config class too); it
touches no file of ``langchain_holodeck``. ``tests/unit_tests/test_external_provider.py``
imports it in a subprocess, so the registration never leaks into other tests.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore

from langchain_holodeck import Backend, BackendCapabilities, DatabaseConfig, register_backend


class ShelfDatabaseConfig(DatabaseConfig):
    """A test provider: chunks kept on a named in-process shelf."""

    provider: Literal["shelf"]
    """Selects the shelf."""
    label: str = "default"
    """Name of the shelf."""


class ShelfStore(InMemoryVectorStore):
    """langchain-core's in-memory store, with a label."""

    def __init__(self, embedding: Embeddings, *, label: str) -> None:
        super().__init__(embedding)
        self.label = label


@register_backend
class ShelfBackend(Backend):
    """``provider: shelf``: a ``ShelfStore``, filtered by namespace with a callable."""

    provider = "shelf"
    config_type = ShelfDatabaseConfig
    capabilities = BackendCapabilities(filters_namespace=True, enumerates=True, persistent=False)
    config: ShelfDatabaseConfig | None

    @classmethod
    def handles(cls, store: VectorStore) -> bool:
        return isinstance(store, ShelfStore)

    def open_store(
        self, embeddings: Embeddings, *, store_dir: Path | None = None, connect_timeout: float = 2
    ) -> VectorStore:
        label = self.config.label if self.config is not None else "default"
        return ShelfStore(embeddings, label=label)

    def describe(self, *, store_dir: Path | None = None) -> str:
        return f"shelf {self.config.label if self.config else 'default'}"

    def namespace_filter(self, store: VectorStore, namespace: str) -> dict[str, Any]:
        return {"filter": lambda doc: doc.metadata.get("namespace") == namespace}

    def iter_documents(
        self, store: VectorStore, *, namespace: str | None = None, batch_size: int = 1000
    ) -> Iterator[Document]:
        assert isinstance(store, ShelfStore)
        for record in list(store.store.values()):
            if namespace is None or record["metadata"].get("namespace") == namespace:
                yield Document(
                    id=record["id"], page_content=record["text"], metadata=dict(record["metadata"])
                )
