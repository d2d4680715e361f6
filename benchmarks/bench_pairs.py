"""Adjacent-term pairs in the keyword leg (``pair_weight``), swept on the tuning splits only.

    python benchmarks/bench_pairs.py --scifact PATH/scifact --code
    python benchmarks/bench_pairs.py --scifact PATH/scifact --grid 0:100 0.5:100 0.5:300

Each cell ``w:d`` is the default ``HybridRetriever`` over ``BM25KeywordIndex(pair_weight=w)``
with ``d`` candidates re-scored (``PAIR_DEPTH``), everything else at its default:
- SciFact train (809 claims): the ``long_text="fit"`` entries of the cached ``OnnxEmbeddings``
  vectors, as ``bench_quality.py`` stores them; nDCG@10 and Recall@100 of ``invoke(k=100)``,
  and BM25 alone (``search(k=100)``).
- ``--code``: the code dev split (2,146 sympy functions) through the tool end to end, as
  ``bench_code.py`` ingests it, with ``pair_weight`` 0 and the default; Pass@5/10/20 and
  nDCG@10 of ``invoke(k=50)``. Code chunks gain no pair bonus, so the two rows should match.

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

from langchain_holodeck._defaults import DEFAULT_PAIR_WEIGHT
from langchain_holodeck.keyword_index import BM25KeywordIndex
from langchain_holodeck.keyword_index import bm25 as bm25_module
from langchain_holodeck.retrievers import HybridRetriever

GRID = ("0:100", "0.25:100", "0.5:100", "0.75:100", "0.5:50", "0.5:300")


def scifact_rows(path: Path, grid: list[tuple[float, int]]) -> None:
    data = beir(path, splits=("train",), name="SciFact")
    docs, queries, qrels = data.docs, data.queries["train"], data.qrels["train"]
    cache = DiskCachedOnnx()
    cache.ensure([t for _, t in queries], label="queries")
    table = {t: cache.vector(t) for _, t in queries}
    texts = [d.page_content for d in docs]
    entries = _entries(docs, POLICIES["fit"], windows_of(texts), windows_of(texts, 256))
    store = _store(docs, entries, cache, table)
    print(f"\n### SciFact train ({len(queries)} claims)\n")
    print("| pair_weight | candidates re-scored | nDCG@10 | Recall@100 | BM25 alone nDCG@10 |")
    print("|---:|---:|---:|---:|---:|")
    for weight, depth in grid:
        bm25_module.PAIR_DEPTH = depth  # read at each search
        index = BM25KeywordIndex(pair_weight=weight)
        index.upsert(docs)
        retriever = HybridRetriever(vector_store=store, keyword_index=index)
        run = _run(queries, lambda q, r=retriever: [d.id for d in r.invoke(q, k=100)])
        ndcg, recall = _evaluate(run, qrels)
        alone, _ = _evaluate(
            _run(queries, lambda q, i=index: [h.id for h in i.search(q, 100)]), qrels
        )
        print(f"| {weight} | {depth} | {ndcg:.4f} | {recall:.4f} | {alone:.4f} |", flush=True)


def code_rows(weights: list[float]) -> None:
    from bench_code import ours, scores
    from code_pairs import load_pairs
    from embedding_cache import DiskCachedMiniLM

    pairs = load_pairs("dev")
    embeddings = DiskCachedMiniLM(long_text="fit")
    embeddings.ensure([p.query for p in pairs] + [p.document for p in pairs])
    print(f"\n### code dev ({len(pairs)} functions)\n")
    print("| pair_weight | Pass@5 | Pass@10 | Pass@20 | nDCG@10 |\n|---:|---:|---:|---:|---:|")
    defaults = BM25KeywordIndex.__init__.__kwdefaults__
    for weight in weights:
        defaults["pair_weight"] = weight  # the tool builds its index with the defaults
        with tempfile.TemporaryDirectory() as tmp:
            run, _, _ = ours(pairs, embeddings, Path(tmp))
        print(f"| {weight} |", " | ".join(f"{v:.3f}" for v in scores(run, pairs)), "|")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scifact", type=Path, default=None, help="BEIR SciFact directory")
    parser.add_argument("--code", action="store_true", help="the code dev split too")
    parser.add_argument("--grid", nargs="+", default=list(GRID), help="weight:depth cells")
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    grid = [(float(w), int(d)) for w, d in (cell.split(":") for cell in args.grid)]
    print(f"(load average at start: {os.getloadavg()[0]:.1f})")
    if args.scifact is not None:
        scifact_rows(args.scifact, grid)
    if args.code:
        code_rows([0.0, DEFAULT_PAIR_WEIGHT])


if __name__ == "__main__":
    main()
