"""Code retrieval: docstring first line -> the function, ours vs LangChain's EnsembleRetriever.

    python benchmarks/bench_code.py                 # test split (the reported table)
    python benchmarks/bench_code.py --split dev     # the split defaults are tuned on

Data: ``code_pairs.py`` (sympy's functions, read from site-packages at run time; pairs cached in
~/.cache/holodeck-bench/code). Embeddings: the real all-MiniLM-L6-v2, every vector cached on
disk, so only the first run pays: through sentence-transformers (torch, fp32; cached in
~/.cache/holodeck-bench/minilm) when it is installed, else (or with ``--embedder onnx``) the
package's own ``OnnxEmbeddings`` (int8 where the CPU has it; cached with ``onnx_cache.py``).
The peers embed each function whole (sentence-transformers truncates at 256 word pieces); ours
embeds as the tool does by default (``long_text="fit"``): a code chunk is one vector, whole
when it fits 256 word pieces, else its first window of 128, plus its signature entry
(``--long-text auto``: its first 256, the default before; ``first``: truncated at 256, no
windows anywhere, as the peers).

Ours is the default ``HierarchicalDocumentTool`` pipeline end to end: each function is written
to its own ``.py`` file (neutral names, ``f00042.py``), ingested with the tool's defaults
(``SourceLoader``, ``SourceCodeSplitter``, BM25 + dense + exact legs) and searched with its
retriever; chunks map back to their file, the first chunk of a file counts. The peers index the
same function texts: ``EnsembleRetriever(BM25Retriever, InMemoryVectorStore)`` with equal
weights, each leg 100 deep, and each leg alone. Pass@k: the share of queries whose function is
in the top k; nDCG@10 with the one right function as the only relevant document.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from code_pairs import Pair, load_pairs
from embedding_cache import EMBEDDERS, DiskCachedMiniLM
from ir_metrics import mean, ndcg_at_k
from langchain_core.documents import Document

from langchain_holodeck.config.models import HierarchicalDocumentToolConfig
from langchain_holodeck.keyword_index import BM25KeywordIndex
from langchain_holodeck.retrievers import HybridRetriever
from langchain_holodeck.tools import HierarchicalDocumentTool

CUTS = (5, 10, 20)
DEPTH = 100


def scores(runs: dict[str, list[str]], pairs: Sequence[Pair]) -> tuple[float, ...]:
    """Pass@5, Pass@10, Pass@20 and nDCG@10 of ranked pair ids per query."""
    passes = [mean([p.id in runs[p.id][:cut] for p in pairs]) for cut in CUTS]
    ndcg = mean([ndcg_at_k(runs[p.id], {p.id: 1}, 10) for p in pairs])
    return (*passes, ndcg)


def run_all(pairs: Sequence[Pair], search: Callable[[str], list[str]]) -> dict[str, list[str]]:
    return {p.id: search(p.query) for p in pairs}


def ours(
    pairs: Sequence[Pair],
    emb: DiskCachedMiniLM,
    work: Path,
    *,
    sweep: bool = False,
    feedback_docs: int | None = None,
    feedback_grid: Sequence[tuple[int, float]] = (),
    variants: Mapping[str, Mapping[str, object]] | None = None,
) -> tuple[dict, float, dict[str, dict]]:
    """The tool over ``pairs``, ingested in ``work``: each query's ranked pair ids, the seconds
    the queries took, and the runs of ``variants`` (label -> ``HybridRetriever`` fields set on
    the same ingested tool's retriever).
    """
    source = work / "functions"
    source.mkdir()
    by_file: dict[str, str] = {}
    for number, pair in enumerate(pairs):
        name = f"f{number:05d}.py"
        (source / name).write_text(pair.document + "\n", encoding="utf-8")
        by_file[f"functions/{name}"] = pair.id
    extra = {} if feedback_docs is None else {"feedback_docs": feedback_docs}
    config = HierarchicalDocumentToolConfig(
        type="hierarchical_document", name="code", source="functions", **extra
    )
    tool = HierarchicalDocumentTool(
        config, embeddings=emb, base_dir=work, project_dir=work, home_dir=work
    )
    started = time.perf_counter()
    result = asyncio.run(tool.initialize())
    print(f"(ours: ingested {result.added} chunks in {time.perf_counter() - started:.0f} s)")
    retriever = tool.as_retriever()

    def searcher(variant: HybridRetriever) -> Callable[[str], list[str]]:
        def search(query: str) -> list[str]:
            ranked = [by_file[d.metadata["source_path"]] for d in variant.invoke(query, k=50)]
            return list(dict.fromkeys(ranked))

        return search

    started = time.perf_counter()
    runs = run_all(pairs, searcher(retriever))
    secs = time.perf_counter() - started
    variant_runs = {
        label: run_all(pairs, searcher(retriever.model_copy(update=dict(update))))
        for label, update in (variants or {}).items()
    }
    if feedback_grid:
        print("\nFeedback sweep over the tool's own indexes:\n")
        print("| feedback_docs | feedback_weight | Pass@5 | Pass@10 | Pass@20 | nDCG@10 |")
        print("|---:|---:|---:|---:|---:|---:|")
        for n, weight in feedback_grid:
            variant = retriever.model_copy(update={"feedback_docs": n, "feedback_weight": weight})
            cells = " | ".join(f"{v:.3f}" for v in scores(run_all(pairs, searcher(variant)), pairs))
            print(f"| {n} | {weight} | {cells} |", flush=True)
    if sweep:
        print("\nSweep over the tool's own indexes (dev only):\n")
        base = retriever
        print(
            "| weights (sem, kw, exact) | rrf_k | fetch_k | Pass@5 | Pass@10 | Pass@20 | nDCG@10 |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|")
        for weights, rrf_k, fetch_k in [
            ((0.5, 0.5, 0.2), 60, 50),
            ((0.5, 0.5, 0.0), 60, 50),
            ((0.6, 0.4, 0.2), 60, 50),
            ((0.7, 0.3, 0.2), 60, 50),
            ((0.5, 0.5, 0.2), 20, 50),
            ((0.6, 0.4, 0.2), 20, 50),
            ((0.5, 0.5, 0.2), 60, 200),
            ((0.6, 0.4, 0.2), 20, 200),
        ]:
            variant = base.model_copy(
                update={"weights": weights, "rrf_k": rrf_k, "fetch_k": fetch_k}
            )
            values = scores(run_all(pairs, searcher(variant)), pairs)
            cells = " | ".join(f"{v:.3f}" for v in values)
            print(f"| {weights} | {rrf_k} | {fetch_k} | {cells} |")
    return runs, secs, variant_runs


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--split", choices=("dev", "test"), default="test")
    parser.add_argument("--limit", type=int, default=None, help="first N pairs (smoke runs)")
    parser.add_argument("--sweep", action="store_true", help="fusion settings sweep (dev)")
    parser.add_argument("--no-peer", action="store_true", help="skip the LangChain peers")
    parser.add_argument(
        "--feedback-docs", type=int, default=None, help="ours: feedback_docs (default: the default)"
    )
    parser.add_argument(
        "--feedback-grid",
        nargs="*",
        default=[],
        help="docs:weight pairs to sweep on the ingested tool (0:0 = off)",
    )
    parser.add_argument(
        "--long-text",
        choices=("fit", "auto", "best", "first"),
        default="fit",
        help="ours: the default (fit), the one before (auto), windows of 128 (best) or "
        "truncation (first)",
    )
    parser.add_argument(
        "--embedder",
        choices=EMBEDDERS,
        default="auto",
        help="MiniLM-L6 through sentence-transformers (torch) or the package's OnnxEmbeddings "
        "(onnx); auto: torch when installed",
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    pairs = load_pairs(args.split)[: args.limit]
    emb = DiskCachedMiniLM(long_text=args.long_text, embedder=args.embedder)
    emb.ensure([p.query for p in pairs] + [p.document for p in pairs])
    docs = [Document(id=p.id, page_content=p.document) for p in pairs]
    print(
        f"Code retrieval ({args.split}): {len(pairs)} sympy functions, one query each; "
        f"MiniLM-L6 on {emb.embedder}, vectors cached in {emb.cache}\n"
    )

    rows: list[tuple[str, tuple[float, ...]]] = []
    with tempfile.TemporaryDirectory() as tmp:
        runs, secs, _ = ours(
            pairs,
            emb,
            Path(tmp),
            sweep=args.sweep,
            feedback_docs=args.feedback_docs,
            feedback_grid=[
                (int(n), float(w)) for n, w in (pair.split(":") for pair in args.feedback_grid)
            ],
        )
    label = "defaults" if args.long_text == "fit" else f"defaults but long_text={args.long_text}"
    if args.feedback_docs is not None:
        label += f", feedback_docs={args.feedback_docs}"
    rows.append((f"**HierarchicalDocumentTool (ours, {label})**", scores(runs, pairs)))
    print(f"(ours: {secs:.0f} s for {len(pairs)} queries)")
    if not args.no_peer:  # the peers embed each function whole (truncated at 256)
        rows += peers(pairs, docs, emb.truncating())
    print("\n| retriever | Pass@5 | Pass@10 | Pass@20 | nDCG@10 |\n|---|---:|---:|---:|---:|")
    for label, values in rows:
        print(f"| {label} | " + " | ".join(f"{v:.3f}" for v in values) + " |")
    if emb.computed:
        print(f"\n({emb.computed} texts embedded this run; the rest came from the cache)")


def peers(
    pairs: Sequence[Pair], docs: list[Document], emb: DiskCachedMiniLM
) -> list[tuple[str, tuple[float, ...]]]:
    """EnsembleRetriever, each of its legs alone, and our BM25 alone, on the same texts."""
    from langchain_classic.retrievers import EnsembleRetriever
    from langchain_community.retrievers import BM25Retriever
    from langchain_core.vectorstores import InMemoryVectorStore

    rows: list[tuple[str, tuple[float, ...]]] = []
    store = InMemoryVectorStore(emb)
    store.add_documents(docs)
    dense = store.as_retriever(search_kwargs={"k": DEPTH})
    bm25 = BM25Retriever.from_documents(docs, k=DEPTH)
    ensemble = EnsembleRetriever(retrievers=[bm25, dense], weights=[0.5, 0.5])
    started = time.perf_counter()
    runs = run_all(pairs, lambda q: [d.id for d in ensemble.invoke(q)])
    print(f"(EnsembleRetriever: {time.perf_counter() - started:.0f} s)")
    rows.append(("EnsembleRetriever(BM25Retriever, InMemoryVectorStore)", scores(runs, pairs)))
    rows.append(
        (
            "dense only (InMemoryVectorStore, MiniLM-L6)",
            scores(run_all(pairs, lambda q: [d.id for d in dense.invoke(q)]), pairs),
        )
    )
    rows.append(
        (
            "BM25 only (BM25Retriever, str.split)",
            scores(run_all(pairs, lambda q: [d.id for d in bm25.invoke(q)]), pairs),
        )
    )
    index = BM25KeywordIndex()
    index.upsert(docs)
    rows.append(
        (
            "BM25 only (our BM25KeywordIndex, identifier-aware)",
            scores(run_all(pairs, lambda q: [h.id for h in index.search(q, DEPTH)]), pairs),
        )
    )

    return rows


if __name__ == "__main__":
    main()
