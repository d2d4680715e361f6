"""The saved BM25 index on a server store (Redis, PostgreSQL) follows the store.

The store keeps its chunks on the server; the in-process BM25 index (the keyword leg of the
``fallback`` strategy) is saved in the tool's store directory. It must be saved whenever it
changed, so an unchanged re-ingest neither warns nor rebuilds it, and a save made over one
store must never be taken for another's.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from langchain_holodeck.config import HierarchicalDocumentToolConfig
from langchain_holodeck.keyword_index import BM25KeywordIndex
from langchain_holodeck.tools import HierarchicalDocumentTool
from tests.helpers import HashingEmbeddings

STALE = "saved keyword index holds"


def write_files(source: Path, *numbers: int) -> None:
    source.mkdir(exist_ok=True)
    for n in numbers:
        text = f"# Part {n}\n\nThe warp core note number {n}.\n\n## Detail\n\nShift rota {n}.\n"
        (source / f"f{n}.md").write_text(text, encoding="utf-8")


def redis_database(redis_url: str, redis_index_name: str) -> dict[str, Any]:
    return {"provider": "redis", "connection_string": redis_url, "index_name": redis_index_name}


def postgres_database(postgres_url: str, postgres_table: str) -> dict[str, Any]:
    return {"provider": "postgres", "connection_string": postgres_url, "table_name": postgres_table}


def tool(root: Path, database: dict[str, Any]) -> HierarchicalDocumentTool:
    config = HierarchicalDocumentToolConfig(
        type="hierarchical_document",
        name="fdocs",
        description="d",
        source="corp",
        database=database,
    )
    return HierarchicalDocumentTool(
        config,
        embeddings=HashingEmbeddings(),
        project_dir=root,
        home_dir=root,
        base_dir=root,
        store_dir=root / ".holodeck" / "store" / "fdocs",
    )


def rebuilds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the BM25 index's rebuilds from the store."""
    calls: list[int] = []
    original = BM25KeywordIndex.rebuild_from_store

    def counted(self: BM25KeywordIndex, *args: Any, **kwargs: Any) -> int:
        calls.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(BM25KeywordIndex, "rebuild_from_store", counted)
    return calls


@pytest.fixture(
    params=[
        pytest.param("redis", marks=pytest.mark.redis),
        pytest.param("postgres", marks=pytest.mark.postgres),
    ]
)
def database(request: pytest.FixtureRequest) -> dict[str, Any]:
    if request.param == "redis":
        return redis_database(
            request.getfixturevalue("redis_url"), request.getfixturevalue("redis_index_name")
        )
    return postgres_database(
        request.getfixturevalue("postgres_url"), request.getfixturevalue("postgres_table")
    )


def test_an_unchanged_reingest_after_an_added_file_neither_warns_nor_rebuilds(
    tmp_path: Path,
    database: dict[str, Any],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    write_files(tmp_path / "corp", 1, 2, 3)
    tool(tmp_path, database).initialize_sync()
    write_files(tmp_path / "corp", 4)
    assert tool(tmp_path, database).initialize_sync().added > 0
    calls = rebuilds(monkeypatch)
    with caplog.at_level(logging.WARNING):
        again = tool(tmp_path, database)
        result = again.initialize_sync()
    assert (result.added, result.updated, result.deleted) == (0, 0, 0)
    assert STALE not in caplog.text
    assert calls == []
    assert len(again._keywords) == result.skipped  # type: ignore[arg-type]  # a BM25 index


@pytest.mark.redis
@pytest.mark.postgres
def test_a_save_made_over_another_store_is_rebuilt_quietly(
    tmp_path: Path,
    redis_url: str,
    redis_index_name: str,
    postgres_url: str,
    postgres_table: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    write_files(tmp_path / "corp", 1, 2)
    redis = redis_database(redis_url, redis_index_name)
    postgres = postgres_database(postgres_url, postgres_table)
    tool(tmp_path, redis).initialize_sync()
    write_files(tmp_path / "corp", 3)  # the Redis save will not hold what Postgres does
    with caplog.at_level(logging.WARNING):
        on_postgres = tool(tmp_path, postgres)
        on_postgres.initialize_sync()
        back_on_redis = tool(tmp_path, redis)  # Redis lacks f3 until this ingest adds it
        back_on_redis.initialize_sync()
    assert STALE not in caplog.text
    for used in (on_postgres, back_on_redis):
        assert used._keywords is not None
        assert used._keywords.ids == used._exact.ids  # type: ignore[attr-defined]  # BM25
