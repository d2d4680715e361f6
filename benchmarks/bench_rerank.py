"""Latency of the reranking stage against a Cohere-compatible server on loopback.

Run: ``python benchmarks/bench_rerank.py``. Needs the ``cohere`` extra; no network but loopback.

Compares our ``VLLMReranker`` (same code path as ``CohereReranker``) with langchain-cohere's
``CohereRerank`` on the same server:

1. added latency of a healthy rerank call (p50/p95 over 200 queries, 12 candidates each);
2. failure paths: server down (refused), server slower than the timeout, HTTP 500 — where our
   reranker falls back to the retrieval order and the peer raises (after its client's retries).
"""

from __future__ import annotations

import asyncio
import logging
import random
import socket
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import cohere
from langchain_cohere import CohereRerank
from langchain_core.documents import Document

from langchain_holodeck.rerankers import VLLMReranker
from tests.rerank_server import RerankServer

N_QUERIES = 200
N_CANDIDATES = 12  # rerank_top_n default: top_k (4) x 3
TOP_K = 4
TIMEOUT = 0.5
KEY = "bench-key"

VOCAB = [
    "holodeck",
    "safety",
    "protocol",
    "shift",
    "crew",
    "deck",
    "audit",
    "replicator",
    "sensor",
    "warp",
    "engine",
    "shield",
    "phaser",
    "transporter",
    "bridge",
    "officer",
    "report",
    "schedule",
    "maintenance",
    "program",
    "section",
    "clause",
    "definition",
    "requirement",
    "access",
    "log",
    "power",
    "grid",
    "isolinear",
    "chip",
    "diagnostic",
    "level",
]


def make_queries(rng: random.Random) -> list[tuple[str, list[Document]]]:
    out = []
    for q in range(N_QUERIES):
        query = " ".join(rng.sample(VOCAB, 4))
        docs = [
            Document(
                id=f"q{q}-d{i}",
                page_content=" ".join(rng.choices(VOCAB, k=80)),
                metadata={"source": f"doc{i}.md", "chunk_index": i},
            )
            for i in range(N_CANDIDATES)
        ]
        out.append((query, docs))
    return out


def percentiles(samples: list[float]) -> tuple[float, float, float]:
    ms = sorted(s * 1000 for s in samples)
    p95 = ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))]
    return statistics.median(ms), p95, max(ms)


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def timed_raising(fn: Callable[[], object]) -> tuple[float, str]:
    start = time.perf_counter()
    try:
        fn()
        outcome = "returned"
    except Exception as exc:
        outcome = f"raised {type(exc).__name__}"
    return time.perf_counter() - start, outcome


def closed_port_url() -> str:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return f"http://127.0.0.1:{port}"


def peer(url: str, timeout: float | None = None) -> CohereRerank:
    client = cohere.ClientV2(KEY, base_url=url, timeout=timeout)
    return CohereRerank(client=client, model="rerank-v3.5", top_n=TOP_K)


def row(name: str, samples: list[float], note: str = "") -> str:
    p50, p95, worst = percentiles(samples)
    return f"| {name} | {len(samples)} | {p50:.2f} | {p95:.2f} | {worst:.2f} | {note} |"


def main() -> None:
    # One warning per failed call is the contract; here they would drown the tables.
    logging.getLogger("langchain_holodeck.rerankers").setLevel(logging.ERROR)
    rng = random.Random(0)
    queries = make_queries(rng)
    header = "| path | calls | p50 ms | p95 ms | max ms | note |\n|---|---|---|---|---|---|"

    with RerankServer() as server:
        ours = VLLMReranker(url=server.url, model="m", top_n=TOP_K, timeout=TIMEOUT)
        theirs = peer(server.url)
        for query, docs in queries[:5]:  # warm up: imports, clients, keep-alive connections
            ours.compress_documents(docs, query)
            theirs.compress_documents(docs, query)
        ours_s = [timed(lambda q=q, d=d: ours.compress_documents(d, q)) for q, d in queries]
        theirs_s = [timed(lambda q=q, d=d: theirs.compress_documents(d, q)) for q, d in queries]

        async def run_async() -> list[float]:
            await ours.acompress_documents(queries[0][1], queries[0][0])
            samples = []
            for query, docs in queries:
                start = time.perf_counter()
                await ours.acompress_documents(docs, query)
                samples.append(time.perf_counter() - start)
            return samples

        ours_async = asyncio.run(run_async())
        n_requests = len(server.requests)

    print(f"## Reranking stage, healthy server ({N_QUERIES} queries x {N_CANDIDATES} candidates)")
    print()
    print(header)
    print(row("ours VLLMReranker.compress_documents", ours_s, "ids + metadata kept"))
    print(row("ours VLLMReranker.acompress_documents", ours_async, "async cohere client"))
    print(row("peer langchain-cohere CohereRerank", theirs_s, "drops Document.id"))
    print(f"\n(server answered {n_requests} requests; loopback, lexical scoring)\n")

    # -- failure paths ---------------------------------------------------------------------
    query, docs = queries[0]
    down = closed_port_url()
    lines = []

    no_breaker = {"failure_threshold": 10_000, "timeout": TIMEOUT, "top_n": TOP_K}
    ours_down = VLLMReranker(url=down, model="m", **no_breaker)
    ours_down.compress_documents(docs, query)
    lines.append(
        row(
            "ours, server down",
            [timed(lambda: ours_down.compress_documents(docs, query)) for _ in range(50)],
            "fallback order",
        )
    )
    peer_down = peer(down, timeout=TIMEOUT)
    samples, outcome = zip(
        *[timed_raising(lambda: peer_down.compress_documents(docs, query)) for _ in range(50)],
        strict=True,
    )
    lines.append(row("peer, server down", list(samples), outcome[0]))

    with RerankServer(mode="slow", delay=5.0) as slow:
        ours_slow = VLLMReranker(url=slow.url, model="m", **no_breaker)
        lines.append(
            row(
                f"ours, server slower than {TIMEOUT} s timeout",
                [timed(lambda: ours_slow.compress_documents(docs, query)) for _ in range(6)],
                "fallback order",
            )
        )
        breaker = VLLMReranker(url=slow.url, model="m", timeout=TIMEOUT, top_n=TOP_K)
        samples_b = [timed(lambda: breaker.compress_documents(docs, query)) for _ in range(50)]
        lines.append(
            row(
                "ours, slow server, breaker (3 failures, 30 s)",
                samples_b,
                f"{len(slow.requests) - 6} server calls in 50; "
                f"first 3 {sum(samples_b[:3]) / 3 * 1000:.0f} ms each",
            )
        )
        peer_slow = peer(slow.url, timeout=TIMEOUT)
        samples, outcome = zip(
            *[timed_raising(lambda: peer_slow.compress_documents(docs, query)) for _ in range(3)],
            strict=True,
        )
        lines.append(row("peer, slow server", list(samples), outcome[0]))

    with RerankServer(mode="error_500") as failing:
        ours_500 = VLLMReranker(url=failing.url, model="m", **no_breaker)
        ours_500.compress_documents(docs, query)
        lines.append(
            row(
                "ours, HTTP 500",
                [timed(lambda: ours_500.compress_documents(docs, query)) for _ in range(20)],
                "1 request per call (max_retries=0)",
            )
        )
        before = len(failing.requests)
        peer_500 = peer(failing.url, timeout=TIMEOUT)
        samples, outcome = zip(
            *[timed_raising(lambda: peer_500.compress_documents(docs, query)) for _ in range(3)],
            strict=True,
        )
        per_call = (len(failing.requests) - before) / 3
        lines.append(
            row("peer, HTTP 500", list(samples), f"{outcome[0]}; {per_call:.0f} requests per call")
        )

    print(f"## Failure paths (timeout {TIMEOUT} s; ours returns the retrieval order)")
    print()
    print(header)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
