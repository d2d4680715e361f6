"""The synthetic corpus the speed benchmarks share: Zipf-distributed made-up words, random vectors.

``corpus(n)`` gives ``n`` chunks of 120 words over a 30,000-word vocabulary (Zipf exponent
1.07), unit 384-dim vectors, and 200 five-word queries with their own vectors; generated once
from seed 7 and cached in ``benchmarks/.cache/``, so every benchmark and every run sees the same
data.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from langchain_holodeck.retrievers import HybridRetriever

CACHE = Path(__file__).resolve().parent / ".cache"
DIM = 384
WORDS_PER_CHUNK = 120
VOCAB = 30_000
N_QUERIES = 200
SHIP_WORDS = (
    "holodeck",
    "safety",
    "protocol",
    "arch",
    "program",
    "crew",
    "shift",
    "officer",
    "replicator",
    "deck",
    "sensor",
    "power",
    "grid",
    "matrix",
    "subroutine",
    "emitter",
    "interlock",
    "transporter",
    "warp",
    "field",
    "array",
    "bridge",
    "console",
    "ensign",
    "captain",
    "engineering",
    "diagnostic",
    "calibration",
    "routine",
)
"""Vocabulary of the generated Markdown corpora (sync and insertion benchmarks)."""
SYLLABLES = ("ka", "to", "ri", "mu", "sen", "bel", "qua", "dor", "lin", "pha")
SYLLABLES += ("zer", "mon", "tic", "vas", "rel", "gor", "nim", "shu", "pra", "ell")


def corpus(n: int) -> tuple[list[str], np.ndarray, list[str], np.ndarray]:
    """(texts, vectors, queries, query vectors) for ``n`` chunks, generated once and cached."""
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / f"synthetic_{n}.npz"
    if not path.exists():
        rng = np.random.default_rng(7)
        words: list[str] = []
        seen: set[str] = set()
        while len(words) < VOCAB:
            w = "".join(rng.choice(SYLLABLES, size=int(rng.integers(2, 5))))
            if w not in seen:
                seen.add(w)
                words.append(w)
        vocab = np.array(words)
        p = 1 / np.arange(1, VOCAB + 1) ** 1.07
        p /= p.sum()
        texts = [" ".join(row) for row in vocab[rng.choice(VOCAB, size=(n, WORDS_PER_CHUNK), p=p)]]
        vecs = rng.standard_normal((n, DIM)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        queries = [" ".join(row) for row in vocab[rng.choice(VOCAB // 10, size=(N_QUERIES, 5))]]
        qvecs = rng.standard_normal((N_QUERIES, DIM)).astype(np.float32)
        qvecs /= np.linalg.norm(qvecs, axis=1, keepdims=True)
        np.savez(path, texts=np.array(texts), vecs=vecs, queries=np.array(queries), qvecs=qvecs)
    data = np.load(path)
    return list(data["texts"]), data["vecs"], list(data["queries"]), data["qvecs"]


def floor_rrf(lists: list[list[int]], c: int = 60, k: int = 10) -> list[int]:
    """The bare floor's fusion: unweighted reciprocal rank fusion, top ``k`` ids."""
    scores: dict[int, float] = {}
    for ranking in lists:
        for rank, doc in enumerate(ranking, start=1):
            scores[doc] = scores.get(doc, 0.0) + 1.0 / (c + rank)
    return sorted(scores, key=scores.__getitem__, reverse=True)[:k]


def floor_query_tokens(queries: list[str], stemmer: object) -> dict[str, object]:
    """Queries tokenized ahead for bm25s (the floor measures the bare engines)."""
    import bm25s

    return {
        q: bm25s.tokenize(
            [q], stopwords="en", stemmer=stemmer, show_progress=False, return_ids=False
        )
        for q in queries
    }


def floor_search(
    matrix: np.ndarray, index: object, qvec: np.ndarray, q_tokens: object, depth: int = 50
) -> list[int]:
    """One floor query: float32 matmul + top ``depth``, bm25s top ``depth``, then RRF."""
    sims = matrix @ qvec
    top = np.argpartition(-sims, depth)[:depth]
    dense = top[np.argsort(-sims[top])].tolist()
    ids, _ = index.retrieve(q_tokens, k=depth, show_progress=False, n_threads=0)  # type: ignore[attr-defined]
    return floor_rrf([dense, ids[0].tolist()])


def default_retriever(
    texts: list[str], vecs: np.ndarray, qv: dict[str, np.ndarray]
) -> HybridRetriever:
    """``HybridRetriever`` at its defaults over the corpus, queries embedded by lookup in ``qv``.

    ``MatrixVectorStore`` (the vectors given, no model) and ``BM25KeywordIndex``, both warmed;
    the retriever the speed benchmarks time (``k=10``).
    """
    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings

    from langchain_holodeck.keyword_index import BM25KeywordIndex
    from langchain_holodeck.retrievers import HybridRetriever
    from langchain_holodeck.vectorstores import MatrixVectorStore

    class Lookup(Embeddings):
        def embed_documents(self, batch: list[str]) -> list[list[float]]:
            raise NotImplementedError

        def embed_query(self, text: str) -> list[float]:
            return qv[text].tolist()

    docs = [Document(id=str(i), page_content=t) for i, t in enumerate(texts)]
    store = MatrixVectorStore(Lookup())
    store.add_vectors(docs, vecs)
    bm25 = BM25KeywordIndex()
    bm25.upsert(docs)
    bm25.search(texts[0].split()[0], 1)  # a word it holds: builds the matrix, as a query does
    return HybridRetriever(vector_store=store, keyword_index=bm25, k=10)
