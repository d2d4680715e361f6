"""What each window policy embeds, per content type: vectors and word pieces per chunk.

    python benchmarks/bench_window_cost.py FOLDER [FOLDER ...]

Chunks are the ones the default tool makes (``holodeck-rag ingest``: ``IngestionPipeline`` with
``StructuredMarkdownSplitter(max_chunk_tokens=800)``, the config's default, and
``SourceCodeSplitter`` for code), split here without embedding. Each
chunk is counted with the default model's tokenizer (all-MiniLM-L6-v2 word pieces, ``[CLS]``
and ``[SEP]`` included: the runtime's work is about proportional to word pieces at these
lengths) under each window policy:

- ``first``: one vector of the first 256 (the peer's truncation);
- ``fit`` (the default): whole when it fits 256, plus its windows of 128 when longer than
  one; a longer chunk is its windows of 128; code one vector (whole, or its first 128);
- ``auto`` (the default before): whole when it fits 256, else its first 256 plus every window
  of 128; code one vector (its first 256);
- ``prose_windows`` (a candidate, not a ``long_text`` mode: see ``docs/quality.md``): prose as
  windows of 128 (its own entry the first), code whole (its first 256).

Nothing is embedded: the counts follow from each chunk's length (``token_windows``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from langchain_core.embeddings import DeterministicFakeEmbedding

from langchain_holodeck._chunk import CHUNK_TYPE, CODE_CHUNK_TYPE
from langchain_holodeck.config.models import HierarchicalDocumentToolConfig
from langchain_holodeck.embeddings import OnnxEmbeddings, token_windows
from langchain_holodeck.ingestion import IngestionPipeline
from langchain_holodeck.splitters.structured import StructuredMarkdownSplitter
from langchain_holodeck.vectorstores import MatrixVectorStore, scan_documents

POLICIES = ("first", "fit", "auto", "prose_windows")
WHOLE, WINDOW, OVERLAP = 254, 126, 32
"""Word pieces without ``[CLS]``/``[SEP]``: what the model reads, a window, their overlap."""


def entries(n: int, policy: str, *, code: bool) -> list[int]:
    """Word pieces (specials included) of each vector a chunk of ``n`` pieces is stored as."""
    first = [min(n, WHOLE) + 2]
    windows = [e - s + 2 for s, e in token_windows(n, size=WINDOW, overlap=OVERLAP)]
    if policy == "fit":  # whole when it fits (plus windows past one), else its windows
        if n <= WINDOW or (code and n <= WHOLE):
            return first
        if code:  # one vector: its first window
            return windows[:1]
        return first + windows if n <= WHOLE else windows
    if policy == "first" or code:
        return first
    if policy == "auto":
        return first if n <= WHOLE else first + windows
    return windows  # prose_windows: its first window is its own entry


def chunk_lengths(folder: Path, model: OnnxEmbeddings) -> list[tuple[bool, int]]:
    """``(is code, word pieces)`` of each chunk ingest makes of ``folder``."""
    store = MatrixVectorStore(DeterministicFakeEmbedding(size=8))
    size = HierarchicalDocumentToolConfig.model_fields["max_chunk_tokens"].default
    splitter = StructuredMarkdownSplitter(max_chunk_tokens=size)
    IngestionPipeline(store, namespace="cost", splitter=splitter).invoke(folder)
    docs = list(scan_documents(store, namespace="cost"))
    return [
        (d.metadata.get(CHUNK_TYPE) == CODE_CHUNK_TYPE, model.count_tokens(d.page_content))
        for d in docs
    ]


def report(name: str, chunks: Sequence[tuple[bool, int]]) -> None:
    print(
        f"| {name} | chunks | longer than 256 | "
        + " | ".join(f"`{p}`: vectors, pieces per chunk" for p in POLICIES)
        + " |"
    )
    print("|---|---:|---:|" + "---|" * len(POLICIES))
    groups = {
        "prose": [c for c in chunks if not c[0]],
        "code": [c for c in chunks if c[0]],
        "all": list(chunks),
    }
    for label, group in groups.items():
        if not group:
            continue
        long = sum(n > WHOLE for _, n in group) / len(group)
        cells = []
        for policy in POLICIES:
            stored = [entries(n, policy, code=code) for code, n in group]
            vectors = sum(len(s) for s in stored) / len(group)
            pieces = sum(sum(s) for s in stored)
            cells.append(f"{vectors:.2f}, {pieces / len(group):.0f} ({pieces:,} in all)")
        print(f"| {label} | {len(group):,} | {long:.0%} | " + " | ".join(cells) + " |")
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", type=Path, nargs="+")
    args = parser.parse_args()
    model = OnnxEmbeddings()
    for folder in args.folders:
        report(str(folder), chunk_lengths(folder, model))


if __name__ == "__main__":
    main()
