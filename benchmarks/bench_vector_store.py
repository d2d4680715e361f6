"""Query latency: MatrixVectorStore vs InMemoryVectorStore vs a bare numpy floor, one run.

    python benchmarks/bench_vector_store.py [--sizes 10000 100000] [--queries 200]

Random unit-norm 384-dim float32 vectors (seeded), queries through ``*_by_vector`` so
embedding is excluded. The floor is ``matrix @ q`` + ``np.argpartition`` top-k over the
same float32 matrix. Prints markdown tables.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from collections.abc import Callable

import numpy as np
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.vectorstores import InMemoryVectorStore
from threadpoolctl import threadpool_info

from langchain_holodeck.vectorstores import MatrixVectorStore

DIM, K = 384, 10


def unit_rows(rng: np.random.Generator, n: int) -> np.ndarray:
    m = rng.standard_normal((n, DIM), dtype=np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def timed(fn: Callable[[np.ndarray], object], queries: np.ndarray) -> list[float]:
    fn(queries[0])  # warm-up
    out = []
    for q in queries:
        t0 = time.perf_counter()
        fn(q)
        out.append((time.perf_counter() - t0) * 1000)
    return out


def pct(values: list[float], p: float) -> float:
    return float(np.percentile(values, p))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--inmemory-queries", type=int, default=20)
    args = parser.parse_args()

    print(
        f"python {platform.python_version()}, numpy {np.__version__}, "
        f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE')!r}, cpus={os.cpu_count()}"
    )
    for info in threadpool_info():
        print(
            f"  threadpool: {info.get('internal_api')} {info.get('version')} "
            f"threads={info.get('num_threads')} arch={info.get('architecture')}"
        )
    print()
    rows = []
    rng = np.random.default_rng(0)
    emb = DeterministicFakeEmbedding(size=DIM)
    for n in args.sizes:
        matrix = unit_rows(rng, n)
        queries = unit_rows(rng, args.queries)
        docs = [Document(id=str(i), page_content=f"doc {i}") for i in range(n)]

        def floor(q: np.ndarray, matrix: np.ndarray = matrix) -> np.ndarray:
            scores = matrix @ q
            top = np.argpartition(-scores, K - 1)[:K]
            return top[np.argsort(-scores[top])]

        t0 = time.perf_counter()
        ours = MatrixVectorStore(emb)
        ours.add_vectors(docs, matrix, ids=[d.id for d in docs])  # type: ignore[misc]
        build_ours = time.perf_counter() - t0

        t0 = time.perf_counter()
        peer = InMemoryVectorStore(emb)
        peer.store = {
            d.id: {"id": d.id, "vector": v, "text": d.page_content, "metadata": {}}
            for d, v in zip(docs, matrix.tolist(), strict=True)
        }
        build_peer = time.perf_counter() - t0

        # correctness: same top-k ids as the floor
        q0 = queries[0]
        assert [d.id for d in ours.similarity_search_by_vector(q0.tolist(), k=K)] == [
            str(i) for i in floor(q0)
        ]

        # interleave rounds so drift affects all three alike
        floor_ms: list[float] = []
        ours_ms: list[float] = []
        for chunk in np.array_split(queries, 4):
            floor_ms += timed(floor, chunk)
            ours_ms += timed(
                lambda q, s=ours: s.similarity_search_with_score_by_vector(q, k=K), chunk
            )
        ours_list_ms = timed(
            lambda q, s=ours: s.similarity_search_by_vector(q.tolist(), k=K), queries[:50]
        )
        peer_ms = timed(
            lambda q, s=peer: s.similarity_search_by_vector(q.tolist(), k=K),
            queries[: args.inmemory_queries],
        )
        rows.append((n, floor_ms, ours_ms, ours_list_ms, peer_ms, build_ours, build_peer))

    print("### Query latency (ms, k=10, 384-dim, embedding excluded)\n")
    print(
        "| chunks | numpy floor p50 / p95 | MatrixVectorStore p50 / p95 | ratio to floor (p50) "
        "| MatrixVectorStore, list[float] query p50 | InMemoryVectorStore p50 / p95 "
        "| speed-up vs InMemory (p50) |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for n, f, o, ol, p, _, _ in rows:
        print(
            f"| {n:,} | {pct(f, 50):.2f} / {pct(f, 95):.2f} | {pct(o, 50):.2f} / "
            f"{pct(o, 95):.2f} | {pct(o, 50) / pct(f, 50):.2f}x | {pct(ol, 50):.2f} | "
            f"{pct(p, 50):.1f} / {pct(p, 95):.1f} | {pct(p, 50) / pct(o, 50):.0f}x |"
        )
    print("\n### Load time (s): add precomputed vectors\n")
    print("| chunks | MatrixVectorStore.add_vectors | InMemoryVectorStore (dict fill) |")
    print("|---:|---:|---:|")
    for n, *_, b_ours, b_peer in rows:
        print(f"| {n:,} | {b_ours:.2f} | {b_peer:.2f} |")
    print(
        f"\nqueries: {args.queries} (ours, floor), {args.inmemory_queries} (InMemoryVectorStore); "
        f"median of medians check: {statistics.median([pct(r[2], 50) for r in rows]):.2f} ms"
    )


if __name__ == "__main__":
    main()
