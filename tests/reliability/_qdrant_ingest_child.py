"""The process the Qdrant kill test SIGKILLs: ingest into an on-disk (``path:``) Qdrant store.

``python -m tests.reliability._qdrant_ingest_child QDRANT_PATH SOURCE`` ingests ``SOURCE``
(relative to the working directory) in batches of two chunks, printing ``batch N`` after each
and ``done F`` at the end.
"""

from __future__ import annotations

import sys

from langchain_holodeck.backends.qdrant import QdrantDatabaseConfig, build_qdrant_store
from langchain_holodeck.ingestion import IngestionPipeline, IngestProgress
from tests.helpers import HashingEmbeddings
from tests.reliability._ingest_child import BATCH_SIZE, NAMESPACE


def main(argv: list[str]) -> int:
    path, source = argv
    store = build_qdrant_store(
        QdrantDatabaseConfig(provider="qdrant", path=path), HashingEmbeddings()
    )
    batches = 0

    def progress(event: IngestProgress) -> None:
        nonlocal batches
        if event.stage != "embeddings":
            return
        batches += 1
        sys.stdout.write(f"batch {batches}\n")
        sys.stdout.flush()

    pipeline = IngestionPipeline(
        store, namespace=NAMESPACE, batch_size=BATCH_SIZE, on_progress=progress
    )
    result = pipeline.invoke(source)
    sys.stdout.write(f"done {result.failed}\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
