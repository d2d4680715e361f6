"""A new embedding dimension on Redis: the index schema is detected, and rebuilt by force_ingest."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import redis

from langchain_holodeck.config import HierarchicalDocumentToolConfig, VectorStoreToolConfig
from langchain_holodeck.errors import EmbeddingModelMismatchError
from langchain_holodeck.tools import HierarchicalDocumentTool, VectorStoreTool
from tests.helpers import DATA_DIR, HashingEmbeddings

pytestmark = pytest.mark.redis


@pytest.fixture
def root(tmp_path: Path) -> Path:
    shutil.copytree(DATA_DIR / "docs", tmp_path / "docs")
    shutil.copytree(DATA_DIR / "legal", tmp_path / "legal")
    return tmp_path


def index_dims(url: str, index_name: str) -> int:
    client = redis.Redis.from_url(url, decode_responses=True)
    try:
        info = client.ft(index_name).info()
    finally:
        client.close()
    (field,) = [f for f in info["attributes"] if "embedding" in f]
    return int(field[field.index("dim") + 1])


def tool_fields(index_name: str, url: str, **fields: Any) -> dict[str, Any]:
    database = {"provider": "redis", "connection_string": url, "index_name": index_name}
    return {"name": index_name, "top_k": 3, "database": database, **fields}


def vector_tool(root: Path, url: str, index_name: str, size: int) -> VectorStoreTool:
    config = VectorStoreToolConfig(
        type="vectorstore", source="docs", **tool_fields(index_name, url)
    )
    return VectorStoreTool(
        config, embeddings=HashingEmbeddings(size), project_dir=root, home_dir=root, base_dir=root
    )


async def test_vector_tool_refuses_then_rebuilds_the_index_schema(
    root: Path, redis_url: str, redis_index_name: str
) -> None:
    first = await vector_tool(root, redis_url, redis_index_name, 64).initialize()
    assert index_dims(redis_url, redis_index_name) == 64
    changed = vector_tool(root, redis_url, redis_index_name, 32)
    with pytest.raises(EmbeddingModelMismatchError, match=r"holds 64-.*force_ingest=True"):
        await changed.initialize()
    result = await changed.initialize(True)
    assert (result.added + result.updated, result.failed) == (first.added, 0)
    assert index_dims(redis_url, redis_index_name) == 32
    output = await changed.search("which endpoint accepts GET and POST requests for users")
    assert output.startswith("Found 3 result(s)")  # no "query blob size 128 != 256"
    again = await vector_tool(root, redis_url, redis_index_name, 32).initialize()
    assert again.skipped == first.added


async def test_a_query_vector_of_another_dimension_names_the_fix(
    root: Path, redis_url: str, redis_index_name: str
) -> None:
    tool = vector_tool(root, redis_url, redis_index_name, 64)
    await tool.initialize()
    store = tool.as_retriever().vector_store  # type: ignore[attr-defined]  # a HybridRetriever
    with pytest.raises(ValueError, match=r"dimension 32 but .* holds dimension 64.*force_ingest"):
        store.similarity_search_by_vector([0.1] * 32, k=1)


async def test_hierarchical_tool_with_redis_keywords_recovers(
    root: Path, redis_url: str, redis_index_name: str
) -> None:
    def tool(size: int) -> HierarchicalDocumentTool:
        fields = tool_fields(redis_index_name, redis_url, keyword_index={"provider": "redis"})
        config = HierarchicalDocumentToolConfig(  # fallback: both legs report their ranks
            type="hierarchical_document", source="legal", search_strategy="fallback", **fields
        )
        return HierarchicalDocumentTool(
            config,
            embeddings=HashingEmbeddings(size),
            project_dir=root,
            home_dir=root,
            base_dir=root,
        )

    await tool(64).initialize()
    changed = tool(16)
    with pytest.raises(EmbeddingModelMismatchError, match="force_ingest=True"):
        await changed.initialize()
    assert (await changed.initialize(True)).failed == 0
    docs = await changed.as_retriever().ainvoke("Section 203(a)(1)")
    assert docs[0].metadata["section_id"] == "203(a)(1)"
    assert docs[0].metadata["semantic_rank"] is not None
    assert docs[0].metadata["keyword_rank"] is not None


async def test_an_index_shared_with_another_corpus_is_not_rebuilt(
    root: Path, redis_url: str, redis_index_name: str
) -> None:
    await vector_tool(root, redis_url, redis_index_name, 64).initialize()
    other = VectorStoreToolConfig(
        type="vectorstore", source="legal", **tool_fields(redis_index_name, redis_url)
    ).model_copy(update={"name": "other_corpus"})
    newcomer = VectorStoreTool(
        other, embeddings=HashingEmbeddings(32), project_dir=root, home_dir=root, base_dir=root
    )
    with pytest.raises(EmbeddingModelMismatchError, match="force_ingest=True"):
        await newcomer.initialize()
    with pytest.raises(EmbeddingModelMismatchError, match=r"also holds chunks of '"):
        await newcomer.initialize(True)
    assert index_dims(redis_url, redis_index_name) == 64  # the first corpus is untouched
    first = vector_tool(root, redis_url, redis_index_name, 64)
    assert (await first.initialize()).added == 0
    assert (await first.search("GET and POST requests")).startswith("Found 3 result(s)")
