"""Processes sharing one store directory: nothing is lost, nothing is bricked (issue 25, 1-2).

Real processes (``_store_child.py``) run ``HierarchicalDocumentTool`` with its in-memory store
saved in one directory, as ``holodeck-rag`` does. Before the directory lock, an ingest loop
beside a search loop left a manifest naming a deleted ``vectors-<gen>.npy`` (every later run
failed), and of two corpora ingested at once the last writer's survived alone. Afterwards
every corpus must be complete (a sequential re-sync adds and updates nothing), the store
loadable, and each corpus's BM25 index must hold exactly that corpus's stored ids.
``HOLODECK_LOOP_SECONDS`` sets the length of the loop test (the issue's probe: 60).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from langchain_holodeck.keyword_index.bm25 import BM25KeywordIndex
from langchain_holodeck.vectorstores import MatrixVectorStore
from tests.helpers import HashingEmbeddings
from tests.reliability import corpus
from tests.reliability._store_child import make_tool

REPO = Path(__file__).resolve().parents[2]
SECONDS = float(os.environ.get("HOLODECK_LOOP_SECONDS", "15"))


def spawn(workdir: Path, *args: str, barrier: Path | None = None) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    if barrier is not None:
        env["HOLODECK_BARRIER"] = str(barrier)
    return subprocess.Popen(
        [sys.executable, "-m", "tests.reliability._store_child", *args],
        cwd=workdir,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def release(barrier: Path, children: int) -> None:
    """Create ``barrier`` once every child is waiting on it (they then load at once)."""
    deadline = time.monotonic() + 120
    while len(list(barrier.parent.glob(f"{barrier.name}.*"))) < children:
        assert time.monotonic() < deadline, "children never reached the barrier"
        time.sleep(0.02)
    barrier.touch()


def finish(child: subprocess.Popen[str]) -> str:
    out, err = child.communicate(timeout=300)
    assert child.returncode == 0, err[-3000:]
    return out


def assert_complete(workdir: Path, store_dir: Path, source: str) -> None:
    """The corpus at ``source`` is whole in the store, and its BM25 index matches the store."""
    tool = make_tool(store_dir, source)
    os.chdir(workdir)
    result = tool.initialize_sync()
    assert (result.added, result.updated, result.failed) == (0, 0, 0), (source, result)
    assert result.skipped > 0
    store = MatrixVectorStore.load(store_dir, HashingEmbeddings())
    stored = {d.id for d in store.iter_documents() if d.metadata["namespace"] == tool.namespace}
    assert len(stored) == result.skipped
    keywords = BM25KeywordIndex.load(store_dir / "bm25" / tool.namespace)
    assert set(keywords.ids) == stored


@pytest.mark.slow
@pytest.mark.parametrize("trial", range(5))
def test_two_corpora_ingested_at_once_both_survive(
    tmp_path: Path, trial: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    corpus.write_files(tmp_path / "alpha", files=20, paragraphs=8)
    corpus.write_files(tmp_path / "beta", files=20, paragraphs=8)
    barrier = tmp_path / "go"
    children = [
        spawn(tmp_path, "ingest", "store", name, "0", barrier=barrier) for name in ("alpha", "beta")
    ]
    release(barrier, len(children))
    for child in children:
        assert finish(child).endswith("done 1\n")
    for name in ("alpha", "beta"):
        assert_complete(tmp_path, tmp_path / "store", name)


@pytest.mark.slow
def test_ingest_loop_beside_search_loop_leaves_a_whole_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    corpus.write_files(tmp_path / "alpha", files=12, paragraphs=8)
    barrier = tmp_path / "go"
    children = [
        spawn(tmp_path, "ingest", "store", "alpha", str(SECONDS), barrier=barrier),
        spawn(tmp_path, "search", "store", "alpha", str(SECONDS), "warp core", barrier=barrier),
    ]
    release(barrier, len(children))
    rounds = [finish(child).splitlines()[-1] for child in children]
    assert all(line.startswith("done ") and int(line.split()[1]) >= 2 for line in rounds)
    assert_complete(tmp_path, tmp_path / "store", "alpha")


def test_two_ingests_of_one_shrunk_corpus_count_each_deleted_chunk_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both load the save before either saves (found 2026-12-07, a probe of two CLI ingests).

    Each deletes the removed files' chunks from its own copy; the second to save finds them
    gone from the file, removed by the first, which counted them. Before: both counted every
    chunk (``12 deleted`` twice for 12 chunks).
    """
    monkeypatch.chdir(tmp_path)
    corpus.write_files(tmp_path / "alpha", files=6, paragraphs=8)
    store_dir = tmp_path / "store"
    make_tool(store_dir, "alpha").initialize_sync()
    before = {d.id for d in MatrixVectorStore.load(store_dir, HashingEmbeddings()).iter_documents()}
    for removed in sorted((tmp_path / "alpha").glob("*.md"))[:2]:
        removed.unlink()
    first, second = make_tool(store_dir, "alpha"), make_tool(store_dir, "alpha")
    first.corpus.open()
    second.corpus.open()  # both hold the save as it was: the stale chunks in both copies
    one, two = first.initialize_sync(), second.initialize_sync()
    after = {d.id for d in MatrixVectorStore.load(store_dir, HashingEmbeddings()).iter_documents()}
    gone = before - after
    assert len(gone) > 2
    assert (one.deleted, two.deleted) == (len(gone), 0)
    assert (one.failed, two.failed, one.errors, two.errors) == (0, 0, (), ())
    assert make_tool(store_dir, "alpha").initialize_sync().deleted == 0  # converged
