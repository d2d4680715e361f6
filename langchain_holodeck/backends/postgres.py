"""The PostgreSQL backend: ``PostgresVectorStore`` (pgvector), BM25 in SQL, the cache in Postgres.

Everything this package knows about Postgres as a backend is here; the store itself is
``vectorstores/postgres.py``. psycopg and pgvector are imported lazily: they need the
``postgres`` extra.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Collection, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from langchain_core.stores import ByteStore

from langchain_holodeck._byte_stores import namespace_segment
from langchain_holodeck._redact import one_line
from langchain_holodeck.backends._registry import register_backend
from langchain_holodeck.backends.base import (
    Backend,
    BackendCapabilities,
    BackendUnavailableError,
)
from langchain_holodeck.config._backends import PostgresDatabaseConfig
from langchain_holodeck.errors import ConfigError

if TYPE_CHECKING:
    from pathlib import Path

    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings
    from langchain_core.vectorstores import VectorStore

logger = logging.getLogger(__name__)

INSTALL_HINT = 'pip install "langchain-holodeck[postgres]"'


def _store_type() -> type | None:
    import sys

    module = sys.modules.get("langchain_holodeck.vectorstores.postgres")
    return None if module is None else module.PostgresVectorStore  # type: ignore[no-any-return]  # a class


@register_backend
class PostgresBackend(Backend):
    """``provider: postgres``: pgvector HNSW, BM25 in SQL, replicas and shards (postgres_fdw).

    Setup:
        ``pip install "langchain-holodeck[postgres]"``; PostgreSQL with pgvector
        (``scripts/postgres.sh start`` runs one on loopback).
    """

    provider = "postgres"
    own_store = "another database.table_name"
    config_type = PostgresDatabaseConfig
    capabilities = BackendCapabilities(
        filters_namespace=True, enumerates=True, persistent=True, native_hybrid=True
    )

    config: PostgresDatabaseConfig | None

    @classmethod
    def handles(cls, store: VectorStore) -> bool:
        store_type = _store_type()
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
            import psycopg

            from langchain_holodeck.vectorstores.postgres import PostgresVectorStore
        except ImportError as e:
            msg = f"database.provider 'postgres' needs psycopg and pgvector: {INSTALL_HINT}"
            raise ImportError(msg) from e
        url = config.connection_string.get_secret_value()
        store = PostgresVectorStore(
            embeddings,
            connection_string=url,
            table_name=config.table_name,
            distance_metric=config.distance_metric,
            keyword_scoring=config.keyword_scoring,
            read_replicas=[u.get_secret_value() for u in config.read_replicas],
            shards=[u.get_secret_value() for u in config.shards],
            max_replica_lag_bytes=config.max_replica_lag_bytes,
            ef_search=config.ef_search,
            connect_timeout=connect_timeout,
        )
        try:  # reach the server now, not at the first search; and refuse foreign tables
            store.check_tables()
        except psycopg.Error as e:
            store.close()
            reason = (
                f"PostgreSQL at {config.masked_connection_string} is unavailable "
                f"({one_line(e, [url])})"
            )
            raise BackendUnavailableError(reason) from e
        except ConfigError:
            store.close()
            raise
        return store

    def describe(self, *, store_dir: Path | None = None) -> str:
        if self.config is None:
            return "postgres"
        config = self.config
        extra = ""
        if config.read_replicas:
            extra += f", {len(config.read_replicas)} read replica(s)"
        if config.shards:
            extra += f", {len(config.shards)} shards"
        return f"postgres {config.masked_connection_string}, table {config.table_name}{extra}"

    def lost_service(self, error: BaseException) -> bool:
        import psycopg

        return isinstance(error, psycopg.OperationalError)

    def namespace_filter(self, store: VectorStore, namespace: str) -> dict[str, Any]:
        return {"filter": {"namespace": namespace}}

    def vector_dimension(self, store: VectorStore) -> int | None:
        """The width of the table's vector column (``None`` before the first write)."""
        return getattr(store, "vector_dimension", None)

    def _reset_dimension(self, store: VectorStore, *, namespace: str, dimension: int) -> None:
        """Re-type the vector column (stored vectors become NULL until rewritten)."""
        store.reset_dimension(dimension)  # type: ignore[attr-defined]  # PostgresVectorStore

    def index_setting_changes(self, store: VectorStore) -> dict[str, tuple[str, str]]:
        """The table's HNSW index built for another ``distance_metric`` than configured."""
        built = store.index_metric  # type: ignore[attr-defined]  # PostgresVectorStore
        wanted = store.distance_metric  # type: ignore[attr-defined]  # PostgresVectorStore
        if built is None or built == wanted:
            return {}
        return {"distance_metric": (built, wanted)}

    def _reset_settings(self, store: VectorStore, *, namespace: str) -> None:
        """Rebuild the HNSW index for the configured metric (the vectors stay)."""
        store.rebuild_index()  # type: ignore[attr-defined]  # PostgresVectorStore

    def iter_documents(
        self, store: VectorStore, *, namespace: str | None = None, batch_size: int = 1000
    ) -> Iterator[Document]:
        return store.iter_documents(namespace=namespace, batch_size=batch_size)  # type: ignore[attr-defined, no-any-return]  # handles() checked the type

    def byte_store(self, *, namespace: str, store_dir: Path | None = None) -> ByteStore:
        """The embedding cache in Postgres: ``<table_name>_embcache``, keys under ``<namespace>:``.

        The namespace goes through ``namespace_segment``, so ``a``'s keys never include ``a:b``'s.
        """
        if self.config is None:  # an adopted store: the default cache
            return super().byte_store(namespace=namespace, store_dir=store_dir)
        config = self._config()
        return PostgresByteStore(
            config.connection_string.get_secret_value(),
            table=f"{config.table_name}_embcache",
            prefix=f"{namespace_segment(namespace)}:",
        )

    def _config(self) -> PostgresDatabaseConfig:
        if self.config is None:
            msg = "PostgresBackend needs a PostgresDatabaseConfig to connect; got none."
            raise TypeError(msg)
        return self.config


class PostgresByteStore(ByteStore):
    """A ``ByteStore`` in a Postgres table (key text, value bytea), keys under ``prefix``.

    Each row keeps the time it was written (``written_at``, the server's clock; a table made
    before that column existed gets it on first use, its rows dated then). ``prune`` removes
    this prefix's entries but those given (the embedding cache of a corpus keeps only the
    texts its stored chunks hold). Thread-safe: calls from several threads (the ingest embeds
    on more than one) take turns on its one connection, so no two transactions interleave.

    Setup:
        ``pip install "langchain-holodeck[postgres]"``

    Instantiate:
        ```python
        cache = PostgresByteStore("postgresql://...", table="holodeck_embcache", prefix="docs:")
        ```
    """

    def __init__(self, connection_string: str, *, table: str, prefix: str = "") -> None:
        self.connection_string = connection_string
        self.table = table
        self.prefix = prefix
        self._conn: Any = None
        self._lock = threading.RLock()

    def _connection(self) -> Any:
        import psycopg
        from psycopg import sql

        if self._conn is None or self._conn.closed or self._conn.broken:
            conn = psycopg.connect(self.connection_string, autocommit=True)
            # two processes creating it at once would collide in the catalog: one at a time
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (self.table,))
                conn.execute(
                    sql.SQL(
                        "CREATE TABLE IF NOT EXISTS {t} (key text PRIMARY KEY, "
                        "value bytea NOT NULL, written_at timestamptz NOT NULL DEFAULT now())"
                    ).format(t=sql.Identifier(self.table))
                )
                self._add_written_at(conn)
            self._conn = conn
        return self._conn

    def _add_written_at(self, conn: Any) -> None:
        """Give a table made before ``written_at`` existed the column (its rows: dated now)."""
        from psycopg import sql

        has_column = conn.execute(
            "SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass(%s) "
            "AND attname = 'written_at' AND NOT attisdropped",
            (sql.Identifier(self.table).as_string(conn),),
        ).fetchone()
        if has_column is None:  # ALTER locks the table: only when the column is missing
            conn.execute(
                self._sql(
                    "ALTER TABLE {t} ADD COLUMN IF NOT EXISTS "
                    "written_at timestamptz NOT NULL DEFAULT now()"
                )
            )

    def _sql(self, text: str) -> Any:
        from psycopg import sql

        return sql.SQL(text).format(t=sql.Identifier(self.table))

    def mget(self, keys: Sequence[str]) -> list[bytes | None]:
        if not keys:
            return []
        with self._lock:
            rows = (
                self._connection()
                .execute(
                    self._sql("SELECT key, value FROM {t} WHERE key = ANY(%s)"),
                    ([self.prefix + k for k in keys],),
                )
                .fetchall()
            )
        found = {k: bytes(v) for k, v in rows}
        return [found.get(self.prefix + k) for k in keys]

    def mset(self, key_value_pairs: Sequence[tuple[str, bytes]]) -> None:
        if not key_value_pairs:
            return
        latest = {self.prefix + k: v for k, v in key_value_pairs}
        keys = sorted(latest)  # one order for every writer: concurrent upserts cannot deadlock
        with self._lock:
            # an upsert, not DELETE + INSERT: another process writing the same key at once
            # (two ingests of one corpus) would make the INSERT fail on the primary key
            self._connection().execute(
                self._sql(
                    "INSERT INTO {t} (key, value) "
                    "SELECT * FROM unnest(%s::text[], %s::bytea[]) "
                    "ON CONFLICT (key) DO UPDATE SET value = excluded.value, written_at = now()"
                ),
                (keys, [latest[k] for k in keys]),
            )

    def mdelete(self, keys: Sequence[str]) -> None:
        if keys:
            with self._lock:
                self._connection().execute(
                    self._sql("DELETE FROM {t} WHERE key = ANY(%s)"),
                    ([self.prefix + k for k in keys],),
                )

    def prune(self, keep: Collection[str], *, written_before: float) -> int:
        """Delete this prefix's entries whose key is not in ``keep`` and written before then.

        One ``DELETE`` statement; entries under other prefixes (other corpora) are never
        touched.

        Args:
            keep: Keys (without the prefix) that stay.
            written_before: A ``time.time()``; entries written since (by another process
                syncing at the same time, say) stay. Compared with the server's clock.

        Returns:
            The number of entries deleted.
        """
        with self._lock:
            cursor = self._connection().execute(
                self._sql(
                    "DELETE FROM {t} WHERE starts_with(key, %s) AND written_at < to_timestamp(%s) "
                    "AND NOT EXISTS (SELECT 1 FROM unnest(%s::text[]) AS kept(k) "
                    "WHERE kept.k = key)"
                ),
                (self.prefix, written_before, [self.prefix + k for k in keep]),
            )
            return int(cursor.rowcount)

    def yield_keys(self, *, prefix: str | None = None) -> Iterator[str]:
        start = self.prefix + (prefix or "")
        with self._lock:
            rows = (
                self._connection()
                .execute(
                    self._sql("SELECT key FROM {t} WHERE starts_with(key, %s) ORDER BY key"),
                    (start,),
                )
                .fetchall()
            )
        for (key,) in rows:
            yield key[len(self.prefix) :]
