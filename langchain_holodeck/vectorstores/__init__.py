"""Vector stores: the fast in-memory ``MatrixVectorStore``, the Redis store, namespace views.

``MatrixVectorStore`` keeps vectors in one NumPy matrix (saved to a directory);
``HolodeckRedisVectorStore`` (the ``redis`` extra, imported on first use) adds Redis-side
hybrid search; ``NamespaceFilteredStore`` shows one namespace of any store. Opening the store a
``database:`` section describes and listing a store's chunks go through the backend registry:
``create_vector_store``, ``create_vector_store_with_status`` and ``scan_documents`` live in
``langchain_holodeck.backends`` and are importable from here too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langchain_holodeck.vectorstores.matrix import DocumentFilter, MatrixVectorStore
from langchain_holodeck.vectorstores.namespace import NamespaceFilteredStore

if TYPE_CHECKING:
    from langchain_holodeck.backends import (
        VectorStoreHandle,
        create_vector_store,
        create_vector_store_with_status,
        scan_documents,
    )
    from langchain_holodeck.vectorstores.redis import HolodeckRedisVectorStore

__all__ = [
    "DocumentFilter",
    "HolodeckRedisVectorStore",
    "MatrixVectorStore",
    "NamespaceFilteredStore",
    "VectorStoreHandle",
    "create_vector_store",
    "create_vector_store_with_status",
    "scan_documents",
]

_FROM_BACKENDS = frozenset(
    {
        "VectorStoreHandle",
        "create_vector_store",
        "create_vector_store_with_status",
        "scan_documents",
    }
)
"""Names of the backend registry (a floor above the stores), kept importable from here."""


def __getattr__(name: str) -> Any:
    """Resolve the Redis store (optional ``redis`` extra) and the registry's names on first use."""
    if name == "HolodeckRedisVectorStore":
        from langchain_holodeck.vectorstores.redis import HolodeckRedisVectorStore

        return HolodeckRedisVectorStore
    if name in _FROM_BACKENDS:
        from langchain_holodeck import backends

        return getattr(backends, name)
    msg = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(msg)
