"""Backends: one module per provider behind one protocol, and the registry that picks them.

``get_backend(database_config)`` returns the ``Backend`` of a ``database:`` section (``None``:
in-memory); ``backend_for_store(store)`` the one that knows a store a caller built;
``open_vector_store`` opens the store, falling back to memory when allowed. Adding a provider is
one module here (a ``Backend`` subclass under ``@register_backend``) and one config class in
``config/_backends.py``; nothing else names a provider.
"""

from __future__ import annotations

from langchain_holodeck.backends._registry import (
    backend_for_store,
    create_vector_store,
    create_vector_store_with_status,
    get_backend,
    get_keyword_index_provider,
    native_hybrid_providers,
    open_vector_store,
    register_backend,
    register_keyword_index,
    registered_providers,
    scan_documents,
)
from langchain_holodeck.backends.base import (
    Backend,
    BackendUnavailableError,
    KeywordIndexProvider,
    LangChainStoreBackend,
    VectorStoreHandle,
)

# importing each provider module registers it
from langchain_holodeck.backends.langchain import CoreInMemoryBackend
from langchain_holodeck.backends.memory import MemoryBackend, MemoryKeywordIndexProvider
from langchain_holodeck.backends.opensearch import OpenSearchKeywordIndexProvider
from langchain_holodeck.backends.qdrant import QdrantBackend
from langchain_holodeck.backends.redis import RedisBackend, RedisKeywordIndexProvider
from langchain_holodeck.contracts import BackendCapabilities
from langchain_holodeck.vectorstores.namespace import NamespaceFilteredStore

__all__ = [
    "Backend",
    "BackendCapabilities",
    "BackendUnavailableError",
    "CoreInMemoryBackend",
    "KeywordIndexProvider",
    "LangChainStoreBackend",
    "MemoryBackend",
    "MemoryKeywordIndexProvider",
    "NamespaceFilteredStore",
    "OpenSearchKeywordIndexProvider",
    "QdrantBackend",
    "RedisBackend",
    "RedisKeywordIndexProvider",
    "VectorStoreHandle",
    "backend_for_store",
    "create_vector_store",
    "create_vector_store_with_status",
    "get_backend",
    "get_keyword_index_provider",
    "native_hybrid_providers",
    "open_vector_store",
    "register_backend",
    "register_keyword_index",
    "registered_providers",
    "scan_documents",
]
