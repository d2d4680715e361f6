"""``_persist``: the directory lock and the removal of a killed writer's temporary files."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from langchain_holodeck._persist import directory_lock, remove_stale_temporaries
from langchain_holodeck.vectorstores import MatrixVectorStore
from tests.helpers import HashingEmbeddings


def test_a_save_removes_the_temporaries_a_killed_writer_left(tmp_path: Path) -> None:
    """Issue 25 item 15: ``.vectors-*.npy.*.tmp`` files as big as the matrix stayed forever."""
    store = MatrixVectorStore(HashingEmbeddings())
    store.add_texts(["warp core"], ids=["a"])
    store.dump(tmp_path)
    old = tmp_path / ".vectors-0123456789ab.npy.x1y2z3.tmp"
    old.write_bytes(b"\0" * 1000)
    an_hour_ago = time.time() - 3600
    os.utime(old, (an_hour_ago, an_hour_ago))
    young = tmp_path / ".documents-0123456789ab.jsonl.a1b2c3.tmp"
    young.write_bytes(b"{}")  # another writer's, just begun: kept
    store.dump(tmp_path)
    assert not old.exists()
    assert young.exists()
    assert remove_stale_temporaries(tmp_path, older_than=-1) == 1
    assert not young.exists()


def test_the_directory_lock_is_reentrant_and_never_upgraded(tmp_path: Path) -> None:
    with directory_lock(tmp_path, exclusive=True), directory_lock(tmp_path, exclusive=False):
        pass
    with (
        directory_lock(tmp_path, exclusive=False),
        pytest.raises(RuntimeError, match="exclusive lock while holding the shared one"),
        directory_lock(tmp_path, exclusive=True),
    ):
        pass
