"""The dense fusion weight and the feedback weight, swept together on the tuning splits only.

    python benchmarks/bench_weights_grid.py --scifact PATH/scifact --code
    python benchmarks/bench_weights_grid.py --scifact PATH/scifact --grid 0.7:0.75 0.65:0.5

Each cell ``a:w`` is the default ``HybridRetriever`` with ``weights=(a, 1 - a, 0.2)`` and
``feedback_weight=w``, everything else at its default:
- SciFact train (809 claims): the ``long_text="fit"`` entries of the cached ``OnnxEmbeddings``
  vectors, as ``bench_quality.py`` stores them; nDCG@10 and Recall@100 of ``invoke(k=100)``.
- ``--code``: the code dev split (2,146 sympy functions) through the tool end to end, as
  ``bench_code.py`` ingests it; Pass@5/10/20 and nDCG@10 of ``invoke(k=50)``. Code queries get
  no feedback, so only ``a`` moves these.

The rule for a new default (docs/quality.md): a gain of 0.002 or more on SciFact train and no
loss on code dev. Test splits are never read here.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_quality import POLICIES, _entries, _evaluate, _run, _store
from onnx_cache import DiskCachedOnnx, windows_of
from prose_data import beir

from langchain_holodeck.keyword_index import BM25KeywordIndex
from langchain_holodeck.retrievers import HybridRetriever

GRID = ("0.7:0.75", "0.7:0.5", "0.65:0.75", "0.65:0.5", "0.6:0.75", "0.75:0.75")


def _update(cell: tuple[float, float], exact: float) -> dict[str, object]:
    dense, feedback = cell
    return {"weights": (dense, round(1 - dense, 4), exact), "feedback_weight": feedback}


def scifact_rows(path: Path, grid: list[tuple[float, float]]) -> None:
    data = beir(path, splits=("train",), name="SciFact")
    docs, queries, qrels = data.docs, data.queries["train"], data.qrels["train"]
    cache = DiskCachedOnnx()
    cache.ensure([t for _, t in queries], label="queries")
    table = {t: cache.vector(t) for _, t in queries}
    texts = [d.page_content for d in docs]
    entries = _entries(docs, POLICIES["fit"], windows_of(texts), windows_of(texts, 256))
    bm25 = BM25KeywordIndex()
    bm25.upsert(docs)
    default = HybridRetriever(vector_store=_store(docs, entries, cache, table), keyword_index=bm25)
    print(f"\n### SciFact train ({len(queries)} claims)\n")
    print("| dense weight a | feedback weight w | nDCG@10 | Recall@100 |\n|---:|---:|---:|---:|")
    for cell in grid:
        retriever = default.model_copy(update=_update(cell, default.weights[2]))
        run = _run(queries, lambda q, r=retriever: [d.id for d in r.invoke(q, k=100)])
        ndcg, recall = _evaluate(run, qrels)
        print(f"| {cell[0]} | {cell[1]} | {ndcg:.4f} | {recall:.4f} |", flush=True)


def code_rows(grid: list[tuple[float, float]]) -> None:
    from bench_code import ours, scores
    from code_pairs import load_pairs
    from embedding_cache import DiskCachedMiniLM

    pairs = load_pairs("dev")
    embeddings = DiskCachedMiniLM(long_text="fit")
    embeddings.ensure([p.query for p in pairs] + [p.document for p in pairs])
    variants = {f"| {a} | {w} |": _update((a, w), 0.2) for a, w in grid}
    with tempfile.TemporaryDirectory() as tmp:
        _, _, runs = ours(pairs, embeddings, Path(tmp), variants=variants)
    print(f"\n### code dev ({len(pairs)} functions)\n")
    print("| dense weight a | feedback weight w | Pass@5 | Pass@10 | Pass@20 | nDCG@10 |")
    print("|---:|---:|---:|---:|---:|---:|")
    for label, run in runs.items():
        print(label, " | ".join(f"{v:.3f}" for v in scores(run, pairs)), "|")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scifact", type=Path, default=None, help="BEIR SciFact directory")
    parser.add_argument("--code", action="store_true", help="the code dev split too")
    parser.add_argument("--grid", nargs="+", default=list(GRID), help="a:w cells")
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    grid = [(float(a), float(w)) for a, w in (cell.split(":") for cell in args.grid)]
    print(f"(load average at start: {os.getloadavg()[0]:.1f})")
    if args.scifact is not None:
        scifact_rows(args.scifact, grid)
    if args.code:
        code_rows(grid)


if __name__ == "__main__":
    main()
