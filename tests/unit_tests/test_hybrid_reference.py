"""The hybrid retriever's top 10 equals a straightforward computation of the same fusion.

The reference scores every chunk: the dense leg by a full cosine sort, the keyword leg by
BM25 over every posting (``scoring="exhaustive"``, a plain sort of every score), both cut to
``fetch_k`` and fused by the plain loops written out below (the formulas of
``langchain_holodeck.fusion``). The retriever's fast paths (MaxScore, the dense id search,
the fusion and rank bookkeeping) must give the same ids, in the same order, with the same
scores.
"""

from __future__ import annotations

import math
import random
from typing import Any

import numpy as np
import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

from langchain_holodeck.fusion import convex_score_fusion, reciprocal_rank_fusion
from langchain_holodeck.keyword_index import BM25KeywordIndex
from langchain_holodeck.retrievers import HybridRetriever
from langchain_holodeck.vectorstores import MatrixVectorStore

DIM = 32
WORDS = [f"w{i}" for i in range(60)]


def reference_convex(
    lists: list[list[tuple[str, float]]],
    weights: list[float],
    lower_bounds: list[float | None],
) -> list[tuple[str, float]]:
    """Convex score fusion, written out: min-max per list, weighted sum, stable sort."""
    scores: dict[str, float] = {}
    for ranking, weight, bound in zip(lists, weights, lower_bounds, strict=True):
        if weight == 0 or not ranking:
            continue
        first: dict[str, float] = {}
        for doc_id, score in ranking:
            first.setdefault(doc_id, float(score))
        top = max(first.values())
        low = min(first.values()) if bound is None else bound
        for doc_id, score in first.items():
            if top - low <= 0 or score >= top:
                add = weight
            elif score <= low:
                add = 0.0
            else:
                add = weight * ((score - low) / (top - low))
            scores[doc_id] = scores.get(doc_id, 0.0) + add
    return sorted(scores.items(), key=lambda item: item[1], reverse=True)


def reference_rrf(
    lists: list[list[tuple[str, float]]], weights: list[float], c: int
) -> list[tuple[str, float]]:
    """Weighted reciprocal rank fusion, written out."""
    scores: dict[str, float] = {}
    for ranking, weight in zip(lists, weights, strict=True):
        if weight == 0:
            continue
        seen: set[str] = set()
        for rank, (doc_id, _) in enumerate(ranking, start=1):
            if doc_id not in seen:
                seen.add(doc_id)
                scores[doc_id] = scores.get(doc_id, 0.0) + weight / (c + rank)
    return sorted(scores.items(), key=lambda item: item[1], reverse=True)


class _Table(Embeddings):
    def __init__(self, vectors: dict[str, np.ndarray]) -> None:
        self.vectors = vectors

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.vectors[t].tolist() for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.vectors[text].tolist()


@pytest.fixture(scope="module")
def corpus() -> dict[str, Any]:
    rng = np.random.default_rng(3)
    texts = [
        " ".join(rng.choice(WORDS, size=int(rng.integers(5, 40)), p=_zipf(len(WORDS))))
        for _ in range(600)
    ]
    texts = list(dict.fromkeys(texts))  # the lookup embeddings key by text
    queries = [" ".join(rng.choice(WORDS[:30], size=4)) for _ in range(40)]
    vectors = {t: _unit(rng.standard_normal(DIM)) for t in [*texts, *queries]}
    docs = [Document(id=f"c{i}", page_content=t, metadata={"n": i}) for i, t in enumerate(texts)]
    store = MatrixVectorStore(_Table(vectors))
    store.add_documents(docs)
    bm25 = BM25KeywordIndex()
    bm25.upsert(docs)
    exhaustive = BM25KeywordIndex(scoring="exhaustive")
    exhaustive.upsert(docs)
    matrix = np.stack([vectors[t] for t in texts])
    return {
        "docs": docs,
        "queries": queries,
        "vectors": vectors,
        "matrix": matrix,
        "store": store,
        "bm25": bm25,
        "exhaustive": exhaustive,
    }


def _zipf(n: int) -> np.ndarray:
    p = 1 / np.arange(1, n + 1)
    return p / p.sum()


def _unit(v: np.ndarray) -> np.ndarray:
    return (v / np.linalg.norm(v)).astype(np.float32)


def _reference_legs(corpus: dict[str, Any], query: str, depth: int) -> tuple[list, list]:
    matrix = corpus["matrix"] / np.linalg.norm(corpus["matrix"], axis=1, keepdims=True)
    vector = corpus["vectors"][query]
    sims = matrix @ (vector / float(np.linalg.norm(vector)))  # as the store normalizes
    order = sorted(range(len(sims)), key=lambda r: (-float(sims[r]), r))[:depth]
    dense = [(corpus["docs"][r].id, min(1.0, max(0.0, float(sims[r])))) for r in order]
    keyword = [tuple(h) for h in corpus["exhaustive"].search(query, depth)]
    return dense, keyword


@pytest.mark.parametrize(("fusion", "fetch_k"), [("convex", 300), ("convex", 20), ("rrf", 50)])
def test_top_10_equals_the_reference_fusion_over_every_score(
    corpus: dict[str, Any], fusion: str, fetch_k: int
) -> None:
    retriever = HybridRetriever(
        vector_store=corpus["store"],
        keyword_index=corpus["bm25"],
        k=10,
        fetch_k=fetch_k,
        fusion=fusion,  # type: ignore[arg-type]  # one of the two
        feedback_docs=0,  # the reference is one fusion; feedback is tested in test_feedback.py
    )
    w_dense, w_keyword, _ = retriever.weights
    for query in corpus["queries"]:
        dense, keyword = _reference_legs(corpus, query, fetch_k)
        if fusion == "convex":
            fused = reference_convex([dense, keyword], [w_dense, w_keyword], [0.0, 0.0])
            best = w_dense + (w_keyword if keyword else 0.0)
        else:
            fused = reference_rrf([dense, keyword], [w_dense, w_keyword], retriever.rrf_k)
            best = (w_dense + (w_keyword if keyword else 0.0)) / (retriever.rrf_k + 1)
        got = retriever.invoke(query)
        assert [d.id for d in got] == [doc_id for doc_id, _ in fused[:10]], query
        dense_rank = {doc_id: r for r, (doc_id, _) in enumerate(dense, start=1)}
        keyword_rank = {doc_id: r for r, (doc_id, _) in enumerate(keyword, start=1)}
        for doc, (doc_id, score) in zip(got, fused, strict=False):
            meta = doc.metadata
            assert meta["fused_score"] == pytest.approx(min(1.0, score / best), rel=1e-6)
            assert meta["semantic_rank"] == dense_rank.get(doc_id)
            assert meta["keyword_rank"] == keyword_rank.get(doc_id)
            if doc_id in keyword_rank:
                assert meta["keyword_score"] == keyword[keyword_rank[doc_id] - 1][1]
            assert meta["n"] == int(doc_id[1:])  # the stored metadata, kept


def test_keyword_top_k_is_the_plain_sort_of_every_score(corpus: dict[str, Any]) -> None:
    bm25, exhaustive = corpus["bm25"], corpus["exhaustive"]
    for query in corpus["queries"]:
        every = exhaustive.search(query, len(corpus["docs"]))
        position = {d.id: i for i, d in enumerate(corpus["docs"])}
        assert every == sorted(every, key=lambda h: (-h.score, position[h.id]))
        assert bm25.search(query, 25) == every[:25]
        assert all(type(h.score) is float and h.score > 0 for h in every)


def test_keyword_search_spans_the_delta_segment_and_tombstones(corpus: dict[str, Any]) -> None:
    docs = corpus["docs"][:200]
    fast, plain = BM25KeywordIndex(), BM25KeywordIndex(scoring="exhaustive")
    for index in (fast, plain):
        index.upsert(docs)
        index.search("w1", 1)  # builds the main segment
        index.upsert([Document(id="new", page_content="w1 w2 w2 w3")])  # delta segment
        index.delete(["c3", "c5"])
    for query in corpus["queries"]:
        assert fast.search(query, 30) == plain.search(query, 30)
        assert {"c3", "c5"}.isdisjoint(h.id for h in fast.search(query, 300))
    assert fast.search("w2 w3", 300)[0].id == "new"


def test_convex_fusion_equals_the_written_out_formula() -> None:
    rng = random.Random(5)
    for _ in range(300):
        lists: list[list[tuple[str, float]]] = []
        for _ in range(rng.randint(1, 3)):
            n = rng.randint(0, 30)
            ids = [f"d{rng.randint(0, 40)}" for _ in range(n)]  # repeats and overlaps
            scores = [rng.choice([0.0, 1.0, 0.5, rng.random() * 3]) for _ in range(n)]
            lists.append(list(zip(ids, scores, strict=True)))
        weights = [rng.choice([0.0, 0.2, 0.7, 1, 2.5]) for _ in lists]
        if not any(weights):
            weights[0] = 1.0
        bounds = [rng.choice([None, 0.0, 0.5]) for _ in lists]
        assert convex_score_fusion(lists, weights=weights, lower_bounds=bounds) == (
            reference_convex(lists, weights, bounds)
        )
        assert reciprocal_rank_fusion(lists, weights=weights) == reference_rrf(lists, weights, 60)
    assert math.isfinite(convex_score_fusion([[("a", 2.0)]])[0][1])
