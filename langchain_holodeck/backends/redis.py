"""The Redis backend: ``HolodeckRedisVectorStore``, RediSearch full-text, the cache in Redis.

Everything this package knows about Redis as a backend is here; the store itself is
``vectorstores/redis.py`` (its one reach into langchain-redis internals: ``search_index``).
Redis packages are imported lazily: they need the ``redis`` extra.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from langchain_core.stores import ByteStore

from langchain_holodeck._byte_stores import RedisByteStore, namespace_segment
from langchain_holodeck._redact import mask_url_password, one_line
from langchain_holodeck.backends._registry import register_backend, register_keyword_index
from langchain_holodeck.backends.base import (
    Backend,
    BackendCapabilities,
    BackendUnavailableError,
    KeywordIndexProvider,
)
from langchain_holodeck.backends.memory import MemoryKeywordIndexProvider
from langchain_holodeck.config._backends import (
    RedisDatabaseConfig,
    RedisKeywordIndexConfig,
    default_keyword_index,
)
from langchain_holodeck.contracts import KeywordIndex
from langchain_holodeck.errors import ConfigError
from langchain_holodeck.keyword_index.redis import RedisKeywordIndex

if TYPE_CHECKING:
    from pathlib import Path

    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings
    from langchain_core.vectorstores import VectorStore

logger = logging.getLogger(__name__)

INSTALL_HINT = 'pip install "langchain-holodeck[redis]"'
CACHE_PREFIX = "holodeck:embcache:"
"""Key prefix of the embedding cache; then ``<index_name>:<namespace>:``, one per corpus."""
CACHE_TTL_SECONDS = round(
    RedisDatabaseConfig.model_fields["embedding_cache_ttl_days"].default * 24 * 3600
)
"""Default life of an embedding-cache entry in Redis, from its last write or read
(``embedding_cache_ttl_days``). The cache only spares a model call for a chunk whose key
moved (unchanged chunks are skipped by hash), so an expired entry costs at most one
embedding, and texts no chunk has any more leave Redis by themselves."""


def _redis_store_type() -> type | None:
    if "langchain_redis" not in sys.modules:
        return None
    from langchain_redis import RedisVectorStore

    return RedisVectorStore


@register_backend
class RedisBackend(Backend):
    """``provider: redis``: RediSearch vectors with namespace TAG filters and full-text search.

    Setup:
        ``pip install "langchain-holodeck[redis]"``; a Redis Stack (or Redis 8) server.
    """

    provider = "redis"
    own_store = "another database.index_name"
    config_type = RedisDatabaseConfig
    capabilities = BackendCapabilities(
        filters_namespace=True, enumerates=True, persistent=True, native_hybrid=True
    )

    config: RedisDatabaseConfig | None

    @classmethod
    def handles(cls, store: VectorStore) -> bool:
        store_type = _redis_store_type()
        return store_type is not None and isinstance(store, store_type)

    def open_store(
        self,
        embeddings: Embeddings,
        *,
        store_dir: Path | None = None,
        connect_timeout: float = 2.0,
    ) -> VectorStore:
        config = self._config()
        try:
            import redis

            from langchain_holodeck.vectorstores import redis as redis_store
        except ImportError as e:
            msg = f"database.provider 'redis' needs langchain-redis: {INSTALL_HINT}"
            raise ImportError(msg) from e
        url = config.connection_string.get_secret_value()
        try:
            return redis_store.build_redis_store(
                embeddings,
                url=url,
                index_name=config.index_name,
                algorithm=config.vector_algorithm,
                metric=config.distance_metric,
                connect_timeout=connect_timeout,
            )
        except ConfigError:  # the index's keys nest with another index's: no fallback
            raise
        except (redis.RedisError, OSError) as e:
            where = mask_url_password(url)
            reason = f"Redis at {where} is unavailable ({one_line(e, [url])})"
            raise BackendUnavailableError(reason) from e
        except ValueError as e:
            where = mask_url_password(url)
            if "@" not in url:  # no user info: redis-py's message quotes nothing secret
                reason = (
                    f"Redis connection string {where} cannot be parsed ({e}); write it as "
                    "redis://host:port/db"
                )
                raise BackendUnavailableError(reason) from e
            reason = (  # redis-py's message may quote pieces of the password: not repeated
                f"Redis connection string {where} cannot be parsed; percent-encode the "
                "password's special characters (space %20, / %2F, # %23, @ %40, : %3A)"
            )
            raise BackendUnavailableError(reason) from e

    def describe(self, *, store_dir: Path | None = None) -> str:
        if self.config is None:
            return "redis"
        return f"redis {self.config.masked_connection_string}, index {self.config.index_name}"

    def lost_service(self, error: BaseException) -> bool:
        import redis

        return isinstance(error, redis.ConnectionError | redis.TimeoutError)

    def namespace_filter(self, store: VectorStore, namespace: str) -> dict[str, Any]:
        from redisvl.query.filter import Tag

        return {"filter": Tag("namespace") == namespace}

    def vector_dimension(self, store: VectorStore) -> int | None:
        """The dimension of the index's vector field."""
        return getattr(store, "vector_dimension", None)

    def _reset_dimension(self, store: VectorStore, *, namespace: str, dimension: int) -> None:
        """Re-create the index schema with the new vector field (documents are rewritten).

        With the configured algorithm and metric, so no other setting is left to change.
        """
        config = self.config
        rebuild = store.rebuild_index  # type: ignore[attr-defined]  # HolodeckRedisVectorStore
        if config is None:  # an adopted store: its own settings stay
            rebuild(dimension)
        else:
            rebuild(dimension, algorithm=config.vector_algorithm, metric=config.distance_metric)

    def index_setting_changes(self, store: VectorStore) -> dict[str, tuple[str, str]]:
        """``vector_algorithm`` and ``distance_metric`` of the index, where configured otherwise.

        An existing index keeps those it was created with (``FT.INFO``), and the store
        searches it with them: a changed setting would otherwise be silently ignored.
        """
        if self.config is None:  # an adopted store: nothing configured to compare
            return {}
        stored = {
            "vector_algorithm": getattr(store, "vector_algorithm", None),
            "distance_metric": getattr(store, "distance_metric", None),
        }
        configured = {
            "vector_algorithm": self.config.vector_algorithm,
            "distance_metric": self.config.distance_metric,
        }
        return {
            name: (str(have), configured[name])
            for name, have in stored.items()
            if have is not None and have != configured[name]
        }

    def _reset_settings(self, store: VectorStore, *, namespace: str) -> None:
        """Re-create the index with the configured algorithm and metric (no document deleted)."""
        config = self._config()
        store.rebuild_index(  # type: ignore[attr-defined]  # HolodeckRedisVectorStore
            algorithm=config.vector_algorithm, metric=config.distance_metric
        )

    def iter_documents(
        self, store: VectorStore, *, namespace: str | None = None, batch_size: int = 1000
    ) -> Iterator[Document]:
        from langchain_holodeck.vectorstores.redis import scan_redis

        return scan_redis(store, namespace=namespace, batch_size=batch_size)  # type: ignore[arg-type]  # handles() checked the type

    def byte_store(self, *, namespace: str, store_dir: Path | None = None) -> ByteStore:
        """The embedding cache in Redis under ``holodeck:embcache:<index_name>:<namespace>:``.

        Entries expire ``embedding_cache_ttl_days`` after they were last written or read
        (pruning without a scan).
        """
        if self.config is None:  # an adopted store: the default cache
            return super().byte_store(namespace=namespace, store_dir=store_dir)
        import redis

        config = self._config()
        client = redis.Redis.from_url(config.connection_string.get_secret_value())
        return RedisByteStore(
            client,
            prefix=f"{CACHE_PREFIX}{config.index_name}:{namespace_segment(namespace)}:",
            ttl=max(1, round(config.embedding_cache_ttl_days * 24 * 3600)),
        )

    def keyword_index(self, store: VectorStore, *, namespace: str) -> KeywordIndex:
        return RedisKeywordIndex(store, namespace=namespace)

    def _config(self) -> RedisDatabaseConfig:
        if self.config is None:
            msg = "RedisBackend needs a RedisDatabaseConfig to connect; got none."
            raise TypeError(msg)
        return self.config


@register_keyword_index
class RedisKeywordIndexProvider(KeywordIndexProvider):
    """``keyword_index.provider: redis``: full-text search on the Redis vector index itself.

    When the vector store is not Redis (the configured Redis was unreachable and memory is
    used), it warns and uses the in-memory BM25 index instead.
    """

    provider = "redis"
    config_type = RedisKeywordIndexConfig

    def open(
        self,
        *,
        backend: Backend,
        store: VectorStore,
        namespace: str,
        store_dir: Path | None = None,
    ) -> KeywordIndex:
        own = backend.keyword_index(store, namespace=namespace)
        if own is not None:
            return own
        logger.warning(
            "keyword_index redis needs the Redis vector store, but %s is in use (fallback?); "
            "using the in-memory BM25 index.",
            backend.describe(),
        )
        memory = MemoryKeywordIndexProvider(default_keyword_index())
        return memory.open(backend=backend, store=store, namespace=namespace)

    def describe(self, *, store_dir: Path | None = None, backend: Backend | None = None) -> str:
        if backend is not None and backend.provider != self.provider:  # as open() falls back
            memory = MemoryKeywordIndexProvider(default_keyword_index())
            return (
                f"{memory.describe()} (keyword_index redis needs the Redis "
                f"vector store; this one is {backend.describe()})"
            )
        return "redis full-text on the vector index"
