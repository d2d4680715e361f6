"""The array twins of the in-memory searches give the plain methods' answers, ids and scores.

``MatrixVectorStore.rank_ids_by_vector`` / ``rank_ids`` / ``vectors_by_ids`` and
``BM25KeywordIndex.search_ranked`` answer with ``RankedIds``; the retriever reads them only
when the class that defines a plain method defines its twin too (an override is never
bypassed).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from langchain_core.documents import Document

from langchain_holodeck import BM25KeywordIndex, HybridRetriever, MatrixVectorStore
from langchain_holodeck._chunk import window_id
from langchain_holodeck.contracts import RankedIds, answers_with_arrays, returns_new_documents
from tests.helpers import TableEmbeddings


def _store(n: int = 40, *, ties: bool = False) -> tuple[MatrixVectorStore, np.ndarray]:
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((n, 6)).astype(np.float32)
    if ties:  # every vector twice: equal scores, ranked by input order
        vectors[n // 2 :] = vectors[: n // 2]
    store = MatrixVectorStore(TableEmbeddings({}))
    docs = [
        Document(id=f"d{i}", page_content=f"text {i}", metadata={"namespace": "ab"[i % 2]})
        for i in range(n)
    ]
    store.add_vectors(docs, vectors)
    return store, rng.standard_normal(6).astype(np.float32)


def test_rank_ids_by_vector_is_search_ids_by_vector() -> None:
    store, query = _store()
    store.delete([f"d{i}" for i in range(0, 40, 7)])  # tombstoned rows stay out of both
    for kwargs in ({}, {"filter": {"namespace": "a"}}, {"exact": True}):
        ranked = store.rank_ids_by_vector(query, 12, **kwargs)
        assert isinstance(ranked, RankedIds)
        assert list(ranked) == store.search_ids_by_vector(query.tolist(), 12, **kwargs)
        assert ranked.unique
        assert ((ranked.scores >= 0) & (ranked.scores <= 1)).all()


def test_rank_ids_orders_similarity_by_ids_and_keeps_ties_in_input_order() -> None:
    store, query = _store(ties=True)
    ids = [f"d{i}" for i in (25, 5, "x", 33, 13, 2)]  # d5/d25 and d13/d33 tie; dx is unknown
    ranked = store.rank_ids(query, ids)
    scores = store.similarity_by_ids(query, ids)
    expected = sorted(scores.items(), key=lambda pair: pair[1], reverse=True)
    assert list(ranked) == expected
    assert ranked.ids.index("d25") < ranked.ids.index("d5")  # tie: d25 came first in ids
    assert ranked.ids.index("d33") < ranked.ids.index("d13")


def test_vectors_by_ids_is_get_vectors() -> None:
    store, _ = _store()
    found, rows = store.vectors_by_ids(["d3", "missing", "d1"])
    assert found == ["d3", "d1"]
    assert rows.dtype == np.float32
    assert [r.tolist() for r in rows] == list(store.get_vectors(["d3", "d1"]).values())


def test_similarity_by_ids_finds_windows_after_writes_deletes_and_a_reload(
    tmp_path: Any,
) -> None:
    table = {"q": [1.0, 0.0], "chunk": [0.0, 1.0], "window": [1.0, 0.0], "other": [0.6, 0.8]}
    store = MatrixVectorStore(TableEmbeddings(table))
    store.add_documents([Document(id="c", page_content="chunk")])
    assert store.similarity_by_ids(table["q"], ["c"]) == {"c": 0.0}
    store.add_documents([Document(id=window_id("c", 1), page_content="window")])
    assert store.similarity_by_ids(table["q"], ["c"]) == {"c": 1.0}  # its best window
    store.dump(tmp_path)
    loaded = MatrixVectorStore.load(tmp_path, TableEmbeddings(table))
    assert loaded.similarity_by_ids(table["q"], ["c"]) == {"c": 1.0}
    store.delete([window_id("c", 1)])
    assert store.similarity_by_ids(table["q"], ["c"]) == {"c": 0.0}
    store.add_documents([Document(id=window_id("c", 1), page_content="other")])
    assert store.similarity_by_ids(table["q"], ["c"]) == {"c": pytest.approx(0.6)}


class _OwnSearch(BM25KeywordIndex):
    """Overrides ``search`` only: its ``search_ranked`` (inherited) must not be used."""

    def search(self, query: str, k: int) -> list[Any]:
        return super().search(query, k)[:1]


def test_an_override_of_the_plain_method_is_never_bypassed() -> None:
    plain, overridden = BM25KeywordIndex(), _OwnSearch()
    assert answers_with_arrays(plain, ("search", "search_ranked"))
    assert not answers_with_arrays(overridden, ("search", "search_ranked"))
    patched = BM25KeywordIndex()
    patched.search = lambda query, k: []  # type: ignore[method-assign]  # an instance override
    assert not answers_with_arrays(patched, ("search", "search_ranked"))
    docs = [Document(id=f"d{i}", page_content=f"arch controls {i}") for i in range(5)]
    store = MatrixVectorStore(
        TableEmbeddings({d.page_content: [1.0, float(i)] for i, d in enumerate(docs)})
    )
    store.embedding.table["arch"] = [1.0, 0.0]  # type: ignore[attr-defined]  # the test's table
    store.add_documents(docs)
    overridden.upsert(docs)
    got = HybridRetriever(vector_store=store, keyword_index=overridden, k=5).invoke("arch")
    assert sum(d.metadata["keyword_rank"] is not None for d in got) == 1  # the override's one


def test_ranked_ids_reads_as_pairs() -> None:
    ranked = RankedIds(["a", "b", "c"], np.array([0.9, 0.5, 0.5]))
    assert len(ranked) == 3
    assert ranked[1] == ("b", 0.5)
    assert ranked[:2] == [("a", 0.9), ("b", 0.5)]
    assert dict(ranked) == {"a": 0.9, "b": 0.5, "c": 0.5}
    with pytest.raises(ValueError, match="got 2 ids and 1 scores"):
        RankedIds(["a", "b"], np.array([1.0]))


class _CachedReads(MatrixVectorStore):
    """Overrides ``get_by_ids`` to hand out the same cached Documents on every call."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cache: dict[str, Document] = {}

    def get_by_ids(self, ids: Any, /) -> list[Document]:
        missing = [i for i in ids if i not in self.cache]
        self.cache.update({d.id: d for d in super().get_by_ids(missing) if d.id})
        return [self.cache[i] for i in ids if i in self.cache]


def _hybrid_pair(store_type: type[MatrixVectorStore]) -> HybridRetriever:
    docs = [Document(id=f"d{i}", page_content=f"arch controls {i} deck") for i in range(12)]
    table = {d.page_content: [1.0, float(i % 5), float(i % 3)] for i, d in enumerate(docs)}
    store = store_type(TableEmbeddings({**table, "arch deck": [1.0, 0.5, 0.2]}))
    store.add_documents(docs)
    bm25 = BM25KeywordIndex()
    bm25.upsert(docs)
    return HybridRetriever(vector_store=store, keyword_index=bm25, k=5)


def test_only_reads_that_build_new_documents_are_scored_in_place() -> None:
    plain, cached = _hybrid_pair(MatrixVectorStore), _hybrid_pair(_CachedReads)
    assert returns_new_documents(plain.vector_store, "get_by_ids", "aget_by_ids")
    # an override that does not list itself in new_documents is not trusted
    assert not returns_new_documents(cached.vector_store, "get_by_ids")
    patched = MatrixVectorStore(TableEmbeddings({}))
    patched.get_by_ids = lambda ids: []  # type: ignore[method-assign]  # an instance override
    assert not returns_new_documents(patched, "get_by_ids")
    first = plain.invoke("arch deck")
    assert [(d.id, d.metadata) for d in plain.invoke("arch deck")] == [
        (d.id, d.metadata) for d in first
    ]  # each call scores its own Documents: nothing carried over
    for _ in range(2):  # the in-place path and the copying path give the same answers
        got = cached.invoke("arch deck")
        assert [(d.id, d.page_content, d.metadata) for d in got] == [
            (d.id, d.page_content, d.metadata) for d in first
        ]
    store: Any = cached.vector_store
    assert store.cache  # the override was called, and its shared Documents were copied
    assert all(d.metadata == {} for d in store.cache.values())
    assert not any(d is c for d in got for c in store.cache.values())


def test_a_non_finite_similarity_is_zero_as_clip_unit_makes_it(tmp_path: Path) -> None:
    # add_vectors refuses a NaN row; a store saved by an earlier version may still hold one
    saved = MatrixVectorStore(TableEmbeddings({}))
    vectors = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]], dtype=np.float32)
    saved.add_vectors([Document(id=i, page_content=i) for i in "abc"], vectors)
    saved.dump(tmp_path)
    matrix = tmp_path / json.loads((tmp_path / "manifest.json").read_text())["vectors"]
    rows = np.load(matrix)
    rows[1, 0] = np.nan
    np.save(matrix, rows)
    store = MatrixVectorStore.load(tmp_path, TableEmbeddings({}))
    ids = ["a", "b", "c"]
    assert store.similarity_by_ids([1.0, 0.0], ids) == {"a": 1.0, "b": 0.0, "c": pytest.approx(0.6)}
    assert store.rank_ids(np.array([1.0, 0.0], dtype=np.float32), ids).ids == ["a", "c", "b"]
    with np.errstate(invalid="ignore"):  # inf / inf: NaN scores
        infinite = store.similarity_by_ids([float("inf"), 0.0], ids)
    assert infinite == {"a": 0.0, "b": 0.0, "c": 0.0}
    assert store.similarity_by_ids([0.0, 0.0], ids) == {"a": 0.0, "b": 0.0, "c": 0.0}
