"""SciFact nDCG@10 / Recall@100 of each search strategy and fusion on each backend that runs here.

    python benchmarks/bench_scifact_strategies.py [--backends memory qdrant redis postgres] \
        [--splits train test]
    # redis needs REDIS_URL (e.g. redis://127.0.0.1:6380), postgres POSTGRES_URL
    # (bash scripts/postgres.sh start); a fresh index / table is dropped at the end

Data and vectors as in ``bench_scifact.py`` (BEIR SciFact: the 809 train claims and the 300
test queries, cached all-MiniLM-L6-v2 vectors looked up by text; ``--onnx``: the default
embedder's vectors, ``OnnxEmbeddings`` truncating at 256 word pieces, cached by text). Every row is
``HybridRetriever`` at the tool's weights (0.7 / 0.3; no exact leg: SciFact has no sections),
``k=100`` (``--k``), the default ``fetch_k``, every search filtered on the documents'
``namespace`` as the tool's are (on Redis the filter changes the full-text scores: see
``_redisearch.match_any``), without query feedback (the native path has none;
``feedback_docs=0`` on every row, so the rows differ by fusion alone):

- ``fallback``: the store's dense search and a keyword index (in-memory BM25, or Redis BM25STD
  on the Redis index), fused in Python by the default (convex) fusion;
- ``native``, the engine's own fusion (``fusion="rrf"``): Qdrant's weighted RRF over its dense
  and BM25-sparse prefetches (our tokenizer, Qdrant's IDF); Redis Stack 7.4's
  ``AggregateHybridQuery`` (KNN candidates, ``alpha * vector_similarity + (1 - alpha) *
  BM25STD``: see ``LINEAR_VECTOR_SCALE``); PostgreSQL's weighted RRF in SQL;
- ``native``, convex (the tool's default fusion): PostgreSQL fuses by convex in SQL; Redis and
  Qdrant return each leg's ids and scores and the store fuses them by convex.

The last column is the row's nDCG@10 minus the fallback row's on the same backend and split.
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
from langchain_core.documents import Document
from tuning_data import SCIFACT, SCIFACT_HELP, scifact

from langchain_holodeck._defaults import DEFAULT_WEIGHTS
from langchain_holodeck.keyword_index import BM25KeywordIndex
from langchain_holodeck.retrievers import HybridRetriever
from langchain_holodeck.vectorstores import MatrixVectorStore

K = 100
NAMESPACE = "scifact"
"""Every document's ``namespace``, and every search's filter on it, as the tool's searches are."""


@contextmanager
def memory_backend(docs: list[Any], emb: Any) -> Iterator[dict[str, Any]]:
    store = MatrixVectorStore(emb)
    store.add_documents(docs)
    yield {"store": store, "keywords": None, "filter": {"namespace": NAMESPACE}}


@contextmanager
def qdrant_backend(docs: list[Any], emb: Any) -> Iterator[dict[str, Any]]:
    from qdrant_client import QdrantClient

    from langchain_holodeck.backends.qdrant import HolodeckQdrantVectorStore

    store = HolodeckQdrantVectorStore(QdrantClient(location=":memory:"), "scifact", emb)
    for start in range(0, len(docs), 500):
        store.add_documents(docs[start : start + 500])
    yield {"store": store, "keywords": None, "filter": store.namespace_filter(NAMESPACE)}


def server_store(provider: str, env: str, name_key: str, emb: Any) -> tuple[Any, str, str]:
    """``(store, url, name)``: a fresh index or table on the server at ``$env``."""
    from langchain_holodeck.vectorstores import create_vector_store

    url = os.environ.get(env)
    if not url:
        sys.exit(f"{env} is unset: start the server (scripts/), or drop {provider!r}")
    name = f"holodeck_scifact_{uuid.uuid4().hex[:8]}"
    if hasattr(emb, "table"):  # stored vectors: the store's dimension probe needs one too
        emb.table.setdefault("dimension probe", next(iter(emb.table.values())))
    config = {"provider": provider, "connection_string": url, name_key: name}
    return create_vector_store(config, emb, fallback=False), url, name


@contextmanager
def redis_backend(docs: list[Any], emb: Any) -> Iterator[dict[str, Any]]:
    from langchain_holodeck.keyword_index import RedisKeywordIndex

    store, _, name = server_store("redis", "REDIS_URL", "index_name", emb)
    client = store._index.client  # type: ignore[attr-defined]  # a HolodeckRedisVectorStore
    try:
        for start in range(0, len(docs), 500):
            store.add_documents(docs[start : start + 500])
        while float(client.ft(name).info().get("percent_indexed", 1)) < 1:
            time.sleep(0.1)
        from redisvl.query.filter import Tag

        yield {
            "store": store,
            "keywords": RedisKeywordIndex(store, namespace=NAMESPACE),
            "filter": Tag("namespace") == NAMESPACE,
        }
    finally:
        client.ft(name).dropindex(delete_documents=True)


@contextmanager
def postgres_backend(docs: list[Any], emb: Any) -> Iterator[dict[str, Any]]:
    store, url, table = server_store("postgres", "POSTGRES_URL", "table_name", emb)
    try:
        for start in range(0, len(docs), 500):
            store.add_documents(docs[start : start + 500])
        yield {"store": store, "keywords": None, "filter": {"namespace": NAMESPACE}}
    finally:
        from bench_postgres import drop

        drop(url, table)


BACKENDS: dict[str, Callable[..., Any]] = {
    "memory": memory_backend,
    "qdrant": qdrant_backend,
    "redis": redis_backend,
    "postgres": postgres_backend,
}
NATIVE = {
    "qdrant": "Qdrant weighted RRF (prefetch dense + BM25 sparse)",
    "redis": "AggregateHybridQuery (linear, alpha {alpha:.4f})",
    "postgres": "weighted RRF in SQL",
}
CONVEX = {
    "qdrant": "convex over the legs' ids and scores",
    "redis": "convex over the legs' ids and scores",
    "postgres": "convex in SQL",
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=SCIFACT, help=SCIFACT_HELP)
    parser.add_argument("--backends", nargs="+", default=list(BACKENDS), choices=list(BACKENDS))
    parser.add_argument("--splits", nargs="+", default=["test"], choices=["train", "test"])
    parser.add_argument("--k", type=int, default=K, help="results per query (nDCG@10 of them)")
    parser.add_argument(
        "--onnx",
        action="store_true",
        help="embed with the default embedder (OnnxEmbeddings, cached by onnx_cache.py) instead "
        "of the stored sentence-transformers vectors (the train split needs torch for those)",
    )
    args = parser.parse_args()
    from langchain_holodeck.vectorstores.redis import linear_alpha

    if args.onnx:
        from onnx_cache import DiskCachedOnnx

        data = scifact(args.data, embeddings=DiskCachedOnnx())
    else:
        data = scifact(args.data)
    emb = data.embeddings
    docs = [
        Document(id=d.id, page_content=d.page_content, metadata={"namespace": NAMESPACE})
        for d in data.docs
    ]
    weights = (DEFAULT_WEIGHTS[0], DEFAULT_WEIGHTS[1], 0.0)
    print(
        f"SciFact: {len(docs)} docs; splits {', '.join(args.splits)}; k={args.k}; weights "
        f"{weights[:2]}; load average {os.getloadavg()[0]:.1f}\n"
    )
    bm25 = BM25KeywordIndex()
    bm25.upsert(docs)
    print("| backend | split | strategy | fusion | nDCG@10 | Recall@100 | s/query | Δ nDCG@10 |")
    print("|---|---|---|---|---:|---:|---:|---:|")
    for backend in args.backends:
        with BACKENDS[backend](docs, emb) as parts:
            store = parts["store"]
            keywords = parts["keywords"] or bm25
            kw_name = "Redis BM25STD" if parts["keywords"] is not None else "in-memory BM25"
            rows = [("fallback", "convex", f"convex, dense + {kw_name}")]
            if backend in NATIVE:
                own = NATIVE[backend].format(alpha=linear_alpha(weights[:2]))
                rows += [("native", "rrf", own), ("native", "convex", CONVEX[backend])]
            for split in args.splits:
                qrels = data.qrels[split]
                queries = data.queries[split]
                base = None
                for strategy, fusion, label in rows:
                    retriever = HybridRetriever(
                        vector_store=store,
                        keyword_index=keywords,
                        weights=weights,
                        fusion=fusion,  # type: ignore[arg-type]  # rrf or convex
                        feedback_docs=0,
                        search_strategy=strategy,  # type: ignore[arg-type]  # native or fallback
                        search_kwargs={"filter": parts["filter"]},
                    )
                    t0 = time.perf_counter()
                    run = {
                        qid: [d.id for d in retriever.invoke(text, k=args.k)]
                        for qid, text in queries
                    }
                    per_query = (time.perf_counter() - t0) / len(queries)
                    nd, rc = evaluate(run, qrels)
                    delta = "" if base is None else f"{nd - base:+.3f}"
                    base = nd if base is None else base
                    print(
                        f"| {backend} | {split} | {strategy} | {label} | {nd:.3f} | {rc:.3f} | "
                        f"{per_query:.3f} | {delta} |",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
