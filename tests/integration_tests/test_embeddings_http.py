"""Embedding failures through the real OpenAI client, against a loopback embeddings server."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_openai import OpenAIEmbeddings

from langchain_holodeck.config import VectorStoreToolConfig
from langchain_holodeck.embeddings import resolve_embeddings
from langchain_holodeck.tools import VectorStoreTool
from tests.embedding_server import EmbeddingServer
from tests.helpers import DATA_DIR


@pytest.fixture
def server() -> Iterator[EmbeddingServer]:
    with EmbeddingServer() as srv:
        yield srv


def openai_embeddings(server: EmbeddingServer) -> OpenAIEmbeddings:
    return OpenAIEmbeddings(
        model="text-embedding-3-small",
        base_url=server.url,
        api_key="sk-test-not-a-key",  # type: ignore[arg-type]  # pydantic coerces to SecretStr
        max_retries=0,
        check_embedding_ctx_length=False,  # plain strings on the wire (no tiktoken download)
    )


def make_tool(source: Path, server: EmbeddingServer, tmp_path: Path) -> VectorStoreTool:
    config = VectorStoreToolConfig(type="vectorstore", name="kb", source=str(source), top_k=3)
    return VectorStoreTool(
        config, embeddings=openai_embeddings(server), project_dir=tmp_path, home_dir=tmp_path
    )


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    target = tmp_path / "docs"
    shutil.copytree(DATA_DIR / "docs", target)
    return target


async def test_embedding_api_down_at_initialize_fails_fast(
    server: EmbeddingServer, docs: Path, tmp_path: Path
) -> None:
    server.mode = "error_500"
    tool = make_tool(docs, server, tmp_path)
    with pytest.raises(
        RuntimeError,
        match=r"^Failed to generate embeddings: InternalServerError: Error code: 500 ",
    ):
        await tool.initialize()
    assert not tool.is_initialized
    assert server.requests  # the client really called the server


async def test_one_refused_batch_is_counted_and_the_rest_is_searchable(
    server: EmbeddingServer, tmp_path: Path
) -> None:
    corpus = tmp_path / "notes"
    corpus.mkdir()
    for n in range(60):  # one chunk each: a batch of 50, then a batch of 10
        marker = " POISON" if n == 59 else ""
        (corpus / f"note_{n:02}.txt").write_text(f"Holodeck note {n} about deck {n}.{marker}\n")
    server.mode, server.fail_on = "fail_on", "POISON"
    tool = make_tool(corpus, server, tmp_path)
    result = await tool.initialize()
    assert (result.added, result.failed) == (50, 10)
    assert "InternalServerError" in result.errors[0]
    assert "note_07.txt" in await tool.search("holodeck note 7 about deck 7")


def notes(tmp_path: Path, *, glitch: int | None = None) -> Path:
    """60 notes of one chunk each (a batch of 50, then one of 10); note ``glitch`` says GLITCH."""
    corpus = tmp_path / "notes"
    corpus.mkdir(exist_ok=True)
    for n in range(60):
        marker = " GLITCH" if n == glitch else ""
        (corpus / f"note_{n:02}.txt").write_text(f"Holodeck note {n} about deck {n}.{marker}\n")
    return corpus


async def test_a_nan_vector_is_refused_and_the_next_run_converges(
    server: EmbeddingServer, tmp_path: Path
) -> None:
    server.nan_on = "GLITCH"
    tool = make_tool(notes(tmp_path, glitch=59), server, tmp_path)
    result = await tool.initialize()
    assert (result.added, result.failed) == (50, 10)  # its batch, neither cached nor stored
    assert "a vector holding a non-finite number (nan)" in result.errors[0]
    assert "note_07.txt" in await tool.search("holodeck note 7 about deck 7")
    server.nan_on = None
    sent = server.texts_embedded()
    result = await tool.initialize()
    assert (result.added, result.skipped, result.failed) == (10, 50, 0)
    assert server.texts_embedded() - sent == 2  # the glitch again, and the width probe
    assert "note_59.txt" in await tool.search("holodeck note 59 about deck 59 GLITCH")
    assert (await tool.initialize()).skipped == 60


async def test_a_vector_of_another_width_is_refused_and_the_next_run_converges(
    server: EmbeddingServer, tmp_path: Path
) -> None:
    server.wide_on = "GLITCH"
    tool = make_tool(notes(tmp_path, glitch=59), server, tmp_path)
    result = await tool.initialize()
    assert (result.added, result.failed) == (50, 10)
    assert "a 35-dimensional vector where the others are 32-dimensional" in result.errors[0]
    server.wide_on = None
    result = await tool.initialize()
    assert (result.added, result.skipped, result.failed) == (10, 50, 0)
    assert (await tool.initialize()).skipped == 60


async def test_a_lone_vector_of_another_width_than_the_store_is_not_cached(
    server: EmbeddingServer, tmp_path: Path
) -> None:
    tool = make_tool(notes(tmp_path), server, tmp_path)
    assert (await tool.initialize()).added == 60
    changed = tmp_path / "notes" / "note_07.txt"  # one changed chunk: a request of its own
    changed.write_text("Holodeck note 7 about deck 7. GLITCH\n")
    server.wide_on = "GLITCH"
    result = await tool.initialize()
    assert (result.updated, result.failed) == (0, 1)
    assert "35-dimensional vector where the store's are 32-dimensional" in result.errors[0]
    server.wide_on = None
    result = await tool.initialize()
    assert (result.updated, result.failed) == (1, 0)


async def test_embedding_api_down_at_query_time(
    server: EmbeddingServer, docs: Path, tmp_path: Path
) -> None:
    tool = make_tool(docs, server, tmp_path)
    assert (await tool.initialize()).added > 0
    server.mode = "error_500"
    expected = r"^Failed to generate query embedding: InternalServerError: Error code: 500 "
    with pytest.raises(RuntimeError, match=expected):
        await tool.search("which endpoint accepts GET")
    with pytest.raises(RuntimeError, match=expected):
        tool.search_sync("which endpoint accepts GET")


@pytest.mark.redis
async def test_embedding_api_down_when_a_new_redis_index_needs_its_dimension(
    server: EmbeddingServer, docs: Path, tmp_path: Path, redis_url: str, redis_index_name: str
) -> None:
    server.mode = "error_500"
    database = {"provider": "redis", "connection_string": redis_url, "index_name": redis_index_name}
    config = VectorStoreToolConfig(
        type="vectorstore", name="kb", source=str(docs), top_k=3, database=database
    )
    tool = VectorStoreTool(
        config, embeddings=openai_embeddings(server), project_dir=tmp_path, home_dir=tmp_path
    )
    with pytest.raises(RuntimeError, match=r"^Failed to generate embeddings: InternalServerError"):
        await tool.initialize()
    assert not tool.is_initialized


async def test_the_timeout_bounds_the_whole_answer_of_a_trickling_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A server sending its answer one byte every 20 ms (a congested gateway): the openai
    client's timeout bounds each network read, so timeout=0.5 waited for the whole answer
    (~4 s here; 2.4 s for timeout=1 in a probe). It bounds the whole request now."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.delenv("OPENAI_API_BASE", raising=False)
    with EmbeddingServer(mode="trickle", default_dimensions=8) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        embeddings = resolve_embeddings("text-embedding-3-small", timeout=0.5)
        start = time.monotonic()
        with pytest.raises(TimeoutError, match=r"within its 0\.5 s timeout"):
            embeddings.embed_query("hello world")
        assert time.monotonic() - start < 1.5
        start = time.monotonic()
        with pytest.raises(TimeoutError, match=r"within its 0\.5 s timeout"):
            await embeddings.aembed_query("hello world")
        assert time.monotonic() - start < 1.5
        with pytest.raises(TimeoutError):  # a batch of documents too
            embeddings.embed_documents(["one", "two"])
