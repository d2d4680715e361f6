"""Hybrid retrieval speed: ours vs LangChain's EnsembleRetriever vs a bare numpy+bm25s floor.

    python benchmarks/bench_hybrid_speed.py                 # 10k and 100k chunks
    python benchmarks/bench_hybrid_speed.py --sizes 10000   # quicker
    python benchmarks/bench_hybrid_speed.py --sizes 10000 --paired 3   # floors and ours
                                                    # alternating in one process

Synthetic chunks of ~120 Zipf-distributed words and random unit 384-dim vectors (cached in
benchmarks/.cache/). The query embedding is excluded: every system gets an Embeddings that
looks the precomputed query vector up. Each (system, size) runs in its own process, so peak
RSS is per system (it includes the ~same input data for all: see the "inputs only" row).
Ours: MatrixVectorStore + BM25KeywordIndex + HybridRetriever(k=10) at its default fetch_k.
Quality of the candidate depth: ours' top 10 against the same fusion (RRF, convex) computed
over the *full* dense and BM25 rankings (recall@10 vs exact fusion), at the default depth and
at fetch_k=50.
Peer: EnsembleRetriever([BM25Retriever(k=50), InMemoryVectorStore.as_retriever(k=50)]),
langchain-classic + langchain-community installed as benchmark peers only.
Floor: numpy matmul + argpartition, bm25s (stop words + stemming) retrieve, a 20-line RRF,
at 50 candidates per leg ("floor") and at our default depth ("floor_default", DEFAULT_FETCH_K).
Each worker runs with one BLAS thread (``--blas-threads``): one query at a time on a shared
2-core machine, where BLAS threads only contend (the floor took 17 ms instead of 0.8 ms at
load 4 with them). Wall and CPU time per query are both printed, with the load average.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from synthetic import corpus, default_retriever, floor_query_tokens, floor_search

ROOT = Path(__file__).resolve().parents[1]
N_QUERIES = {
    "ours": 200,
    "ours_previous": 200,
    "floor": 200,
    "floor_default": 200,
    "ensemble": 20,
    "inputs": 0,
}
PREVIOUS = {"fusion": "rrf", "weights": (0.5, 0.5, 0.2), "fetch_k": 50}
"""The defaults before the fusion sweep, for a same-run latency comparison."""
ENSEMBLE_QUERIES_100K = 5


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def worker(system: str, n: int) -> dict:
    sys.path.insert(0, str(ROOT))
    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings

    texts, vecs, queries, qvecs = corpus(n)
    queries = queries[
        : N_QUERIES[system]
        if not (system == "ensemble" and n >= 100_000)
        else ENSEMBLE_QUERIES_100K
    ]
    base_rss = rss_mb()

    class Lookup(Embeddings):
        """Precomputed vectors: the embedding model is not what we measure."""

        def __init__(self) -> None:
            self.q = {q: qvecs[i] for i, q in enumerate(queries)}
            self.d = None

        def embed_documents(self, batch: list[str]) -> list[list[float]]:
            if self.d is None:
                self.d = {t: i for i, t in enumerate(texts)}
            return [vecs[self.d[t]].tolist() for t in batch]

        def embed_query(self, text: str) -> list[float]:
            return self.q[text].tolist()

    emb = Lookup()
    latencies: list[float] = []
    cpu: list[float] = []
    if system == "inputs":
        return {"build_s": 0.0, "rss_mb": rss_mb(), "base_rss_mb": base_rss, "lat": [0.0]}
    t0 = time.perf_counter()
    if system in ("ours", "ours_previous"):
        from langchain_holodeck.keyword_index import BM25KeywordIndex
        from langchain_holodeck.retrievers import HybridRetriever
        from langchain_holodeck.vectorstores import MatrixVectorStore

        docs = [Document(id=str(i), page_content=t) for i, t in enumerate(texts)]
        store = MatrixVectorStore(emb)
        store.add_vectors(docs, vecs)
        bm25 = BM25KeywordIndex()
        bm25.upsert(docs)
        bm25.search("warmup", 1)  # the first search builds the matrix: part of build time
        params = PREVIOUS if system == "ours_previous" else {}
        retriever = HybridRetriever(vector_store=store, keyword_index=bm25, k=10, **params)
        build = time.perf_counter() - t0
        retriever.invoke(queries[0])
        for q in queries:
            t, c = time.perf_counter(), time.process_time()
            out = retriever.invoke(q)
            latencies.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)
        assert len(out) == 10
        # peak of build + queries, before the update experiments below add their own
        extra = {"rss_mb": rss_mb(), "fetch_k": retriever.fetch_k}
        if system == "ours":
            extra |= exact_fusion_recall(retriever, queries, qvecs, vecs, bm25)
        # incremental update cost: 1% of the corpus re-upserted, then one search
        t = time.perf_counter()
        bm25.upsert(docs[: n // 100])
        bm25.search(queries[0], 10)
        extra |= {"delta_1pct_s": time.perf_counter() - t, "full_builds": bm25.full_builds}
        t = time.perf_counter()
        bm25.upsert(docs[: n // 5])
        bm25.search(queries[0], 10)
        extra["rebuild_20pct_s"] = time.perf_counter() - t
    elif system in ("floor", "floor_default"):
        import bm25s
        import Stemmer

        stemmer = Stemmer.Stemmer("english")
        matrix = np.ascontiguousarray(vecs)
        index = bm25s.BM25()
        index.index(
            bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False),
            show_progress=False,
        )
        build = time.perf_counter() - t0
        qv = {q: qvecs[i] for i, q in enumerate(queries)}

        q_tokens = floor_query_tokens(queries, stemmer)
        depth = 50
        if system == "floor_default":
            from langchain_holodeck.retrievers.hybrid import DEFAULT_FETCH_K as depth
        for q in queries:
            t, c = time.perf_counter(), time.process_time()
            out = floor_search(matrix, index, qv[q], q_tokens[q], depth)
            latencies.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)
        extra = {"depth": depth}
    else:
        from langchain_classic.retrievers import EnsembleRetriever
        from langchain_community.retrievers import BM25Retriever
        from langchain_core.vectorstores import InMemoryVectorStore

        docs = [Document(id=str(i), page_content=t) for i, t in enumerate(texts)]
        store = InMemoryVectorStore(emb)
        store.add_documents(docs)
        bm25r = BM25Retriever.from_documents(docs, k=50)
        ens = EnsembleRetriever(
            retrievers=[bm25r, store.as_retriever(search_kwargs={"k": 50})], weights=[0.5, 0.5]
        )
        build = time.perf_counter() - t0
        for q in queries:
            t, c = time.perf_counter(), time.process_time()
            out = ens.invoke(q)
            latencies.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)
        extra = {"returned": len(out)}
    return {
        "build_s": build,
        "rss_mb": rss_mb(),
        "base_rss_mb": base_rss,
        "lat": latencies,
        "cpu": cpu,
    } | extra


def _without_pairs(retriever: Any) -> Any:
    """The retriever's BM25 index, shared, ranking by its terms alone (``pair_weight=0``)."""
    index = copy.copy(retriever.keyword_index)  # the same arrays: only the weight differs
    index.pair_weight = 0.0
    return index


def paired(n: int, rounds: int) -> dict:
    """Floor (50 and default depth per leg) and ours in one process, query by query.

    Each query runs every system in turn (the order rotating), so every system meets the same
    load: on a shared machine the per-process rows differ by more than the systems do.
    """
    sys.path.insert(0, str(ROOT))
    import bm25s
    import Stemmer

    from langchain_holodeck.retrievers.hybrid import DEFAULT_FETCH_K

    texts, vecs, queries, qvecs = corpus(n)
    qv = {q: qvecs[i] for i, q in enumerate(queries)}

    retriever = default_retriever(texts, vecs, qv)
    stemmer = Stemmer.Stemmer("english")
    matrix = np.ascontiguousarray(vecs)
    index = bm25s.BM25()
    index.index(
        bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False),
        show_progress=False,
    )
    q_tokens = floor_query_tokens(queries, stemmer)
    systems = {
        "floor": lambda q: floor_search(matrix, index, qv[q], q_tokens[q], 50),
        "floor_default": lambda q: floor_search(matrix, index, qv[q], q_tokens[q], DEFAULT_FETCH_K),
        "ours": retriever.invoke,
        "ours_no_feedback": retriever.model_copy(update={"feedback_docs": 0}).invoke,
        "ours_no_pairs": retriever.model_copy(
            update={"keyword_index": _without_pairs(retriever)}
        ).invoke,
    }
    names = list(systems)
    for q in queries[:5]:
        for fn in systems.values():
            fn(q)
    lat: dict[str, list[float]] = {name: [] for name in names}
    cpu: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        for i, q in enumerate(queries):
            shift = (i + r) % len(names)
            for name in names[shift:] + names[:shift]:
                t, c = time.perf_counter(), time.process_time()
                systems[name](q)
                lat[name].append(time.perf_counter() - t)
                cpu[name].append(time.process_time() - c)
    return {"lat": lat, "cpu": cpu, "fetch_k": retriever.fetch_k, "queries": len(queries)}


def exact_fusion_recall(retriever, queries, qvecs, vecs, bm25) -> dict:
    """Recall@10 of the retriever (default depth and fetch_k=50, each fusion) against the same
    fusion over the *full* dense and BM25 rankings (every chunk scored)."""
    from langchain_holodeck.fusion import convex_score_fusion, reciprocal_rank_fusion

    n = vecs.shape[0]
    w = list(retriever.weights[:2])
    exact_fns = {
        "rrf": lambda lists: reciprocal_rank_fusion(lists, k=retriever.rrf_k, weights=w),
        "convex": lambda lists: convex_score_fusion(lists, weights=w, lower_bounds=[0.0, 0.0]),
    }
    variants = {
        # one fusion of the legs, as the truth is (feedback re-ranks on purpose)
        (fusion, depth): retriever.model_copy(
            update={"fusion": fusion, "fetch_k": depth, "feedback_docs": 0}
        )
        for fusion in exact_fns
        for depth in (retriever.fetch_k, 50)
    }
    recall: dict[tuple[str, int], list[float]] = {key: [] for key in variants}
    for i, q in enumerate(queries):
        sims = vecs @ qvecs[i]
        dense = [(str(r), max(0.0, float(sims[r]))) for r in np.argsort(-sims, kind="stable")]
        keyword = bm25.search(q, n)
        truth = {f: {d for d, _ in fn([dense, keyword])[:10]} for f, fn in exact_fns.items()}
        for (fusion, depth), r in variants.items():
            got = {d.id for d in r.invoke(q)}
            recall[(fusion, depth)].append(len(got & truth[fusion]) / 10)
    return {
        "recall": {f"{f}@{d}": statistics.mean(v) for (f, d), v in recall.items()},
        "fusion": retriever.fusion,
    }


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument(
        "--systems",
        nargs="+",
        default=["inputs", "floor", "floor_default", "ours", "ours_previous", "ensemble"],
    )
    parser.add_argument("--blas-threads", type=int, default=1)
    parser.add_argument("--worker", nargs=2, metavar=("SYSTEM", "N"))
    parser.add_argument(
        "--paired",
        type=int,
        metavar="ROUNDS",
        help="run the floors and ours in one process, alternating query by query, ROUNDS "
        "passes over the queries (same load for all three; no RSS or build rows)",
    )
    args = parser.parse_args()
    if args.worker:
        if args.worker[0] == "paired":
            n, rounds = (int(x) for x in args.worker[1].split(":"))
            print(json.dumps(paired(n, rounds)))
            return
        print(json.dumps(worker(args.worker[0], int(args.worker[1]))))
        return
    if args.paired:
        threads = str(args.blas_threads)
        env = os.environ | {"OPENBLAS_NUM_THREADS": threads, "OMP_NUM_THREADS": threads}
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT
        ).stdout.strip()
        for n in args.sizes:
            before = os.getloadavg()[0]
            proc = subprocess.run(
                [sys.executable, __file__, "--worker", "paired", f"{n}:{args.paired}"],
                capture_output=True,
                text=True,
                check=True,
                env=env,  # BLAS threads are read when NumPy loads: set them for the worker
            )
            res = json.loads(proc.stdout.strip().splitlines()[-1])
            print(
                f"\npaired @ {n:,}, commit {commit}: {res['queries']} queries x {args.paired} "
                f"rounds, order rotating; load average {before:.1f}-{os.getloadavg()[0]:.1f}; "
                f"{threads} BLAS thread(s)"
            )
            print("\n| chunks | system | calls | p50 ms | p95 ms | CPU ms/query p50 |")
            print("|---:|---|---:|---:|---:|---:|")
            names = {
                "floor": "bare floor (50 per leg)",
                "floor_default": f"bare floor ({res['fetch_k']} per leg)",
                "ours": f"**HybridRetriever (ours, defaults: fetch_k {res['fetch_k']})**",
                "ours_no_feedback": "HybridRetriever, defaults but feedback_docs=0",
                "ours_no_pairs": "HybridRetriever, defaults but BM25 pair_weight=0",
            }
            for name, label in names.items():
                lat = [x * 1000 for x in res["lat"][name]]
                cpu = statistics.median(res["cpu"][name]) * 1000
                print(
                    f"| {n:,} | {label} | {len(lat)} | {statistics.median(lat):.2f} | "
                    f"{pct(lat, 0.95):.2f} | {cpu:.2f} |"
                )
            for name in ("floor", "floor_default"):
                for mine in ("ours", "ours_no_feedback", "ours_no_pairs"):
                    mine_lat = statistics.median(res["lat"][mine])
                    mine_cpu = statistics.median(res["cpu"][mine])
                    print(
                        f"{mine} / {names[name]}: "
                        f"{mine_lat / statistics.median(res['lat'][name]):.2f}x (p50 wall), "
                        f"{mine_cpu / statistics.median(res['cpu'][name]):.2f}x (p50 CPU)"
                    )
        return
    rows = []
    threads = str(args.blas_threads)
    env = os.environ | {"OPENBLAS_NUM_THREADS": threads, "OMP_NUM_THREADS": threads}
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT
    ).stdout.strip()
    loads = [os.getloadavg()[0]]
    for n in args.sizes:
        corpus(n)
        for system in args.systems:
            proc = subprocess.run(
                [sys.executable, __file__, "--worker", system, str(n)],
                capture_output=True,
                text=True,
                check=False,
                env=env,
            )
            loads.append(os.getloadavg()[0])
            if proc.returncode != 0:
                print(f"{system} @ {n}: failed\n{proc.stderr[-2000:]}")
                continue
            res = json.loads(proc.stdout.strip().splitlines()[-1])
            rows.append((n, system, res))
            print(f"done: {system} @ {n}", file=sys.stderr)
    names = {
        "inputs": "inputs only (texts + vectors loaded)",
        "floor": "bare floor (50 per leg)",
        "floor_default": "bare floor (default depth per leg)",
        "ours": "**HybridRetriever (ours, defaults)**",
        "ours_previous": "HybridRetriever, previous defaults (rrf, fetch_k=50)",
        "ensemble": "EnsembleRetriever (LangChain)",
    }
    print(
        f"\ncommit {commit}; load average (1 min) {min(loads):.1f}-{max(loads):.1f}; "
        f"{threads} BLAS thread(s)"
    )
    print(
        "\n| chunks | system | queries | p50 ms | p95 ms | CPU ms/query p50 | build s "
        "| peak RSS MB |"
    )
    print("|---:|---|---:|---:|---:|---:|---:|---:|")
    for n, system, res in rows:
        lat = [x * 1000 for x in res["lat"]]
        if system == "inputs":
            print(f"| {n:,} | {names[system]} | - | - | - | - | - | {res['rss_mb']:.0f} |")
            continue
        cpu = statistics.median(res["cpu"]) * 1000
        print(
            f"| {n:,} | {names[system]} | {len(lat)} | {statistics.median(lat):.2f} | "
            f"{pct(lat, 0.95):.2f} | {cpu:.2f} | {res['build_s']:.1f} | {res['rss_mb']:.0f} |"
        )
    for n, system, res in rows:
        if system == "ours":
            print(
                f"\nours @ {n:,} (default fusion {res['fusion']}, fetch_k {res['fetch_k']}): "
                "recall@10 vs the same fusion over the full rankings: "
                + ", ".join(f"{key} {value:.3f}" for key, value in res["recall"].items())
            )
            print(
                f"\nours @ {n:,}: re-upsert 1% + search {res['delta_1pct_s'] * 1000:.0f} ms "
                f"(delta segment, no full rebuild); 20% + search {res['rebuild_20pct_s']:.2f} s "
                f"(compaction: full rebuild)"
            )
    by = {(n, s): r for n, s, r in rows}
    for n in args.sizes:
        for floor in ("floor", "floor_default"):
            if (n, "ours") in by and (n, floor) in by:
                ours = statistics.median(by[(n, "ours")]["lat"])
                bare = statistics.median(by[(n, floor)]["lat"])
                cpu_ratio = statistics.median(by[(n, "ours")]["cpu"]) / statistics.median(
                    by[(n, floor)]["cpu"]
                )
                print(
                    f"ours (defaults) / {names[floor]} @ {n:,}: {ours / bare:.2f}x (p50 wall), "
                    f"{cpu_ratio:.2f}x (p50 CPU)"
                )
    for n in args.sizes:
        if (n, "ours") in by and (n, "ensemble") in by:
            ours = statistics.median(by[(n, "ours")]["lat"])
            ens = statistics.median(by[(n, "ensemble")]["lat"])
            print(f"speed-up vs EnsembleRetriever @ {n:,}: {ens / ours:.0f}x (p50)")


if __name__ == "__main__":
    main()
