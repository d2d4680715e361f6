"""Candidate depth and fusion of HybridRetriever, swept on tuning data only (never on test).

    python benchmarks/bench_fusion_sweep.py                   # SciFact train + code dev
    python benchmarks/bench_fusion_sweep.py --datasets scifact

Tuning sets: SciFact's 809 train claims (``qrels/train.tsv``) and the code set's dev split
(sympy docstring -> function, ``code_pairs.py``; skipped with a note when it is not built).
Stores: MatrixVectorStore + BM25KeywordIndex (package defaults), cached all-MiniLM-L6-v2
vectors; no exact leg (neither set names sections).

Made cheap by the retriever's design (legs return ids and scores): each query's two legs are
run once, 1000 deep (``MatrixVectorStore.search_ids_by_vector``, ``BM25KeywordIndex.search``),
and every configuration fuses prefixes of those lists with the retriever's own fusion
functions (``reciprocal_rank_fusion``, ``convex_score_fusion`` with lower bounds 0), the way
``HybridRetriever`` calls them; the chosen configuration is then re-run through
``HybridRetriever.invoke`` on every query and must return the same ids (checked, printed).

One grid: fusion (RRF with semantic weight w and keyword 1 - w; convex with alpha and
1 - alpha) x weight x ``fetch_k``. nDCG@10 at k=10 (the retriever fetches max(fetch_k, 2k) per
leg); Recall@100 of the choice at k=100 (max(fetch_k, 200) per leg). The rule: the default
fusion and weights are the best mean nDCG@10 over the tuning sets (each set counts once); the
default depth is the smallest ``fetch_k`` within 0.001 of that best for that fusion and weight
(where quality stops improving).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from ir_metrics import mean, ndcg_at_k, recall_at_k
from tuning_data import Dataset, code, scifact

from langchain_holodeck.fusion import convex_score_fusion, reciprocal_rank_fusion
from langchain_holodeck.keyword_index import BM25KeywordIndex
from langchain_holodeck.retrievers import HybridRetriever
from langchain_holodeck.vectorstores import MatrixVectorStore

DEPTHS = (10, 20, 50, 100, 200, 300, 500, 1000)
RRF_WEIGHTS = (0.3, 0.4, 0.5, 0.6, 0.7)
CONVEX_ALPHAS = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)
TOLERANCE = 0.001
MAX_DEPTH = 1000

Ranking = list[tuple[str, float]]


class Bench:
    """One dataset's split: indexed once, both legs run once per query, 1000 deep."""

    def __init__(self, data: Dataset, split: str) -> None:
        self.name = f"{data.name} {split}" if "(" not in data.name else data.name
        self.queries = data.queries[split]
        self.qrels = data.qrels[split]
        self.store = MatrixVectorStore(data.embeddings)
        self.store.add_vectors(data.docs, data.doc_vectors)
        self.bm25 = BM25KeywordIndex()
        self.bm25.upsert(data.docs)
        emb = data.embeddings
        self.legs: dict[str, tuple[Ranking, Ranking]] = {
            qid: (
                self.store.search_ids_by_vector(emb.embed_query(text), MAX_DEPTH),
                list(self.bm25.search(text, MAX_DEPTH)),
            )
            for qid, text in self.queries
        }

    def fused(self, qid: str, k: int, fetch_k: int, fusion: str, w: float) -> list[str]:
        """What HybridRetriever(fetch_k, fusion, weights=(w, 1 - w, 0)).invoke(k=k) ranks."""
        fetch = max(fetch_k, 2 * k)
        dense, keyword = self.legs[qid]
        lists = [dense[:fetch], keyword[:fetch]]
        weights = [w, 1 - w]
        if fusion == "convex":
            out = convex_score_fusion(lists, weights=weights, lower_bounds=[0.0, 0.0])
        else:
            out = reciprocal_rank_fusion(lists, k=60, weights=weights)
        return [doc_id for doc_id, _ in out[:k]]

    def ndcg10(self, fetch_k: int, fusion: str, w: float) -> float:
        return mean(
            [
                ndcg_at_k(self.fused(q, 10, fetch_k, fusion, w), self.qrels[q], 10)
                for q, _ in self.queries
            ]
        )

    def recall100(self, fetch_k: int, fusion: str, w: float) -> float:
        return mean(
            [
                recall_at_k(self.fused(q, 100, fetch_k, fusion, w), self.qrels[q], 100)
                for q, _ in self.queries
            ]
        )

    def verify(self, fetch_k: int, fusion: str, w: float) -> int:
        """Queries on which HybridRetriever.invoke returns exactly the swept ranking."""
        retriever = HybridRetriever(
            vector_store=self.store,
            keyword_index=self.bm25,
            fetch_k=fetch_k,
            fusion=fusion,  # type: ignore[arg-type]  # "rrf" | "convex"
            weights=(w, 1 - w, 0.0),
        )
        same = 0
        for qid, text in self.queries:
            got = [d.id for d in retriever.invoke(text, k=10)]
            same += got == self.fused(qid, 10, fetch_k, fusion, w)
        return same


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--datasets", nargs="+", default=["scifact", "code"])
    args = parser.parse_args()
    started = time.perf_counter()
    benches: list[Bench] = []
    if "scifact" in args.datasets:
        benches.append(Bench(scifact(), "train"))
    if "code" in args.datasets:
        dev = code("dev")
        if dev is None:
            print("(code dev set not built: run benchmarks/code_pairs.py; SciFact only)\n")
        else:
            benches.append(Bench(dev, "dev"))
    for b in benches:
        print(f"{b.name}: {len(b.queries)} queries")

    grid: dict[tuple[str, int, float], list[float]] = {}
    for fusion, weights in (("rrf", RRF_WEIGHTS), ("convex", CONVEX_ALPHAS)):
        for depth in DEPTHS:
            for w in weights:
                grid[(fusion, depth, w)] = [b.ndcg10(depth, fusion, w) for b in benches]
    for fusion, weights in (("rrf", RRF_WEIGHTS), ("convex", CONVEX_ALPHAS)):
        label = (
            "semantic weight w (keyword 1 - w)" if fusion == "rrf" else "alpha (keyword 1 - alpha)"
        )
        print(
            f"\n### {fusion}: mean nDCG@10 over the tuning sets ("
            + " / ".join(b.name for b in benches)
            + f" in brackets); columns: {label}\n"
        )
        print("| fetch_k | " + " | ".join(str(w) for w in weights) + " |")
        print("|---:|" + "---|" * len(weights))
        for depth in DEPTHS:
            cells = []
            for w in weights:
                values = grid[(fusion, depth, w)]
                parts = " / ".join(f"{v:.3f}" for v in values)
                cells.append(f"{mean(values):.4f} ({parts})")
            print(f"| {depth} | " + " | ".join(cells) + " |")

    (fusion, _, w), best = max(grid.items(), key=lambda item: mean(item[1]))
    best_mean = mean(best)
    depth = min(
        d
        for (f, d, x), v in grid.items()
        if f == fusion and x == w and mean(v) >= best_mean - TOLERANCE
    )
    values = grid[(fusion, depth, w)]
    print(
        f"\nbest mean nDCG@10: {best_mean:.4f} ({fusion}, weight {w}); smallest fetch_k within "
        f"{TOLERANCE}: {depth}"
    )
    print(
        f"chosen: fusion={fusion}, weights semantic {w} / keyword {round(1 - w, 2)}, "
        f"fetch_k={depth}: "
        + ", ".join(f"{b.name} nDCG@10 {v:.4f}" for b, v in zip(benches, values, strict=True))
    )
    scifact_bench = next((b for b in benches if b.name.startswith("SciFact")), None)
    if scifact_bench is not None:
        print(f"SciFact train R@100 at k=100: {scifact_bench.recall100(depth, fusion, w):.4f}")
    for b in benches:
        same = b.verify(depth, fusion, w)
        total = len(b.queries)
        print(f"{b.name}: HybridRetriever.invoke returned the swept ranking on {same}/{total}")
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
