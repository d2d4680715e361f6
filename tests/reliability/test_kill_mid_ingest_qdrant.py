"""A process SIGKILLed mid-ingest into an on-disk Qdrant store (``path:``): the next run converges.

Like ``test_kill_mid_ingest.py`` (same sources, same convergence check), for qdrant-client's
local mode on disk: the child (``_qdrant_ingest_child.py``) prints ``batch N`` after each
batch; the test SIGKILLs it right after a randomly chosen batch line, re-opens the same
directory (the dead process's lock is gone with it) and syncs again. No sleeps for
synchronization; ``HOLODECK_KILL_SEED`` replays a run.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from langchain_holodeck.ingestion import IngestionPipeline
from tests.helpers import HashingEmbeddings
from tests.reliability import corpus
from tests.reliability._ingest_child import BATCH_SIZE, NAMESPACE
from tests.reliability.test_kill_mid_ingest import assert_converged, make_sources, run_pipeline

pytest.importorskip("qdrant_client")

from langchain_holodeck.backends.qdrant import (
    QdrantDatabaseConfig,
    build_qdrant_store,
)

REPO = Path(__file__).resolve().parents[2]
SEED = int(os.environ.get("HOLODECK_KILL_SEED", random.randrange(1 << 30)))


def open_store(path: Path) -> object:
    config = QdrantDatabaseConfig(provider="qdrant", path=str(path))
    return build_qdrant_store(config, HashingEmbeddings())


def kill_child_after_random_batch(path: Path, workdir: Path, rng: random.Random) -> None:
    stop_after = rng.randint(2, 8)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.reliability._qdrant_ingest_child", str(path), "manuals"],
        cwd=workdir,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []
    try:
        assert child.stdout is not None
        for line in child.stdout:
            lines.append(line.strip())
            if line.strip() == f"batch {stop_after}":
                os.kill(child.pid, signal.SIGKILL)  # the child we started, by its id
                break
    finally:
        child.wait(timeout=120)
    stderr = child.stderr.read() if child.stderr is not None else ""
    assert child.returncode == -signal.SIGKILL, (SEED, lines, stderr[-2000:])
    assert not any(line.startswith("done") for line in lines), (SEED, lines)


@pytest.mark.parametrize("round_", range(2))
def test_killed_ingest_into_a_qdrant_path_store_converges(tmp_path: Path, round_: int) -> None:
    rng = random.Random(SEED + 200 + round_)
    path = tmp_path / "qdrant"
    make_sources(tmp_path, 1)
    store = open_store(path)
    run_pipeline(store, tmp_path)
    v1 = corpus.state(store, NAMESPACE)  # type: ignore[arg-type]
    store.client.close()  # type: ignore[attr-defined]  # release the directory for the child
    time.sleep(0.01)  # a distinct mtime for the edited files (not a synchronization)
    make_sources(tmp_path, 2)

    kill_child_after_random_batch(path, tmp_path, rng)

    reopened = open_store(path)  # the killed process held the lock; it died with it
    left = corpus.state(reopened, NAMESPACE)  # type: ignore[arg-type]
    assert left
    assert left != v1  # the killed run had written something
    run_pipeline(reopened, tmp_path)
    assert_converged(reopened, tmp_path)
    again = IngestionPipeline(
        reopened,  # type: ignore[arg-type]
        namespace=NAMESPACE,
        batch_size=BATCH_SIZE,
        base_dir=tmp_path,
    ).invoke("manuals")
    assert (again.added, again.updated, again.deleted) == (0, 0, 0)
    reopened.client.close()  # type: ignore[attr-defined]
