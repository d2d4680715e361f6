"""Two ingests of one folder overlapping on Redis and PostgreSQL, as two processes.

Each run has its own store object (its own connections), so the in-process guard
(``_mirror_batches.mirroring``) never sees the other: what keeps their chunks is the cleanup's
look at the source when it runs.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.vectorstores import VectorStore

from langchain_holodeck.backends import create_vector_store_with_status
from langchain_holodeck.ingestion import IngestionPipeline
from langchain_holodeck.sync import SyncResult
from langchain_holodeck.vectorstores import scan_documents
from tests.helpers import DATA_DIR, HashingEmbeddings, added_between_walks


def server_store(request: pytest.FixtureRequest, backend: str) -> Callable[[], VectorStore]:
    """A maker of store objects over one fresh Redis index or PostgreSQL table."""
    if backend == "redis":
        config = {
            "provider": "redis",
            "connection_string": request.getfixturevalue("redis_url"),
            "index_name": request.getfixturevalue("redis_index_name"),
        }
    else:
        config = {
            "provider": "postgres",
            "connection_string": request.getfixturevalue("postgres_url"),
            "table_name": request.getfixturevalue("postgres_table"),
        }
    embeddings = HashingEmbeddings()
    return lambda: create_vector_store_with_status(config, embeddings, fallback=False).store


def chunks_by_source(store: VectorStore) -> dict[str, list[tuple[int, str]]]:
    out: dict[str, list[tuple[int, str]]] = {}
    for doc in scan_documents(store, namespace="kb"):
        meta = doc.metadata
        out.setdefault(meta["source_path"], []).append((meta["chunk_index"], doc.page_content))
    return {source: sorted(chunks) for source, chunks in out.items()}


@pytest.mark.parametrize(
    "backend",
    [
        pytest.param("redis", marks=pytest.mark.redis),
        pytest.param("postgres", marks=pytest.mark.postgres),
    ],
)
def test_a_file_added_while_another_process_writes_it_keeps_its_chunks(
    request: pytest.FixtureRequest, backend: str, tmp_path: Path
) -> None:
    """Run A's cleanup finds chunks of docs/new.md that run B (another process, which walked
    after the file appeared) is writing: the file is on disk, so they stay, and B's file
    record (chunk 0, written last) is trusted rightly. Before: A deleted them, and every later
    run skipped the file with its chunks missing. auth.md, deleted from disk, loses its."""
    store = server_store(request, backend)
    shutil.copytree(DATA_DIR / "docs", tmp_path / "docs")

    def ingest(progress: Callable[[Any], None] | None = None) -> SyncResult:
        pipeline = IngestionPipeline(
            store(), namespace="kb", base_dir=tmp_path, batch_size=2, on_progress=progress
        )
        return pipeline.invoke("docs")

    ingest()
    (tmp_path / "docs" / "auth.md").unlink()

    results = added_between_walks(ingest, tmp_path / "docs" / "new.md")

    stored = chunks_by_source(store())
    new_chunks = [index for index, _ in stored["docs/new.md"]]
    assert len(new_chunks) > 3  # B wrote it in batches
    assert new_chunks == list(range(len(new_chunks)))
    assert "docs/auth.md" not in stored
    assert results["A"].deleted == 1  # auth.md
    assert results["B"].added == len(new_chunks)
    again = ingest()
    assert (again.added, again.updated, again.deleted, again.failed) == (0, 0, 0, 0)
    assert chunks_by_source(store()) == stored
