"""Qdrant backend: dense vectors plus BM25 sparse vectors, fused by Qdrant's own RRF.

The registered ``QdrantBackend`` (``database: {provider: qdrant, ...}``; its config class, like
every provider's, is in ``config/_backends.py``). The store itself, ``HolodeckQdrantVectorStore``,
with its sparse BM25 encoder, lives in ``vectorstores/qdrant.py`` and is imported when a Qdrant
store is opened: ``qdrant-client`` takes seconds to import, which no other command should pay.
Its names are still importable from here.

Setup:
    ``pip install "langchain-holodeck[qdrant]"`` (``langchain-qdrant`` and ``qdrant-client``).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_holodeck.backends._registry import register_backend
from langchain_holodeck.backends.base import (
    Backend,
    BackendCapabilities,
    BackendUnavailableError,
)
from langchain_holodeck.config._backends import QdrantDatabaseConfig

if TYPE_CHECKING:
    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings
    from langchain_core.vectorstores import VectorStore

    from langchain_holodeck.vectorstores.qdrant import (
        DENSE_VECTOR,
        ID_KEY,
        SPARSE_VECTOR,
        BM25SparseEncoder,
        HolodeckQdrantVectorStore,
        build_qdrant_store,
        make_client,
        point_id,
    )

__all__ = [
    "DENSE_VECTOR",
    "ID_KEY",
    "SPARSE_VECTOR",
    "BM25SparseEncoder",
    "HolodeckQdrantVectorStore",
    "QdrantBackend",
    "QdrantDatabaseConfig",
    "build_qdrant_store",
    "make_client",
    "point_id",
]

_STORE_MODULE = "langchain_holodeck.vectorstores.qdrant"
_FROM_STORE_MODULE = frozenset(set(__all__) - {"QdrantBackend", "QdrantDatabaseConfig"})


def __getattr__(name: str) -> Any:
    """The store's names, imported from ``vectorstores/qdrant.py`` on first use."""
    if name in _FROM_STORE_MODULE:
        return getattr(importlib.import_module(_STORE_MODULE), name)
    msg = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(msg)


def _store_module() -> Any:
    return importlib.import_module(_STORE_MODULE)


@register_backend
class QdrantBackend(Backend):
    """``provider: qdrant``: dense + BM25 sparse vectors in one collection, fused natively.

    Setup:
        ``pip install "langchain-holodeck[qdrant]"``; no server for ``location``/``path``.
    """

    provider = "qdrant"
    own_store = "another database.collection_name, or another path:"
    config_type = QdrantDatabaseConfig
    capabilities = BackendCapabilities(
        filters_namespace=True, enumerates=True, persistent=True, native_hybrid=True
    )

    config: QdrantDatabaseConfig | None

    @classmethod
    def handles(cls, store: VectorStore) -> bool:
        module = sys.modules.get(_STORE_MODULE)  # not imported: no store of it can exist
        return module is not None and isinstance(store, module.HolodeckQdrantVectorStore)

    def open_store(
        self,
        embeddings: Embeddings,
        *,
        store_dir: Path | None = None,
        connect_timeout: float = 2.0,
    ) -> VectorStore:
        config = self._config()
        try:
            store = _store_module().build_qdrant_store(config, embeddings)
        except RuntimeError as e:  # path: held by another process (qdrant-client's lock)
            if config.path is None:
                raise
            from langchain_holodeck._redact import one_line

            reason = (  # the tools of this process share one client per path (make_client)
                f"Qdrant path {config.resolved_path()} is in use by another process; stop it, "
                f"or use a Qdrant server for concurrent access ({one_line(e)})"
            )
            raise BackendUnavailableError(reason) from e
        if config.url is not None:
            try:
                store.client.get_collections()  # reach the server now, not at the first search
            except Exception as e:  # httpx / grpc errors: the service is unreachable
                from langchain_holodeck._redact import one_line

                secrets = [config.api_key.get_secret_value()] if config.api_key else []
                reason = f"Qdrant at {config.url} is unavailable ({one_line(e, secrets)})"
                raise BackendUnavailableError(reason) from e
        return store

    def describe(self, *, store_dir: Path | None = None) -> str:
        if self.config is None:
            return "qdrant"
        config = self.config
        path = config.resolved_path()
        where = config.url or (f"path {path}" if path else "in-process :memory:")
        return f"qdrant {where}, collection {config.collection_name}"

    def data_dirs(self) -> tuple[Path, ...]:
        path = None if self.config is None else self.config.resolved_path()
        return () if path is None else (path,)

    def namespace_filter(self, store: VectorStore, namespace: str) -> dict[str, Any]:
        return {"filter": _store_module().HolodeckQdrantVectorStore.namespace_filter(namespace)}

    def iter_documents(
        self, store: VectorStore, *, namespace: str | None = None, batch_size: int = 1000
    ) -> Iterator[Document]:
        if not self.handles(store):
            return super().iter_documents(store, namespace=namespace)
        return store.iter_documents(namespace=namespace, batch_size=batch_size)  # type: ignore[attr-defined]  # handles(): a HolodeckQdrantVectorStore

    def _config(self) -> QdrantDatabaseConfig:
        if self.config is None:
            msg = "QdrantBackend needs a QdrantDatabaseConfig to open a store; got none."
            raise TypeError(msg)
        return self.config
