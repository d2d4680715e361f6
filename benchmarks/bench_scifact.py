"""Retrieval quality on BEIR SciFact (test split): ours vs EnsembleRetriever, dense and BM25.

    python benchmarks/bench_scifact.py            # the test table (defaults chosen on train)
    python benchmarks/bench_fusion_sweep.py       # how the defaults were chosen (train / dev)

Data: ``--data DIR`` or ``$SCIFACT_DIR`` (corpus, 300 test queries, qrels, cached
all-MiniLM-L6-v2 vectors; see ``tuning_data.py``). Query vectors are looked up, not computed.
Ours: MatrixVectorStore +
BM25KeywordIndex + ``HybridRetriever`` with every default (fusion, weights, fetch_k), first
with the peers' vectors (the torch model, truncated at 256), then with every default, the
embedder too (``OnnxEmbeddings``: each abstract scored by its best window of 128 word pieces,
the windows cached by ``tuning_data.scifact_windows``); nDCG@10
is measured on ``invoke(k=10)`` (what a tool with top_k=10 returns) and Recall@100 on
``invoke(k=100)``. The EnsembleRetriever peer (langchain-classic + langchain-community,
benchmark-only) is BM25Retriever (its default ``str.split`` tokenizer) + InMemoryVectorStore
retriever, equal weights, both with k=100.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
from ir_metrics import mean, ndcg_at_k, recall_at_k
from tuning_data import (
    SCIFACT,
    SCIFACT_HELP,
    LookupEmbeddings,
    scifact,
    scifact_windows,
    window_store_rows,
)

from langchain_holodeck.embeddings import OnnxEmbeddings
from langchain_holodeck.keyword_index import BM25KeywordIndex
from langchain_holodeck.retrievers import HybridRetriever
from langchain_holodeck.vectorstores import MatrixVectorStore


def evaluate(run: dict[str, list[str]], qrels, run10: dict[str, list[str]] | None = None):
    """nDCG@10 (of ``run10`` when given, else of ``run``) and Recall@100 of ``run``."""
    top = run10 if run10 is not None else run
    nd = mean([ndcg_at_k(top[q], qrels[q], 10) for q in run])
    rc = mean([recall_at_k(run[q], qrels[q], 100) for q in run])
    return nd, rc


def default_embedder_row(docs, queries, qrels, bm25) -> tuple[str, float, float]:
    """Ours with every default, the embedder too: OnnxEmbeddings scoring each abstract by its
    best window of 128 word pieces (windows stored as entries of their own, as sync does)."""
    emb = OnnxEmbeddings()
    table = {text: np.asarray(emb.embed_query(text)) for _, text in queries}
    windows = scifact_windows([d.page_content for d in docs], emb.window_tokens, emb.window_overlap)
    store = MatrixVectorStore(LookupEmbeddings(table))
    store.add_vectors(*window_store_rows(docs, windows))
    retriever = HybridRetriever(vector_store=store, keyword_index=bm25)
    run10 = {qid: [d.id for d in retriever.invoke(text, k=10)] for qid, text in queries}
    run100 = {qid: [d.id for d in retriever.invoke(text, k=100)] for qid, text in queries}
    label = (
        f"**hybrid (ours, every default, the embedder too: OnnxEmbeddings, best window of "
        f"{emb.window_tokens})**"
    )
    return (label, *evaluate(run100, qrels, run10))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=SCIFACT, help=SCIFACT_HELP)
    parser.add_argument("--no-peer", action="store_true", help="skip EnsembleRetriever")
    args = parser.parse_args()
    data = scifact(args.data)
    docs, emb = data.docs, data.embeddings
    queries, qrels = data.queries["test"], data.qrels["test"]
    print(f"SciFact: {len(docs)} docs, {len(queries)} test queries with judgments\n")

    store = MatrixVectorStore(emb)
    store.add_vectors(docs, data.doc_vectors)
    rows: list[tuple[str, float, float]] = []

    dense_run = {
        qid: [d.id for d, _ in store.similarity_search_with_relevance_scores(text, k=100)]
        for qid, text in queries
    }
    rows.append(("dense only (MiniLM-L6, MatrixVectorStore)", *evaluate(dense_run, qrels)))

    variants = {
        "BM25 only, bm25s, stop words + stemming (default)": {},
        "BM25 only, bm25s, stop words, no stemming": {"stemmer": None},
        "BM25 only, bm25s, no stop words, no stemming": {"stemmer": None, "stopwords": None},
        "BM25 only, rank_bm25 BM25Okapi, stop words + stemming": {"engine": "rank_bm25"},
    }
    bm25_default = None
    for label, kwargs in variants.items():
        index = BM25KeywordIndex(**kwargs)
        index.upsert(docs)
        run = {qid: [h.id for h in index.search(text, 100)] for qid, text in queries}
        rows.append((label, *evaluate(run, qrels)))
        if bm25_default is None:
            bm25_default = index

    retriever = HybridRetriever(vector_store=store, keyword_index=bm25_default)
    variants = [
        ("hybrid (ours, defaults: {}; the peers' vectors)", retriever),
        (
            "hybrid, RRF at its best tuning-set setting ({})",
            retriever.model_copy(
                update={"fusion": "rrf", "weights": (0.6, 0.4, 0.2), "fetch_k": 100}
            ),
        ),
        (
            "hybrid, the previous default ({})",
            retriever.model_copy(
                update={"fusion": "rrf", "weights": (0.5, 0.5, 0.2), "fetch_k": 50}
            ),
        ),
    ]
    for template, r in variants:
        w = r.weights
        described = f"fusion={r.fusion}, weights {w[0]}/{w[1]}/{w[2]}, fetch_k={r.fetch_k}"
        if r.fusion == "rrf":
            described += f", rrf_k={r.rrf_k}"
        t = time.perf_counter()
        run10 = {qid: [d.id for d in r.invoke(text, k=10)] for qid, text in queries}
        run100 = {qid: [d.id for d in r.invoke(text, k=100)] for qid, text in queries}
        secs = time.perf_counter() - t
        rows.append((template.format(described), *evaluate(run100, qrels, run10)))
        print(f"({described}: {secs:.1f} s for {2 * len(queries)} queries)")

    rows.append(default_embedder_row(docs, queries, qrels, bm25_default))

    if not args.no_peer:
        try:
            from langchain_classic.retrievers import EnsembleRetriever
            from langchain_community.retrievers import BM25Retriever
            from langchain_core.vectorstores import InMemoryVectorStore
        except ImportError:
            print("(peer skipped: pip install langchain-classic langchain-community)")
        else:
            by_text = {d.page_content: d.id for d in docs}
            peer_store = InMemoryVectorStore(emb)
            peer_store.add_documents(docs)
            bm25r = BM25Retriever.from_documents(docs, k=100)
            ens = EnsembleRetriever(
                retrievers=[bm25r, peer_store.as_retriever(search_kwargs={"k": 100})],
                weights=[0.5, 0.5],
            )
            t = time.perf_counter()
            run = {
                qid: [by_text[d.page_content] for d in ens.invoke(text)] for qid, text in queries
            }
            secs = time.perf_counter() - t
            rows.append(
                (
                    "EnsembleRetriever(BM25Retriever, InMemoryVectorStore) peer",
                    *evaluate(run, qrels),
                )
            )
            bm_run = {
                qid: [by_text[d.page_content] for d in bm25r.invoke(text)] for qid, text in queries
            }
            rows.append(("BM25Retriever alone (str.split tokenizer)", *evaluate(bm_run, qrels)))
            print(f"(peer: {secs:.1f} s for {len(queries)} queries)")

    print("\n| retriever | nDCG@10 | Recall@100 |\n|---|---:|---:|")
    for label, nd, rc in rows:
        print(f"| {label} | {nd:.3f} | {rc:.3f} |")


if __name__ == "__main__":
    main()
