"""Connections of ``PostgresVectorStore``: the primary, read replicas, shards; one per thread.

Writes and reads by id go to the primary (sync reads what it has just written). Searches go
to a read replica when one is configured and healthy: a replica that cannot be reached, or
whose replay lags the primary by more than ``max_replica_lag_bytes`` of WAL, is skipped with
one WARNING (and checked again after ``RECHECK_SECONDS``), and the search runs on the primary.
A broken connection (the server restarted) is reopened and the statement run once more: every
statement the store runs is idempotent (writes replace by id).
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar
from urllib.parse import unquote, urlsplit

import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql

from langchain_holodeck._redact import mask_url_password
from langchain_holodeck.errors import ConfigError, HolodeckError
from langchain_holodeck.vectorstores import _postgres_sql as q

logger = logging.getLogger(__name__)

T = TypeVar("T")

RECHECK_SECONDS = 5.0
"""How long a replica's health (reachable, lag) is trusted before it is checked again."""


class ShardUnavailableError(HolodeckError, ConnectionError):
    """A shard of a sharded table could not be reached: the answer would be partial."""


def shard_server(table: str, index: int) -> str:
    """The ``postgres_fdw`` server name of shard ``index`` of ``table``."""
    return f"holodeck_{table}_shard{index}"


class Connections:
    """Per-thread psycopg connections to the primary and the read replicas."""

    def __init__(
        self,
        primary: str,
        *,
        read_replicas: Sequence[str] = (),
        max_replica_lag_bytes: int = 16 * 1024 * 1024,
        connect_timeout: float = 2.0,
        ef_search: int = 100,
    ) -> None:
        self.primary_url = primary
        self.replica_urls = list(read_replicas)
        self.max_replica_lag_bytes = max_replica_lag_bytes
        self.connect_timeout = connect_timeout
        self.ef_search = ef_search
        self.shard_urls: dict[str, str] = {}
        """fdw server name -> shard URL, for errors naming the shard that failed."""
        self._local = threading.local()
        self._all: list[psycopg.Connection[Any]] = []
        self._lock = threading.Lock()
        self._health: dict[str, tuple[float, bool]] = {}  # url -> (checked at, usable)
        self._turn = itertools.count()
        self._extension_ready = False

    # -- opening ---------------------------------------------------------------------------
    def _open(self, url: str, *, primary: bool) -> psycopg.Connection[Any]:
        conn = psycopg.connect(
            url, autocommit=True, connect_timeout=max(1, round(self.connect_timeout))
        )
        if primary and not self._extension_ready:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            self._extension_ready = True
        register_vector(conn)
        conn.execute(
            "SELECT set_config('hnsw.ef_search', %s, false), "
            "set_config('hnsw.iterative_scan', 'strict_order', false)",
            (str(self.ef_search),),
        )
        with self._lock:
            self._all.append(conn)
        return conn

    def _conn(self, url: str, *, primary: bool) -> psycopg.Connection[Any]:
        pool: dict[str, psycopg.Connection[Any]] = self._local.__dict__.setdefault("pool", {})
        conn = pool.get(url)
        if conn is None or conn.closed or conn.broken:
            conn = pool[url] = self._open(url, primary=primary)
        return conn

    def primary(self) -> psycopg.Connection[Any]:
        """This thread's connection to the primary (opened, or reopened if broken)."""
        return self._conn(self.primary_url, primary=True)

    def close(self) -> None:
        """Close every connection opened by any thread."""
        with self._lock:
            conns, self._all = self._all, []
        for conn in conns:
            conn.close()
        self._local = threading.local()

    # -- running -----------------------------------------------------------------------------
    def run_primary(self, fn: Callable[[psycopg.Connection[Any]], T]) -> T:
        """``fn(primary)``; once more on a fresh connection if the old one was broken."""
        return self._run(self.primary_url, fn, primary=True)

    def run_search(self, fn: Callable[[psycopg.Connection[Any]], T]) -> T:
        """``fn`` on a healthy replica (round robin), else on the primary."""
        for url in self._replica_order():
            if not self._usable(url):
                continue
            try:
                return self._run(url, fn, primary=False)
            except psycopg.OperationalError as e:
                self._mark_down(url, f"failed mid-search ({_one_line(e)})")
        return self._run(self.primary_url, fn, primary=True)

    def _run(self, url: str, fn: Callable[[psycopg.Connection[Any]], T], *, primary: bool) -> T:
        conn = self._conn(url, primary=primary)
        try:
            return fn(conn)
        except psycopg.Error as e:
            self._raise_shard_error(e)
            if not isinstance(e, psycopg.OperationalError) or not (conn.broken or conn.closed):
                raise
        try:  # the server restarted (or the connection dropped): reconnect once
            return fn(self._conn(url, primary=primary))
        except psycopg.Error as e:
            self._raise_shard_error(e)
            raise

    def _raise_shard_error(self, error: psycopg.Error) -> None:
        """Raise ``ShardUnavailableError`` naming the unreachable shards, if any broke ``error``.

        A shard's failure shows as SQLSTATE class 08 or names its fdw server; each shard is
        then probed, so the error names the ones that are down.
        """
        if not self.shard_urls:
            return
        text = str(error)
        named = [server for server in self.shard_urls if f'"{server}"' in text]
        state = getattr(error, "sqlstate", None) or ""
        if not named and not state.startswith("08") and "connection" not in text.lower():
            return
        down = named or [server for server, url in self.shard_urls.items() if not _reachable(url)]
        if not down:
            return
        shown = ", ".join(f"{s} ({mask_url_password(self.shard_urls[s])})" for s in down)
        verb = "is" if len(down) == 1 else "are"
        msg = (
            f"shard {shown} {verb} unavailable: {_one_line(error)}. A sharded search needs "
            "every shard, and a sharded table keeps the shards it was created over: start "
            "that server (scripts/postgres.sh start PORT)."
        )
        raise ShardUnavailableError(msg) from error

    # -- replica health ------------------------------------------------------------------------
    def _replica_order(self) -> list[str]:
        if not self.replica_urls:
            return []
        start = next(self._turn) % len(self.replica_urls)
        return self.replica_urls[start:] + self.replica_urls[:start]

    def _usable(self, url: str) -> bool:
        checked = self._health.get(url)
        now = time.monotonic()
        if checked is not None and now - checked[0] < RECHECK_SECONDS:
            return checked[1]
        try:
            replay = (
                self._conn(url, primary=False)
                .execute("SELECT pg_is_in_recovery(), pg_last_wal_replay_lsn()")
                .fetchone()
            )
            lag = 0
            if replay and replay[0] and replay[1] is not None:
                row = (
                    self.primary()
                    .execute(
                        "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), %s::pg_lsn)",
                        (replay[1],),
                    )
                    .fetchone()
                )
                lag = int(row[0]) if row else 0
        except psycopg.OperationalError as e:
            self._mark_down(url, f"is unreachable ({_one_line(e)})")
            return False
        if lag > self.max_replica_lag_bytes:
            self._mark_down(
                url,
                f"lags the primary by {lag} bytes of WAL (max_replica_lag_bytes "
                f"{self.max_replica_lag_bytes})",
            )
            return False
        if checked is not None and not checked[1]:
            logger.info("Postgres read replica %s is usable again.", mask_url_password(url))
        self._health[url] = (now, True)
        return True

    def _mark_down(self, url: str, why: str) -> None:
        was = self._health.get(url)
        self._health[url] = (time.monotonic(), False)
        if was is None or was[1]:  # one WARNING per outage
            logger.warning(
                "Postgres read replica %s %s; searching the primary instead.",
                mask_url_password(url),
                why,
            )


def _reachable(url: str) -> bool:
    try:
        with psycopg.connect(url, connect_timeout=2):
            return True
    except psycopg.Error:
        return False


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split())[:300]


def _server_address(url: str) -> str:
    """``host:port/dbname`` of a PostgreSQL URL, as a ``postgres_fdw`` server records it."""
    parts = urlsplit(url)
    dbname = unquote(parts.path.lstrip("/")) or "postgres"
    return f"{parts.hostname or 'localhost'}:{parts.port or 5432}/{dbname}"


def check_shard_list(connections: Connections, *, table: str, shards: Sequence[str]) -> None:
    """Refuse ``shards`` when the coordinator's table was created over other servers.

    The partitions of a sharded table are fixed when it is created: a server added to the
    list got no rows and no error, and one removed or moved shifted the names errors give.

    Raises:
        ConfigError: Naming the servers the table was created over and those configured.
    """
    prefix = shard_server(table, 0).removesuffix("0")
    rows = connections.run_primary(
        lambda c: c.execute(
            "SELECT srvname, srvoptions FROM pg_foreign_server WHERE starts_with(srvname, %s)",
            (prefix,),
        ).fetchall()
    )
    recorded: dict[int, str] = {}
    for name, options in rows:
        index = name.removeprefix(prefix)
        if index.isdigit():
            values = dict(str(o).split("=", 1) for o in options or () if "=" in str(o))
            host, port = values.get("host", "localhost"), values.get("port", "5432")
            recorded[int(index)] = f"{host}:{port}/{values.get('dbname', 'postgres')}"
    created = [recorded[i] for i in sorted(recorded)]
    configured = [_server_address(url) for url in shards]
    if created and created != configured:
        msg = (
            f"database.shards lists {', '.join(configured)}, but the sharded table {table!r} "
            f"was created over {', '.join(created)}; a table's shards are fixed when it is "
            "created: list those servers, in that order, or set database.table_name to a new "
            "name to shard over these."
        )
        raise ConfigError(msg)


def create_sharded_schema(
    connections: Connections,
    *,
    table: str,
    dim: int,
    metric: q.Metric,
    shards: Sequence[str],
) -> None:
    """Create the shards' tables and the coordinator's partitioned tables over them.

    Each shard gets the plain tables and indexes of one node (its own HNSW and GIN); the
    coordinator gets ``postgres_fdw`` servers and user mappings for the shards, the tables
    ``PARTITION BY HASH (id)`` with one foreign partition per shard, and the stats table.
    """
    for url in shards:
        with psycopg.connect(url, autocommit=True, connect_timeout=5) as shard:
            shard.execute("CREATE EXTENSION IF NOT EXISTS vector")
            for statement in q.table_statements(table, dim, metric, primary_key=True):
                shard.execute(statement)
    conn = connections.primary()
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (table,))
        conn.execute("CREATE EXTENSION IF NOT EXISTS postgres_fdw")
        servers = []
        for i, url in enumerate(shards):
            server = shard_server(table, i)
            servers.append(server)
            parts = urlsplit(url)
            options = {
                "host": parts.hostname or "localhost",
                "port": str(parts.port or 5432),
                "dbname": unquote(parts.path.lstrip("/")) or "postgres",
                "extensions": "vector",
                "async_capable": "true",
                "fetch_size": "1000",
                "options": f"-c hnsw.ef_search={connections.ef_search} "
                "-c hnsw.iterative_scan=strict_order",
            }
            conn.execute(
                sql.SQL(
                    "CREATE SERVER IF NOT EXISTS {s} FOREIGN DATA WRAPPER postgres_fdw "
                    "OPTIONS ({o})"
                ).format(
                    s=sql.Identifier(server),
                    o=sql.SQL(", ").join(
                        sql.SQL("{} {}").format(sql.Identifier(k), sql.Literal(v))
                        for k, v in options.items()
                    ),
                )
            )
            mapping = {"user": unquote(parts.username or "postgres")}
            if parts.password:
                mapping["password"] = unquote(parts.password)
            conn.execute(
                sql.SQL(
                    "CREATE USER MAPPING IF NOT EXISTS FOR CURRENT_USER SERVER {s} OPTIONS ({o})"
                ).format(
                    s=sql.Identifier(server),
                    o=sql.SQL(", ").join(
                        sql.SQL("{} {}").format(sql.Identifier(k), sql.Literal(v))
                        for k, v in mapping.items()
                    ),
                )
            )
        for part in q.sharded_statements(table, dim, servers):
            conn.execute(part)
        conn.execute(q.stats_statement(table))
