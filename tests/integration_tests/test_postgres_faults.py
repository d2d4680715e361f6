"""Reliability on a real Postgres: crashed mid-sync, restarted under a running tool, down at
start-up. A private server (POSTGRES_URL's port + 4) is started, crashed (immediate shutdown:
no checkpoint, crash recovery on restart) and restarted with scripts/postgres.sh; the shared
server at POSTGRES_URL is never touched. A replica killed mid-search and a shard down are in
test_postgres_scaling.py."""

from __future__ import annotations

import asyncio
import logging
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import pytest

from langchain_holodeck.backends import BackendUnavailableError
from langchain_holodeck.config import HierarchicalDocumentToolConfig, VectorStoreToolConfig
from langchain_holodeck.sync import sync_documents
from langchain_holodeck.tools import HierarchicalDocumentTool, VectorStoreTool
from langchain_holodeck.vectorstores import MatrixVectorStore
from langchain_holodeck.vectorstores.postgres import PostgresVectorStore
from tests.helpers import HashingEmbeddings, crash_after_files, postgres_url_or_skip
from tests.reliability import corpus

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "postgres.sh"
BATCH = 8
QUERIES = ["warp core diagnostic", "replicator tea console", "Manual 7 Part 3"]


class PrivatePostgres:
    """One server on ``port`` for this module: start, crash, start again."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.url = f"postgresql://postgres@127.0.0.1:{port}/postgres"

    def run(self, command: str) -> None:
        subprocess.run(
            ["bash", str(SCRIPT), command, str(self.port)],
            capture_output=True,
            check=True,
            timeout=180,
        )

    def start(self) -> None:
        self.run("start")

    def crash(self) -> None:
        self.run("crash")


@pytest.fixture(scope="module")
def server() -> Iterator[PrivatePostgres]:
    port = (urlsplit(postgres_url_or_skip()).port or 5432) + 4
    private = PrivatePostgres(port)
    private.start()
    yield private
    private.run("stop")


@pytest.fixture
def table(server: PrivatePostgres) -> str:
    server.start()
    return f"fault_{uuid.uuid4().hex[:8]}"


def clean_run(*versions: int) -> tuple[corpus.State, MatrixVectorStore]:
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


def test_crashed_mid_sync_then_rerun_converges_to_a_clean_run(
    server: PrivatePostgres, table: str
) -> None:
    embeddings = HashingEmbeddings()
    store = PostgresVectorStore(embeddings, connection_string=server.url, table_name=table)
    first = sync_documents(
        corpus.chunks(1), store, namespace=corpus.NAMESPACE, batch_size=BATCH, cleanup=True
    )
    assert first.failed == 0
    batches = 0

    def crash_after_first_batch(size: int) -> None:
        nonlocal batches
        batches += 1
        if batches == 1:
            server.crash()

    faulted = sync_documents(
        corpus.chunks(2),
        store,
        namespace=corpus.NAMESPACE,
        batch_size=BATCH,
        cleanup=True,
        on_batch=crash_after_first_batch,
    )
    assert faulted.failed > 0  # returned, with the failures counted
    assert faulted.errors
    assert all("\n" not in line for line in faulted.errors)

    server.start()  # crash recovery: committed batches are there, nothing half-written
    rerun = sync_documents(
        corpus.chunks(2), store, namespace=corpus.NAMESPACE, batch_size=BATCH, cleanup=True
    )
    assert (rerun.failed, rerun.errors) == (0, ())
    expected, reference = clean_run(2)
    converged = corpus.state(store)
    assert corpus.essentials(converged) == corpus.essentials(expected)
    with psycopg.connect(server.url) as conn:  # no duplicate, no orphan row or posting
        rows = conn.execute(f"SELECT count(*), count(DISTINCT id) FROM {table}").fetchone()
        orphans = conn.execute(
            f"SELECT count(*) FROM {table}_terms p WHERE NOT EXISTS "
            f"(SELECT 1 FROM {table} t WHERE t.id = p.id)"
        ).fetchone()
    assert rows == (len(expected), len(expected))
    assert orphans == (0,)
    for query in QUERIES:
        got = store.similarity_search_with_relevance_scores(query, k=5)
        want = reference.similarity_search_with_relevance_scores(query, k=5)
        assert [s for _, s in got] == pytest.approx([s for _, s in want], abs=1e-5)
    calls = embeddings.calls
    again = sync_documents(
        corpus.chunks(2), store, namespace=corpus.NAMESPACE, batch_size=BATCH, cleanup=True
    )
    assert (again.added, again.updated, again.deleted, again.failed) == (0, 0, 0, 0)
    assert embeddings.calls == calls
    store.close()


def tool_config(url: str, table: str, data_dir: Path, **database: object) -> VectorStoreToolConfig:
    return VectorStoreToolConfig.model_validate(
        {
            "type": "vectorstore",
            "name": "kb",
            "description": "Project docs",
            "source": str(data_dir / "docs"),
            "database": {
                "provider": "postgres",
                "connection_string": url,
                "table_name": table,
                **database,
            },
        }
    )


def test_restarted_under_a_running_tool(
    server: PrivatePostgres, table: str, data_dir: Path
) -> None:
    tool = VectorStoreTool(tool_config(server.url, table, data_dir), embeddings=HashingEmbeddings())
    tool.initialize_sync()
    assert tool.backend == "postgres"
    before = tool.search_sync("how do I revoke a token")
    assert before.startswith("Found")
    server.crash()
    with pytest.raises(RuntimeError, match=r"^Search failed: ") as down:
        tool.search_sync("how do I revoke a token")
    assert "\n" not in str(down.value)
    server.start()
    assert tool.search_sync("how do I revoke a token") == before  # the same tool reconnects


@pytest.mark.parametrize("strategy", ["native", "fallback"])
def test_a_hybrid_tool_whose_server_went_away_fails_rather_than_finding_nothing(
    server: PrivatePostgres, table: str, data_dir: Path, strategy: str
) -> None:
    """Only the in-process exact leg answers; it found nothing: not "No relevant results"."""
    config = HierarchicalDocumentToolConfig.model_validate(
        {
            "type": "hierarchical_document",
            "name": "kb",
            "source": str(data_dir / "docs"),
            "search_strategy": strategy,
            "database": tool_config(server.url, table, data_dir).database,
        }
    )
    tool = HierarchicalDocumentTool(config, embeddings=HashingEmbeddings())
    tool.initialize_sync()
    assert tool.search_strategy == strategy
    before = tool.search_sync("how do I revoke a token")
    assert before.startswith("Found")
    server.crash()
    for search in (tool.search_sync, lambda q: asyncio.run(tool.search(q))):
        with pytest.raises(RuntimeError, match=r"^Search failed: .*127\.0\.0\.1") as down:
            search("how do I revoke a token")
        assert "\n" not in str(down.value)
    server.start()
    assert tool.search_sync("how do I revoke a token") == before


def test_server_gone_mid_ingest_is_one_line_and_the_rerun_converges(
    server: PrivatePostgres, table: str, data_dir: Path
) -> None:
    config = tool_config(server.url, table, data_dir, fallback_to_memory=False)
    tool = VectorStoreTool(config, embeddings=HashingEmbeddings())

    with pytest.raises(BackendUnavailableError) as gone:
        tool.initialize_sync(on_progress=crash_after_files(server.crash))
    message = str(gone.value)
    assert message.startswith(f"postgres postgresql://postgres@127.0.0.1:{server.port}")
    assert "became unavailable" in message
    assert "\n" not in message
    server.start()
    rerun = VectorStoreTool(config, embeddings=HashingEmbeddings())
    result = rerun.initialize_sync()
    assert result.failed == 0
    assert result.added + result.skipped == rerun.document_count > 0
    assert rerun.initialize_sync().skipped == rerun.document_count  # converged


def test_down_at_start_up_falls_back_or_fails_per_config(
    server: PrivatePostgres, table: str, data_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    server.crash()
    secret_url = server.url.replace("postgres@", "postgres:hunter2-secret@")
    tool = VectorStoreTool(tool_config(secret_url, table, data_dir), embeddings=HashingEmbeddings())
    with caplog.at_level(logging.WARNING):
        result = tool.initialize_sync()
    assert tool.backend == "in-memory"
    assert f"postgresql://postgres:***@127.0.0.1:{server.port}" in str(tool.fallback_reason)
    assert "falling back to the in-memory vector store" in caplog.text
    assert "hunter2-secret" not in caplog.text
    assert (result.failed, result.added > 0) == (0, True)
    assert "Found" in tool.search_sync("token expiry")
    strict = VectorStoreTool(
        tool_config(secret_url, table, data_dir, fallback_to_memory=False),
        embeddings=HashingEmbeddings(),
    )
    with pytest.raises(
        BackendUnavailableError, match=r"PostgreSQL at postgresql://postgres:\*\*\*@"
    ):
        strict.initialize_sync()
