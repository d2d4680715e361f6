"""Retrieval quality on BEIR SciFact: nDCG@10 and Recall@100, ours vs LangChain's EnsembleRetriever.

    python benchmarks/bench_scifact.py            # defaults table + weight / tokenizer sweep

Data: ../shared/data/scifact (corpus, 300 test queries, qrels, cached all-MiniLM-L6-v2 vectors).
Query vectors are looked up, not computed. The EnsembleRetriever peer (langchain-classic +
langchain-community, benchmark-only) is BM25Retriever (its default ``str.split`` tokenizer) +
InMemoryVectorStore retriever, equal weights, both with k=100.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from ir_metrics import mean, ndcg_at_k, recall_at_k

from langchain_holodeck.fusion import reciprocal_rank_fusion
from langchain_holodeck.keyword_index import BM25KeywordIndex
from langchain_holodeck.retrievers import HybridRetriever
from langchain_holodeck.vectorstores import MatrixVectorStore

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact"


class LookupEmbeddings(Embeddings):
    """Precomputed vectors by exact text: the embedding model is not part of what we measure."""

    def __init__(self, table: dict[str, np.ndarray]) -> None:
        self.table = table

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.table[t].tolist() for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.table[text].tolist()


def load(data: Path):
    corpus = [json.loads(line) for line in (data / "corpus.jsonl").open(encoding="utf-8")]
    queries = [json.loads(line) for line in (data / "queries.jsonl").open(encoding="utf-8")]
    qrels: dict[str, dict[str, int]] = {}
    for line in list((data / "qrels" / "test.tsv").open(encoding="utf-8"))[1:]:
        qid, did, score = line.strip().split("\t")
        qrels.setdefault(qid, {})[did] = int(score)
    dvec = np.load(data / "emb_minilm_l6_v2_docs.npy")
    qvec = np.load(data / "emb_minilm_l6_v2_queries.npy")
    docs = [
        Document(id=c["_id"], page_content=(c["title"] + " " + c["text"]).strip()) for c in corpus
    ]
    table = {d.page_content: dvec[i] for i, d in enumerate(docs)}
    table.update({q["text"]: qvec[i] for i, q in enumerate(queries)})
    queries = [q for q in queries if q["_id"] in qrels]
    return docs, queries, qrels, LookupEmbeddings(table)


def evaluate(run: dict[str, list[str]], qrels) -> tuple[float, float]:
    nd = mean([ndcg_at_k(run[q], qrels[q], 10) for q in run])
    rc = mean([recall_at_k(run[q], qrels[q], 100) for q in run])
    return nd, rc


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--no-peer", action="store_true", help="skip EnsembleRetriever")
    args = parser.parse_args()
    docs, queries, qrels, emb = load(args.data)
    print(f"SciFact: {len(docs)} docs, {len(queries)} queries with judgments\n")

    store = MatrixVectorStore(emb)
    store.add_documents(docs)
    rows: list[tuple[str, float, float]] = []

    dense_run = {
        q["_id"]: [d.id for d, _ in store.similarity_search_with_relevance_scores(q["text"], k=100)]
        for q in queries
    }
    rows.append(("dense only (MiniLM-L6, MatrixVectorStore)", *evaluate(dense_run, qrels)))

    variants = {
        "BM25 only, bm25s, stop words + stemming (default)": {},
        "BM25 only, bm25s, stop words, no stemming": {"stemmer": None},
        "BM25 only, bm25s, no stop words, no stemming": {"stemmer": None, "stopwords": None},
        "BM25 only, rank_bm25 BM25Okapi, stop words + stemming": {"engine": "rank_bm25"},
    }
    bm25_default = None
    bm25_runs = {}
    for label, kwargs in variants.items():
        index = BM25KeywordIndex(**kwargs)
        index.upsert(docs)
        run = {q["_id"]: [h.id for h in index.search(q["text"], 100)] for q in queries}
        bm25_runs[label] = run
        rows.append((label, *evaluate(run, qrels)))
        if bm25_default is None:
            bm25_default = index

    retriever = HybridRetriever(vector_store=store, keyword_index=bm25_default)
    hybrid_run = {q["_id"]: [d.id for d in retriever.invoke(q["text"], k=100)] for q in queries}
    w = retriever.weights
    rows.append(
        (
            f"**hybrid (ours, defaults: weights {w[0]}/{w[1]}/{w[2]}, rrf_k={retriever.rrf_k}, "
            f"fetch_k=max({retriever.fetch_k}, 2k))**",
            *evaluate(hybrid_run, qrels),
        )
    )

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
                q["_id"]: [by_text[d.page_content] for d in ens.invoke(q["text"])] for q in queries
            }
            secs = time.perf_counter() - t
            rows.append(
                (
                    "EnsembleRetriever(BM25Retriever, InMemoryVectorStore) peer",
                    *evaluate(run, qrels),
                )
            )
            bm_run = {
                q["_id"]: [by_text[d.page_content] for d in bm25r.invoke(q["text"])]
                for q in queries
            }
            rows.append(("BM25Retriever alone (str.split tokenizer)", *evaluate(bm_run, qrels)))
            print(f"(peer: {secs:.1f} s for {len(queries)} queries)\n")

    print("| retriever | nDCG@10 | Recall@100 |\n|---|---:|---:|")
    for label, nd, rc in rows:
        print(f"| {label} | {nd:.3f} | {rc:.3f} |")

    # Sweep: RRF over the cached dense / default-BM25 rankings (same fusion code as the retriever)
    bm = bm25_runs["BM25 only, bm25s, stop words + stemming (default)"]
    print("\nWeight / RRF-constant sweep (semantic, keyword), fetch 100 per leg:\n")
    print("| semantic | keyword | rrf_k | nDCG@10 | Recall@100 |\n|---:|---:|---:|---:|---:|")
    for ws, wk in [(0.5, 0.5), (0.6, 0.4), (0.5, 0.3), (0.4, 0.6), (0.3, 0.7), (0.7, 0.3)]:
        for rrf_k in (20, 60):
            run = {
                q: [
                    i
                    for i, _ in reciprocal_rank_fusion(
                        [[(i, 0.0) for i in dense_run[q]], [(i, 0.0) for i in bm[q]]],
                        k=rrf_k,
                        weights=[ws, wk],
                    )
                ][:100]
                for q in dense_run
            }
            nd, rc = evaluate(run, qrels)
            print(f"| {ws} | {wk} | {rrf_k} | {nd:.3f} | {rc:.3f} |")


if __name__ == "__main__":
    main()
