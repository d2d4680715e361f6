"""Past one Postgres server, for real: a streaming read replica and postgres_fdw shards.

The primary is POSTGRES_URL. The standby (port + 1) and two shard servers (port + 2, + 3) are
started here with scripts/postgres.sh (the same script CI uses) and stopped at the end. The
replica tests check where statements ran from the servers' own statistics
(``pg_stat_database.xact_commit``), not from the client.
"""

from __future__ import annotations

import logging
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding

from langchain_holodeck.errors import ConfigError
from langchain_holodeck.sync import sync_documents
from langchain_holodeck.vectorstores._postgres_conn import ShardUnavailableError
from langchain_holodeck.vectorstores.postgres import PostgresVectorStore
from tests.helpers import HashingEmbeddings, drop_postgres_tables

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "postgres.sh"
WORDS = [
    "warp",
    "core",
    "shift",
    "rota",
    "replicator",
    "tea",
    "holodeck",
    "safety",
    "officer",
    "deck",
    "sensor",
    "grid",
]


def script(*args: str) -> str:
    done = subprocess.run(
        ["bash", str(SCRIPT), *args], capture_output=True, text=True, check=True, timeout=180
    )
    urls = [line.split("=", 1)[1] for line in done.stdout.splitlines() if "POSTGRES_URL=" in line]
    return urls[0] if urls else ""


def port_of(url: str) -> int:
    return urlsplit(url).port or 5432


def corpus(n: int = 60, namespace: str = "kb") -> list[Document]:
    """Distinct texts (no ties in either leg), two namespaces' worth of ids."""
    return [
        Document(
            id=f"{namespace}-{i}",
            page_content=" ".join(WORDS[(i * j) % len(WORDS)] for j in range(1, 2 + i % 7))
            + f" {namespace}{i}",
            metadata={"namespace": namespace, "source": f"f{i % 5}.md"},
        )
        for i in range(n)
    ]


def commits(url: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"
        ).fetchone()
        conn.execute("SELECT pg_stat_clear_snapshot()")
    assert row is not None
    return int(row[0])


@pytest.fixture(scope="module")
def standby_url(postgres_url: str) -> Iterator[str]:
    port = port_of(postgres_url)
    url = script("standby", str(port), str(port + 1))
    yield url
    script("stop", str(port + 1))


@pytest.fixture(scope="module")
def shard_urls(postgres_url: str) -> Iterator[list[str]]:
    port = port_of(postgres_url)
    urls = [script("start", str(port + 2)), script("start", str(port + 3))]
    yield urls
    for url in urls:
        script("stop", str(port_of(url)))


@pytest.fixture(scope="module")
def postgres_url() -> str:
    from tests.helpers import postgres_url_or_skip

    return postgres_url_or_skip()


def wait_replayed(primary: str, standby: str, timeout: float = 20.0) -> None:
    with psycopg.connect(primary, autocommit=True) as conn:
        lsn = conn.execute("SELECT pg_current_wal_insert_lsn()").fetchone()[0]  # type: ignore[index]  # one row
    deadline = time.monotonic() + timeout
    with psycopg.connect(standby, autocommit=True) as conn:
        while time.monotonic() < deadline:
            row = conn.execute(
                "SELECT pg_wal_lsn_diff(pg_last_wal_replay_lsn(), %s::pg_lsn) >= 0", (lsn,)
            ).fetchone()
            if row and row[0]:
                return
            time.sleep(0.05)
    pytest.fail(f"the standby did not replay {lsn} within {timeout} s")


@pytest.fixture
def table(postgres_url: str) -> Iterator[str]:
    name = f"holodeck_test_{uuid.uuid4().hex[:10]}"
    yield name
    drop_postgres_tables(postgres_url, name)


# -- read replicas -----------------------------------------------------------------------
def test_searches_go_to_the_replica_and_writes_to_the_primary(
    postgres_url: str, standby_url: str, table: str
) -> None:
    store = PostgresVectorStore(
        HashingEmbeddings(),
        connection_string=postgres_url,
        table_name=table,
        read_replicas=[standby_url],
    )
    store.add_documents(corpus())  # the standby refuses writes: these went to the primary
    wait_replayed(postgres_url, standby_url)
    replica_before = commits(standby_url)  # nothing else uses the standby
    for i in range(20):
        assert store.similarity_search(f"warp core item{i}", k=3, filter={"namespace": "kb"})
        assert store.native_hybrid_search("tea holodeck", k=3, fetch_k=10)
    store.close()  # a backend flushes its statistics when it exits
    time.sleep(1.0)
    assert commits(standby_url) - replica_before >= 40
    with (
        psycopg.connect(standby_url, autocommit=True) as conn,
        pytest.raises(psycopg.errors.ReadOnlySqlTransaction),
    ):
        conn.execute(f"DELETE FROM {table}")


def test_a_lagging_replica_falls_back_to_the_primary_with_one_warning(
    postgres_url: str, standby_url: str, table: str, caplog: pytest.LogCaptureFixture
) -> None:
    store = PostgresVectorStore(
        HashingEmbeddings(),
        connection_string=postgres_url,
        table_name=table,
        read_replicas=[standby_url],
        max_replica_lag_bytes=0,
    )
    store.add_documents(corpus(10))
    wait_replayed(postgres_url, standby_url)
    with psycopg.connect(standby_url, autocommit=True) as conn:
        conn.execute("SELECT pg_wal_replay_pause()")
    try:
        store.add_documents([Document(id="fresh", page_content="brand new zebra note")])
        with caplog.at_level(logging.WARNING):
            for _ in range(3):
                hits = store.similarity_search("brand new zebra note", k=1)
                assert [d.id for d in hits] == ["fresh"]  # the primary's answer
        warnings = [r for r in caplog.records if "lags the primary" in r.getMessage()]
        assert len(warnings) == 1
    finally:
        with psycopg.connect(standby_url, autocommit=True) as conn:
            conn.execute("SELECT pg_wal_replay_resume()")
        store.close()


def test_a_replica_killed_mid_search_falls_back_with_one_warning(
    postgres_url: str, standby_url: str, table: str, caplog: pytest.LogCaptureFixture
) -> None:
    store = PostgresVectorStore(
        HashingEmbeddings(),
        connection_string=postgres_url,
        table_name=table,
        read_replicas=[standby_url],
    )
    store.add_documents(corpus())
    wait_replayed(postgres_url, standby_url)
    expected = [d.id for d in store.similarity_search("warp core", k=5)]  # on the replica
    script("stop", str(port_of(standby_url)))
    try:
        with caplog.at_level(logging.WARNING):
            for _ in range(3):
                assert [d.id for d in store.similarity_search("warp core", k=5)] == expected
        warnings = [r for r in caplog.records if "read replica" in r.getMessage()]
        assert len(warnings) == 1
        assert "searching the primary instead" in warnings[0].getMessage()
    finally:
        script("standby", str(port_of(postgres_url)), str(port_of(standby_url)))
        store.close()


# -- shards ------------------------------------------------------------------------------
def sharded_pair(
    postgres_url: str, shard_urls: list[str], table: str
) -> tuple[PostgresVectorStore, PostgresVectorStore]:
    embeddings = DeterministicFakeEmbedding(size=32)  # continuous vectors: no distance ties
    # ef_search above the row count: HNSW is exact on both layouts, so answers can be compared
    sharded = PostgresVectorStore(
        embeddings,
        connection_string=postgres_url,
        table_name=table,
        shards=shard_urls,
        ef_search=400,
    )
    one = PostgresVectorStore(
        embeddings, connection_string=postgres_url, table_name=f"{table}_one", ef_search=400
    )
    return sharded, one


@pytest.fixture
def sharded_table(postgres_url: str, shard_urls: list[str]) -> Iterator[str]:
    name = f"holodeck_test_{uuid.uuid4().hex[:10]}"
    yield name
    drop_postgres_tables(postgres_url, name)
    drop_postgres_tables(postgres_url, f"{name}_one")
    for url in shard_urls:
        drop_postgres_tables(url, name)


def tied_order(hits: list[tuple[str, float]]) -> list[tuple[str, float]]:
    return sorted(hits, key=lambda h: (-round(h[1], 9), h[0]))


def test_two_shards_answer_exactly_as_one_node(
    postgres_url: str, shard_urls: list[str], sharded_table: str
) -> None:
    sharded, one = sharded_pair(postgres_url, shard_urls, sharded_table)
    docs = corpus() + corpus(namespace="other")
    for store in (sharded, one):
        result = sync_documents(docs, store, namespace="kb")
        assert result.failed == 0
    rows = []
    for url in shard_urls:  # each shard holds part of the rows, with its own indexes
        with psycopg.connect(url, autocommit=True) as conn:
            rows.append(conn.execute(f"SELECT count(*) FROM {sharded_table}").fetchone()[0])  # type: ignore[index]  # one row
            indexes = {
                r[0]
                for r in conn.execute(
                    "SELECT indexdef FROM pg_indexes WHERE tablename = %s", (sharded_table,)
                ).fetchall()
            }
            assert any("hnsw" in i for i in indexes)
            assert any("gin" in i for i in indexes)
    assert all(r > 0 for r in rows)
    assert sum(rows) == len(docs)
    vector = one.embeddings.embed_query("replicator tea")
    for query in ["warp core safety", "replicator tea kb7", "deck sensor grid officer"]:
        for scope in (None, {"namespace": "kb"}):
            assert sharded.similarity_search_with_score(query, k=8, filter=scope) == (
                one.similarity_search_with_score(query, k=8, filter=scope)
            )
            for fusion in ("rrf", "convex"):
                got = sharded.native_hybrid_search(
                    query, k=10, fetch_k=30, filter=scope, fusion=fusion
                )
                want = one.native_hybrid_search(
                    query, k=10, fetch_k=30, filter=scope, fusion=fusion
                )
                assert [h.document for h in got] == [h.document for h in want]
                assert [h.score for h in got] == pytest.approx([h.score for h in want])
        # every match (no cut among ties); sums of the same terms may differ in the last bit
        got_kw = tied_order(sharded.keyword_search(query, 500, namespace="kb"))
        want_kw = tied_order(one.keyword_search(query, 500, namespace="kb"))
        assert [i for i, _ in got_kw] == [i for i, _ in want_kw]
        assert [s for _, s in got_kw] == pytest.approx([s for _, s in want_kw])
    assert sharded.search_ids_by_vector(vector, 5) == one.search_ids_by_vector(vector, 5)
    # sync through the coordinator: idempotent, deletes reach the shards
    again = sync_documents(docs, sharded, namespace="kb")
    assert (again.added, again.updated) == (0, 0)
    ids = sorted(str(d.id) for d in one.iter_documents(namespace="kb"))[:3]
    assert sharded.delete(ids[:2]) is True
    assert sharded.get_by_ids(ids) == one.get_by_ids(ids[2:])
    assert len(list(sharded.iter_documents())) == len(docs) - 2
    sharded.close()
    one.close()


def test_a_shard_down_is_a_clear_error_naming_it(
    postgres_url: str, shard_urls: list[str], sharded_table: str
) -> None:
    sharded, one = sharded_pair(postgres_url, shard_urls, sharded_table)
    sharded.add_documents(corpus())
    down = shard_urls[1]
    script("stop", str(port_of(down)))
    try:
        with pytest.raises(
            ShardUnavailableError,
            match=rf"shard holodeck_{sharded_table}_shard1 "
            rf"\(postgresql://postgres@127.0.0.1:{port_of(down)}/postgres\)",  # a user, no secret
        ):
            sharded.similarity_search("warp core", k=3)
        with pytest.raises(ShardUnavailableError, match="needs every shard"):
            sharded.native_hybrid_search("warp core", k=3, fetch_k=10)
    finally:
        script("start", str(port_of(down)))
    assert len(sharded.similarity_search("warp core", k=3)) == 3  # back: answers again
    sharded.close()
    one.close()


def test_a_sharded_table_keeps_its_shards_and_its_width(
    postgres_url: str, shard_urls: list[str], sharded_table: str
) -> None:
    """Found 2026-12-07. A shard added to (or moved in) ``shards:`` of an existing table got
    no rows and no word; a model of another width ended in a traceback (``... is not a
    table``: the coordinator's partitions are foreign tables). Both are refused in one line.
    """
    sharded, _ = sharded_pair(postgres_url, shard_urls, sharded_table)
    assert sync_documents(corpus(), sharded, namespace="kb").failed == 0
    embeddings = DeterministicFakeEmbedding(size=32)
    for shards in ([*shard_urls, postgres_url], list(reversed(shard_urls))):
        other = PostgresVectorStore(
            embeddings, connection_string=postgres_url, table_name=sharded_table, shards=shards
        )
        with pytest.raises(ConfigError, match="a table's shards are fixed when it is created"):
            _ = other.vector_dimension
    with pytest.raises(ConfigError, match="cannot change width in place; for a 16-dim"):
        sharded.reset_dimension(16)
    assert sharded.vector_dimension == 32  # nothing changed
