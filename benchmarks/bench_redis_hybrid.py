"""Redis hybrid retrieval throughput: queries per second with concurrent clients, one run.

    REDIS_URL=redis://127.0.0.1:6380 python benchmarks/bench_redis_hybrid.py \
        [--chunks 10000] [--clients 1 10] [--queries-per-client 50]

Start Redis Stack first if needed: ``bash ../shared/scripts/redis-stack.sh start``.

~``--chunks`` synthetic chunks of ~120 Zipf-distributed words with seeded random unit 384-dim
vectors (cached in benchmarks/.cache/), written into a private index through
``HolodeckRedisVectorStore.add_documents`` with an ``Embeddings`` that looks the precomputed
vectors up (the store has no add-by-vector path), so no model runs. Queries (5 words) get
precomputed vectors too: query embedding is excluded everywhere.

Strategies, each with ``--clients`` threads issuing queries back to back:
- HybridRetriever(RedisKeywordIndex + Redis dense leg, k=10, fetch_k=50, namespace filter):
  two round trips (FT.SEARCH BM25 and KNN, run concurrently) + RRF in Python.
- RedisKeywordIndex.hybrid_search: redisvl ``AggregateHybridQuery`` (FT.AGGREGATE), one round
  trip, ``alpha * vector_sim + (1 - alpha) * bm25`` scored on the server.
- The legs alone (dense KNN, BM25 FT.SEARCH) for reference.
Latency per query in ms (p50/p95) and aggregate queries per second. The index and its keys
are dropped at the end (also on failure).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from synthetic import DIM, corpus  # noqa: E402

from langchain_holodeck.keyword_index import RedisKeywordIndex  # noqa: E402
from langchain_holodeck.retrievers import HybridRetriever  # noqa: E402
from langchain_holodeck.vectorstores import create_vector_store_with_status  # noqa: E402

N_QUERIES = 200
K, FETCH_K = 10, 50
NAMESPACE = "bench"


class Lookup(Embeddings):
    """Precomputed vectors: the embedding model is not what we measure."""

    def __init__(self, texts: list[str], vecs: np.ndarray, queries: list[str], qvecs: np.ndarray):
        self.docs = {t: vecs[i] for i, t in enumerate(texts)}
        self.queries = {q: qvecs[i] for i, q in enumerate(queries)}

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.docs[t].tolist() for t in texts]

    def embed_query(self, text: str) -> list[float]:
        vec = self.queries.get(text)
        if vec is None:  # the store's dimension probe
            return [0.0] * (DIM - 1) + [1.0]
        return vec.tolist()


def run_clients(
    fn: Callable[[str], int], queries: list[str], clients: int, per_client: int
) -> dict[str, float]:
    """``clients`` threads, each running ``per_client`` queries back to back."""
    for q in queries[:5]:
        fn(q)  # warm-up
    barrier = threading.Barrier(clients)
    empty = [0]

    def client(c: int) -> list[float]:
        out = []
        barrier.wait()
        for i in range(per_client):
            q = queries[(c * per_client + i) % len(queries)]
            t0 = time.perf_counter()
            if fn(q) == 0:
                empty[0] += 1
            out.append((time.perf_counter() - t0) * 1000)
        return out

    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=clients) as pool:
        latencies = [x for lat in pool.map(client, range(clients)) for x in lat]
    wall = time.perf_counter() - t0
    return {
        "p50": statistics.median(latencies),
        "p95": float(np.percentile(latencies, 95)),
        "qps": len(latencies) / wall,
        "empty": empty[0],
        "n": len(latencies),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 10])
    parser.add_argument("--queries-per-client", type=int, default=50)
    args = parser.parse_args()
    url = os.environ.get("REDIS_URL")
    if not url:
        sys.exit(
            "REDIS_URL is unset: bash ../shared/scripts/redis-stack.sh start, then "
            "REDIS_URL=redis://127.0.0.1:6380 python benchmarks/bench_redis_hybrid.py"
        )

    texts, vecs, queries, qvecs = corpus(args.chunks)
    embeddings = Lookup(texts, vecs, queries, qvecs)
    qvec = dict(zip(queries, qvecs.tolist(), strict=True))
    index_name = f"holodeck_bench_{uuid.uuid4().hex[:8]}"
    handle = create_vector_store_with_status(
        {"provider": "redis", "connection_string": url, "index_name": index_name},
        embeddings,
        fallback=False,
    )
    store = handle.store
    client = store._index.client  # type: ignore[attr-defined]  # a HolodeckRedisVectorStore
    try:
        docs = [
            Document(
                id=f"c{i}",
                page_content=t,
                metadata={"namespace": NAMESPACE, "source_path": f"doc_{i // 50}.md"},
            )
            for i, t in enumerate(texts)
        ]
        t0 = time.perf_counter()
        for start in range(0, len(docs), 500):
            batch = docs[start : start + 500]
            store.add_documents(batch, ids=[d.id for d in batch])
        load_s = time.perf_counter() - t0
        while int(client.ft(index_name).info().get("percent_indexed", 1)) < 1:
            time.sleep(0.1)
        info = client.ft(index_name).info()
        version = client.info("server").get("redis_version")

        keywords = RedisKeywordIndex(store, namespace=NAMESPACE)
        from redisvl.query.filter import Tag

        retriever = HybridRetriever(
            vector_store=store,
            keyword_index=keywords,
            k=K,
            fetch_k=FETCH_K,
            weights=(0.5, 0.5, 0.0),
            search_kwargs={"filter": Tag("namespace") == NAMESPACE},
        )
        strategies: dict[str, Callable[[str], int]] = {
            "HybridRetriever (RedisKeywordIndex + dense, RRF)": lambda q: len(retriever.invoke(q)),
            "RedisKeywordIndex.hybrid_search (AggregateHybridQuery)": lambda q: len(
                keywords.hybrid_search(q, K, vector=qvec[q], alpha=0.5)
            ),
            "dense leg only (KNN, namespace filter)": lambda q: len(
                store.similarity_search_with_relevance_scores(
                    q, k=FETCH_K, filter=Tag("namespace") == NAMESPACE
                )
            ),
            "keyword leg only (FT.SEARCH BM25STD)": lambda q: len(keywords.search(q, FETCH_K)),
        }
        print(
            f"Redis {version}, index {index_name}: {info.get('num_docs')} docs, "
            f"{DIM}-dim HNSW COSINE; load {load_s:.1f} s; k={K}, fetch_k={FETCH_K}; "
            f"cpus={os.cpu_count()} (client and server share them)\n"
        )
        print("| strategy | clients | queries | p50 (ms) | p95 (ms) | QPS | empty results |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for name, fn in strategies.items():
            for clients in args.clients:
                r = run_clients(fn, queries, clients, args.queries_per_client)
                print(
                    f"| {name} | {clients} | {r['n']:.0f} | {r['p50']:.1f} | {r['p95']:.1f} "
                    f"| {r['qps']:.0f} | {r['empty']:.0f} |"
                )
    finally:
        client.ft(index_name).dropindex(delete_documents=True)
        leftovers = list(client.scan_iter(f"{index_name}*"))
        if leftovers:
            client.delete(*leftovers)
        print(f"\ndropped index {index_name}")


if __name__ == "__main__":
    main()
