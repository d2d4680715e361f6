"""Redis dies: mid-sync, before start-up, under a running tool. Nothing is lost or leaked.

A private, password-protected Redis Stack on port 6391 (``redis_control``) is killed with
SIGKILL from inside the sync (the ``on_batch`` callback, i.e. between two batches) or under a
live tool, and started again on the same port. The script's server keeps no data
(``--save "" --appendonly no``), so a plain restart comes back empty; ``snapshot=True`` SAVEs
just before the kill, standing in for a Redis with persistence that crashes. Either way the
next run must reach exactly the state of one clean run.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Iterator

import pytest
from langchain_core.documents import Document
from pydantic import SecretStr

from langchain_holodeck.backends import BackendUnavailableError
from langchain_holodeck.config import (
    HierarchicalDocumentToolConfig,
    RedisDatabaseConfig,
    VectorStoreToolConfig,
)
from langchain_holodeck.sync import sync_documents
from langchain_holodeck.tools import HierarchicalDocumentTool, VectorStoreTool
from langchain_holodeck.vectorstores import (
    MatrixVectorStore,
    create_vector_store_with_status,
)
from tests.helpers import HashingEmbeddings, crash_after_files
from tests.reliability import corpus
from tests.reliability.redis_control import PrivateRedis, private_redis

pytestmark = pytest.mark.redis

PORT = 6391
PASSWORD = "pw-Fault-9d41c7e2b"
BATCH = 6
QUERIES = ["warp core shift", "replicator tea console", "revised part", "docs/new.md part 3"]


@pytest.fixture(scope="module")
def server() -> Iterator[PrivateRedis]:
    with private_redis(PORT, password=PASSWORD) as running:
        yield running


@pytest.fixture
def redis(server: PrivateRedis) -> Iterator[PrivateRedis]:
    """The server, up at the start of the test and again (restarted if needed) after it."""
    if not server.is_up():
        server.start()
    yield server
    server.drop_snapshot()
    if not server.is_up():
        server.start()
    with server.client() as client:
        client.flushall()


def database(server: PrivateRedis, index_name: str) -> RedisDatabaseConfig:
    return RedisDatabaseConfig(
        provider="redis",
        connection_string=SecretStr(server.url),
        index_name=index_name,
        vector_algorithm="FLAT",
    )


def docs_tool_config(data_dir: object, database: RedisDatabaseConfig) -> VectorStoreToolConfig:
    """The vectorstore tool ``kb`` over the test data's ``docs`` folder, in ``database``."""
    return VectorStoreToolConfig(
        type="vectorstore",
        name="kb",
        description="Project docs",
        source=str(data_dir / "docs"),  # type: ignore[operator]
        database=database,
    )


def open_store(server: PrivateRedis, embeddings: HashingEmbeddings) -> object:
    handle = create_vector_store_with_status(
        database(server, f"fault_{uuid.uuid4().hex[:8]}"), embeddings, fallback=False
    )
    assert handle.backend == "redis"
    return handle.store


def clean_run(*versions: int) -> tuple[corpus.State, MatrixVectorStore]:
    """What uninterrupted syncs of ``versions``, in order, into an empty store leave."""
    store = MatrixVectorStore(HashingEmbeddings())
    for version in versions:
        result = sync_documents(
            corpus.chunks(version),
            store,
            namespace=corpus.NAMESPACE,
            batch_size=BATCH,
            cleanup=True,
        )
        assert result.failed == 0
    return corpus.state(store), store


def by_index(snapshot: corpus.State, source: str) -> dict[int, dict[str, object]]:
    return {m["chunk_index"]: m for _, m in snapshot.values() if m["source_path"] == source}


def assert_no_secret(text: str) -> None:
    assert PASSWORD not in text


@pytest.mark.parametrize("snapshot", [False, True], ids=["restart-empty", "restart-persisted"])
def test_redis_killed_mid_sync_then_rerun_converges_to_a_clean_run(
    redis: PrivateRedis, caplog: pytest.LogCaptureFixture, *, snapshot: bool
) -> None:
    embeddings = HashingEmbeddings()
    store = open_store(redis, embeddings)
    first = sync_documents(
        corpus.chunks(1), store, namespace=corpus.NAMESPACE, batch_size=BATCH, cleanup=True
    )
    assert first.failed == 0
    assert corpus.state(store) == clean_run(1)[0]

    batches = 0

    def kill_after_third_batch(size: int) -> None:
        nonlocal batches
        batches += 1
        if batches == 3:
            redis.crash(snapshot=snapshot)

    with caplog.at_level(logging.DEBUG):
        faulted = sync_documents(
            corpus.chunks(2),
            store,
            namespace=corpus.NAMESPACE,
            batch_size=BATCH,
            cleanup=True,
            on_batch=kill_after_third_batch,
        )
    # returned (did not raise), with the failures counted and described on one line each
    assert faulted.failed > 0
    assert faulted.errors
    for line in faulted.errors:
        assert "\n" not in line
        assert_no_secret(line)
    assert any("Connection refused" in line for line in faulted.errors)
    assert_no_secret(caplog.text)

    redis.start()
    expected, reference = clean_run(2)
    after_restart = corpus.state(store)
    if not snapshot:
        assert after_restart == {}  # the script's Redis keeps nothing across a restart
    else:
        # persisted: part of version 2 is in; every file whose other chunks are not all in
        # still has its old file record (chunk 0 is written last), or none
        assert after_restart
        assert after_restart != expected
        for source in {meta["source_path"] for _, meta in after_restart.values()}:
            mine = by_index(after_restart, source)
            want = by_index(expected, source)
            head = mine.get(0)
            if head is not None and head["mtime"] == want.get(0, {}).get("mtime"):
                assert all(
                    i in mine and mine[i]["content_hash"] == m["content_hash"]
                    for i, m in want.items()
                ), f"{source}: new file record written before its chunks"

    rerun = sync_documents(
        corpus.chunks(2), store, namespace=corpus.NAMESPACE, batch_size=BATCH, cleanup=True
    )
    assert rerun.failed == 0
    assert rerun.errors == ()
    converged = corpus.state(store)
    # a clean single run of version 2: same ids, contents and hashes, nothing extra
    assert corpus.essentials(converged) == corpus.essentials(expected)
    # and every metadata value equals the fault-free history: after an empty restart, one
    # run of version 2; after a persisted one, version 1 then 2 (skipped chunks keep the
    # file stats of the run that wrote them, with or without a fault)
    assert converged == (clean_run(1, 2)[0] if snapshot else expected)
    with redis.client() as client:
        indexed = int(client.ft(store.config.index_name).info()["num_docs"])  # type: ignore[attr-defined]
    assert indexed == len(expected)  # no duplicate or orphan hash under the prefix
    for query in QUERIES:  # the vectors match the contents too
        got = store.similarity_search_with_relevance_scores(query, k=5)  # type: ignore[attr-defined]
        want = reference.similarity_search_with_relevance_scores(query, k=5)
        assert [d.id for d, _ in got] == [d.id for d, _ in want]
        assert [s for _, s in got] == pytest.approx([s for _, s in want], abs=1e-5)

    calls = embeddings.calls
    again = sync_documents(
        corpus.chunks(2), store, namespace=corpus.NAMESPACE, batch_size=BATCH, cleanup=True
    )
    assert (again.added, again.updated, again.deleted, again.failed) == (0, 0, 0, 0)
    assert embeddings.calls == calls


def test_redis_down_at_start_up_falls_back_to_memory_with_a_warning(
    redis: PrivateRedis, caplog: pytest.LogCaptureFixture, data_dir: object
) -> None:
    redis.crash()
    config = docs_tool_config(data_dir, database(redis, "fault_startup"))
    tool = VectorStoreTool(config, embeddings=HashingEmbeddings())
    with caplog.at_level(logging.WARNING):
        result = tool.initialize_sync()
    assert tool.backend == "in-memory"
    assert tool.fallback_reason is not None
    assert f"redis://:***@127.0.0.1:{PORT}" in tool.fallback_reason
    assert "falling back to the in-memory vector store" in caplog.text
    # the fallback store really works: every chunk is in, nothing failed (the embedding
    # cache is not left on the Redis that is down)
    assert result.failed == 0
    assert result.added > 0
    assert "Found" in tool.search_sync("token expiry")
    assert_no_secret(caplog.text)
    assert_no_secret(tool.fallback_reason)
    assert_no_secret(repr(config))


@pytest.mark.parametrize("snapshot", [False, True], ids=["restart-empty", "restart-persisted"])
def test_redis_restarted_under_a_running_tool(
    redis: PrivateRedis,
    caplog: pytest.LogCaptureFixture,
    data_dir: object,
    *,
    snapshot: bool,
) -> None:
    config = docs_tool_config(data_dir, database(redis, f"fault_tool_{uuid.uuid4().hex[:6]}"))
    tool = VectorStoreTool(config, embeddings=HashingEmbeddings())
    tool.initialize_sync()
    assert tool.backend == "redis"
    before = tool.search_sync("how do I revoke a token")
    assert before.startswith("Found")

    redis.crash(snapshot=snapshot)
    with caplog.at_level(logging.WARNING), pytest.raises(RuntimeError) as down:
        tool.search_sync("how do I revoke a token")  # documented: RuntimeError with the cause
    message = str(down.value)
    assert message.startswith("Search failed: ")
    assert "\n" not in message
    assert_no_secret(message)
    assert_no_secret(caplog.text)

    redis.start()
    # the same tool reconnects: the next query succeeds
    after = tool.search_sync("how do I revoke a token")
    if snapshot:
        assert after == before
    else:
        assert after.startswith("No relevant results")  # the restart lost the data
        rerun = tool.initialize_sync()  # re-running ingestion repairs it
        assert rerun.failed == 0
        assert rerun.added > 0
        assert tool.search_sync("how do I revoke a token") == before


@pytest.mark.parametrize("strategy", ["native", "fallback"])
def test_a_hybrid_tool_whose_redis_went_away_fails_rather_than_finding_nothing(
    redis: PrivateRedis, data_dir: object, strategy: str
) -> None:
    """Only the in-process exact leg answers; it found nothing: not "No relevant results"."""
    config = HierarchicalDocumentToolConfig(
        type="hierarchical_document",
        name="kb",
        source=str(data_dir / "docs"),  # type: ignore[operator]
        search_strategy=strategy,
        database=database(redis, f"fault_tool_{uuid.uuid4().hex[:6]}"),
        keyword_index={"provider": "redis"},
    )
    tool = HierarchicalDocumentTool(config, embeddings=HashingEmbeddings())
    tool.initialize_sync()
    assert (tool.backend, tool.search_strategy) == ("redis", strategy)
    assert tool.search_sync("how do I revoke a token").startswith("Found")

    redis.crash(snapshot=True)
    for search in (tool.search_sync, lambda q: asyncio.run(tool.search(q))):
        with pytest.raises(RuntimeError, match=r"^Search failed: ") as down:
            search("how do I revoke a token")
        assert "\n" not in str(down.value)
        assert_no_secret(str(down.value))


@pytest.mark.parametrize("snapshot", [False, True], ids=["restart-empty", "restart-persisted"])
def test_redis_gone_mid_ingest_is_one_line_and_the_rerun_converges(
    redis: PrivateRedis, data_dir: object, *, snapshot: bool
) -> None:
    redis_db = database(redis, f"fault_tool_{uuid.uuid4().hex[:6]}")
    config = docs_tool_config(data_dir, redis_db.model_copy(update={"fallback_to_memory": False}))
    tool = VectorStoreTool(config, embeddings=HashingEmbeddings())
    with pytest.raises(BackendUnavailableError) as gone:
        tool.initialize_sync(on_progress=crash_after_files(lambda: redis.crash(snapshot=snapshot)))
    message = str(gone.value)
    assert message.startswith(f"redis redis://:***@127.0.0.1:{PORT}")
    assert "became unavailable" in message
    assert "\n" not in message
    assert_no_secret(message)
    redis.start()
    rerun = VectorStoreTool(config, embeddings=HashingEmbeddings())
    result = rerun.initialize_sync()
    assert result.failed == 0
    assert result.added + result.skipped == rerun.document_count > 0
    assert rerun.initialize_sync().skipped == rerun.document_count  # converged


def test_documents_keep_ids_across_a_restart(redis: PrivateRedis) -> None:
    """Data that survives a restart (persisted) reads back unchanged, by id."""
    store = open_store(redis, HashingEmbeddings())
    docs = [
        Document(id=f"id-{i}", page_content=f"chunk {i}", metadata={"namespace": "n", "i": i})
        for i in range(5)
    ]
    store.add_documents(docs)  # type: ignore[attr-defined]
    redis.crash(snapshot=True)
    redis.start()
    assert store.get_by_ids([d.id for d in docs]) == docs  # type: ignore[attr-defined]
