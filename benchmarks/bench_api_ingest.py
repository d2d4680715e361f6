"""Ingest through an embeddings API: ours (requests in flight) vs LangChain index() vs LlamaIndex.

    python benchmarks/bench_api_ingest.py [--chunks 10000] [--latency 0.15] [--batch-size 50]

An OpenAI-compatible embeddings server (``tests/embedding_server.py``) runs on loopback in a
process of its own and answers every request after ``--latency`` seconds (a real API's round
trip; its vectors are hashed bags of words). Every system embeds the same ``--chunks``
synthetic chunks (~120 words each, ``synthetic.corpus``) through the real OpenAI client:

- **ours**: ``sync_documents(chunks, MatrixVectorStore(emb), batch_size=50)`` at its default
  ``max_concurrency`` (8 requests in flight); once more with the server answering every
  ``--throttle-every``-th request with HTTP 429 and ``Retry-After`` (zero lost chunks is
  checked: every chunk must be in the store);
- **LangChain index()**: ``langchain_core.indexing.index(chunks, InMemoryRecordManager,
  MatrixVectorStore(emb), batch_size=...)`` with the same embeddings and store, at the same
  batch size and at index()'s default (100);
- **LlamaIndex**: ``IngestionPipeline(transformations=[OpenAIEmbedding(embed_batch_size=...)])``
  (llama-index-core + llama-index-embeddings-openai, same server; its own node objects, no
  vector store: it returns the embedded nodes), twice: ``.run(nodes, num_workers=<cpus>)``
  (worker processes; LlamaIndex caps ``num_workers`` at the CPU count) and ``.arun(nodes)``
  with ``OpenAIEmbedding(num_workers=8)`` (its async path: 8 requests in flight).

The embeddings client keeps its default retries (2; it honours ``Retry-After``) for every
system. Wall seconds, CPU seconds of this process (the server's excluded; LlamaIndex's worker
processes excluded, see the note printed), chunks stored, requests the server answered, and
the load average are printed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from synthetic import corpus  # noqa: E402

from langchain_holodeck.embeddings.inflight import DEFAULT_MAX_CONCURRENCY  # noqa: E402

LLAMA_IN_FLIGHT = DEFAULT_MAX_CONCURRENCY


def serve(latency: float, port_file: str) -> None:
    """Run the loopback server until killed; write its URL to ``port_file``."""
    from tests.embedding_server import EmbeddingServer

    with EmbeddingServer(default_dimensions=64, latency=latency) as server:
        control = Path(port_file)
        settings, out = control.with_suffix(".json"), control.with_suffix(".out")
        control.write_text(server.url)
        seq = -1
        while True:  # the parent sets throttling through a control file; counters go back
            if settings.exists():
                try:
                    values = json.loads(settings.read_text())
                except ValueError:
                    values = {}
                if values.get("seq", seq) != seq:
                    server.throttle_every = int(values.get("throttle_every", 0))
                    server.retry_after = float(values.get("retry_after", 0.5))
                    seq = values["seq"]
            answer = {"answered": len(server.requests), "throttled": server.throttled, "seq": seq}
            tmp = out.with_suffix(".tmp")
            tmp.write_text(json.dumps(answer))
            tmp.replace(out)  # atomic: the parent never reads half a file
            time.sleep(0.05)


class Server:
    """The loopback server in a child process, controlled through files."""

    def __init__(self, latency: float, workdir: Path) -> None:
        self.url_file = workdir / "server.url"
        self.seq = 0
        for stale in (self.url_file, *(self.url_file.with_suffix(x) for x in (".json", ".out"))):
            stale.unlink(missing_ok=True)
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--serve", str(latency), str(self.url_file)],
            cwd=ROOT,
        )
        deadline = time.monotonic() + 120  # a busy machine starts Python slowly
        while not (self.url_file.exists() and self.url_file.read_text()):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                msg = "the embeddings server did not start"
                raise RuntimeError(msg)
            time.sleep(0.05)
        self.url = self.url_file.read_text()

    def set(self, **values: Any) -> dict[str, int]:
        """Apply ``values`` (throttle_every, retry_after); the server's counters after."""
        self.seq += 1
        settings, out = self.url_file.with_suffix(".json"), self.url_file.with_suffix(".out")
        tmp = settings.with_suffix(".part")
        tmp.write_text(json.dumps({**values, "seq": self.seq}))
        tmp.replace(settings)
        for _ in range(1200):
            time.sleep(0.05)
            try:
                answer = json.loads(out.read_text())
            except (OSError, ValueError):
                continue
            if answer.get("seq") == self.seq:
                return {k: answer[k] for k in ("answered", "throttled")}
        msg = "the embeddings server did not answer its control file"
        raise RuntimeError(msg)

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


def openai_embeddings(url: str) -> Any:
    from langchain_openai import OpenAIEmbeddings

    return OpenAIEmbeddings(
        model="text-embedding-3-small",
        base_url=url,
        api_key="sk-bench-not-a-key",
        check_embedding_ctx_length=False,
    )


def timed(fn: Callable[[], int]) -> tuple[float, float, int]:
    t, c = time.perf_counter(), time.process_time()
    stored = fn()
    return time.perf_counter() - t, time.process_time() - c, stored


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--latency", type=float, default=0.15)
    parser.add_argument("--batch-size", type=int, default=50)
    parser.add_argument("--throttle-every", type=int, default=10)
    parser.add_argument("--retry-after", type=float, default=0.5)
    parser.add_argument("--skip", nargs="*", default=[], choices=["index", "llama"])
    parser.add_argument("--serve", nargs=2, metavar=("LATENCY", "URL_FILE"))
    args = parser.parse_args()
    if args.serve:
        serve(float(args.serve[0]), args.serve[1])
        return

    from langchain_core.documents import Document
    from langchain_core.indexing import InMemoryRecordManager, index

    from langchain_holodeck.sync import sync_documents
    from langchain_holodeck.vectorstores import MatrixVectorStore

    texts = corpus(args.chunks)[0][: args.chunks]
    docs = [
        Document(page_content=t, metadata={"source": f"doc_{i // 20}.md", "chunk_index": i % 20})
        for i, t in enumerate(texts)
    ]
    workdir = ROOT / "benchmarks" / ".cache"
    workdir.mkdir(parents=True, exist_ok=True)
    server = Server(args.latency, workdir)
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT
    ).stdout.strip()
    rows: list[tuple[str, float, float, int, dict[str, int]]] = []
    loads = [os.getloadavg()[0]]

    def run(name: str, fn: Callable[[], int], throttle: int = 0) -> None:
        before = server.set(throttle_every=throttle, retry_after=args.retry_after)
        wall, cpu, stored = timed(fn)
        after = server.set(throttle_every=0)
        counts = {k: after[k] - before[k] for k in after}
        rows.append((name, wall, cpu, stored, counts))
        loads.append(os.getloadavg()[0])
        print(f"done: {name} ({wall:.1f} s)", file=sys.stderr)

    def ours() -> int:
        store = MatrixVectorStore(openai_embeddings(server.url))
        result = sync_documents(docs, store, namespace="bench", batch_size=args.batch_size)
        if result.failed or result.errors:
            print(f"ours: {result.failed} failed: {result.errors[:3]}", file=sys.stderr)
        return store.document_count

    def langchain_index(batch_size: int) -> Callable[[], int]:
        def go() -> int:
            store = MatrixVectorStore(openai_embeddings(server.url))
            manager = InMemoryRecordManager(namespace="bench")
            manager.create_schema()
            index(docs, manager, store, batch_size=batch_size, source_id_key="source")
            return store.document_count

        return go

    def llama(processes: int | None, in_flight: int | None) -> Callable[[], int]:
        def go() -> int:
            import asyncio

            from llama_index.core.ingestion import IngestionPipeline
            from llama_index.core.schema import TextNode
            from llama_index.embeddings.openai import OpenAIEmbedding

            embed = OpenAIEmbedding(
                model="text-embedding-3-small",
                api_base=server.url,
                api_key="sk-bench-not-a-key",
                embed_batch_size=args.batch_size,
                num_workers=in_flight,
            )
            nodes = [TextNode(text=d.page_content, metadata=dict(d.metadata)) for d in docs]
            pipeline = IngestionPipeline(transformations=[embed], disable_cache=True)
            if in_flight:
                out = asyncio.run(pipeline.arun(nodes=nodes))
            else:
                out = pipeline.run(nodes=nodes, num_workers=processes)
            return sum(1 for n in out if n.embedding is not None)

        return go

    warm = openai_embeddings(server.url)
    warm.embed_documents(["warm up the client"])
    warm.embed_query("and the connection")

    try:
        run(f"ours: sync_documents (max_concurrency={DEFAULT_MAX_CONCURRENCY})", ours)
        run(
            f"ours, every {args.throttle_every}th request answered 429 "
            f"(Retry-After {args.retry_after} s)",
            ours,
            throttle=args.throttle_every,
        )
        if "index" not in args.skip:
            run(
                f"LangChain index(), batch_size={args.batch_size}",
                langchain_index(args.batch_size),
            )
            run("LangChain index(), batch_size=100 (its default)", langchain_index(100))
        if "llama" not in args.skip:
            try:
                workers = os.cpu_count() or 1
                run(
                    f"LlamaIndex IngestionPipeline.run(num_workers={workers}) (its CPU cap)",
                    llama(workers, None),
                )
                run(
                    f"LlamaIndex IngestionPipeline.arun(), OpenAIEmbedding(num_workers="
                    f"{LLAMA_IN_FLIGHT}) (async requests in flight)",
                    llama(None, LLAMA_IN_FLIGHT),
                )
            except ImportError as error:
                print(
                    f"LlamaIndex not installed ({error}); pip install llama-index-core "
                    "llama-index-embeddings-openai"
                )
    finally:
        server.close()

    print(
        f"\ncommit {commit}; {args.chunks:,} chunks (~120 words), {args.latency * 1000:.0f} ms "
        f"per request, batch_size {args.batch_size}; load average (1 min) "
        f"{min(loads):.1f}-{max(loads):.1f}; cpus={os.cpu_count()}\n"
    )
    print(
        "| system | wall s | CPU s (this process) | chunks stored | requests answered | 429s sent |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for name, wall, cpu, stored, counts in rows:
        print(
            f"| {name} | {wall:.1f} | {cpu:.1f} | {stored:,} | {counts['answered']} "
            f"| {counts['throttled']} |"
        )
    ours_wall = rows[0][1]
    print()
    for name, wall, *_ in rows[1:]:
        print(f"{name}: {wall / ours_wall:.2f}x ours' wall time")
    lost = args.chunks - rows[1][3]
    print(f"lost chunks with injected 429s (ours): {lost}")
    print(
        "(LlamaIndex's CPU column misses its worker processes; the server process is excluded "
        "for every row.)"
    )


if __name__ == "__main__":
    main()
