"""A process SIGKILLed at the two windows issue 25 found converges at the next run.

Real processes (``_boundary_child.py``) run ``HierarchicalDocumentTool`` with the in-memory
BM25 index saved in a store directory, on each backend: the in-memory store saved there,
Redis, and Qdrant ``path:``. The child stops dead (and is SIGKILLed) either

- ``keywords``: after the store is written and before the BM25 index is saved. Before the
  fix the next runs kept the old BM25 (orphan ids, the new file missing) forever, because
  it was loaded without a check against the store; or
- ``head``: right after a shrunk file's chunk 0 (the record the mtime fast path trusts) is
  written. Before the fix the old tail was deleted only after that, so the next run skipped
  the file and the deleted sections stayed searchable.

Then one normal run; the store must hold what a clean run holds, and BM25 the same ids.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from langchain_holodeck.keyword_index.bm25 import BM25KeywordIndex
from tests.reliability import corpus
from tests.reliability._boundary_child import CORPUS_ID, make_tool

REPO = Path(__file__).resolve().parents[2]
SHRUNK = "src/manual_03.md"


def write_sources(workdir: Path, version: int) -> None:
    """Version 2: ``manual_03`` keeps 3 of its 10 parts, ``manual_05`` goes, ``manual_06`` comes."""
    root = workdir / "src"
    if version == 1:
        corpus.write_files(root, files=6, paragraphs=10)
        return
    shrunk = root / "manual_03.md"
    shrunk.write_text(shrunk.read_text().split("## Part 3")[0])
    (root / "manual_05.md").unlink()
    corpus.write_files(workdir / "extra", files=7, paragraphs=6)
    (workdir / "extra" / "manual_06.md").rename(root / "manual_06.md")
    later = time.time() + 5  # a distinct mtime, whatever the clock's granularity
    for path in (shrunk, root / "manual_06.md"):
        os.utime(path, (later, later))


def run_child(workdir: Path, database: dict[str, Any], stop: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    args = [json.dumps(database), str(workdir / "store"), "src", stop]
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.reliability._boundary_child", *args],
        cwd=workdir,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline().strip()
        if stop != "never" and line == "stopped":
            os.kill(child.pid, signal.SIGKILL)  # the child we started, by its id
    finally:
        child.wait(timeout=300)
    stderr = child.stderr.read() if child.stderr is not None else ""
    want = "done" if stop == "never" else "stopped"
    assert line == want, stderr[-3000:]


def stored_state(workdir: Path, database: dict[str, Any]) -> corpus.State:
    tool = make_tool(database, workdir / "store", "src")
    store = tool._resolve_store()
    state = corpus.state(store, CORPUS_ID)
    client = getattr(store, "client", None)
    if client is not None and hasattr(client, "close"):
        client.close()  # Qdrant path: let the next process open it
    return state


def clean_state(workdir: Path) -> corpus.State:
    tool = make_tool({"provider": "in-memory"}, workdir / "clean", "src")
    tool.initialize_sync()
    return corpus.state(tool._resolve_store(), CORPUS_ID)


def databases(workdir: Path, kind: str, redis_index: str | None) -> dict[str, Any]:
    if kind == "memory":
        return {"provider": "in-memory"}
    if kind == "qdrant":
        pytest.importorskip("qdrant_client")
        return {"provider": "qdrant", "path": str(workdir / "qdrant")}
    return {
        "provider": "redis",
        "connection_string": os.environ["REDIS_URL"],
        "index_name": redis_index,
    }


def check_kill_converges(workdir: Path, database: dict[str, Any], stop: str) -> None:
    write_sources(workdir, 1)
    run_child(workdir, database, "never")
    write_sources(workdir, 2)
    run_child(workdir, database, stop)
    run_child(workdir, database, "never")  # the next run

    got = stored_state(workdir, database)
    want = clean_state(workdir)
    assert corpus.essentials(got) == corpus.essentials(want)  # no old tail, no orphan
    keywords = BM25KeywordIndex.load(workdir / "store" / "bm25" / CORPUS_ID)
    assert keywords.ids == set(got)


@pytest.mark.slow
@pytest.mark.parametrize("stop", ["keywords", f"head:{SHRUNK}"])
@pytest.mark.parametrize("kind", ["memory", "qdrant"])
def test_kill_at_a_sync_boundary_converges(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str, stop: str
) -> None:
    monkeypatch.chdir(tmp_path)
    check_kill_converges(tmp_path, databases(tmp_path, kind, None), stop)


@pytest.mark.slow
@pytest.mark.redis
@pytest.mark.parametrize("stop", ["keywords", f"head:{SHRUNK}"])
def test_kill_at_a_sync_boundary_converges_on_redis(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, redis_index_name: str, stop: str
) -> None:
    monkeypatch.chdir(tmp_path)
    check_kill_converges(tmp_path, databases(tmp_path, "redis", redis_index_name), stop)
