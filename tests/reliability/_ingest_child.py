"""The process the kill test SIGKILLs: ingest a folder, printing ``batch N`` after each batch.

``python -m tests.reliability._ingest_child matrix STORE_DIR SOURCE`` ingests into a
``MatrixVectorStore`` loaded from ``STORE_DIR`` (if saved there) and saves it after every batch
(a checkpointing ingest: the kill often lands inside ``dump``).
``python -m tests.reliability._ingest_child redis URL INDEX SOURCE`` ingests into Redis.
The source is given relative to the working directory, so ``source_path`` values match
the test's own runs. ``done`` is printed at the end.
"""

from __future__ import annotations

import sys
from pathlib import Path

from langchain_holodeck.ingestion import IngestionPipeline, IngestProgress
from langchain_holodeck.vectorstores import MatrixVectorStore, create_vector_store_with_status
from tests.helpers import HashingEmbeddings

NAMESPACE = "killed"
BATCH_SIZE = 2


def open_store(argv: list[str]) -> tuple[object, Path | None, str]:
    kind = argv[0]
    embeddings = HashingEmbeddings()
    if kind == "matrix":
        store_dir, source = Path(argv[1]), argv[2]
        if (store_dir / "manifest.json").exists():
            return MatrixVectorStore.load(store_dir, embeddings), store_dir, source
        return MatrixVectorStore(embeddings), store_dir, source
    url, index, source = argv[1], argv[2], argv[3]
    config = {"provider": "redis", "connection_string": url, "index_name": index}
    handle = create_vector_store_with_status(config, embeddings, fallback=False)
    return handle.store, None, source


def main(argv: list[str]) -> int:
    store, store_dir, source = open_store(argv)
    batches = 0

    def progress(event: IngestProgress) -> None:
        nonlocal batches
        if event.stage != "embeddings":
            return
        batches += 1
        if store_dir is not None:
            store.dump(store_dir)  # type: ignore[attr-defined]
        sys.stdout.write(f"batch {batches}\n")
        sys.stdout.flush()

    pipeline = IngestionPipeline(
        store,  # type: ignore[arg-type]
        namespace=NAMESPACE,
        batch_size=BATCH_SIZE,
        on_progress=progress,
    )
    result = pipeline.invoke(source)
    if store_dir is not None:
        store.dump(store_dir)  # type: ignore[attr-defined]
    sys.stdout.write(f"done {result.failed}\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
