"""A re-sync of corpus version 2 into Redis that waits for its twins before its first delete.

``python -m tests.reliability._resync_child REDIS_URL INDEX BARRIER_DIR PARTIES`` syncs
``corpus.chunks(2)`` (with cleanup) into the Redis index ``INDEX``, as ``holodeck-rag ingest``
of a shrunk corpus does, and prints the ``SyncResult`` as one JSON line. Just before its first
delete it writes a file into ``BARRIER_DIR`` and waits until ``PARTIES`` processes have, so
the processes delete the same stale ids at the same moment: the race the deleted count must
survive. Only the timing is arranged; the store, sync and Redis are the real ones.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from langchain_holodeck.sync import sync_documents
from tests.helpers import HashingEmbeddings
from tests.integration_tests.test_redis_store import open_store
from tests.reliability import corpus

BARRIER_SECONDS = 60.0


def wait_for_twins(barrier: Path, parties: int) -> None:
    (barrier / str(os.getpid())).touch()
    deadline = time.monotonic() + BARRIER_SECONDS
    while len(list(barrier.iterdir())) < parties:
        if time.monotonic() > deadline:
            msg = f"only {len(list(barrier.iterdir()))} of {parties} processes reached the barrier"
            raise TimeoutError(msg)
        time.sleep(0.01)


def main(argv: list[str]) -> int:
    url, index, barrier, parties = argv[0], argv[1], Path(argv[2]), int(argv[3])
    store = open_store(url, index, HashingEmbeddings())
    waited: list[bool] = []

    def first_waits(delete: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(ids: Sequence[str], *args: Any, **kwargs: Any) -> Any:
            if not waited:
                waited.append(True)
                wait_for_twins(barrier, parties)
            return delete(ids, *args, **kwargs)

        return wrapped

    # whichever delete sync calls (the LangChain one, or CountingDelete's) waits first
    for name in ("delete", "delete_existing"):
        if hasattr(store, name):
            setattr(store, name, first_waits(getattr(store, name)))
    result = sync_documents(corpus.chunks(2), store, namespace=corpus.NAMESPACE, cleanup=True)
    sys.stdout.write(json.dumps(asdict(result)) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
