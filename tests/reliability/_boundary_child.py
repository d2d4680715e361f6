"""A ``HierarchicalDocumentTool`` ingest that stops dead at a chosen point, for a SIGKILL.

``python -m tests.reliability._boundary_child DATABASE_JSON STORE_DIR SOURCE STOP`` ingests
``SOURCE`` (relative to the working directory) into the database ``DATABASE_JSON`` (a
``database:`` mapping) with the in-memory BM25 keyword index saved in ``STORE_DIR``, as
``holodeck-rag ingest`` does. ``STOP`` is ``never`` (print ``done`` at the end),
``keywords`` (print ``stopped`` when the store is saved and the keyword index is not, then
wait) or ``head:<source_path>`` (print ``stopped`` once that file's chunk 0 is written, then
wait). The test SIGKILLs the waiting child, so the kill lands exactly there.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.documents import Document

from langchain_holodeck import HierarchicalDocumentTool, HierarchicalDocumentToolConfig
from langchain_holodeck.backends.memory import MemoryKeywordIndexProvider
from tests.helpers import HashingEmbeddings

CORPUS_ID = "boundary"


def make_tool(database: dict[str, Any], store_dir: Path, source: str) -> HierarchicalDocumentTool:
    config = HierarchicalDocumentToolConfig(
        type="hierarchical_document",
        name="docs",
        source=source,
        corpus_id=CORPUS_ID,
        database=database,
        keyword_index={"provider": "in-memory"},
    )
    return HierarchicalDocumentTool(
        config, embeddings=HashingEmbeddings(), base_dir=Path.cwd(), store_dir=store_dir
    )


def stop_here() -> None:
    sys.stdout.write("stopped\n")
    sys.stdout.flush()
    while True:  # the test kills us
        time.sleep(1)


def main(argv: list[str]) -> int:
    database, store_dir, source, stop = json.loads(argv[0]), Path(argv[1]), argv[2], argv[3]
    tool = make_tool(database, store_dir, source)
    if stop == "keywords":
        MemoryKeywordIndexProvider.save = lambda *args, **kwargs: stop_here()  # type: ignore[method-assign]
    elif stop.startswith("head:"):
        head = stop.removeprefix("head:")
        store = tool._resolve_store()
        # sync writes by vector where the store takes vectors (add_documents calls it too)
        name = "add_vectors" if callable(getattr(store, "add_vectors", None)) else "add_documents"
        add = getattr(store, name)

        def add_then_stop(documents: Sequence[Document], *args: Any, **kwargs: Any) -> list[str]:
            ids = add(list(documents), *args, **kwargs)
            if any(
                d.metadata.get("source_path") == head and d.metadata.get("chunk_index") == 0
                for d in documents
            ):
                stop_here()
            return ids

        setattr(store, name, add_then_stop)
    tool.initialize_sync()
    sys.stdout.write("done\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
