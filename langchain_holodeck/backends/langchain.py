"""Stores a caller built: langchain-core's ``InMemoryVectorStore`` and any other LangChain store.

A store that cannot filter by namespace is searched through ``NamespaceFilteredStore``, which
over-fetches and drops other namespaces' chunks, so no corpus ever sees another's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore

from langchain_holodeck.backends._registry import register_backend
from langchain_holodeck.backends.base import Backend, BackendCapabilities, LangChainStoreBackend
from langchain_holodeck.vectorstores.matrix import copy_metadata
from langchain_holodeck.vectorstores.namespace import NamespaceFilteredStore

__all__ = ["CoreInMemoryBackend", "LangChainStoreBackend", "NamespaceFilteredStore"]


@register_backend
class CoreInMemoryBackend(Backend):
    """langchain-core's ``InMemoryVectorStore``: filters with a callable, enumerable."""

    capabilities = BackendCapabilities(filters_namespace=True, enumerates=True, persistent=False)

    @classmethod
    def handles(cls, store: VectorStore) -> bool:
        return isinstance(store, InMemoryVectorStore)

    def open_store(
        self,
        embeddings: Embeddings,
        *,
        store_dir: Path | None = None,
        connect_timeout: float = 2.0,
    ) -> VectorStore:
        return InMemoryVectorStore(embeddings)

    def describe(self, *, store_dir: Path | None = None) -> str:
        return "langchain-core InMemoryVectorStore"

    def namespace_filter(self, store: VectorStore, namespace: str) -> dict[str, Any]:
        return {"filter": _in_namespace(namespace)}

    def search_scope(
        self, store: VectorStore, namespace: str
    ) -> tuple[VectorStore, dict[str, Any]]:
        """The store filters natively; the view adds the relevance scores it lacks."""
        kwargs = self.namespace_filter(store, namespace)
        return NamespaceFilteredStore(store, namespace=namespace, search_kwargs=kwargs), {}

    def vector_dimension(self, store: VectorStore) -> int | None:
        """The length of a stored vector (``None`` while the store is empty)."""
        if not isinstance(store, InMemoryVectorStore):
            return None
        record = next(iter(store.store.values()), None)
        return len(record["vector"]) if record is not None else None

    def _reset_dimension(self, store: VectorStore, *, namespace: str, dimension: int) -> None:
        self.delete_namespace(store, namespace)  # no old-width vector may stay next to new ones

    def iter_documents(
        self, store: VectorStore, *, namespace: str | None = None, batch_size: int = 1000
    ) -> Iterator[Document]:
        if not isinstance(store, InMemoryVectorStore):
            return super().iter_documents(store, namespace=namespace)
        records = list(store.store.values())
        return (
            Document(id=r["id"], page_content=r["text"], metadata=copy_metadata(r["metadata"]))
            for r in records
            if namespace is None or r["metadata"].get("namespace") == namespace
        )


def _in_namespace(namespace: str) -> Callable[[Document], bool]:
    return lambda doc: doc.metadata.get("namespace") == namespace
