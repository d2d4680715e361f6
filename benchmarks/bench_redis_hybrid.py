"""Redis hybrid retrieval throughput: queries per second with concurrent clients, one run.

    REDIS_URL=redis://127.0.0.1:6380 python benchmarks/bench_redis_hybrid.py \
        [--chunks 10000] [--clients 1 10] [--queries-per-client 50]

Start Redis Stack first if needed: ``bash scripts/redis-stack.sh start``.

~``--chunks`` synthetic chunks of ~120 Zipf-distributed words with seeded random unit 384-dim
vectors (cached in benchmarks/.cache/), written into a private index through
``HolodeckRedisVectorStore.add_documents`` with an ``Embeddings`` that looks the precomputed
vectors up (the store has no add-by-vector path), so no model runs. Queries (5 words) get
precomputed vectors too: query embedding is excluded everywhere.

Strategies, each with ``--clients`` threads issuing queries back to back:
- the tool's retriever on the **native** strategy (``HybridRetriever(search_strategy="native")``
  as ``HierarchicalDocumentTool`` builds it, at the tool's defaults: namespace filter,
  exact-match leg on, k=10, default fetch_k and weights, convex fusion): the exact leg, then
  one pipelined round trip for each leg's ``fetch_k`` ids and scores (``KNN``; the full-text
  match), the convex fusion in the store, a second round trip that reads the rows the
  result takes, and result assembly in Python;
- the same retriever with ``fusion="rrf"``, the engine's own fusion: one ``FT.AGGREGATE`` over
  ``KNN fetch_k`` candidates (a linear mix of vector similarity and raw BM25STD) that returns
  the rows the result takes, text and metadata loaded after the cut;
- **raw redisvl** ``AggregateHybridQuery`` at the same depth: the query a user of redisvl
  sends for the best 10 of the same candidates (same text, vector, filter, alpha,
  ``num_results=fetch_k``, ``LIMIT 0 10``, same returned fields), rows parsed to dicts,
  nothing else; the benchmark counts the queries for which it returns the same 10 ids as the
  ``rrf`` row (the same ranking; the convex default ranks otherwise, by design: see
  ``bench_scifact_strategies.py`` and ``bench_tables.py --databases`` for what that buys);
- raw redisvl with ``num_results=10`` (``KNN 10``), the shallower query an earlier run
  compared with: cheaper, but its top 10 differs (fewer candidates fused), so it is printed
  for reference with its own same-ids count;
- the tool's retriever on the **fallback** strategy (``RedisKeywordIndex`` BM25 + KNN, two
  round trips run concurrently, fused in Python by the default fusion), for comparison.
Latency per query in ms (p50/p95), aggregate queries per second, and native / raw; then the
server's time per query of the native and raw strategies, by command (``server_time``). The
strategies take turns (``--rounds``, 5 by default: each runs a fifth of its queries per turn),
so a shared machine whose speed drifts during the run slows them alike. The index and
its keys are dropped at the end (also on failure).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from synthetic import DIM, corpus  # noqa: E402

from langchain_holodeck.keyword_index import RedisKeywordIndex  # noqa: E402
from langchain_holodeck.retrievers import HybridRetriever  # noqa: E402
from langchain_holodeck.retrievers.hybrid import (  # noqa: E402
    DEFAULT_FETCH_K,
    DEFAULT_FUSION,
    DEFAULT_WEIGHTS,
)
from langchain_holodeck.vectorstores import create_vector_store_with_status  # noqa: E402

N_QUERIES = 200
K = 10
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
    fn: Callable[[str], int], queries: list[str], clients: int, per_client: int, offset: int = 0
) -> dict[str, Any]:
    """``clients`` threads, each running ``per_client`` queries back to back."""
    for q in queries[:5]:
        fn(q)  # warm-up
    barrier = threading.Barrier(clients)
    empty = [0]

    def client(c: int) -> list[float]:
        out = []
        barrier.wait()
        for i in range(per_client):
            q = queries[(offset + c * per_client + i) % len(queries)]
            t0 = time.perf_counter()
            if fn(q) == 0:
                empty[0] += 1
            out.append((time.perf_counter() - t0) * 1000)
        return out

    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=clients) as pool:
        latencies = [x for lat in pool.map(client, range(clients)) for x in lat]
    wall = time.perf_counter() - t0
    return {"latencies": latencies, "wall": wall, "empty": empty[0]}


def server_time(
    client: Any, strategies: dict[str, Callable[[str], int]], queries: list[str]
) -> None:
    """The server's time per query of each strategy, by command (``INFO commandstats``).

    One client, every query once, the statistics reset before each strategy. The server is
    single-threaded, so at many clients its time per query bounds the QPS: this is where a
    gap between two strategies' throughput comes from. A command a script runs is counted
    under its own name as well as inside ``evalsha``.
    """
    print("\n| strategy (1 client, server time) | per query (µs) | by command (calls x µs) |")
    print("|---|---:|---|")
    for name, fn in strategies.items():
        client.config_resetstat()
        for q in queries:
            fn(q)
        stats = {
            key.removeprefix("cmdstat_"): value
            for key, value in client.info("commandstats").items()
            if key not in ("cmdstat_config|resetstat", "cmdstat_info")
        }
        top = [k for k in stats if k in ("evalsha", "FT.AGGREGATE")] or list(stats)
        total = sum(stats[k]["usec"] for k in top) / len(queries)
        parts = ", ".join(
            f"{k} {v['calls']} x {v['usec_per_call']:.0f}" for k, v in sorted(stats.items())
        )
        print(f"| {name} | {total:.0f} | {parts} |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 10])
    parser.add_argument("--queries-per-client", type=int, default=50)
    parser.add_argument(
        "--rounds",
        type=int,
        default=5,
        help="the strategies take turns this many times, each running its share of the "
        "queries, so a machine whose speed drifts slows them alike",
    )
    args = parser.parse_args()
    url = os.environ.get("REDIS_URL")
    if not url:
        sys.exit(
            "REDIS_URL is unset: bash scripts/redis-stack.sh start, then "
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
        from redisvl.query import AggregateHybridQuery
        from redisvl.query.filter import Tag

        from langchain_holodeck.exact import ExactMatchIndex
        from langchain_holodeck.keyword_index.redis import query_words
        from langchain_holodeck.vectorstores.redis import (
            CONTENT_FIELD,
            EMBEDDING_FIELD,
            METADATA_FIELD,
            linear_alpha,
        )

        exact = ExactMatchIndex()
        exact.upsert(docs)
        namespace_filter = Tag("namespace") == NAMESPACE

        def retriever(strategy: str, fusion: str = DEFAULT_FUSION) -> HybridRetriever:
            return HybridRetriever(
                vector_store=store,
                keyword_index=keywords,
                exact_index=exact,
                k=K,
                fusion=fusion,  # type: ignore[arg-type]  # rrf or convex
                search_strategy=strategy,  # type: ignore[arg-type]  # native or fallback
                search_kwargs={"filter": namespace_filter},
            )

        native, fallback = retriever("native"), retriever("fallback")
        engine = retriever("native", "rrf")

        def raw(q: str, depth: int = DEFAULT_FETCH_K) -> list[dict[str, object]]:
            aggregate = AggregateHybridQuery(
                text=" ".join(query_words(q)),
                text_field_name=CONTENT_FIELD,
                vector=qvec[q],
                vector_field_name=EMBEDDING_FIELD,
                filter_expression=namespace_filter,
                alpha=linear_alpha(DEFAULT_WEIGHTS[:2]),
                num_results=depth,
                return_fields=["__key", CONTENT_FIELD, METADATA_FIELD],
                stopwords=None,
            )
            aggregate.limit(0, K)
            return store._index.query(aggregate)  # type: ignore[attr-defined, no-any-return]

        def shallow(q: str) -> list[dict[str, object]]:
            return raw(q, K)

        def same_ids(peer: Callable[[str], list[dict[str, object]]]) -> int:
            return sum(
                [d.id for d in engine.invoke(q)]
                == [str(r["__key"]).split(":", 1)[1] for r in peer(q)]
                for q in queries
            )

        same, same_shallow = same_ids(raw), same_ids(shallow)
        raw_name = (
            f"raw redisvl AggregateHybridQuery (same query: KNN {DEFAULT_FETCH_K}, LIMIT {K})"
        )
        strategies: dict[str, Callable[[str], int]] = {
            f"tool retriever, native, {DEFAULT_FUSION} (two legs' ids and scores + exact leg)": (
                lambda q: len(native.invoke(q))
            ),
            "tool retriever, native, rrf (one FT.AGGREGATE + exact leg)": lambda q: len(
                engine.invoke(q)
            ),
            raw_name: lambda q: len(raw(q)),
            f"raw redisvl, KNN {K} (shallower: a different top 10)": lambda q: len(shallow(q)),
            f"tool retriever, fallback (BM25 + KNN, {DEFAULT_FUSION} in Python)": lambda q: len(
                fallback.invoke(q)
            ),
        }
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT
        ).stdout.strip()
        print(
            f"commit {commit}; Redis {version}, index {index_name}: {info.get('num_docs')} docs, "
            f"{DIM}-dim HNSW COSINE; load {load_s:.1f} s; k={K}, fetch_k={DEFAULT_FETCH_K}, "
            f"weights={DEFAULT_WEIGHTS} (the defaults); load average {os.getloadavg()[0]:.1f}; "
            f"cpus={os.cpu_count()} (client and server share them); native and raw return "
            f"the same {K} ids as native rrf for {same}/{len(queries)} queries (KNN {K}: "
            f"{same_shallow}/{len(queries)})\n"
        )
        print("| strategy | clients | queries | p50 (ms) | p95 (ms) | QPS | empty results |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        qps: dict[tuple[str, int], float] = {}
        share = max(1, args.queries_per_client // args.rounds)
        runs: dict[tuple[str, int], list[dict[str, Any]]] = {}
        for turn in range(args.rounds):  # A B C ... A B C ...: drift slows every row alike
            for name, fn in strategies.items():
                for clients in args.clients:
                    r = run_clients(fn, queries, clients, share, offset=turn * share * clients)
                    runs.setdefault((name, clients), []).append(r)
        for (name, clients), parts in runs.items():
            latencies = [x for r in parts for x in r["latencies"]]
            qps[name, clients] = len(latencies) / sum(r["wall"] for r in parts)
            print(
                f"| {name} | {clients} | {len(latencies)} | {statistics.median(latencies):.1f} "
                f"| {float(np.percentile(latencies, 95)):.1f} | {qps[name, clients]:.0f} "
                f"| {sum(r['empty'] for r in parts)} |"
            )
        names = list(strategies)
        print()
        for clients in args.clients:
            raw_qps = qps[names[2], clients]
            ratio = qps[names[0], clients] / raw_qps
            print(
                f"native ({DEFAULT_FUSION}, the default) / raw QPS at {clients} client(s): "
                f"{ratio:.0%} (target >= 80%)"
            )
            ratio = qps[names[1], clients] / raw_qps
            print(f"native (rrf, the same top 10) / raw QPS at {clients} client(s): {ratio:.0%}")
            ratio = qps[names[0], clients] / qps[names[3], clients]
            print(f"native / raw KNN {K} QPS at {clients} client(s): {ratio:.0%} (reference)")
        server_time(client, {n: strategies[n] for n in names[:3]}, queries)
        print(f"load average after: {os.getloadavg()[0]:.1f}")
    finally:
        client.ft(index_name).dropindex(delete_documents=True)
        leftovers = list(client.scan_iter(f"{index_name}*"))
        if leftovers:
            client.delete(*leftovers)
        print(f"\ndropped index {index_name}")


if __name__ == "__main__":
    main()
