"""One paragraph inserted near the top of a ~200-chunk file: what gets re-embedded, one run.

    python benchmarks/bench_insert_paragraph.py [--paragraphs 800]

A generated Markdown file (sections of ~60-word paragraphs) is ingested, then a paragraph is
inserted after the second one and the file re-ingested. Positional chunk keys
(``{source}_chunk_{i}``) shift for every chunk after the insertion, so a sync by key alone
updates — and would re-embed — nearly the whole file. Rows:

- ours, VectorStoreTool: the tool's own wiring (``CachedEmbeddings`` keyed by model + text
  over a ``ByteStore``), default splitter (512 tokens, 50 overlap): shifted chunks are
  rewritten under their new keys from the cache; only new texts reach the model.
- ours, IngestionPipeline without a cache: the baseline the cache is measured against.
- ours, HierarchicalDocumentTool: the structured splitter (chunks follow sections) + cache.
- LangChain ``index()`` (content-hash ids, ``InMemoryRecordManager``, cleanup="incremental")
  on the same default-splitter chunks, metadata ``source`` only (a changing mtime in metadata
  would change every hash); its default ``batch_size=100`` and one batch for the whole file.

Two scenarios: a short paragraph (the 512-token packing absorbs it: the chunk count, hence
the keys, may not even change) and a long one (the file gains a chunk: every later key shifts).

The embedding is a cheap deterministic 384-dim hash that counts texts; times are sync
overhead plus that (a real model adds its per-text cost to each embedded text).
"""

from __future__ import annotations

import argparse
import hashlib
import random
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.indexing import InMemoryRecordManager, index

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from synthetic import SHIP_WORDS as WORDS  # noqa: E402

from langchain_holodeck.config import (  # noqa: E402
    HierarchicalDocumentToolConfig,
    VectorStoreToolConfig,
)
from langchain_holodeck.ingestion import IngestionPipeline  # noqa: E402
from langchain_holodeck.splitters import default_text_splitter  # noqa: E402
from langchain_holodeck.tools import HierarchicalDocumentTool, VectorStoreTool  # noqa: E402
from langchain_holodeck.vectorstores import MatrixVectorStore  # noqa: E402

CACHE = Path(__file__).resolve().parent / ".cache"
DIM = 384
SHORT = (
    "Inserted paragraph: from stardate 47634 every holodeck program must log its safety "
    "interlock state to the bridge console before the arch opens."
)
LONG = " ".join([SHORT] * 14)  # ~400 tokens: the file gains a chunk, later keys shift
SCENARIOS = {"short paragraph (~25 words)": SHORT, "long paragraph (~350 words)": LONG}
INSERTED = SHORT


class CountingEmbeddings(Embeddings):
    """Deterministic unit vectors from a hash of the text; counts texts embedded."""

    def __init__(self) -> None:
        self.texts = 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.texts += len(texts)
        out = np.empty((len(texts), DIM), dtype=np.float32)
        for i, text in enumerate(texts):
            seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
            out[i] = np.random.default_rng(seed).standard_normal(DIM, dtype=np.float32)
        out /= np.linalg.norm(out, axis=1, keepdims=True)
        return out.tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


def paragraphs(n: int) -> list[str]:
    """``n`` paragraphs with a ``## Section`` heading every 8 (for the structured splitter)."""
    rng = random.Random(5)
    out = ["# Holodeck operations manual"]
    for i in range(n):
        if i % 8 == 0:
            out.append(f"## Section {i // 8 + 1}. Operations {i // 8 + 1}")
        out.append(f"{i}. " + " ".join(rng.choices(WORDS, k=rng.randint(45, 75))) + ".")
    return out


def write(directory: Path, parts: list[str]) -> None:
    path = directory / "manual.md"
    old = path.stat().st_mtime_ns if path.exists() else 0
    path.write_text("\n\n".join(parts) + "\n", encoding="utf-8")
    if path.stat().st_mtime_ns <= old:  # same timestamp tick: make the edit visible
        import os

        os.utime(path, ns=(old + 1_000_000, old + 1_000_000))


def inserted(parts: list[str]) -> list[str]:
    at = 3  # after the title, the first heading and the first paragraph
    return [*parts[:at], INSERTED, *parts[at:]]


def set_inserted(text: str) -> None:
    global INSERTED
    INSERTED = text


@dataclass
class Row:
    system: str
    chunks: int
    rewritten: int
    embedded: int
    seconds: float


def run_tool(kind: str, directory: Path, original: list[str]) -> Row:
    write(directory, original)
    emb = CountingEmbeddings()
    common: dict[str, Any] = {
        "name": "manual",
        "description": "The manual.",
        "source": str(directory),
    }
    tool: VectorStoreTool | HierarchicalDocumentTool
    if kind == "vector":
        tool = VectorStoreTool(
            VectorStoreToolConfig(type="vectorstore", **common),
            embeddings=emb,
            project_dir=directory,
            home_dir=directory,
        )
    else:
        tool = HierarchicalDocumentTool(
            HierarchicalDocumentToolConfig(type="hierarchical_document", **common),
            embeddings=emb,
            project_dir=directory,
            home_dir=directory,
        )
    first = tool.initialize_sync()
    write(directory, inserted(original))
    before = emb.texts
    t0 = time.perf_counter()
    result = tool.initialize_sync()
    seconds = time.perf_counter() - t0
    name = (
        "ours: VectorStoreTool (default splitter + CachedEmbeddings)"
        if kind == "vector"
        else "ours: HierarchicalDocumentTool (structured splitter + CachedEmbeddings)"
    )
    return Row(name, first.added, result.added + result.updated, emb.texts - before, seconds)


def run_pipeline_without_cache(directory: Path, original: list[str]) -> Row:
    write(directory, original)
    emb = CountingEmbeddings()
    pipeline = IngestionPipeline(MatrixVectorStore(emb), namespace="manual")
    first = pipeline.invoke(directory)
    write(directory, inserted(original))
    before = emb.texts
    t0 = time.perf_counter()
    result = pipeline.invoke(directory)
    seconds = time.perf_counter() - t0
    return Row(
        "ours: IngestionPipeline, no embedding cache",
        first.added,
        result.added + result.updated,
        emb.texts - before,
        seconds,
    )


def split_for_langchain(parts: list[str]) -> list[Document]:
    text = "\n\n".join(parts) + "\n"
    return [
        Document(page_content=chunk, metadata={"source": "manual.md"})
        for chunk in default_text_splitter().split_text(text)
    ]


def run_langchain_index(original: list[str], batch_size: int) -> Row:
    emb = CountingEmbeddings()
    store = MatrixVectorStore(emb)
    manager = InMemoryRecordManager(namespace="manual")
    manager.create_schema()
    first = index(
        split_for_langchain(original),
        manager,
        store,
        cleanup="incremental",
        source_id_key="source",
        key_encoder="sha256",
        batch_size=batch_size,
    )
    before = emb.texts
    t0 = time.perf_counter()
    chunks = split_for_langchain(inserted(original))  # splitting is timed for ours too
    result = index(
        chunks,
        manager,
        store,
        cleanup="incremental",
        source_id_key="source",
        key_encoder="sha256",
        batch_size=batch_size,
    )
    seconds = time.perf_counter() - t0
    return Row(
        f'LangChain index() (content-hash ids), cleanup="incremental", batch_size={batch_size}',
        first["num_added"],
        result["num_added"] + result["num_updated"],
        emb.texts - before,
        seconds,
    )


def genuinely_new(original: list[str]) -> tuple[int, int]:
    splitter = default_text_splitter()
    old = splitter.split_text("\n\n".join(original) + "\n")
    new = splitter.split_text("\n\n".join(inserted(original)) + "\n")
    return len(new), len(set(new) - set(old))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--paragraphs", type=int, default=800)
    args = parser.parse_args()

    original = paragraphs(args.paragraphs)
    work = CACHE / "insert_paragraph"
    shutil.rmtree(work, ignore_errors=True)
    directory = work / "docs"
    directory.mkdir(parents=True)

    for scenario, text in SCENARIOS.items():
        set_inserted(text)
        total, new = genuinely_new(original)
        print(
            f"### {scenario} inserted near the top\n\nfile: {len(original)} blocks; default "
            f"splitter: {total} chunks after the insertion, {new} of them genuinely new texts\n"
        )
        rows = [
            run_tool("vector", directory, original),
            run_pipeline_without_cache(directory, original),
            run_langchain_index(original, batch_size=100),
            run_langchain_index(original, batch_size=1000),
            run_tool("hierarchical", directory, original),
        ]
        print(
            "| system | chunks in file | chunks rewritten (added+updated) | texts embedded "
            "| re-ingest time (s) |"
        )
        print("|---|---:|---:|---:|---:|")
        for r in rows:
            print(f"| {r.system} | {r.chunks} | {r.rewritten} | {r.embedded} | {r.seconds:.2f} |")
        print()
    print(
        "index() batch_size=100 is its default: its incremental cleanup runs per batch, so the "
        "file's chunks in later batches are deleted and re-added."
    )
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
