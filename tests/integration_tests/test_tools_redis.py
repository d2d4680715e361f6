"""VectorStoreTool and HierarchicalDocumentTool end to end on Redis Stack (REDIS_URL)."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.documents import Document

from langchain_holodeck.config import HierarchicalDocumentToolConfig, VectorStoreToolConfig
from langchain_holodeck.keyword_index import RedisKeywordIndex
from langchain_holodeck.retrievers import HybridRetriever
from langchain_holodeck.tools import HierarchicalDocumentTool, VectorStoreTool
from langchain_holodeck.vectorstores import scan_documents
from tests.helpers import DATA_DIR, HashingEmbeddings

pytestmark = pytest.mark.redis

HEADER = re.compile(r"^\[(\d+)\] Score: (\d\.\d+) \| Source: (\S+)", re.M)
CLOSED_PORT_URL = "redis://127.0.0.1:1"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    shutil.copytree(DATA_DIR / "docs", tmp_path / "docs")
    shutil.copytree(DATA_DIR / "legal", tmp_path / "legal")
    return tmp_path


@pytest.fixture
def index(redis_url: str, redis_index_name: str) -> Iterator[str]:
    """A fresh index; its embedding caches (``holodeck:embcache:<index>:...``) go with it."""
    yield redis_index_name
    import redis

    client = redis.Redis.from_url(redis_url)
    try:
        for key in client.scan_iter(f"holodeck:embcache:{redis_index_name}*"):
            client.delete(key)
    finally:
        client.close()


def database(url: str, index_name: str) -> dict[str, Any]:
    return {"provider": "redis", "connection_string": url, "index_name": index_name}


def vector_tool(
    root: Path, url: str, index_name: str, embeddings: HashingEmbeddings, **overrides: Any
) -> VectorStoreTool:
    fields: dict[str, Any] = {
        "type": "vectorstore",
        "name": index_name,
        "description": "Search the holodeck documentation.",
        "source": "docs",
        "top_k": 3,
        "database": database(url, index_name),
    }
    config = VectorStoreToolConfig(**{**fields, **overrides})
    return VectorStoreTool(
        config, embeddings=embeddings, project_dir=root, home_dir=root, base_dir=root
    )


def hierarchical_tool(
    root: Path, url: str, index_name: str, embeddings: HashingEmbeddings, **overrides: Any
) -> HierarchicalDocumentTool:
    fields: dict[str, Any] = {
        "type": "hierarchical_document",
        "name": f"{index_name}_legal",
        "description": "Search the Holodeck Safety Act.",
        "source": "legal",
        "top_k": 3,
        "database": database(url, index_name),
        "keyword_index": {"provider": "redis"},
    }
    config = HierarchicalDocumentToolConfig(**{**fields, **overrides})
    return HierarchicalDocumentTool(
        config, embeddings=embeddings, project_dir=root, home_dir=root, base_dir=root
    )


def stored_chunks(tool: VectorStoreTool | HierarchicalDocumentTool) -> list[Document]:
    """What the tool's store holds in its namespace, read back from Redis."""
    retriever = tool.as_retriever()
    assert isinstance(retriever, HybridRetriever)
    return list(scan_documents(retriever.vector_store, namespace=tool.namespace))


def bump_mtime(path: Path) -> None:
    """Edits in a test can land within the filesystem's timestamp granularity: move it."""
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 2_000_000_000))


async def test_vector_store_tool_ingests_and_searches_on_redis(
    root: Path, redis_url: str, index: str, embeddings: HashingEmbeddings
) -> None:
    tool = vector_tool(root, redis_url, index, embeddings)
    result = await tool.initialize()

    assert tool.backend == "redis"
    assert tool.fallback_reason is None
    assert (result.added, result.failed) == (5, 0)
    output = await tool.search("which endpoint accepts GET and POST requests for users")
    assert output.startswith("Found 3 result(s):\n\n[1] Score: ")
    headers = HEADER.findall(output)
    assert [int(rank) for rank, _, _ in headers] == [1, 2, 3]
    scores = [float(score) for _, score, _ in headers]
    assert scores == sorted(scores, reverse=True)
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert headers[0][2] == "docs/api.md"
    assert "The API endpoint /users accepts GET and POST requests" in output


async def test_reingest_of_unchanged_source_adds_and_embeds_nothing(
    root: Path, redis_url: str, index: str, embeddings: HashingEmbeddings
) -> None:
    first = await vector_tool(root, redis_url, index, embeddings).initialize()
    calls = embeddings.calls

    # A new instance: the state comes from Redis alone, as after a process restart.
    again = vector_tool(root, redis_url, index, embeddings)
    second = await again.initialize()

    assert (second.added, second.updated, second.skipped) == (0, 0, first.added)
    assert embeddings.calls == calls
    assert again.document_count == first.added


async def test_modified_file_is_updated_in_place(
    root: Path, redis_url: str, index: str, embeddings: HashingEmbeddings
) -> None:
    tool = vector_tool(root, redis_url, index, embeddings)
    await tool.initialize()
    api = root / "docs" / "api.md"
    api.write_text(
        "# API\n\nThe replicator endpoint /recipes serves PATCH requests only.\n", encoding="utf-8"
    )
    bump_mtime(api)
    before = embeddings.texts_embedded

    result = await tool.initialize()

    assert (result.added, result.updated, result.skipped) == (0, 1, 4)
    assert embeddings.texts_embedded - before == 1
    output = await tool.search("replicator recipes PATCH")
    assert HEADER.findall(output)[0][2] == "docs/api.md"
    assert "/recipes serves PATCH" in output
    assert "/users accepts GET" not in output


async def test_force_ingest_reembeds_everything_despite_the_cache(
    root: Path, redis_url: str, index: str, embeddings: HashingEmbeddings
) -> None:
    tool = vector_tool(root, redis_url, index, embeddings)
    first = await tool.initialize()
    before = embeddings.texts_embedded

    result = await tool.initialize(force_ingest=True)

    assert (result.added, result.updated, result.skipped) == (0, first.added, 0)
    assert embeddings.texts_embedded - before == first.added


async def test_deleted_file_is_removed_from_redis(
    root: Path, redis_url: str, index: str, embeddings: HashingEmbeddings
) -> None:
    tool = vector_tool(root, redis_url, index, embeddings)
    await tool.initialize()
    (root / "docs" / "auth.md").unlink()

    result = await tool.initialize()

    assert result.deleted == 1
    sources = {d.metadata["source_path"] for d in stored_chunks(tool)}
    assert "docs/auth.md" not in sources
    assert len(sources) == 4


async def test_two_tools_sharing_an_index_stay_isolated_by_namespace(
    root: Path, redis_url: str, index: str, embeddings: HashingEmbeddings
) -> None:
    docs = vector_tool(root, redis_url, index, embeddings)
    legal = vector_tool(
        root, redis_url, index, embeddings, name=f"{index}_legal_kb", source="legal"
    )
    await docs.initialize()
    legal_first = await legal.initialize()
    (root / "docs" / "auth.md").unlink()  # docs' cleanup must not reach legal's chunks

    await docs.initialize()

    docs_out = await docs.search("holodeck safety act section requirements")
    legal_out = await legal.search("holodeck safety act section requirements")
    assert {src for _, _, src in HEADER.findall(docs_out)} <= {
        "docs/api.md",
        "docs/crew.json",
        "docs/guide/shifts.txt",
        "docs/maintenance.csv",
    }
    assert {src for _, _, src in HEADER.findall(legal_out)} == {"legal/holodeck_act.md"}
    stored_legal = stored_chunks(legal)
    assert len(stored_legal) == legal_first.added


async def test_hierarchical_tool_with_redis_keywords_end_to_end(
    root: Path, redis_url: str, index: str, embeddings: HashingEmbeddings
) -> None:
    # the fallback strategy: RediSearch BM25 as a separate leg (native: test_redis_native.py)
    tool = hierarchical_tool(root, redis_url, index, embeddings, search_strategy="fallback")
    first = await tool.initialize()
    assert tool.backend == "redis"
    assert tool.search_strategy == "fallback"
    assert first.added > 4
    retriever = tool.as_retriever()
    assert isinstance(retriever, HybridRetriever)
    assert isinstance(retriever.keyword_index, RedisKeywordIndex)

    output = await tool.search("Section 203(a)(1)")
    first_block = output.split("\n\n[2]")[0]
    assert first_block.startswith("Found 3 result(s):\n\n[1] Score: ")
    assert "Source: legal/holodeck_act.md" in first_block
    assert "203(a)(1)" in first_block

    docs = await tool.as_retriever().ainvoke("arch controls terminate program", k=3)
    assert docs
    assert all(d.metadata["namespace"] == tool.namespace for d in docs)
    assert any(d.metadata["keyword_score"] is not None for d in docs)

    calls = embeddings.calls
    again = await hierarchical_tool(root, redis_url, index, embeddings).initialize()
    assert (again.added, again.updated, again.skipped) == (0, 0, first.added)
    assert embeddings.calls == calls


async def test_hierarchical_tool_picks_up_an_edit_and_force_ingest(
    root: Path, redis_url: str, index: str, embeddings: HashingEmbeddings
) -> None:
    tool = hierarchical_tool(root, redis_url, index, embeddings)
    first = await tool.initialize()
    act = root / "legal" / "holodeck_act.md"
    act.write_text(
        act.read_text(encoding="utf-8") + "\n\n## Section 901. Quasar drills\n\n"
        "Every crew member shall attend the quasar drill.\n",
        encoding="utf-8",
    )
    bump_mtime(act)

    edited = await tool.initialize()
    assert edited.added >= 1
    assert edited.failed == 0
    output = await tool.search("quasar drill")
    assert "quasar drill" in output.split("\n\n[2]")[0]

    before = embeddings.texts_embedded
    forced = await tool.initialize(force_ingest=True)
    total = first.added + edited.added - edited.deleted
    assert (forced.added, forced.updated) == (0, total)
    assert embeddings.texts_embedded - before == total


async def test_unreachable_redis_falls_back_to_memory_and_still_ingests(
    root: Path, embeddings: HashingEmbeddings
) -> None:
    """Needs no server: the closed port is the point. The cache must not stay on Redis."""
    tool = vector_tool(root, CLOSED_PORT_URL, "holodeck_fallback", embeddings)

    result = await tool.initialize()

    assert tool.backend == "in-memory"
    assert tool.fallback_reason is not None
    assert "127.0.0.1:1" in tool.fallback_reason
    assert (result.added, result.failed) == (5, 0)
    output = await tool.search("which endpoint accepts GET and POST requests for users")
    assert HEADER.findall(output)[0][2] == "docs/api.md"


async def test_unreachable_redis_hierarchical_tool_falls_back_to_bm25(
    root: Path, embeddings: HashingEmbeddings
) -> None:
    tool = hierarchical_tool(root, CLOSED_PORT_URL, "holodeck_fallback", embeddings)

    result = await tool.initialize()

    assert tool.backend == "in-memory"
    assert tool.fallback_reason is not None
    assert result.added > 4
    assert result.failed == 0
    output = await tool.search("Section 203(a)(1)")
    assert "203(a)(1)" in output.split("\n\n[2]")[0]
