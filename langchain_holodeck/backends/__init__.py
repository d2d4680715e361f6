"""Backends: one module per provider behind one protocol, and the registry that picks them.

``get_backend(database_config)`` returns the ``Backend`` of a ``database:`` section (``None``:
the default, in-memory); ``backend_for_store(store)`` the one that knows a store a caller
built; ``open_vector_store`` opens the store, falling back to the default when allowed;
``scan_documents`` lists a store's chunks through its backend.

Adding a provider is one module and one config class; no other file names it::

    # backends/postgres.py (a built-in: also import it below) or any module of your own
    class PostgresDatabaseConfig(DatabaseConfig):      # from langchain_holodeck.config.models
        provider: Literal["postgres"]                  # one value: the ``database.provider``
        connection_string: SecretStr

    @register_backend                                  # registers the config class too
    class PostgresBackend(Backend):
        provider = "postgres"
        config_type = PostgresDatabaseConfig
        capabilities = BackendCapabilities(filters_namespace=True, enumerates=True,
                                           persistent=True)
        def open_store(self, embeddings, *, store_dir=None, connect_timeout=2.0): ...

From then on ``database: {provider: postgres, ...}`` validates in an agent.yaml (unknown keys
rejected, errors naming the field), ``DatabaseConfig(provider="postgres", ...)`` builds the
class, and the configuration reference and capability texts list it. A keyword index is the
same with ``KeywordIndexConfig``, ``KeywordIndexProvider`` and ``register_keyword_index``.
The contracts a store or index implements live in ``langchain_holodeck.contracts``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from langchain_holodeck.backends._registry import (
    backend_for_store,
    client_loggers,
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
from langchain_holodeck.contracts import BackendCapabilities
from langchain_holodeck.vectorstores.namespace import NamespaceFilteredStore

if TYPE_CHECKING:
    from langchain_holodeck.backends.langchain import CoreInMemoryBackend
    from langchain_holodeck.backends.memory import MemoryBackend, MemoryKeywordIndexProvider
    from langchain_holodeck.backends.opensearch import OpenSearchKeywordIndexProvider
    from langchain_holodeck.backends.postgres import PostgresBackend
    from langchain_holodeck.backends.qdrant import QdrantBackend
    from langchain_holodeck.backends.redis import RedisBackend, RedisKeywordIndexProvider

_PROVIDER_NAMES = {
    "CoreInMemoryBackend": "langchain",
    "MemoryBackend": "memory",
    "MemoryKeywordIndexProvider": "memory",
    "OpenSearchKeywordIndexProvider": "opensearch",
    "PostgresBackend": "postgres",
    "QdrantBackend": "qdrant",
    "RedisBackend": "redis",
    "RedisKeywordIndexProvider": "redis",
}
"""The built-in providers' classes, by module: imported (and registered) on first use."""


def __getattr__(name: str) -> Any:
    """A built-in provider class, importing (and so registering) its module on first use."""
    if name in _PROVIDER_NAMES:
        module = importlib.import_module(f"{__name__}.{_PROVIDER_NAMES[name]}")
        return getattr(module, name)
    msg = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(msg)


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
    "client_loggers",
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
