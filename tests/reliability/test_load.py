"""Load: 12 queries per second, open loop, held for ``HOLODECK_LOAD_SECONDS`` (default 30).

Queries are started on a fixed schedule (query ``i`` at ``t0 + i / RATE``) by an asyncio loop,
whatever the previous ones are doing; at most ``MAX_IN_FLIGHT`` run at once (a bounded loop:
past that, the schedule slips and the test fails because the rate was not held). Each query is
an async hybrid search (dense + BM25 + fusion) through ``HybridRetriever.ainvoke`` over 1000
chunks. Every answer must equal the answer of a sequential run of the same query. Latency is
measured from the scheduled start, so queueing counts; p50/p95/max are printed (run with ``-s``).

The issue asks for 30 s per backend, the default (CI runs it); ``HOLODECK_LOAD_SECONDS=5``
shortens it for local iterations.
"""

from __future__ import annotations

import asyncio
import os
import time
from statistics import quantiles

import pytest
from langchain_core.documents import Document

from langchain_holodeck.keyword_index import BM25KeywordIndex, KeywordIndex
from langchain_holodeck.retrievers import HybridRetriever
from langchain_holodeck.sync import sync_documents
from langchain_holodeck.vectorstores import MatrixVectorStore, create_vector_store_with_status
from tests.helpers import HashingEmbeddings
from tests.reliability import corpus

RATE = 12.0  # queries per second
SECONDS = float(os.environ.get("HOLODECK_LOAD_SECONDS", "30"))
MAX_IN_FLIGHT = 32
QUERIES = [
    f"{a} {b}"
    for a in ("warp core", "replicator tea", "safety protocol", "revised part")
    for b in ("shift rotation", "console log", "docs/new.md", "captain ensign", "deck sensor")
]


def answer(docs: list) -> list[tuple[str, float]]:
    return [(d.id, round(d.metadata["fused_score"], 9)) for d in docs]


async def hold_rate(retriever: HybridRetriever) -> dict[str, float]:
    """Run the schedule; return the figures. Raises AssertionError on a wrong answer."""
    expected = {q: answer(await retriever.ainvoke(q)) for q in QUERIES}  # sequential
    total = int(RATE * SECONDS)
    gate = asyncio.Semaphore(MAX_IN_FLIGHT)
    latencies: list[float] = []
    slips: list[float] = []
    wrong: list[str] = []

    async def one(i: int, scheduled: float) -> None:
        async with gate:
            slips.append(time.perf_counter() - scheduled)
            query = QUERIES[i % len(QUERIES)]
            got = answer(await retriever.ainvoke(query))
            latencies.append(time.perf_counter() - scheduled)
            if got != expected[query]:
                wrong.append(query)

    t0 = time.perf_counter()
    tasks = []
    for i in range(total):
        scheduled = t0 + i / RATE
        delay = scheduled - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)  # the arrival schedule, not a synchronization
        tasks.append(asyncio.create_task(one(i, scheduled)))
    await asyncio.gather(*tasks)
    elapsed = time.perf_counter() - t0
    assert wrong == []
    assert len(latencies) == total
    cuts = quantiles(latencies, n=100)
    return {
        "queries": total,
        "elapsed_s": elapsed,
        "achieved_qps": total / elapsed,
        "p50_ms": cuts[49] * 1000,
        "p95_ms": cuts[94] * 1000,
        "max_ms": max(latencies) * 1000,
        "max_slip_ms": max(slips) * 1000,
    }


def chunks(files: int = 100, per_file: int = 10) -> list[Document]:
    """1000 chunks: a corpus big enough that a query is not a no-op."""
    return [
        Document(
            page_content=corpus.chunk_text(f"docs/file_{f:03d}.md", c, 2),
            metadata={"source_path": f"docs/file_{f:03d}.md", "chunk_index": c},
        )
        for f in range(files)
        for c in range(per_file)
    ]


def build(store: object, keyword_index: KeywordIndex) -> HybridRetriever:
    result = sync_documents(
        chunks(),
        store,  # type: ignore[arg-type]
        namespace=corpus.NAMESPACE,
        keyword_index=keyword_index,
        batch_size=200,
    )
    assert result.failed == 0
    return HybridRetriever(vector_store=store, keyword_index=keyword_index, k=5)  # type: ignore[arg-type]


def check(figures: dict[str, float], backend: str) -> None:
    print(
        f"\nload[{backend}]: {figures['queries']:.0f} queries in {figures['elapsed_s']:.1f} s "
        f"({figures['achieved_qps']:.1f}/s), p50 {figures['p50_ms']:.1f} ms, "
        f"p95 {figures['p95_ms']:.1f} ms, max {figures['max_ms']:.1f} ms"
    )
    # the rate was held: every query was answered within a second of the schedule's end
    assert figures["elapsed_s"] <= SECONDS + 1.0
    assert figures["achieved_qps"] >= 10.0


@pytest.mark.slow
async def test_in_memory_store_holds_12_queries_per_second() -> None:
    store = MatrixVectorStore(HashingEmbeddings())
    retriever = build(store, BM25KeywordIndex())
    check(await hold_rate(retriever), "in-memory")


@pytest.mark.slow
@pytest.mark.redis
async def test_redis_store_holds_12_queries_per_second(
    redis_url: str, redis_index_name: str
) -> None:
    from langchain_holodeck.keyword_index import RedisKeywordIndex

    config = {"provider": "redis", "connection_string": redis_url, "index_name": redis_index_name}
    store = create_vector_store_with_status(config, HashingEmbeddings(), fallback=False).store
    retriever = build(store, RedisKeywordIndex(store))
    check(await hold_rate(retriever), "redis")
