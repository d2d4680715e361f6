"""Two processes re-syncing the same shrunk corpus into Redis at once count each deletion once.

Issue 25, item 16: ``SyncResult.deleted`` summed over two concurrent re-syncs was twice the
chunks that existed, because ``VectorStore.delete`` cannot say which ids it removed and sync
counted every id it asked for. Now a store that is ``contracts.CountingDelete`` (Redis: one
``DEL`` per key) reports the ids that existed, and only those are counted. Real processes
(``_resync_child.py``) meet at a barrier just before their first delete, so both delete the
same stale chunks at the same moment.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from langchain_holodeck.contracts import CountingDelete
from langchain_holodeck.sync import sync_documents
from tests.helpers import HashingEmbeddings
from tests.integration_tests.test_redis_store import open_store
from tests.reliability import corpus

REPO = Path(__file__).resolve().parents[2]
PARTIES = 2

pytestmark = pytest.mark.redis


def test_two_concurrent_resyncs_count_each_deleted_chunk_once(
    tmp_path: Path, redis_url: str, redis_index_name: str
) -> None:
    store = open_store(redis_url, redis_index_name, HashingEmbeddings())
    assert isinstance(store, CountingDelete)
    sync_documents(corpus.chunks(1), store, namespace=corpus.NAMESPACE)
    before = set(corpus.state(store))
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    args = [redis_url, redis_index_name, str(barrier), str(PARTIES)]
    children = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.reliability._resync_child", *args],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(PARTIES)
    ]
    results = []
    for child in children:
        out, err = child.communicate(timeout=180)
        assert child.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    after = set(corpus.state(store))
    assert len(after) == len(corpus.chunks(2))  # both converged on version 2
    existed = before - after
    assert len(existed) == 13  # docs/shrinks.md's tail of 6 and docs/removed.md's 7 chunks
    assert [r["errors"] for r in results] == [[], []]
    assert sum(r["deleted"] for r in results) == len(existed), results
