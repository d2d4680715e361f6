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


def tool(
    root: Path, database: dict[str, Any], *, machine: str = ".holodeck", **settings: Any
) -> HierarchicalDocumentTool:
    config = HierarchicalDocumentToolConfig(
        type="hierarchical_document",
        name="fdocs",
        description="d",
        source="corp",
        database=database,
        **settings,
    )
    return HierarchicalDocumentTool(
        config,
        embeddings=HashingEmbeddings(),
        project_dir=root,
        home_dir=root,
        base_dir=root,
        store_dir=root / machine / "store" / "fdocs",
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


def test_the_indexes_follow_a_file_another_process_re_ingested(
    tmp_path: Path, database: dict[str, Any]
) -> None:
    """Found 2026-12-07. Another process re-ingests an edited file: a long-lived tool's next
    initialize skips it (the store's record matches the file), so its exact and BM25 indexes
    kept the old text: 'Section 4.1', gone, still came first, 'Section 7.7' had no exact hit.
    A second machine's saved BM25 index (same ids, old texts) was loaded as it was, for good.
    """
    policy = tmp_path / "corp" / "policy.md"
    policy.parent.mkdir()
    policy.write_text("# Policy\n\n## Section 4.1 Tokens\n\nRotate the zebracorn key.\n")
    long_lived = tool(tmp_path, database, search_strategy="fallback")
    long_lived.initialize_sync()
    tool(tmp_path, database, machine="m2", search_strategy="fallback").initialize_sync()
    policy.write_text("# Policy\n\n## Section 7.7 Tokens\n\nRotate the quokkaline key.\n")
    other = tool(tmp_path, database, search_strategy="fallback").initialize_sync()
    assert other.updated == 1

    def top(searcher: HierarchicalDocumentTool, query: str) -> dict[str, Any]:
        return searcher.retrieve_sync(query, k=1)[0].metadata

    again = long_lived.initialize_sync()
    assert (again.updated, again.skipped) == (0, 1)  # written by the other process
    moved = top(long_lived, "Section 7.7")
    assert (moved["section_id"], moved["exact_rank"]) == ("7.7", 1)
    assert top(long_lived, "Section 4.1")["exact_rank"] is None
    assert top(long_lived, "quokkaline")["keyword_rank"] == 1
    assert top(long_lived, "zebracorn")["keyword_rank"] is None
    second_machine = tool(tmp_path, database, machine="m2", search_strategy="fallback")
    assert second_machine.initialize_sync().skipped == 1
    assert top(second_machine, "quokkaline")["keyword_rank"] == 1
    assert top(second_machine, "zebracorn")["keyword_rank"] is None
