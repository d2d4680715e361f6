"""A digest of every hybrid result on the synthetic corpus: compare two commits' answers.

    python benchmarks/results_digest.py                 # one line per configuration + total
    python benchmarks/results_digest.py --queries 40    # quicker

Runs ``synthetic.default_retriever`` (10k chunks) over the first ``--queries`` queries in
several configurations (the defaults, feedback off, RRF, shallower and deeper, a threshold,
other weights, one leg only, the async path, and the defaults again after writes: re-upserted
chunks, some typed as code, deletions, so the store has tombstones and BM25 a delta segment)
and prints a SHA-256 of each configuration's results: every id, text and metadata value (scores
by ``repr``, so bit for bit). A speed change meant to keep results identical must leave every
line unchanged; run it on both commits (``git stash`` or a ``git worktree``) and diff.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from langchain_core.documents import Document
from synthetic import corpus, default_retriever

CONFIGS: dict[str, dict[str, object]] = {
    "defaults": {},
    "feedback_docs=0": {"feedback_docs": 0},
    "fusion=rrf": {"fusion": "rrf"},
    "fetch_k=50": {"fetch_k": 50},
    "k=20": {"k": 20},
    "min_similarity_score=0.05": {"min_similarity_score": 0.05},
    "weights=(0.3, 0.7, 0.2)": {"weights": (0.3, 0.7, 0.2)},
    "feedback 5 x 0.3": {"feedback_docs": 5, "feedback_weight": 0.3},
    "dense only": {"weights": (1.0, 0.0, 0.0)},
    "keyword only": {"weights": (0.0, 1.0, 0.0)},
}


def _digest(results: list[list[Document]]) -> str:
    h = hashlib.sha256()
    for docs in results:
        for d in docs:
            h.update(repr((d.id, d.page_content, sorted(d.metadata.items()))).encode())
        h.update(b"\n")
    return h.hexdigest()[:16]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", type=int, default=160)
    args = parser.parse_args()
    texts, vecs, queries, qvecs = corpus(10_000)
    qv = {q: qvecs[i] for i, q in enumerate(queries)}
    base = default_retriever(texts, vecs, qv)
    asked = queries[: args.queries]
    total = hashlib.sha256()

    def row(name: str, results: list[list[Document]]) -> None:
        digest = _digest(results)
        total.update(digest.encode())
        print(f"{name}: {digest}")

    for name, update in CONFIGS.items():
        retriever = base.model_copy(update=update)
        row(name, [retriever.invoke(q) for q in asked])
    row("async (defaults)", [asyncio.run(base.ainvoke(q)) for q in asked[:40]])
    store, bm25 = base.vector_store, base.keyword_index
    rows = [(i * 7) % len(texts) for i in range(0, 300, 2)]
    rewritten = [
        Document(id=str(i), page_content=texts[r], metadata={"chunk_type": "code" if i % 3 else ""})
        for i, r in zip(range(0, 300, 2), rows, strict=True)
    ]
    store.add_vectors(rewritten, vecs[rows])  # type: ignore[attr-defined]  # MatrixVectorStore
    bm25.upsert(rewritten)  # type: ignore[union-attr]  # the default retriever has one
    gone = [str(i) for i in range(1000, 1100)]
    store.delete(gone)
    bm25.delete(gone)  # type: ignore[union-attr]  # the default retriever has one
    for name in ("defaults", "min_similarity_score=0.05", "feedback_docs=0"):
        retriever = base.model_copy(update=CONFIGS[name])
        row(f"after writes, {name}", [retriever.invoke(q) for q in asked])
    print(f"all: {total.hexdigest()[:16]}")


if __name__ == "__main__":
    main()
