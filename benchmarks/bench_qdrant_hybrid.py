"""Qdrant local mode, hybrid search latency: ours next to the in-memory store and langchain-qdrant.

    python benchmarks/bench_qdrant_hybrid.py [--chunks 10000] [--queries 50]

The synthetic corpus of the other speed benchmarks (``synthetic.corpus``: ~120 Zipf words per
chunk, seeded random unit 384-dim vectors, five-word queries with their own vectors; query
embedding is a dictionary lookup everywhere). One client, queries back to back, k=10, at the
tool's defaults (``fetch_k``, weights and fusion from ``_defaults``; ``--fetch-k`` overrides):

- **ours, Qdrant native**: ``HybridRetriever(search_strategy="native")`` on a
  ``HolodeckQdrantVectorStore`` (qdrant-client local mode, ``:memory:``) as
  ``HierarchicalDocumentTool`` builds it (namespace filter, exact leg on): one batch request
  for the dense and BM25 sparse legs' ``fetch_k`` ids and scores, the convex fusion in the
  store, the ``k`` rows returned (plus one per exact hit) read; and with ``fusion="rrf"``:
  one Query API call, the two prefetches fused by Qdrant's RRF;
- **ours, in-memory fallback**: the same retriever on ``MatrixVectorStore`` + ``BM25KeywordIndex``
  (the default backend), legs fused in Python (the default fusion);
- **ours, the store alone**: ``HolodeckQdrantVectorStore.native_hybrid_search`` with the
  settings langchain-qdrant uses (no filter, prefetches ``k`` deep), to separate the engine's
  cost from the retriever's;
- **langchain-qdrant directly**: ``QdrantVectorStore(retrieval_mode=HYBRID)`` over the same
  collection with our BM25 encoder as its ``SparseEmbeddings`` (no sparse model download),
  ``similarity_search(q, k=10)`` (its prefetches are ``k`` deep, unweighted RRF, no filter).

Prints p50/p95 latency (ms) and QPS. Measured with the client library in-process: local mode is
qdrant-client's pure-Python engine, not the Rust server.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from langchain_core.documents import Document

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_redis_hybrid import Lookup  # noqa: E402
from synthetic import corpus  # noqa: E402

from langchain_holodeck.exact import ExactMatchIndex  # noqa: E402
from langchain_holodeck.keyword_index import BM25KeywordIndex  # noqa: E402
from langchain_holodeck.retrievers import HybridRetriever  # noqa: E402
from langchain_holodeck.retrievers.hybrid import (  # noqa: E402
    DEFAULT_FETCH_K,
    DEFAULT_FUSION,
    DEFAULT_WEIGHTS,
)
from langchain_holodeck.vectorstores import MatrixVectorStore  # noqa: E402

K = 10
NAMESPACE = "bench"


def timed(fn: Callable[[str], int], queries: list[str]) -> dict[str, float]:
    for q in queries[:5]:
        fn(q)  # warm-up
    latencies, empty = [], 0
    t0, c0 = time.perf_counter(), time.process_time()
    for q in queries:
        start = time.perf_counter()
        if fn(q) == 0:
            empty += 1
        latencies.append((time.perf_counter() - start) * 1000)
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    return {
        "cpu": cpu / len(latencies) * 1000,
        "p50": statistics.median(latencies),
        "p95": float(np.percentile(latencies, 95)),
        "qps": len(latencies) / wall,
        "empty": empty,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--fetch-k", type=int, default=DEFAULT_FETCH_K)
    args = parser.parse_args()
    from langchain_qdrant import QdrantVectorStore, RetrievalMode, SparseEmbeddings, SparseVector
    from qdrant_client import QdrantClient

    from langchain_holodeck.backends.qdrant import (
        DENSE_VECTOR,
        SPARSE_VECTOR,
        BM25SparseEncoder,
        HolodeckQdrantVectorStore,
    )

    load_before = os.getloadavg()[0]
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT
    ).stdout.strip()
    texts, vecs, queries, qvecs = corpus(args.chunks)
    queries = queries[: args.queries]
    embeddings = Lookup(texts, vecs, queries, qvecs)
    docs = [
        Document(id=f"c{i}", page_content=t, metadata={"namespace": NAMESPACE})
        for i, t in enumerate(texts)
    ]
    exact = ExactMatchIndex()
    exact.upsert(docs)

    t0 = time.perf_counter()
    qdrant = HolodeckQdrantVectorStore(QdrantClient(location=":memory:"), "bench", embeddings)
    for start in range(0, len(docs), 500):
        qdrant.add_documents(docs[start : start + 500])
    qdrant_load = time.perf_counter() - t0
    t0 = time.perf_counter()
    memory = MatrixVectorStore(embeddings)
    memory.add_documents(docs)
    bm25 = BM25KeywordIndex()
    bm25.upsert(docs)
    memory_load = time.perf_counter() - t0

    def on_qdrant(fusion: str) -> HybridRetriever:
        return HybridRetriever(
            vector_store=qdrant,
            exact_index=exact,
            k=K,
            fetch_k=args.fetch_k,
            weights=DEFAULT_WEIGHTS,
            fusion=fusion,  # type: ignore[arg-type]  # rrf or convex
            search_strategy="native",
            search_kwargs={"filter": qdrant.namespace_filter(NAMESPACE)},
        )

    native, engine = on_qdrant(DEFAULT_FUSION), on_qdrant("rrf")
    fallback = HybridRetriever(
        vector_store=memory,
        keyword_index=bm25,
        exact_index=exact,
        k=K,
        fetch_k=args.fetch_k,
        weights=DEFAULT_WEIGHTS,
        search_kwargs={"filter": lambda d: d.metadata.get("namespace") == NAMESPACE},
    )

    class OurBM25(SparseEmbeddings):
        def __init__(self) -> None:
            self.encoder = BM25SparseEncoder()

        def embed_documents(self, texts: list[str]) -> list[SparseVector]:
            return [
                SparseVector(indices=i, values=v)
                for i, v in map(self.encoder.encode_document, texts)
            ]

        def embed_query(self, text: str) -> SparseVector:
            indices, values = self.encoder.encode_query(text)
            return SparseVector(indices=indices, values=values)

    langchain_hybrid = QdrantVectorStore(
        client=qdrant.client,
        collection_name="bench",
        embedding=embeddings,
        retrieval_mode=RetrievalMode.HYBRID,
        vector_name=DENSE_VECTOR,
        sparse_embedding=OurBM25(),
        sparse_vector_name=SPARSE_VECTOR,
        validate_collection_config=False,
    )
    rows = {
        f"ours, Qdrant native, {DEFAULT_FUSION} (HybridRetriever, one batch request)": lambda q: (
            len(native.invoke(q))
        ),
        "ours, Qdrant native, fusion rrf (HybridRetriever, one Query API call)": lambda q: len(
            engine.invoke(q)
        ),
        f"ours, in-memory fallback (Matrix + BM25, {DEFAULT_FUSION} in Python)": lambda q: len(
            fallback.invoke(q)
        ),
        "ours, the store's native_hybrid_search alone (no filter, prefetch 10)": lambda q: len(
            qdrant.native_hybrid_search(q, k=K, fetch_k=K)
        ),
        "langchain-qdrant QdrantVectorStore(retrieval_mode=HYBRID)": lambda q: len(
            langchain_hybrid.similarity_search(q, k=K)
        ),
    }
    print(
        f"{len(docs)} chunks, 384-dim; load: Qdrant local {qdrant_load:.1f} s, in-memory "
        f"{memory_load:.1f} s; k={K}, fetch_k={args.fetch_k}, weights {DEFAULT_WEIGHTS}; "
        f"{len(queries)} queries, one client; commit {commit}; load average {load_before:.1f}\n"
    )
    print("| path | p50 (ms) | p95 (ms) | CPU ms/query | QPS | empty results |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, fn in rows.items():
        r = timed(fn, queries)
        print(
            f"| {name} | {r['p50']:.1f} | {r['p95']:.1f} | {r['cpu']:.1f} | {r['qps']:.1f} "
            f"| {r['empty']:.0f} |"
        )
    print(f"\nload average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
