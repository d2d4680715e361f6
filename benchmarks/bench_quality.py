"""Regression guard for retrieval quality: every set, our default next to the simple peers.

    python benchmarks/bench_quality.py --scifact PATH --prose PATH [PATH ...] --code
    python benchmarks/bench_quality.py --scifact PATH --tune --code --split dev   # tuning splits

Sets: BEIR SciFact (test; ``--tune``: train, the split defaults are chosen on), each BEIR-format
prose set given (``prose_data.py``: where the held-out sets come from), and the code set
(``--code``: sympy docstring -> function, ``bench_code.py``; ``--split``, test by default).

Rows per prose set, all on the same vectors of the default embedder (``OnnxEmbeddings``,
all-MiniLM-L6-v2 int8, every text embedded once and cached by ``onnx_cache.py``):
- **ours, every default**: ``long_text="fit"`` (a document that fits 256 word pieces is one
  vector, plus its windows of 128 when it is longer than one; a longer document is its windows
  of 128; a chunk scores its best entry), ``BM25KeywordIndex()``, ``ExactMatchIndex()`` (the
  tool's third leg: these sets have no sections, and it pins codes for queries of at most four
  words only), ``HybridRetriever()`` (convex fusion 0.7/0.3/0.2, fetch_k 300,
  feedback 3 x 0.75; BM25 with its word pairs, ``pair_weight`` 0.5); the rows of its legs
  keep its exact leg, the previous defaults' have none (their exact leg had no codes);
- the previous default (no word pairs: ``BM25KeywordIndex(pair_weight=0)``, every other default
  the same), the one before it (``long_text="auto"``: whole when it fits, else its first 256
  plus its windows of 128, no pairs), the one before that (windows of 128 for every document,
  no feedback, no pairs), and the last release's (truncated at 256, plain BM25 words, RRF
  0.5/0.5, fetch_k 50);
- dense only and BM25 only (our legs), plain RRF 0.5/0.5 of the same legs;
- ``EnsembleRetriever(BM25Retriever, InMemoryVectorStore)``, equal weights, each leg 100 deep,
  on the same truncated vectors (what a hand-written LangChain pipeline gets).
With ``--tune`` also the keyword candidate; ``--candidates`` adds the window candidates the
default was chosen from (on either split; the ones past windows of 128 embed more texts). The
candidate "windows of 128 for every prose document, code whole" (``best128`` here: these sets
hold no code) runs with the default feedback on every split, next to the default.

nDCG@10 and Recall@100 come from one ``invoke(k=100)`` per query (the top 10 of it is what
``invoke(k=10)`` returns: both fuse the same ``fetch_k`` candidates). Code rows: the tool end to
end (``bench_code.ours``) with ``long_text`` fit / auto / best, and the peers.

Cost of windows per content type (vectors per chunk, and chunks/s of the embedder on this
machine at this load) is printed per set: the entries each policy embeds.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
from ir_metrics import mean, ndcg_at_k, recall_at_k
from langchain_core.documents import Document
from onnx_cache import DiskCachedOnnx, windows_of
from prose_data import BeirSet, beir
from tuning_data import LookupEmbeddings

from langchain_holodeck.exact import ExactMatchIndex
from langchain_holodeck.keyword_index import BM25KeywordIndex
from langchain_holodeck.retrievers import HybridRetriever
from langchain_holodeck.vectorstores import MatrixVectorStore

Run = dict[str, list[str]]
PLAIN_RRF = "plain RRF 0.5/0.5 of the same legs"
Policy = Callable[[str, list[str], list[str]], list[str]]
"""(text, its windows of 128, its windows of 256) -> the texts it is stored as (own entry
first)."""

POLICIES: dict[str, Policy] = {
    # the default: whole when it fits 256 (plus its windows of 128 past one), else its windows
    "fit": lambda t, w128, w256: [t] if len(w128) == 1 else [t, *w128] if len(w256) == 1 else w128,
    # the previous default: whole when it fits 256, else its first 256 plus every window of 128
    "auto": lambda t, w128, w256: [t] if len(w256) == 1 else [t, *w128],
    # the default before: windows of 128 for every document
    "best128": lambda t, w128, w256: w128,
    # truncation at 256 (the last release)
    "first": lambda t, w128, w256: [t],
    # candidates: whole when it fits, else windows of 128 only (own entry = first 128)
    "auto-w128": lambda t, w128, w256: [t] if len(w256) == 1 else w128,
    # whole when it fits, else itself (its first 256) plus its further windows of 256
    "auto-w256": lambda t, w128, w256: [t] if len(w256) == 1 else [t, *w256[1:]],
    # whole when it fits, else itself plus its windows of 128 past the first (inside it)
    "auto-skip1": lambda t, w128, w256: [t] if len(w256) == 1 else [t, *w128[1:]],
}


def _entries(
    docs: Sequence[Document], policy: Policy, w128: list[list[str]], w256: list[list[str]]
) -> list[list[str]]:
    return [policy(d.page_content, a, b) for d, a, b in zip(docs, w128, w256, strict=True)]


def _store(
    docs: Sequence[Document], entries: list[list[str]], cache: DiskCachedOnnx, table: dict
) -> MatrixVectorStore:
    """Documents stored as sync stores them: own entry under the id, windows as ``id:w<n>``."""
    rows: list[Document] = []
    texts: list[str] = []
    for doc, own in zip(docs, entries, strict=True):
        rows.append(doc)
        texts.append(own[0])
        for n, text in enumerate(own[1:], start=1):
            rows.append(
                Document(id=f"{doc.id}:w{n}", page_content="", metadata={"window_of": doc.id})
            )
            texts.append(text)
    cache.ensure(texts, label="entries")
    store = MatrixVectorStore(LookupEmbeddings(table))
    store.add_vectors(rows, np.stack([cache.vector(t) for t in texts]))
    return store


def _evaluate(run: Run, qrels: dict[str, dict[str, int]]) -> tuple[float, float]:
    nd = mean([ndcg_at_k(run[q], qrels[q], 10) for q in run])
    rc = mean([recall_at_k(run[q], qrels[q], 100) for q in run])
    return nd, rc


def _run(queries: list[tuple[str, str]], search: Callable[[str], list[str]]) -> Run:
    return {qid: search(text) for qid, text in queries}


class _PlainWordsIndex(BM25KeywordIndex):
    """The last release's BM25 words: no identifier splitting in documents or queries."""

    def _encode(self, doc: Document) -> np.ndarray:
        return self.tokenizer.encode(doc.page_content, identifiers=False)

    def search(self, query: str, k: int):  # type: ignore[no-untyped-def]  # a bench subclass
        words = " ".join(self.tokenizer._plain_split(query))
        return super().search(words, k)


def prose_rows(
    data: BeirSet,
    split: str,
    cache: DiskCachedOnnx,
    *,
    tune: bool,
    peer: bool,
    candidates: bool = False,
) -> list[tuple[str, float, float]]:
    """Every row for one BEIR set's ``split`` (``candidates``: the window candidates too)."""
    docs, queries, qrels = data.docs, data.queries[split], data.qrels[split]
    texts = [d.page_content for d in docs]
    cache.ensure([t for _, t in queries], label="queries")
    table = {t: cache.vector(t) for _, t in queries}
    w128, w256 = windows_of(texts), windows_of(texts, 256)
    long256 = sum(len(w) > 1 for w in w256)
    print(
        f"\n## {data.name} ({split}): {len(docs)} documents, {len(queries)} judged queries; "
        f"{long256} documents ({long256 / len(docs):.0%}) are longer than 256 word pieces"
    )
    bm25 = BM25KeywordIndex()
    bm25.upsert(docs)
    bm25_before = BM25KeywordIndex(pair_weight=0)  # the previous defaults' terms, no pairs
    bm25_before.upsert(docs)
    exact = ExactMatchIndex()  # the tool's third leg, as the tool has it
    exact.upsert(docs)
    rows: list[tuple[str, float, float]] = []

    def hybrid(label: str, retriever: HybridRetriever) -> None:
        run = _run(queries, lambda q: [d.id for d in retriever.invoke(q, k=100)])  # type: ignore[misc]
        rows.append((label, *_evaluate(run, qrels)))

    stores: dict[str, MatrixVectorStore] = {}
    wanted = ["fit", "auto", "best128", "first"] + (
        ["auto-w128", "auto-w256", "auto-skip1"] if candidates else []
    )
    for name in wanted:
        entries = _entries(docs, POLICIES[name], w128, w256)
        began = time.perf_counter()
        stores[name] = _store(docs, entries, cache, table)
        n_vectors = sum(len(e) for e in entries)
        print(
            f"- {name}: {n_vectors / len(docs):.2f} vectors per document "
            f"({n_vectors} in all; store built in {time.perf_counter() - began:.0f} s)"
        )
    default = HybridRetriever(vector_store=stores["fit"], keyword_index=bm25, exact_index=exact)
    before = default.model_copy(update={"feedback_docs": 0})  # the legs, fused once
    hybrid("**ours, every default (long_text=fit, feedback 3 x 0.75)**", default)
    hybrid("ours without feedback (feedback_docs=0)", before)
    hybrid(
        PLAIN_RRF,
        before.model_copy(update={"fusion": "rrf", "weights": (0.5, 0.5, 0.2)}),
    )
    hybrid(
        "candidate: windows of 128 for every prose document, code whole (feedback 3 x 0.75)",
        default.model_copy(update={"vector_store": stores["best128"]}),
    )
    hybrid(
        "previous default (no word pairs: BM25KeywordIndex(pair_weight=0))",
        default.model_copy(update={"keyword_index": bm25_before}),
    )
    hybrid(
        "the default before (long_text=auto, feedback 3 x 0.75, no codes, no pairs)",
        default.model_copy(
            update={
                "vector_store": stores["auto"],
                "exact_index": None,
                "keyword_index": bm25_before,
            }
        ),
    )
    hybrid(
        "the one before (windows of 128 for every document, no feedback, no pairs)",
        before.model_copy(
            update={
                "vector_store": stores["best128"],
                "exact_index": None,
                "keyword_index": bm25_before,
            }
        ),
    )
    hybrid(
        "ours, every default but codes (no exact leg: these sets have no sections)",
        default.model_copy(update={"exact_index": None}),
    )
    plain = _PlainWordsIndex()
    plain.upsert(docs)
    hybrid(
        "last release (truncated at 256, plain BM25 words, RRF 0.5/0.5, fetch_k 50)",
        HybridRetriever(
            vector_store=stores["first"],
            keyword_index=plain,
            fusion="rrf",
            weights=(0.5, 0.5, 0.2),
            fetch_k=50,
            feedback_docs=0,
        ),
    )
    if candidates:  # window candidates, each next to "ours without feedback" (same fusion)
        hybrid(
            "candidate: whole when it fits, else windows of 128 only",
            before.model_copy(update={"vector_store": stores["auto-w128"]}),
        )
        hybrid(
            "candidate: whole when it fits, else its first 256 + further windows of 256",
            before.model_copy(update={"vector_store": stores["auto-w256"]}),
        )
        hybrid(
            "candidate: whole when it fits, else its first 256 + windows of 128 past the first",
            before.model_copy(update={"vector_store": stores["auto-skip1"]}),
        )
        hybrid(
            "candidate: truncated at 256 (no windows)",
            before.model_copy(update={"vector_store": stores["first"]}),
        )
    if tune:
        code_ids = BM25KeywordIndex(identifiers="code")
        code_ids.upsert(docs)
        hybrid(
            "candidate: BM25 identifiers split only in code chunks",
            before.model_copy(update={"keyword_index": code_ids}),
        )
    dense = default.model_copy(update={"weights": (1.0, 0.0, 0.0)})
    hybrid("dense only (ours, long_text=fit)", dense)
    run = _run(queries, lambda q: [h.id for h in bm25.search(q, 100)])
    rows.append(("BM25 only (ours)", *_evaluate(run, qrels)))
    run = _run(queries, lambda q: [h.id for h in bm25_before.search(q, 100)])
    rows.append(("BM25 only, no word pairs (the previous default's leg)", *_evaluate(run, qrels)))
    if peer:
        rows += _ensemble(docs, queries, qrels, cache, table)
    return rows


def _ensemble(docs, queries, qrels, cache, table) -> list[tuple[str, float, float]]:  # type: ignore[no-untyped-def]
    try:
        from langchain_classic.retrievers import EnsembleRetriever
        from langchain_community.retrievers import BM25Retriever
        from langchain_core.vectorstores import InMemoryVectorStore
    except ImportError:
        print("(EnsembleRetriever skipped: pip install langchain-classic langchain-community)")
        return []
    lookup = dict(table)
    lookup.update({d.page_content: cache.vector(d.page_content) for d in docs})
    by_text = {d.page_content: d.id for d in docs}
    store = InMemoryVectorStore(LookupEmbeddings(lookup))
    store.add_documents(docs)
    bm25r = BM25Retriever.from_documents(docs, k=100)
    ens = EnsembleRetriever(
        retrievers=[bm25r, store.as_retriever(search_kwargs={"k": 100})], weights=[0.5, 0.5]
    )
    run = _run(queries, lambda q: [by_text[d.page_content] for d in ens.invoke(q)])
    return [
        ("EnsembleRetriever(BM25Retriever, InMemoryVectorStore), truncated", *_evaluate(run, qrels))
    ]


def code_rows(
    split: str, *, peer: bool, limit: int | None = None, modes: Sequence[str] = ("fit", "auto")
) -> list[tuple[str, float, float]]:
    """The code set through the tool end to end: Pass@10 (as 'nDCG' column: nDCG@10)."""
    from bench_code import ours, peers, scores
    from code_pairs import load_pairs
    from embedding_cache import DiskCachedMiniLM

    pairs = load_pairs(split)[:limit]
    print(f"\n## code ({split}): {len(pairs)} sympy functions, one query each")
    rows: list[tuple[str, float, float]] = []
    labels = {
        "fit": "**ours, every default (long_text=fit)**",
        "auto": "previous default (long_text=auto)",
        "best": "the default before (windows of 128 for every chunk)",
        "first": "truncated at 256",
    }
    for mode in modes:
        emb = DiskCachedMiniLM(long_text=mode)
        emb.ensure([p.query for p in pairs] + [p.document for p in pairs])
        # the default's legs fused by plain RRF, on the same ingested tool
        variants = (
            {PLAIN_RRF: {"fusion": "rrf", "weights": (0.5, 0.5, 0.2)}} if mode == "fit" else {}
        )
        with tempfile.TemporaryDirectory() as tmp:
            runs, _, variant_runs = ours(pairs, emb, Path(tmp), variants=variants)
        for label, run in ((labels[mode], runs), *variant_runs.items()):
            _, p10, p20, nd = scores(run, pairs)
            rows.append((f"{label}: Pass@10 {p10:.3f}, Pass@20 {p20:.3f}", nd, p10))
    if peer:
        docs = [Document(id=p.id, page_content=p.document) for p in pairs]
        for label, (_, p10, p20, nd) in peers(pairs, docs, DiskCachedMiniLM().truncating()):
            rows.append((f"{label}: Pass@10 {p10:.3f}, Pass@20 {p20:.3f}", nd, p10))
    return rows


def cost_rows(name: str, texts: Sequence[str], n: int) -> None:
    """Print what each policy costs at ingest on ``n`` of the texts: vectors per chunk and
    chunks/s of ``OnnxEmbeddings`` (computed here, not cached; wall and CPU seconds)."""
    from langchain_holodeck.embeddings import OnnxEmbeddings

    sample = list(texts[:n])
    w128, w256 = windows_of(sample), windows_of(sample, 256)
    model = OnnxEmbeddings(long_text="first")  # each entry embedded as its first 256
    model.embed_documents(["warm up"])
    print(f"\nCost of windows, {name} ({len(sample)} chunks):\n")
    print("| policy | vectors per chunk | chunks/s | CPU s per chunk |\n|---|---:|---:|---:|")
    for policy in ("first", "fit", "auto", "auto-skip1", "auto-w128", "auto-w256", "best128"):
        entries = [
            e for t, a, b in zip(sample, w128, w256, strict=True) for e in POLICIES[policy](t, a, b)
        ]
        wall, cpu = time.perf_counter(), time.process_time()
        model.embed_documents(entries)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        print(
            f"| {policy} | {len(entries) / len(sample):.2f} | {len(sample) / wall:.1f} | "
            f"{cpu / len(sample):.3f} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scifact", type=Path, default=None, help="BEIR SciFact directory")
    parser.add_argument("--prose", type=Path, nargs="*", default=[], help="BEIR directories")
    parser.add_argument("--code", action="store_true", help="the code set (sympy pairs)")
    parser.add_argument("--split", choices=("dev", "test"), default="test", help="code split")
    parser.add_argument("--tune", action="store_true", help="SciFact train, keyword candidate")
    parser.add_argument("--no-peer", action="store_true", help="skip EnsembleRetriever")
    parser.add_argument("--limit", type=int, default=None, help="code: first N pairs only")
    parser.add_argument(
        "--code-modes",
        nargs="+",
        choices=("fit", "auto", "best", "first"),
        default=["fit", "auto"],
        help="code: the long_text modes to run the tool with (fit: the default)",
    )
    parser.add_argument(
        "--candidates", action="store_true", help="the window candidates on any split"
    )
    parser.add_argument("--cost", type=int, default=0, help="time N chunks per set per policy")
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    started_wall, started_cpu = time.perf_counter(), time.process_time()
    print(f"(load average at start: {os.getloadavg()[0]:.1f})")
    cache = DiskCachedOnnx()
    tables: list[tuple[str, list[tuple[str, float, float]], str]] = []
    if args.scifact is not None:
        split = "train" if args.tune else "test"
        data = beir(args.scifact, splits=(split,), name="SciFact")
        tables.append(
            (
                f"SciFact {split}",
                prose_rows(
                    data,
                    split,
                    cache,
                    tune=args.tune,
                    peer=not args.no_peer,
                    candidates=args.candidates,
                ),
                "nDCG@10 | Recall@100",
            )
        )
        if args.cost:
            cost_rows("SciFact", [d.page_content for d in data.docs], args.cost)
    for path in args.prose:
        data = beir(path)
        tables.append(
            (
                f"{data.name} test",
                prose_rows(data, "test", cache, tune=args.tune, peer=not args.no_peer),
                "nDCG@10 | Recall@100",
            )
        )
        if args.cost:
            cost_rows(data.name, [d.page_content for d in data.docs], args.cost)
    if args.code:
        tables.append(
            (
                f"code {args.split}",
                code_rows(
                    args.split, peer=not args.no_peer, limit=args.limit, modes=args.code_modes
                ),
                "nDCG@10 | Pass@10",
            )
        )
    for name, rows, header in tables:
        print(f"\n### {name}\n\n| retriever | {header} |\n|---|---:|---:|")
        for label, a, b in rows:
            print(f"| {label} | {a:.4f} | {b:.4f} |")
    wall, cpu = time.perf_counter() - started_wall, time.process_time() - started_cpu
    print(
        f"\n({cache.computed} texts embedded this run in {cache.compute_seconds:.0f} s; "
        f"wall {wall:.0f} s, CPU {cpu:.0f} s, load average at end {os.getloadavg()[0]:.1f})"
    )


if __name__ == "__main__":
    main()
