"""What MCP adds to a search: ``holodeck-rag serve`` over stdio and HTTP vs in-process search.

    python benchmarks/bench_mcp.py                       # synthetic corpus, 10,000 chunks
    python benchmarks/bench_mcp.py --chunks 2000 --queries 50
    python benchmarks/bench_mcp.py --data DIR --query-file QUERIES.txt   # your own folder

Builds the default hybrid tool (HierarchicalDocumentTool: dense + BM25 + exact, RRF) over the
synthetic corpus of ``synthetic.py`` written as Markdown (one section per chunk), or over the
documents in ``--data``; document vectors are hashes of the text, queries go through the real
default model (as ``bench_chat.py``). The store is saved once; three processes load it the same
way: two serve the tool (``serve_tools``, what ``holodeck-rag serve`` runs) over stdio and
streamable HTTP, the third is the baseline, timing ``tool.search_sync`` in-process around the
call (a process like the servers, so both sides pay the same heap and the same load). Each
query is asked, in turn, of the baseline, the stdio server and the HTTP server (the official
``mcp`` client, timed around ``call_tool``); the same text must come back. Reports wall p50/p95
per path, the transport's p50 overhead against the target (<= 5 ms), the CPU seconds of each
process, and the load average.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_chat import HashDocsOnnxQueries
from synthetic import corpus

from langchain_holodeck import HierarchicalDocumentTool, HierarchicalDocumentToolConfig
from langchain_holodeck.cli.chat import one_blas_thread

TARGET_MS = 5.0


def write_synthetic(root: Path, chunks: int) -> list[str]:
    """``chunks`` synthetic chunks as Markdown files of 100 sections; returns the queries."""
    texts, _, queries, _ = corpus(chunks)
    root.mkdir(parents=True, exist_ok=True)
    per_file = 100
    for f in range(0, len(texts), per_file):
        body = "\n\n".join(
            f"## Part {f + i}\n\n{text}" for i, text in enumerate(texts[f : f + per_file])
        )
        (root / f"file_{f // per_file:04d}.md").write_text(f"# File {f}\n\n{body}\n")
    return queries


def build_tool(source: Path, store: Path) -> HierarchicalDocumentTool:
    config = HierarchicalDocumentToolConfig(
        type="hierarchical_document",
        name="bench",
        description="The benchmark corpus.",
        source=str(source),
    )
    tool = HierarchicalDocumentTool(config, embeddings=HashDocsOnnxQueries(), store_dir=store)
    tool.initialize_sync()
    return tool


def serve_child(transport: str, source: Path, store: Path) -> None:
    """A server process: load the saved tool, serve it (stderr says when and where).

    ``inproc`` is the baseline, a process like the servers without MCP: it reads one query
    per line and writes back ``{"ms", "text"}``, the time measured around ``search_sync``.
    """
    from langchain_holodeck.cli.serve import serve_tools

    with one_blas_thread():  # as the CLI runs
        tool = build_tool(source, store)
        tool.search_sync("warm up the model")
        print(f"loaded {tool.document_count} chunks", file=sys.stderr, flush=True)
        if transport != "inproc":
            serve_tools([tool], transport=transport, port=0)  # type: ignore[arg-type]  # argv
            return
        print("ready", flush=True)
        for line in sys.stdin:
            query = json.loads(line)
            t0 = time.perf_counter()
            text = tool.search_sync(query)
            ms = (time.perf_counter() - t0) * 1000
            print(json.dumps({"ms": ms, "text": text}), flush=True)


def _child(transport: str, source: Path, store: Path) -> list[str]:
    return [
        sys.executable,
        str(Path(__file__).resolve()),
        "--serve",
        transport,
        "--data",
        str(source),
        "--store",
        str(store),
    ]


def _env() -> dict[str, str]:
    root = str(Path(__file__).resolve().parents[1])
    return {**os.environ, "PYTHONPATH": root, "HF_HUB_OFFLINE": "1"}


def start_http(source: Path, store: Path) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        _child("http", source, store),
        env=_env(),
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    for line in process.stderr:
        if line.startswith("serving on "):
            url = line.split()[-1]
            threading.Thread(target=process.stderr.read, daemon=True).start()  # drain
            return process, url
    msg = f"the HTTP server exited with {process.wait()}"
    raise RuntimeError(msg)


def _cpu_of(pid: int) -> float:
    """User + system CPU seconds of a running process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def _children() -> list[int]:
    """Process ids of this process's children (Linux /proc)."""
    pids: list[int] = []
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        pids += [int(p) for p in (task / "children").read_text().split()]
    return pids


async def measure(queries: list[str], source: Path, store: Path):  # type: ignore[no-untyped-def]  # a script
    import httpx
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.client.streamable_http import streamable_http_client

    http_process, url = start_http(source, store)
    baseline = subprocess.Popen(
        _child("inproc", source, store),
        env=_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert baseline.stdin is not None
    assert baseline.stdout is not None
    assert baseline.stdout.readline().strip() == "ready"

    def search_in_process(query: str) -> tuple[float, str]:
        baseline.stdin.write(json.dumps(query) + "\n")  # type: ignore[union-attr]
        baseline.stdin.flush()  # type: ignore[union-attr]
        answer = json.loads(baseline.stdout.readline())  # type: ignore[union-attr]
        return answer["ms"] / 1000, answer["text"]

    params = StdioServerParameters(
        command=sys.executable, args=_child("stdio", source, store)[1:], env=_env()
    )
    times: dict[str, list[float]] = {"in-process": [], "stdio": [], "http": []}
    cpu: dict[str, float] = {}
    try:
        async with (
            stdio_client(params) as (sr, sw),
            ClientSession(sr, sw) as stdio,
            httpx.AsyncClient(timeout=120) as client,
            streamable_http_client(url, http_client=client) as (hr, hw, _),
            ClientSession(hr, hw) as http,
        ):
            await stdio.initialize()
            await http.initialize()
            sessions = {"stdio": stdio, "http": http}
            stdio_pid = next(p for p in _children() if p not in (http_process.pid, baseline.pid))
            pids = {"http server": http_process.pid, "stdio server": stdio_pid}
            pids["in-process baseline"] = baseline.pid
            cpu0 = {name: _cpu_of(pid) for name, pid in pids.items()}
            cpu0["bench"] = time.process_time()
            paths = ["in-process", "stdio", "http"]
            warm_up = queries[:10]
            for n, query in enumerate([*warm_up, *queries]):
                elapsed: dict[str, float] = {}
                texts: dict[str, str] = {}
                for name in paths[n % 3 :] + paths[: n % 3]:  # each path first in turn
                    if name == "in-process":
                        elapsed[name], texts[name] = search_in_process(query)
                        continue
                    t0 = time.perf_counter()
                    result: Any = await sessions[name].call_tool("bench", {"query": query})
                    elapsed[name] = time.perf_counter() - t0
                    wire = result.model_dump(by_alias=True)  # same keys for mcp 1.x and 2.x
                    texts[name] = "error" if wire["isError"] else wire["content"][0]["text"]
                for name, text in texts.items():
                    if text != texts["in-process"]:
                        msg = f"{name} answered differently for {query!r}: {text[:200]!r}"
                        raise RuntimeError(msg)
                if n >= len(warm_up):  # the first 10 (or all, when fewer) warm up
                    for name, seconds in elapsed.items():
                        times[name].append(seconds * 1000)
            cpu["bench (the MCP clients)"] = time.process_time() - cpu0["bench"]
            for name, pid in pids.items():
                cpu[name] = _cpu_of(pid) - cpu0[name]
    finally:
        baseline.stdin.close()
        baseline.wait(timeout=30)
        http_process.terminate()
        http_process.wait(timeout=30)
    return times, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200, help="queries timed (max 200)")
    parser.add_argument("--data", type=Path, help="a folder of documents instead of synthetic")
    parser.add_argument("--query-file", type=Path, help="with --data: one query per line")
    parser.add_argument("--serve", choices=("stdio", "http", "inproc"), help=argparse.SUPPRESS)
    parser.add_argument("--store", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve_child(args.serve, args.data, args.store)
        return
    with tempfile.TemporaryDirectory() as tmp:
        if args.data is None:
            source = Path(tmp) / "docs"
            queries = write_synthetic(source, args.chunks)
        else:
            if args.query_file is None:
                parser.error("--data needs --query-file")
            source = args.data.resolve()
            queries = [q for q in args.query_file.read_text().splitlines() if q.strip()]
        queries = queries[: args.queries]
        store = Path(tmp) / "store"
        start = time.perf_counter()
        with one_blas_thread():
            chunks = build_tool(source, store).document_count  # embeds, indexes, saves
        build = time.perf_counter() - start
        times, cpu = asyncio.run(measure(queries, source, store))
    report(chunks, len(queries), build, times, cpu)


def report(chunks: int, n: int, build: float, times: dict[str, Any], cpu: dict[str, float]) -> None:
    def pct(values: list[float], q: float) -> float:
        ordered = sorted(values)
        return ordered[int(q * (len(ordered) - 1))]

    base = statistics.median(times["in-process"])
    print(f"### One search through MCP vs in-process, {chunks} chunks, {n} queries\n")
    print(f"store built in {build:.1f} s (hash document vectors; not a target)\n")
    print("| path | wall p50 ms | wall p95 ms | p50 added vs in-process | target |")
    print("|---|---|---|---|---|")
    for name, values in times.items():
        p50 = statistics.median(values)
        added = "" if name == "in-process" else f"{p50 - base:+.2f} ms"
        verdict = "" if name == "in-process" else ("met" if p50 - base <= TARGET_MS else "missed")
        target = "" if name == "in-process" else f"<= {TARGET_MS:.0f} ms: {verdict}"
        print(f"| {name} | {p50:.2f} | {pct(values, 0.95):.2f} | {added} | {target} |")
    print("\n| process | CPU s during the timed calls |")
    print("|---|---|")
    for name, seconds in cpu.items():
        print(f"| {name} | {seconds:.2f} |")
    load = os.getloadavg()
    print(f"\nload average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
