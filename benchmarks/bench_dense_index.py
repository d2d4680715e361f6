"""Which dense index: HNSW (usearch) vs quantized scans (faiss), on the benchmark's vectors.

    python benchmarks/bench_dense_index.py               # 100k random unit 384-dim vectors
    python benchmarks/bench_dense_index.py --n 20000     # quicker

The vectors are those of the speed benchmarks (random unit 384-dim: no low-dimensional
structure, the hard case for graphs). Every candidate list is re-scored exactly against the
float32 rows, as ``MatrixVectorStore(search_mode="quantized")`` does; recall@k is against
the exact top k. One thread (OpenMP and BLAS) for the per-query latency. Needs
``pip install usearch faiss-cpu``.
"""

from __future__ import annotations

import argparse
import os
import time

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import numpy as np  # noqa: E402  (after the thread settings)

DIM = 384


def unit(rng: np.random.Generator, n: int) -> np.ndarray:
    x = rng.standard_normal((n, DIM)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=100)
    args = parser.parse_args()
    rng = np.random.default_rng(7)
    x, q = unit(rng, args.n), unit(rng, args.queries)
    exact = np.argsort(-(x @ q.T), axis=0)[:50].T
    rows: list[tuple[str, str, float, float, float, float]] = []

    def measure(name: str, setting: str, build_s: float, search) -> None:
        t = time.perf_counter()
        found = []
        for i in range(len(q)):
            cand = np.asarray(search(q[i]), dtype=np.int64)
            cand = cand[cand >= 0]
            found.append(cand[np.argsort(-(x[cand] @ q[i]))][:50])
        ms = (time.perf_counter() - t) / len(q) * 1000
        r10 = np.mean(
            [len(set(f[:10]) & set(e[:10])) / 10 for f, e in zip(found, exact, strict=True)]
        )
        r50 = np.mean([len(set(f) & set(e)) / 50 for f, e in zip(found, exact, strict=True)])
        rows.append((name, setting, build_s, ms, float(r10), float(r50)))
        print(rows[-1], flush=True)

    t = time.perf_counter()
    for i in range(min(20, len(q))):
        _ = x @ q[i]
    exact_ms = (time.perf_counter() - t) / min(20, len(q)) * 1000
    rows.append(("exact float32 scan", "-", 0.0, exact_ms, 1.0, 1.0))

    import faiss
    from usearch.index import Index

    faiss.omp_set_num_threads(1)
    for dtype in ("f32", "i8"):
        index = Index(ndim=DIM, metric="cos", dtype=dtype, connectivity=16, expansion_add=128)
        t = time.perf_counter()
        index.add(np.arange(args.n), x, threads=2)
        build = time.perf_counter() - t
        for ef in (200, 800):
            index.expansion_search = ef
            measure(
                f"usearch HNSW {dtype} (M=16)",
                f"ef={ef}, 200 re-scored",
                build,
                lambda v, idx=index: idx.search(v, 200).keys,
            )
    ip = faiss.METRIC_INNER_PRODUCT
    for name, index in (
        ("faiss PQ fast scan, 4-bit, 2 dims/code (ours)", faiss.IndexPQFastScan(DIM, 192, 4, ip)),
        ("faiss PQ fast scan, 4-bit, 4 dims/code", faiss.IndexPQFastScan(DIM, 96, 4, ip)),
        (
            "faiss scalar quantizer 8-bit",
            faiss.IndexScalarQuantizer(DIM, faiss.ScalarQuantizer.QT_8bit, ip),
        ),
    ):
        t = time.perf_counter()
        index.train(x[: min(args.n, 65_536)])
        index.add(x)
        build = time.perf_counter() - t
        for r in (500, 1000):
            measure(
                name,
                f"{r} re-scored",
                build,
                lambda v, idx=index, r=r: idx.search(v.reshape(1, -1), r)[1][0],
            )
    print(f"\n{args.n:,} random unit {DIM}-dim vectors, {len(q)} queries, 1 thread")
    print("| index | setting | build s | ms/query | recall@10 | recall@50 |")
    print("|---|---|---:|---:|---:|---:|")
    for name, setting, build, ms, r10, r50 in rows:
        print(f"| {name} | {setting} | {build:.1f} | {ms:.2f} | {r10:.3f} | {r50:.3f} |")


if __name__ == "__main__":
    main()
