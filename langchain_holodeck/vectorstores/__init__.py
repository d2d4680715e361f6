"""Vector stores: the fast in-memory ``MatrixVectorStore`` and ``create_vector_store()``.

``create_vector_store(database_config, embeddings)`` returns a ``MatrixVectorStore`` for no
config or ``provider: in-memory``, and a Redis store (langchain-redis, extra ``redis``) for
``provider: redis``, falling back to memory — with a WARNING — when Redis is unreachable.
``scan_documents(store)`` enumerates the chunks of any store we ship or configure.
"""

from __future__ import annotations

import inspect
import logging
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore

from langchain_holodeck._redact import one_line
from langchain_holodeck.errors import ConfigError
from langchain_holodeck.vectorstores.matrix import DocumentFilter, MatrixVectorStore, copy_metadata

if TYPE_CHECKING:
    from langchain_holodeck.vectorstores.redis import HolodeckRedisVectorStore

__all__ = [
    "DocumentFilter",
    "HolodeckRedisVectorStore",
    "MatrixVectorStore",
    "VectorStoreHandle",
    "create_vector_store",
    "create_vector_store_with_status",
    "scan_documents",
]

logger = logging.getLogger(__name__)

Backend = Literal["in-memory", "redis", "qdrant"]


def __getattr__(name: str) -> Any:
    """Import the Redis store lazily: it needs the optional ``redis`` extra."""
    if name == "HolodeckRedisVectorStore":
        from langchain_holodeck.vectorstores.redis import HolodeckRedisVectorStore

        return HolodeckRedisVectorStore
    msg = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(msg)


@dataclass(frozen=True)
class VectorStoreHandle:
    """What ``create_vector_store_with_status`` built, and whether it had to fall back."""

    store: VectorStore
    """The vector store to use."""
    backend: Backend
    """The backend actually in use: ``"in-memory"``, ``"redis"`` or ``"qdrant"``."""
    requested: Backend
    """The backend the configuration asked for."""
    fell_back: bool
    """``True`` when Redis was requested but unreachable and memory is used instead."""
    reason: str | None = None
    """Why it fell back (one line, connection string masked), else ``None``."""


def create_vector_store(
    database_config: Any | None,
    embeddings: Embeddings,
    *,
    fallback: bool = True,
    connect_timeout: float = 2.0,
) -> VectorStore:
    """Build the vector store a ``DatabaseConfig`` describes (details: ``..._with_status``).

    Args:
        database_config: A ``langchain_holodeck.config.DatabaseConfig`` or ``None``.
        embeddings: The embeddings of documents and queries.
        fallback: Fall back to memory when Redis is unreachable (else raise).
        connect_timeout: Seconds to wait for the Redis connection.

    Returns:
        A ``MatrixVectorStore`` or a ``HolodeckRedisVectorStore``.
    """
    return create_vector_store_with_status(
        database_config, embeddings, fallback=fallback, connect_timeout=connect_timeout
    ).store


def create_vector_store_with_status(
    database_config: Any | None,
    embeddings: Embeddings,
    *,
    fallback: bool = True,
    connect_timeout: float = 2.0,
) -> VectorStoreHandle:
    """Build the vector store a ``DatabaseConfig`` describes, reporting any fallback.

    ``None`` or ``provider: in-memory`` gives a ``MatrixVectorStore``. ``provider: redis``
    gives a ``HolodeckRedisVectorStore`` on ``connection_string`` with the configured
    ``index_name``, ``vector_algorithm`` and ``distance_metric`` (the index is created when
    missing; an existing index keeps its own settings). If Redis cannot be reached within
    ``connect_timeout`` seconds, a WARNING is logged (connection string masked) and, with
    ``fallback=True``, a ``MatrixVectorStore`` is returned with ``fell_back=True``.

    Setup:
        Redis needs the extra: ``pip install "langchain-holodeck[redis]"``.

    Example:
        ```python
        handle = create_vector_store_with_status(None, embeddings)
        handle.backend, handle.fell_back  # -> ('in-memory', False)
        ```

    Raises:
        ConfigError: If ``provider`` is unknown or Redis has no ``connection_string``.
        ImportError: If Redis is requested and the ``redis`` extra is not installed.
        redis.RedisError: If Redis is unreachable and ``fallback`` is ``False``.
    """
    provider = "in-memory" if database_config is None else _attr(database_config, "provider")
    if provider in (None, "in-memory", "memory"):
        return VectorStoreHandle(
            MatrixVectorStore(embeddings), "in-memory", "in-memory", fell_back=False
        )
    if provider == "qdrant":
        from langchain_holodeck.backends.qdrant import QdrantDatabaseConfig, build_qdrant_store

        config = QdrantDatabaseConfig.model_validate(database_config)
        return VectorStoreHandle(
            build_qdrant_store(config, embeddings), "qdrant", "qdrant", fell_back=False
        )
    if provider != "redis":
        msg = f"database.provider must be 'redis', 'qdrant' or 'in-memory', got {provider!r}."
        raise ConfigError(msg)
    secret = _attr(database_config, "connection_string")
    url = secret.get_secret_value() if hasattr(secret, "get_secret_value") else secret
    if not url:
        msg = "database.connection_string is required for provider 'redis' (redis://...)."
        raise ConfigError(msg)
    try:
        import redis

        from langchain_holodeck.vectorstores import redis as _redis_store
    except ImportError as e:
        msg = (
            "database.provider 'redis' needs langchain-redis: "
            'pip install "langchain-holodeck[redis]"'
        )
        raise ImportError(msg) from e
    index_name = _attr(database_config, "index_name") or "holodeck_vectors"
    try:
        store = _redis_store.build_redis_store(
            embeddings,
            url=str(url),
            index_name=index_name,
            algorithm=_choice(database_config, "vector_algorithm", ("HNSW", "FLAT")),
            metric=_choice(database_config, "distance_metric", ("COSINE", "L2", "IP")),
            connect_timeout=connect_timeout,
        )
    except (redis.RedisError, OSError) as e:
        masked = _redis_store.mask_url(str(url))
        reason = f"Redis at {masked} is unavailable ({one_line(e, [url])})"
        if not fallback:
            raise
        logger.warning("%s; falling back to the in-memory vector store.", reason)
        return VectorStoreHandle(
            MatrixVectorStore(embeddings), "in-memory", "redis", fell_back=True, reason=reason
        )
    return VectorStoreHandle(store, "redis", "redis", fell_back=False)


def scan_documents(
    store: VectorStore, *, namespace: str | None = None, batch_size: int = 1000
) -> Iterator[Document]:
    """Yield every stored chunk (copies with ``id`` set), optionally of one ``namespace``.

    Works for ``MatrixVectorStore``, langchain-core ``InMemoryVectorStore`` and langchain-redis
    ``RedisVectorStore`` (SCAN over its key prefix, ``batch_size`` keys per round trip).
    Order is unspecified.

    Raises:
        TypeError: For any other store, naming its class.
        ValueError: If ``batch_size`` is not positive.
    """
    if batch_size <= 0:
        msg = f"batch_size must be positive, got {batch_size}."
        raise ValueError(msg)

    def wanted(meta: dict[str, Any]) -> bool:
        return namespace is None or meta.get("namespace") == namespace

    if isinstance(store, MatrixVectorStore):
        return (d for d in store.iter_documents() if wanted(d.metadata))
    if isinstance(store, InMemoryVectorStore):
        items = list(store.store.values())
        return (
            Document(id=r["id"], page_content=r["text"], metadata=copy_metadata(r["metadata"]))
            for r in items
            if wanted(r["metadata"])
        )
    iter_documents = getattr(store, "iter_documents", None)
    if callable(iter_documents) and "namespace" in inspect.signature(iter_documents).parameters:
        return iter_documents(namespace=namespace, batch_size=batch_size)  # type: ignore[no-any-return]  # the store's own scan
    if "langchain_redis" in sys.modules:
        from langchain_redis import RedisVectorStore

        from langchain_holodeck.vectorstores.redis import scan_redis

        if isinstance(store, RedisVectorStore):
            return scan_redis(store, namespace=namespace, batch_size=batch_size)
    msg = (
        f"cannot enumerate documents of {type(store).__name__}; scan_documents supports "
        "MatrixVectorStore, InMemoryVectorStore and RedisVectorStore."
    )
    raise TypeError(msg)


def _attr(config: Any, name: str) -> Any:
    if isinstance(config, dict):
        return config.get(name)
    return getattr(config, name, None)


def _choice(config: Any, name: str, allowed: tuple[str, ...]) -> Any:
    value = str(_attr(config, name) or allowed[0]).upper()
    if value not in allowed:
        msg = f"database.{name} must be one of {', '.join(allowed)}, got {value!r}."
        raise ConfigError(msg)
    return value
