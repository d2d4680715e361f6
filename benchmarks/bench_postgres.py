"""PostgreSQL: our tool's retrieval on Postgres vs langchain-postgres PGVectorStore vs in-memory.

    python benchmarks/bench_postgres.py quality --url "$POSTGRES_URL" --data PATH/TO/scifact
    python benchmarks/bench_postgres.py speed --url "$POSTGRES_URL" [--chunks 10000] \\
        [--clients 1 10] [--queries-per-client 50] [--shards URL URL]

Start Postgres first: ``bash scripts/postgres.sh start 5433`` (and two shard servers for
``--shards``: ``scripts/postgres.sh start 5435`` / ``5436``).

``quality`` (BEIR SciFact test split, 300 judged claims; the data directory of
``tuning_data.scifact``, with its cached all-MiniLM-L6-v2 vectors, so no model runs): nDCG@10 of
``invoke(k=10)`` and Recall@100 of ``invoke(k=100)`` and the ingest time, for

- **in-memory default**: ``MatrixVectorStore`` + ``BM25KeywordIndex`` + ``HybridRetriever`` with
  every default (convex fusion 0.7/0.3, fetch_k 300);
- **Postgres native, BM25 in SQL**: ``PostgresVectorStore`` (one table, HNSW + term tables),
  ``HybridRetriever(search_strategy="native")``, the same defaults, fused in one statement;
- **Postgres native, ts_rank_cd**: the same with Postgres's own full-text rank (no IDF);
- **Postgres fallback**: Postgres dense leg + our in-memory BM25, fused in-process;
- **PGVectorStore hybrid** (langchain-postgres, benchmark-only): its ``HybridSearchConfig``
  (pgvector dense + ``tsvector`` full text with ``ts_rank_cd``, its RRF), k=10 / 100.

``speed``: ``--chunks`` synthetic chunks (``synthetic.corpus``: 120 Zipf words, random unit
384-dim vectors, 5-word queries with their own vectors) written into fresh tables; each
strategy answers ``--queries-per-client`` queries per client thread, k=10, back to back: our
retriever native and fallback on Postgres (namespace filter on, exact leg off), PGVectorStore
hybrid (RRF, its defaults but fetch 50 per leg), and our in-memory default. Latency p50/p95
(ms), aggregate QPS, ingest seconds. With ``--shards`` it also loads the same chunks into a
table hash-partitioned over those servers (postgres_fdw) and reports its latency and whether
every query's native top 10 equals the single node's.

Every table this creates is dropped at the end. Times are wall clock on a shared machine: the
load average and the process's CPU seconds are printed with them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
import psycopg
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from psycopg import sql

from langchain_holodeck.keyword_index import BM25KeywordIndex
from langchain_holodeck.retrievers import HybridRetriever
from langchain_holodeck.vectorstores import MatrixVectorStore
from langchain_holodeck.vectorstores.postgres import PostgresVectorStore

NAMESPACE = "bench"


class Lookup(Embeddings):
    """Precomputed vectors by exact text: the model is not what is measured."""

    def __init__(self, table: dict[str, np.ndarray]) -> None:
        self.table = table

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.table[t].tolist() for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.table[text].tolist()


def drop(url: str, *tables: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        for t in tables:
            for name in (t, f"{t}_terms", f"{t}_stats", f"{t}_embcache"):
                conn.execute(
                    sql.SQL("DROP TABLE IF EXISTS {} CASCADE").format(sql.Identifier(name))
                )


def load_postgres(
    url: str,
    table: str,
    emb: Embeddings,
    docs: Sequence[Document],
    vectors: np.ndarray,
    **settings: Any,
) -> tuple[PostgresVectorStore, float]:
    store = PostgresVectorStore(emb, connection_string=url, table_name=table, **settings)
    started = time.perf_counter()
    store.add_vectors(
        [d.model_copy(update={"metadata": {"namespace": NAMESPACE}}) for d in docs],
        vectors,
        batch_size=1000,
    )
    return store, time.perf_counter() - started


def pgvector_store(url: str, table: str, emb: Embeddings, dim: int) -> tuple[Any, Any]:
    """A langchain-postgres PGVectorStore with its hybrid search (RRF), and its engine."""
    from langchain_postgres import PGEngine, PGVectorStore
    from langchain_postgres.v2.hybrid_search_config import (
        HybridSearchConfig,
        reciprocal_rank_fusion,
    )

    engine = PGEngine.from_connection_string(
        url=url.replace("postgresql://", "postgresql+psycopg://")
    )
    config = HybridSearchConfig(
        tsv_column="content_tsv",
        tsv_lang="pg_catalog.english",
        fusion_function=reciprocal_rank_fusion,
        fusion_function_parameters={"rrf_k": 60, "fetch_top_k": 100},
        primary_top_k=100,
        secondary_top_k=100,
    )
    engine.init_vectorstore_table(
        table_name=table, vector_size=dim, overwrite_existing=True, hybrid_search_config=config
    )
    store = PGVectorStore.create_sync(
        engine=engine, table_name=table, embedding_service=emb, hybrid_search_config=config
    )
    return store, engine


def pg_add(store: Any, docs: Sequence[Document]) -> float:
    started = time.perf_counter()
    for start in range(0, len(docs), 1000):
        batch = docs[start : start + 1000]
        ids = [str(uuid.uuid5(uuid.NAMESPACE_URL, str(d.id))) for d in batch]
        store.add_texts(
            [d.page_content for d in batch], metadatas=[{"doc": d.id} for d in batch], ids=ids
        )
    return time.perf_counter() - started


def load_line() -> str:
    one, five, _ = os.getloadavg()
    cpu = time.process_time()
    return f"load average {one:.2f} / {five:.2f} (1 / 5 min), process CPU {cpu:.1f} s"


# -- quality -----------------------------------------------------------------------------
def quality(args: argparse.Namespace) -> None:
    from ir_metrics import mean, ndcg_at_k, recall_at_k
    from tuning_data import scifact

    data = scifact(args.data)
    docs, emb = data.docs, data.embeddings
    queries, qrels = data.queries["test"], data.qrels["test"]
    print(f"SciFact: {len(docs)} docs, {len(queries)} test queries; {load_line()}\n")

    def evaluate(search: Callable[[str, int], list[str]]) -> tuple[float, float, float]:
        started = time.perf_counter()
        run10 = {qid: search(text, 10) for qid, text in queries}
        run100 = {qid: search(text, 100) for qid, text in queries}
        secs = time.perf_counter() - started
        nd = mean([ndcg_at_k(run10[q], qrels[q], 10) for q in run10])
        rc = mean([recall_at_k(run100[q], qrels[q], 100) for q in run100])
        return nd, rc, secs

    rows: list[tuple[str, float, float, float, float]] = []
    bm25 = BM25KeywordIndex()
    started = time.perf_counter()
    memory = MatrixVectorStore(emb)
    memory.add_vectors(docs, data.doc_vectors)
    bm25.upsert(docs)
    ingest = time.perf_counter() - started
    default = HybridRetriever(vector_store=memory, keyword_index=bm25)
    rows.append(
        (
            "in-memory default (Matrix + BM25)",
            ingest,
            *evaluate(lambda t, k: [str(d.id) for d in default.invoke(t, k=k)]),
        )
    )
    tables = [f"bench_scifact_{uuid.uuid4().hex[:8]}", f"bench_scifact_ts_{uuid.uuid4().hex[:8]}"]
    lc_table = f"bench_lc_{uuid.uuid4().hex[:8]}"
    try:
        pg, ingest = load_postgres(args.url, tables[0], emb, docs, data.doc_vectors)
        scope = {"filter": {"namespace": NAMESPACE}}
        native = HybridRetriever(vector_store=pg, search_strategy="native", search_kwargs=scope)
        rows.append(
            (
                "Postgres native, BM25 in SQL",
                ingest,
                *evaluate(lambda t, k: [str(d.id) for d in native.invoke(t, k=k)]),
            )
        )
        rrf = native.model_copy(update={"fusion": "rrf"})
        rows.append(
            (
                "Postgres native, BM25 in SQL, fusion=rrf",
                ingest,
                *evaluate(lambda t, k: [str(d.id) for d in rrf.invoke(t, k=k)]),
            )
        )
        ts, ingest_ts = load_postgres(
            args.url, tables[1], emb, docs, data.doc_vectors, keyword_scoring="ts_rank_cd"
        )
        native_ts = native.model_copy(update={"vector_store": ts})
        rows.append(
            (
                "Postgres native, ts_rank_cd (no IDF)",
                ingest_ts,
                *evaluate(lambda t, k: [str(d.id) for d in native_ts.invoke(t, k=k)]),
            )
        )
        fallback = HybridRetriever(vector_store=pg, keyword_index=bm25, search_kwargs=scope)
        rows.append(
            (
                "Postgres fallback (PG dense + our BM25)",
                ingest,
                *evaluate(lambda t, k: [str(d.id) for d in fallback.invoke(t, k=k)]),
            )
        )
        if not args.no_peer:
            lc, engine = pgvector_store(args.url, lc_table, emb, int(data.doc_vectors.shape[1]))
            ingest_lc = pg_add(lc, docs)
            by_uuid = {str(uuid.uuid5(uuid.NAMESPACE_URL, str(d.id))): str(d.id) for d in docs}

            def lc_search(text: str, k: int) -> list[str]:
                return [str(d.metadata["doc"]) for d in lc.similarity_search(text, k=k)]

            rows.append(
                ("PGVectorStore hybrid (langchain-postgres, RRF)", ingest_lc, *evaluate(lc_search))
            )
            del by_uuid, engine
        pg.close()
        ts.close()
    finally:
        drop(args.url, *tables, lc_table)
    print("| retrieval | ingest s | nDCG@10 | R@100 | 600 queries s |")
    print("|---|---:|---:|---:|---:|")
    for label, ing, nd, rc, secs in rows:
        print(f"| {label} | {ing:.1f} | {nd:.4f} | {rc:.4f} | {secs:.1f} |")
    print(f"\n{load_line()}")


# -- speed -------------------------------------------------------------------------------
def timed(search: Callable[[int], object], clients: int, per_client: int, n_queries: int):
    latencies: list[float] = []
    lock = threading.Lock()

    def worker(c: int) -> None:
        own = []
        for i in range(per_client):
            q = (c * per_client + i) % n_queries
            t = time.perf_counter()
            search(q)
            own.append(time.perf_counter() - t)
        with lock:
            latencies.extend(own)

    search(0)  # warm: connections opened, caches filled
    started = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(worker, range(clients)))
    wall = time.perf_counter() - started
    latencies.sort()
    p50 = statistics.median(latencies) * 1000
    p95 = latencies[int(0.95 * (len(latencies) - 1))] * 1000
    return p50, p95, len(latencies) / wall


def speed(args: argparse.Namespace) -> None:
    from synthetic import corpus

    texts, vecs, queries, qvecs = corpus(args.chunks)
    table = {t: v for t, v in zip(texts, vecs, strict=True)}
    table.update({q: v for q, v in zip(queries, qvecs, strict=True)})
    emb = Lookup(table)
    docs = [Document(id=f"c{i}", page_content=t) for i, t in enumerate(texts)]
    print(f"{len(docs)} synthetic chunks, {len(queries)} queries; {load_line()}\n")
    one = f"bench_speed_{uuid.uuid4().hex[:8]}"
    sharded = f"bench_sharded_{uuid.uuid4().hex[:8]}"
    lc_table = f"bench_lc_{uuid.uuid4().hex[:8]}"
    scope = {"filter": {"namespace": NAMESPACE}}
    settings = {"k": 10, "weights": (0.7, 0.3, 0.0)}
    results: list[tuple[str, float, dict[int, tuple[float, float, float]]]] = []
    ingest: dict[str, float] = {}
    try:
        pg, ingest["pg"] = load_postgres(args.url, one, emb, docs, vecs)
        bm25 = BM25KeywordIndex()
        started = time.perf_counter()
        memory = MatrixVectorStore(emb)
        memory.add_vectors(docs, vecs)
        bm25.upsert(docs)
        ingest["memory"] = time.perf_counter() - started
        strategies: dict[str, tuple[Callable[[int], object], float]] = {}
        native = HybridRetriever(
            vector_store=pg, search_strategy="native", search_kwargs=scope, **settings
        )
        fallback = HybridRetriever(
            vector_store=pg, keyword_index=bm25, search_kwargs=scope, **settings
        )
        in_memory = HybridRetriever(vector_store=memory, keyword_index=bm25, **settings)
        strategies["ours, Postgres native (BM25 in SQL)"] = (
            lambda q: native.invoke(queries[q]),
            ingest["pg"],
        )
        strategies["ours, Postgres fallback (PG dense + our BM25)"] = (
            lambda q: fallback.invoke(queries[q]),
            ingest["pg"],
        )
        if not args.no_peer:
            lc, _engine = pgvector_store(args.url, lc_table, emb, int(vecs.shape[1]))
            ingest["lc"] = pg_add(lc, docs)
            strategies["PGVectorStore hybrid (langchain-postgres)"] = (
                lambda q: lc.similarity_search(queries[q], k=10),
                ingest["lc"],
            )
        strategies["ours, in-memory default"] = (
            lambda q: in_memory.invoke(queries[q]),
            ingest["memory"],
        )
        if args.shards:
            sh, ingest["sharded"] = load_postgres(
                args.url, sharded, emb, docs, vecs, shards=args.shards
            )
            native_sh = native.model_copy(update={"vector_store": sh})
            same = sum(
                [d.id for d in native_sh.invoke(q)] == [d.id for d in native.invoke(q)]
                for q in queries
            )
            print(
                f"sharded ({len(args.shards)} shards) native top 10 equal to one node's: "
                f"{same}/{len(queries)} queries"
            )
            dense_same = sum(
                [i for i, _ in sh.search_ids_by_vector(v, 10)]
                == [i for i, _ in pg.search_ids_by_vector(v, 10)]
                for v in qvecs
            )
            print(f"sharded dense top 10 equal to one node's: {dense_same}/{len(queries)}\n")
            strategies[f"ours, Postgres native, {len(args.shards)} shards (postgres_fdw)"] = (
                lambda q: native_sh.invoke(queries[q]),
                ingest["sharded"],
            )
        for label, (search, ing) in strategies.items():
            per = {c: timed(search, c, args.queries_per_client, len(queries)) for c in args.clients}
            results.append((label, ing, per))
            print(f"  done: {label} ({load_line()})", file=sys.stderr)
    finally:
        drop(args.url, one, sharded, lc_table)
        for url in args.shards or []:
            drop(url, sharded)
    head = " | ".join(f"{c} client(s): p50 / p95 ms, QPS" for c in args.clients)
    print(f"| strategy | ingest s | {head} |")
    print("|---|---:|" + "---:|" * len(args.clients))
    for label, ing, per in results:
        cells = " | ".join(f"{p50:.1f} / {p95:.1f}, {qps:.0f}" for p50, p95, qps in per.values())
        print(f"| {label} | {ing:.1f} | {cells} |")
    by = {label: per for label, _, per in results}
    peer = by.get("PGVectorStore hybrid (langchain-postgres)")
    ours = by["ours, Postgres native (BM25 in SQL)"]
    if peer:
        for c in args.clients:
            print(f"native / PGVectorStore QPS at {c} client(s): {ours[c][2] / peer[c][2]:.2f}x")
    print(f"\n{load_line()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("mode", choices=["quality", "speed"])
    parser.add_argument("--url", default=os.environ.get("POSTGRES_URL"))
    parser.add_argument("--data", type=Path, help="SciFact directory (quality)")
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 10])
    parser.add_argument("--queries-per-client", type=int, default=50)
    parser.add_argument("--shards", nargs="*", default=[])
    parser.add_argument("--no-peer", action="store_true", help="skip PGVectorStore")
    args = parser.parse_args()
    if not args.url:
        parser.error("--url (or POSTGRES_URL) is required: bash scripts/postgres.sh start")
    if args.mode == "quality":
        if args.data is None:
            parser.error("quality needs --data (the SciFact directory)")
        quality(args)
    else:
        speed(args)


if __name__ == "__main__":
    main()
