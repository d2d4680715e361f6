"""SciFact nDCG@10 / Recall@100 of each search strategy on each backend that runs here.

    python benchmarks/bench_scifact_strategies.py [--backends memory qdrant redis]
    # redis needs REDIS_URL (e.g. redis://127.0.0.1:6380); a fresh index is dropped at the end

Data and vectors as in ``bench_scifact.py`` (BEIR SciFact, 300 test queries, cached
all-MiniLM-L6-v2 vectors looked up by text). Every row is ``HybridRetriever`` with weights
0.5 / 0.5 (no exact leg: SciFact has no sections), ``k=100`` (``--k``), the default
``fetch_k`` and fusion:

- ``fallback``: the store's dense search and a keyword index (in-memory BM25, or Redis BM25STD
  on the Redis index), fused in Python by the default fusion;
- ``native``: the store fuses in one request: Qdrant's RRF over its dense and BM25-sparse
  prefetches (our tokenizer, Qdrant's IDF); Redis Stack 7.4's ``AggregateHybridQuery``
  (KNN candidates, ``0.99 * vector_similarity + 0.01 * BM25STD``: see ``LINEAR_VECTOR_SCALE``).
  Both fuse ``fetch_k`` candidates per leg and return ``k`` rows.

The last column is the native row's nDCG@10 minus the fallback row's on the same backend.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_scifact import evaluate
from tuning_data import SCIFACT, SCIFACT_HELP, scifact

from langchain_holodeck.keyword_index import BM25KeywordIndex
from langchain_holodeck.retrievers import HybridRetriever
from langchain_holodeck.vectorstores import MatrixVectorStore

K = 100


@contextmanager
def memory_backend(docs: list[Any], emb: Any) -> Iterator[dict[str, Any]]:
    store = MatrixVectorStore(emb)
    store.add_documents(docs)
    yield {"store": store, "keywords": None}


@contextmanager
def qdrant_backend(docs: list[Any], emb: Any) -> Iterator[dict[str, Any]]:
    from qdrant_client import QdrantClient

    from langchain_holodeck.backends.qdrant import HolodeckQdrantVectorStore

    store = HolodeckQdrantVectorStore(QdrantClient(location=":memory:"), "scifact", emb)
    for start in range(0, len(docs), 500):
        store.add_documents(docs[start : start + 500])
    yield {"store": store, "keywords": None}


@contextmanager
def redis_backend(docs: list[Any], emb: Any) -> Iterator[dict[str, Any]]:
    from langchain_holodeck.keyword_index import RedisKeywordIndex
    from langchain_holodeck.vectorstores import create_vector_store

    url = os.environ.get("REDIS_URL")
    if not url:
        sys.exit("REDIS_URL is unset (redis://127.0.0.1:6380), or drop 'redis' from --backends")
    name = f"holodeck_scifact_{uuid.uuid4().hex[:8]}"
    emb.table.setdefault("dimension probe", next(iter(emb.table.values())))  # the store's probe
    store = create_vector_store(
        {"provider": "redis", "connection_string": url, "index_name": name}, emb, fallback=False
    )
    client = store._index.client  # type: ignore[attr-defined]  # a HolodeckRedisVectorStore
    try:
        for start in range(0, len(docs), 500):
            store.add_documents(docs[start : start + 500])
        while float(client.ft(name).info().get("percent_indexed", 1)) < 1:
            time.sleep(0.1)
        yield {"store": store, "keywords": RedisKeywordIndex(store)}
    finally:
        client.ft(name).dropindex(delete_documents=True)


BACKENDS: dict[str, Callable[..., Any]] = {
    "memory": memory_backend,
    "qdrant": qdrant_backend,
    "redis": redis_backend,
}
NATIVE = {
    "qdrant": "Qdrant RRF (prefetch dense + BM25 sparse)",
    "redis": "AggregateHybridQuery (linear, alpha 0.99)",
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=SCIFACT, help=SCIFACT_HELP)
    parser.add_argument("--backends", nargs="+", default=list(BACKENDS), choices=list(BACKENDS))
    parser.add_argument("--k", type=int, default=K, help="results per query (nDCG@10 of them)")
    args = parser.parse_args()
    data = scifact(args.data)
    docs, emb, qrels = data.docs, data.embeddings, data.qrels["test"]
    queries = [{"_id": qid, "text": text} for qid, text in data.queries["test"]]
    print(f"SciFact: {len(docs)} docs, {len(queries)} queries with judgments; k={args.k}\n")
    bm25 = BM25KeywordIndex()
    bm25.upsert(docs)
    print("| backend | strategy | fusion | nDCG@10 | Recall@100 | s/query | Δ nDCG@10 |")
    print("|---|---|---|---:|---:|---:|---:|")
    for backend in args.backends:
        with BACKENDS[backend](docs, emb) as parts:
            store = parts["store"]
            keywords = parts["keywords"] or bm25
            kw_name = "Redis BM25STD" if parts["keywords"] is not None else "in-memory BM25"
            strategies = ["fallback"] + (["native"] if backend in NATIVE else [])
            base = None
            for strategy in strategies:
                retriever = HybridRetriever(
                    vector_store=store,
                    keyword_index=keywords,
                    weights=(0.5, 0.5, 0.0),
                    search_strategy=strategy,  # type: ignore[arg-type]  # native or fallback
                )
                t0 = time.perf_counter()
                run = {
                    q["_id"]: [d.id for d in retriever.invoke(q["text"], k=args.k)] for q in queries
                }
                per_query = (time.perf_counter() - t0) / len(queries)
                nd, rc = evaluate(run, qrels)
                fusion = (
                    NATIVE[backend]
                    if strategy == "native"
                    else f"{retriever.fusion}, dense + {kw_name}"
                )
                delta = "" if base is None else f"{nd - base:+.3f}"
                base = nd if base is None else base
                print(
                    f"| {backend} | {strategy} | {fusion} | {nd:.3f} | {rc:.3f} | "
                    f"{per_query:.3f} | {delta} |"
                )


if __name__ == "__main__":
    main()
