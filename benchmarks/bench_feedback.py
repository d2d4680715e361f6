"""Dense pseudo-relevance feedback (``HybridRetriever(feedback_docs, feedback_weight)``), swept.

    python benchmarks/bench_feedback.py --data PATH/scifact                 # SciFact train
    python benchmarks/bench_feedback.py --data PATH/scifact --split test --grid 3:0.75
    python benchmarks/bench_feedback.py --data PATH/dbpedia --split test --grid 0:0 3:0.75
    python benchmarks/bench_feedback.py --synthetic 10000   # cost only (bench_hybrid_speed corpus)
    python benchmarks/bench_feedback.py --data PATH/scifact --depths 100 50 30   # FEEDBACK_DEPTH

The defaults (3 chunks, weight 0.75) are the best nDCG@10 of this grid on SciFact train (the
tuning split); every other set is only reported. Each row is the retriever itself
(``invoke(k=100)`` per query) on the default stores of ``bench_quality.py``: ``long_text="auto"``
entries of the cached ``OnnxEmbeddings`` vectors, ``BM25KeywordIndex()``, convex fusion
0.7/0.3, fetch_k 300. ``0:0`` is feedback off (the default before it).

Cost: CPU ms per query of ``invoke(k=10)`` over the split's queries, each configuration timed
next to feedback off in the same run (``time.process_time``, one BLAS thread; the load average
is printed). ``--synthetic N``: the same on ``synthetic.corpus(N)`` (random vectors, Zipf
words: ``bench_hybrid_speed.py``'s corpus, no windows), feedback off and on alternated twice.

``--depths``: the default feedback at each ``FEEDBACK_DEPTH`` (candidates re-scored per leg,
at least ``k``), nDCG@10 of ``invoke(k=10)``: the grid's ``invoke(k=100)`` re-scores 100 per leg
whatever the depth below 100, so it cannot tell those depths apart.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_quality import POLICIES, _entries, _evaluate, _run, _store
from onnx_cache import DiskCachedOnnx, windows_of
from prose_data import beir

from langchain_holodeck.keyword_index import BM25KeywordIndex
from langchain_holodeck.retrievers import HybridRetriever
from langchain_holodeck.vectorstores import MatrixVectorStore

GRID = [(0, 0.0)] + [(m, w) for m in (1, 2, 3, 4, 5) for w in (0.25, 0.5, 0.75, 1.0)]


def _pair(text: str) -> tuple[int, float]:
    docs, weight = text.split(":")
    return int(docs), float(weight)


def synthetic_cost(n: int, n_queries: int = 200) -> None:
    """CPU ms per query, feedback off and on (3 x 0.75), on ``synthetic.corpus(n)``."""
    from langchain_core.documents import Document
    from synthetic import corpus
    from tuning_data import LookupEmbeddings

    texts, vecs, queries, qvecs = corpus(n)
    queries = queries[:n_queries]
    store = MatrixVectorStore(LookupEmbeddings({q: qvecs[i] for i, q in enumerate(queries)}))
    docs = [Document(id=str(i), page_content=t) for i, t in enumerate(texts)]
    store.add_vectors(docs, vecs)
    bm25 = BM25KeywordIndex()
    bm25.upsert(docs)
    on = HybridRetriever(vector_store=store, keyword_index=bm25, k=10)
    off = on.model_copy(update={"feedback_docs": 0})
    print(f"\n## synthetic {n} chunks, {len(queries)} queries\n")
    print("| round | feedback | CPU ms/query (mean) |\n|---:|---|---:|")
    for round_ in (1, 2):
        for label, retriever in (("off", off), ("on (3 x 0.75)", on)):
            retriever.invoke(queries[0])
            began = time.process_time()
            for q in queries:
                retriever.invoke(q)
            ms = (time.process_time() - began) / len(queries) * 1000
            print(f"| {round_} | {label} | {ms:.2f} |", flush=True)


def _depth_rows(retriever, queries, qrels, cpu_ms, args) -> None:  # type: ignore[no-untyped-def]  # a bench helper
    """nDCG@10 of ``invoke(k=10)`` and its CPU cost at each ``FEEDBACK_DEPTH``."""
    import langchain_holodeck.retrievers.hybrid as hybrid

    default = hybrid.FEEDBACK_DEPTH
    print(f"\n## FEEDBACK_DEPTH (default {default}), feedback 3 x 0.75, invoke(k=10)\n")
    print("| FEEDBACK_DEPTH | nDCG@10 (k=10) | CPU ms/query |\n|---:|---:|---:|")
    for depth in args.depths:
        hybrid.FEEDBACK_DEPTH = depth  # the constant the retriever reads per query
        run = _run(queries, lambda q: [d.id for d in retriever.invoke(q, k=10)])
        nd, _ = _evaluate(run, qrels)
        print(f"| {depth} | {nd:.5f} | {cpu_ms(retriever):.2f} |", flush=True)
    hybrid.FEEDBACK_DEPTH = default


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=None, help="a BEIR directory")
    parser.add_argument("--synthetic", type=int, default=0, help="cost only, on N chunks")
    parser.add_argument("--split", default="train", help="train: the tuning split")
    parser.add_argument(
        "--grid", type=_pair, nargs="*", default=GRID, help="docs:weight pairs (0:0 = off)"
    )
    parser.add_argument("--timing", type=int, default=200, help="queries timed per config")
    parser.add_argument(
        "--depths", type=int, nargs="*", default=None, help="FEEDBACK_DEPTH values (k=10)"
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")  # one query at a time: threads only contend
    print(f"(load average at start: {os.getloadavg()[0]:.1f})")
    started_wall, started_cpu = time.perf_counter(), time.process_time()
    if args.synthetic:
        synthetic_cost(args.synthetic)
        print(f"(CPU {time.process_time() - started_cpu:.0f} s, load {os.getloadavg()[0]:.1f})")
        return
    if args.data is None:
        parser.error("--data is required (or --synthetic N)")
    data = beir(args.data, splits=(args.split,))
    docs, queries, qrels = data.docs, data.queries[args.split], data.qrels[args.split]
    texts = [d.page_content for d in docs]
    cache = DiskCachedOnnx()
    cache.ensure([t for _, t in queries], label="queries")
    table = {t: cache.vector(t) for _, t in queries}
    entries = _entries(docs, POLICIES["auto"], windows_of(texts), windows_of(texts, 256))
    store = _store(docs, entries, cache, table)
    bm25 = BM25KeywordIndex()
    bm25.upsert(docs)
    base = HybridRetriever(vector_store=store, keyword_index=bm25, feedback_docs=0)
    timed = queries[: args.timing]

    def cpu_ms(retriever: HybridRetriever) -> float:
        began = time.process_time()
        for _, text in timed:
            retriever.invoke(text, k=10)
        return (time.process_time() - began) / len(timed) * 1000

    cpu_ms(base)  # warm up
    if args.depths:
        _depth_rows(base.model_copy(update={"feedback_docs": 3}), queries, qrels, cpu_ms, args)
        return
    print(f"\n## {data.name} {args.split}: {len(docs)} documents, {len(queries)} judged queries\n")
    print("| feedback_docs | weight | nDCG@10 | Recall@100 | CPU ms/query | off, same run |")
    print("|---:|---:|---:|---:|---:|---:|")
    for n, weight in args.grid:
        retriever = base.model_copy(update={"feedback_docs": n, "feedback_weight": weight})
        run = _run(queries, lambda q, r=retriever: [d.id for d in r.invoke(q, k=100)])
        nd, rc = _evaluate(run, qrels)
        on, off = cpu_ms(retriever), cpu_ms(base)
        print(f"| {n} | {weight} | {nd:.4f} | {rc:.4f} | {on:.2f} | {off:.2f} |", flush=True)
    wall, cpu = time.perf_counter() - started_wall, time.process_time() - started_cpu
    print(f"\n(wall {wall:.0f} s, CPU {cpu:.0f} s, load average at end {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
