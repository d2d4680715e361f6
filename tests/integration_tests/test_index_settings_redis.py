"""A changed distance_metric or vector_algorithm on Redis: refused, then applied by force_ingest.

An existing RediSearch index keeps the settings it was created with; a configuration that
changes them is treated as a dimension change is, never silently ignored.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import redis

from langchain_holodeck.config import VectorStoreToolConfig
from langchain_holodeck.errors import EmbeddingModelMismatchError
from langchain_holodeck.tools import VectorStoreTool
from langchain_holodeck.vectorstores import create_vector_store
from tests.helpers import DATA_DIR, HashingEmbeddings

pytestmark = pytest.mark.redis


@pytest.fixture
def root(tmp_path: Path) -> Path:
    shutil.copytree(DATA_DIR / "docs", tmp_path / "docs")
    shutil.copytree(DATA_DIR / "legal", tmp_path / "legal")
    return tmp_path


def vector_field(url: str, index_name: str) -> dict[str, Any]:
    """The index's vector field as ``FT.INFO`` reports it."""
    client = redis.Redis.from_url(url, decode_responses=True)
    try:
        info = client.ft(index_name).info()
    finally:
        client.close()
    (field,) = [f for f in info["attributes"] if "embedding" in f]
    return dict(zip(field[::2], field[1::2], strict=False))


def database(url: str, index_name: str, **settings: str) -> dict[str, Any]:
    return {"provider": "redis", "connection_string": url, "index_name": index_name, **settings}


def vector_tool(
    root: Path, url: str, index_name: str, *, source: str = "docs", name: str = "", **settings: str
) -> VectorStoreTool:
    config = VectorStoreToolConfig(
        type="vectorstore",
        name=name or index_name,
        description="d",
        source=source,
        top_k=3,
        database=database(url, index_name, **settings),
    )
    return VectorStoreTool(
        config, embeddings=HashingEmbeddings(), project_dir=root, home_dir=root, base_dir=root
    )


@pytest.mark.parametrize(
    ("setting", "value", "reported"),
    [
        ("distance_metric", "IP", "distance_metric"),
        ("distance_metric", "L2", "distance_metric"),
        ("vector_algorithm", "HNSW", "algorithm"),
    ],
)
async def test_a_changed_setting_is_refused_then_applied_by_force_ingest(
    root: Path, redis_url: str, redis_index_name: str, setting: str, value: str, reported: str
) -> None:
    first = vector_tool(
        root, redis_url, redis_index_name, vector_algorithm="FLAT", distance_metric="COSINE"
    )
    created = await first.initialize()
    field = vector_field(redis_url, redis_index_name)
    assert (field["algorithm"], field["distance_metric"]) == ("FLAT", "COSINE")
    settings = {"vector_algorithm": "FLAT", "distance_metric": "COSINE", setting: value}
    changed = vector_tool(root, redis_url, redis_index_name, **settings)
    stored = "FLAT" if setting == "vector_algorithm" else "COSINE"
    with pytest.raises(
        EmbeddingModelMismatchError,
        match=rf"created with {setting} {stored} but the configuration sets {setting} {value};"
        r".*force_ingest=True",
    ):
        await changed.initialize()
    assert vector_field(redis_url, redis_index_name)[reported] == stored  # untouched
    result = await changed.initialize(True)
    assert (result.added + result.updated, result.failed) == (created.added, 0)
    assert vector_field(redis_url, redis_index_name)[reported] == value
    output = await changed.search("which endpoint accepts GET and POST requests for users")
    assert output.startswith("Found 3 result(s)")
    again = await vector_tool(root, redis_url, redis_index_name, **settings).initialize()
    assert again.skipped == created.added


def test_a_store_opened_over_an_existing_index_scores_with_its_metric(
    redis_url: str, redis_index_name: str
) -> None:
    embeddings = HashingEmbeddings()
    create_vector_store(
        database(redis_url, redis_index_name, distance_metric="L2"), embeddings, fallback=False
    )
    reopened = create_vector_store(
        database(redis_url, redis_index_name, distance_metric="IP"), embeddings, fallback=False
    )
    assert reopened.distance_metric == "L2"  # type: ignore[attr-defined]  # a Redis store
    assert vector_field(redis_url, redis_index_name)["distance_metric"] == "L2"


async def test_an_index_shared_with_another_corpus_keeps_its_settings(
    root: Path, redis_url: str, redis_index_name: str
) -> None:
    await vector_tool(root, redis_url, redis_index_name).initialize()
    newcomer = vector_tool(
        root,
        redis_url,
        redis_index_name,
        source="legal",
        name="other_corpus",
        distance_metric="IP",
    )
    with pytest.raises(EmbeddingModelMismatchError, match="force_ingest=True"):
        await newcomer.initialize()
    with pytest.raises(EmbeddingModelMismatchError, match=r"also holds chunks of '"):
        await newcomer.initialize(True)
    assert vector_field(redis_url, redis_index_name)["distance_metric"] == "COSINE"
