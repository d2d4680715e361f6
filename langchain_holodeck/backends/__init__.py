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
    get_backend,
    get_keyword_index_provider,
    open_vector_store,
    register_backend,
    register_keyword_index,
    registered_providers,
)
from langchain_holodeck.backends.base import (
    Backend,
    BackendCapabilities,
    BackendUnavailableError,
    KeywordIndexProvider,
    VectorStoreHandle,
)

# importing each provider module registers it
from langchain_holodeck.backends.langchain import (
    CoreInMemoryBackend,
    LangChainStoreBackend,
    NamespaceFilteredStore,
)
from langchain_holodeck.backends.memory import MemoryBackend, MemoryKeywordIndexProvider
from langchain_holodeck.backends.opensearch import OpenSearchKeywordIndexProvider
from langchain_holodeck.backends.postgres import PostgresBackend
from langchain_holodeck.backends.qdrant import QdrantBackend
from langchain_holodeck.backends.redis import RedisBackend, RedisKeywordIndexProvider

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
    "PostgresBackend",
    "QdrantBackend",
    "RedisBackend",
    "RedisKeywordIndexProvider",
    "VectorStoreHandle",
    "backend_for_store",
    "get_backend",
    "get_keyword_index_provider",
    "open_vector_store",
    "register_backend",
    "register_keyword_index",
    "registered_providers",
]
