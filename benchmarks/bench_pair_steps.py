"""What the keyword leg's word pairs cost a query, step by step, alone and inside a search.

    python benchmarks/bench_pair_steps.py              # 10k chunks, 5 rounds of 200 queries
    python benchmarks/bench_pair_steps.py --size 100000 --rounds 3

The speed benchmarks' synthetic corpus (``synthetic.py``) and ``default_retriever`` (the
tool's defaults: word pairs at ``pair_weight`` 0.5 over the best 100 BM25 candidates). Each
step of the pair re-scoring is timed by a wrapper around the function that does it, first
with the keyword index searched alone (``search_ranked(query, fetch_k)``, nothing else
between two searches), then inside ``HybridRetriever.invoke`` (the dense leg, fusion and
feedback between two searches). Medians per query, microseconds; one BLAS thread. The steps:
- the query's pairs: ``BM25KeywordIndex._query_pairs`` (its words split again);
- the terms read: ``TermStore.gather`` (the candidates' term ids back to back);
- the pairs found and scored: ``pair_bonus``;
- the rest of ``_with_pairs``: the candidates' ids to their slots, the re-sort, the new list.
The last row is the whole pair re-scoring, what ``pair_weight=0`` saves.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one BLAS thread, set before numpy loads
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from synthetic import corpus, default_retriever

from langchain_holodeck.keyword_index import bm25 as bm25_module
from langchain_holodeck.keyword_index._term_store import TermStore
from langchain_holodeck.retrievers.hybrid import DEFAULT_FETCH_K

STEPS = {
    "query_pairs": "the query's pairs (its words split again)",
    "gather": "the candidates' terms read back to back",
    "pair_bonus": "the pairs found and scored (`pair_bonus`)",
    "rest": "the rest: ids to term slots, the re-sort, the new list",
    "with_pairs": "the whole pair re-scoring (`_query_pairs` + `_with_pairs`)",
}


def timed(current: dict[str, float], name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn``, adding each call's seconds to ``current[name]`` (the query's running total)."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            current[name] = current.get(name, 0.0) + time.perf_counter() - start

    return wrapper


def measure(run: Callable[[str], object], queries: list[str], rounds: int) -> dict[str, float]:
    """Median microseconds per query of each step while ``run`` answers every query."""
    current: dict[str, float] = {}
    index_class = bm25_module.BM25KeywordIndex
    originals = (
        index_class._query_pairs,
        index_class._with_pairs,
        TermStore.gather,
        bm25_module.pair_bonus,
    )
    index_class._query_pairs = timed(current, "query_pairs", originals[0])  # type: ignore[method-assign]
    index_class._with_pairs = timed(current, "_with_pairs", originals[1])  # type: ignore[method-assign]
    TermStore.gather = timed(current, "gather", originals[2])  # type: ignore[method-assign]
    bm25_module.pair_bonus = timed(current, "pair_bonus", originals[3])
    per_query: list[dict[str, float]] = []
    try:
        for query in queries[:5]:
            run(query)
        for _ in range(rounds):
            for query in queries:
                current.clear()
                run(query)
                step = dict.fromkeys(("query_pairs", "_with_pairs", "gather", "pair_bonus"), 0.0)
                per_query.append(step | current)
    finally:
        (
            index_class._query_pairs,
            index_class._with_pairs,
            TermStore.gather,
            bm25_module.pair_bonus,
        ) = originals
    for step in per_query:
        step["rest"] = step["_with_pairs"] - step["gather"] - step["pair_bonus"]
        step["with_pairs"] = step["query_pairs"] + step["_with_pairs"]
    return {name: statistics.median(s[name] for s in per_query) * 1e6 for name in STEPS}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=10_000, help="chunks")
    parser.add_argument("--rounds", type=int, default=5, help="passes over the 200 queries")
    args = parser.parse_args()
    texts, vecs, queries, qvecs = corpus(args.size)
    retriever = default_retriever(texts, vecs, {q: qvecs[i] for i, q in enumerate(queries)})
    index = retriever.keyword_index
    alone = measure(lambda q: index.search_ranked(q, DEFAULT_FETCH_K), queries, args.rounds)
    inside = measure(retriever.invoke, queries, args.rounds)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"\n{args.size:,} chunks, {len(queries)} queries x {args.rounds}; load {load}\n")
    print("| step of the pair re-scoring (100 candidates) | alone, µs | inside a search, µs |")
    print("|---|---:|---:|")
    for name, label in STEPS.items():
        print(f"| {label} | {alone[name]:.0f} | {inside[name]:.0f} |")


if __name__ == "__main__":
    main()
