"""A process SIGKILLed mid-ingest leaves a store that the next run repairs.

The child (``_ingest_child.py``) prints ``batch N`` after each batch; the test reads its stdout
and sends SIGKILL right after a randomly chosen batch line, so the kill lands somewhere in
the batches that follow (for the persisted in-memory store, usually inside ``dump``). No
sleeps: the only synchronization is the child's output. ``HOLODECK_KILL_SEED`` replays a run.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from langchain_holodeck.ingestion import IngestionPipeline
from langchain_holodeck.vectorstores import (
    MatrixVectorStore,
    create_vector_store_with_status,
)
from tests.helpers import HashingEmbeddings
from tests.reliability import corpus
from tests.reliability._ingest_child import BATCH_SIZE, NAMESPACE

REPO = Path(__file__).resolve().parents[2]
SEED = int(os.environ.get("HOLODECK_KILL_SEED", random.randrange(1 << 30)))
QUERIES = ["warp core diagnostic", "replicator tea console", "Manual 7 Part 3"]


def make_sources(workdir: Path, version: int) -> None:
    """Version 1: 12 manuals (~60 chunks). Version 2: edits in every file, one file shorter,
    one removed, ten new: about 35 batches of work for the run that gets killed."""
    root = workdir / "manuals"
    if version == 1:
        corpus.write_files(root, files=12, paragraphs=10)
        return
    for path in sorted(root.glob("*.md")):
        path.write_text(path.read_text().replace("## Part 4", "## Part 4 (revised)"))
    shorter = root / "manual_05.md"
    shorter.write_text(shorter.read_text().split("## Part 5")[0])
    (root / "manual_08.md").unlink()
    extra = workdir / "extra"
    corpus.write_files(extra, files=22, paragraphs=10)
    for n in range(12, 22):
        shutil.move(extra / f"manual_{n:02d}.md", root / f"manual_{n:02d}.md")


def run_pipeline(store: object, workdir: Path) -> object:
    pipeline = IngestionPipeline(
        store,  # type: ignore[arg-type]
        namespace=NAMESPACE,
        batch_size=BATCH_SIZE,
        base_dir=workdir,
    )
    result = pipeline.invoke("manuals")
    assert result.failed == 0
    return result


def kill_after_random_batch(args: list[str], workdir: Path, rng: random.Random) -> int:
    """Run the child, SIGKILL it after a random batch line; return that batch number."""
    stop_after = rng.randint(2, 8)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.reliability._ingest_child", *args],
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
        child.wait(timeout=60)
    stderr = child.stderr.read() if child.stderr is not None else ""
    assert child.returncode == -signal.SIGKILL, (SEED, lines, stderr[-2000:])
    assert not any(line.startswith("done") for line in lines), (SEED, lines)
    return stop_after


def assert_converged(store: object, workdir: Path) -> None:
    """The state equals a clean single run's: ids, contents, hashes, and vectors (scores)."""
    clean = MatrixVectorStore(HashingEmbeddings())
    run_pipeline(clean, workdir)
    got = corpus.state(store, NAMESPACE)  # type: ignore[arg-type]
    want = corpus.state(clean, NAMESPACE)
    assert corpus.essentials(got) == corpus.essentials(want), SEED
    for query in QUERIES:  # every stored vector matches its content: same score per id
        assert scores(store, query, len(want)) == scores(clean, query, len(want))


def scores(store: object, query: str, k: int) -> dict[str, float]:
    hits = store.similarity_search_with_relevance_scores(query, k=k)  # type: ignore[attr-defined]
    return {d.id: round(s, 4) for d, s in hits}


@pytest.mark.parametrize("round_", range(3))
def test_killed_checkpointing_ingest_into_a_persisted_store_is_repaired(
    tmp_path: Path, round_: int
) -> None:
    rng = random.Random(SEED + round_)
    store_dir = tmp_path / "store"
    make_sources(tmp_path, 1)
    first = MatrixVectorStore(HashingEmbeddings())
    run_pipeline(first, tmp_path)
    first.dump(store_dir)
    v1 = corpus.state(first, NAMESPACE)
    time.sleep(0.01)  # a distinct mtime for the edited files (not a synchronization)
    make_sources(tmp_path, 2)

    kill_after_random_batch(["matrix", str(store_dir), "manuals"], tmp_path, rng)

    # what the kill left is loadable (dump is atomic) and holds nothing foreign
    left = MatrixVectorStore.load(store_dir, HashingEmbeddings())
    left_state = corpus.state(left, NAMESPACE)
    assert left_state
    assert left_state != v1  # the killed run had written something
    leftovers = {p.name for p in store_dir.iterdir() if not p.name.startswith(".")}
    assert len(leftovers) == 3, leftovers  # one generation + manifest

    embeddings = HashingEmbeddings()
    repaired = MatrixVectorStore.load(store_dir, embeddings)
    run_pipeline(repaired, tmp_path)
    assert_converged(repaired, tmp_path)
    again = IngestionPipeline(
        repaired, namespace=NAMESPACE, batch_size=BATCH_SIZE, base_dir=tmp_path
    ).invoke("manuals")
    assert (again.added, again.updated, again.deleted) == (0, 0, 0)


@pytest.mark.redis
@pytest.mark.parametrize("round_", range(2))
def test_killed_ingest_into_redis_is_repaired(
    tmp_path: Path, redis_url: str, redis_index_name: str, round_: int
) -> None:
    rng = random.Random(SEED + 100 + round_)
    config = {"provider": "redis", "connection_string": redis_url, "index_name": redis_index_name}
    store = create_vector_store_with_status(config, HashingEmbeddings(), fallback=False).store
    make_sources(tmp_path, 1)
    run_pipeline(store, tmp_path)
    v1 = corpus.state(store, NAMESPACE)  # type: ignore[arg-type]
    time.sleep(0.01)  # a distinct mtime for the edited files (not a synchronization)
    make_sources(tmp_path, 2)

    kill_after_random_batch(["redis", redis_url, redis_index_name, "manuals"], tmp_path, rng)
    assert corpus.state(store, NAMESPACE) != v1  # type: ignore[arg-type]

    run_pipeline(store, tmp_path)
    assert_converged(store, tmp_path)
    import redis

    with redis.Redis.from_url(redis_url) as client:
        indexed = int(client.ft(redis_index_name).info()["num_docs"])
    assert indexed == len(corpus.state(store, NAMESPACE))  # type: ignore[arg-type]
