"""A process sharing one store directory with others: ingest or search a corpus in a loop.

``python -m tests.reliability._store_child MODE STORE_DIR SOURCE SECONDS [QUERY]`` runs a
``HierarchicalDocumentTool`` named ``docs`` over ``SOURCE`` (relative to the working
directory; one corpus per source) with its in-memory store saved in ``STORE_DIR``, as
``holodeck-rag ingest``/``search`` do, round after round until ``SECONDS`` have passed (at
least one round). ``ingest`` appends a line to ``SOURCE/log.md`` each round, so every round
writes; ``search`` re-syncs and searches ``QUERY``. It prints ``round N`` after each round and
``done N``; any exception ends it with its traceback on stderr and exit code 1. With
``HOLODECK_BARRIER`` set to a path, it first creates ``<path>.<pid>`` and waits for ``<path>``
to exist, so that several children load the store at the same moment.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from langchain_holodeck import HierarchicalDocumentTool, HierarchicalDocumentToolConfig
from tests.helpers import HashingEmbeddings

TOOL = "docs"


def make_tool(store_dir: Path, source: str) -> HierarchicalDocumentTool:
    config = HierarchicalDocumentToolConfig(type="hierarchical_document", name=TOOL, source=source)
    return HierarchicalDocumentTool(
        config, embeddings=HashingEmbeddings(), base_dir=Path.cwd(), store_dir=store_dir
    )


def main(argv: list[str]) -> int:
    mode, store_dir, source, seconds = argv[0], Path(argv[1]), argv[2], float(argv[3])
    query = argv[4] if len(argv) > 4 else "warp core"
    barrier = os.environ.get("HOLODECK_BARRIER")
    if barrier:
        Path(f"{barrier}.{os.getpid()}").touch()
        while not Path(barrier).exists():
            time.sleep(0.01)
    deadline = time.monotonic() + seconds
    rounds = 0
    while rounds == 0 or time.monotonic() < deadline:
        rounds += 1
        if mode == "ingest" and seconds > 0:
            with (Path(source) / "log.md").open("a", encoding="utf-8") as log:
                log.write(f"\n# Round {rounds}\n\nRound {rounds} of the warp core log.\n")
        tool = make_tool(store_dir, source)
        tool.initialize_sync()
        if mode == "search":
            tool.search_sync(query)
        sys.stdout.write(f"round {rounds}\n")
        sys.stdout.flush()
    sys.stdout.write(f"done {rounds}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
