"""Dense pseudo-relevance feedback (``HybridRetriever(feedback_docs=..., feedback_weight=...)``)."""

from __future__ import annotations

import numpy as np
import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import InMemoryVectorStore
from pydantic import ValidationError

from langchain_holodeck.config.models import HierarchicalDocumentToolConfig
from langchain_holodeck.fusion import convex_score_fusion
from langchain_holodeck.keyword_index import BM25KeywordIndex
from langchain_holodeck.retrievers import HybridRetriever
from langchain_holodeck.retrievers._feedback import FEEDBACK_DEPTH, feedback_query
from langchain_holodeck.vectorstores import MatrixVectorStore
from tests.helpers import TableEmbeddings as LookupEmbeddings

QUERY = "reactor coolant"
TEXTS = {
    "a": "reactor coolant loop",
    "b": "reactor shielding",
    "c": "deck plan of the galley",
    "d": "hull plating schedule",
    "e": "crew roster",
}
VECTORS = {
    QUERY: [1.0, 0.0, 0.0],
    "reactor coolant loop": [0.8, 0.6, 0.0],
    "reactor shielding": [0.7, 0.7, 0.14],
    "deck plan of the galley": [0.75, 0.0, 0.66],
    "hull plating schedule": [0.6, 0.8, 0.0],
    "crew roster": [0.0, 0.0, 1.0],
    "galley": [0.0, 0.0, 1.0],
}


class TableEmbeddings(Embeddings):
    """Fixed vectors by text: the geometry of the test is written out above."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [VECTORS[t] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return VECTORS[text]


def _unit(v: list[float]) -> np.ndarray:
    a = np.asarray(v, dtype=np.float64)
    return a / np.linalg.norm(a)


@pytest.fixture
def docs() -> list[Document]:
    return [Document(id=i, page_content=t) for i, t in TEXTS.items()]


@pytest.fixture
def retriever(docs: list[Document]) -> HybridRetriever:
    store = MatrixVectorStore(TableEmbeddings())
    store.add_documents(docs)
    bm25 = BM25KeywordIndex()
    bm25.upsert(docs)
    return HybridRetriever(
        vector_store=store, keyword_index=bm25, k=5, feedback_docs=2, feedback_weight=0.75
    )


def test_feedback_moves_the_query_toward_the_first_results(retriever) -> None:
    off = [d.id for d in retriever.model_copy(update={"feedback_docs": 0}).invoke(QUERY)]
    on = retriever.invoke(QUERY)
    assert off == ["a", "b", "c", "d", "e"]
    # d lies toward a and b (the first two results), c away from them: feedback swaps them
    assert [d.id for d in on] == ["a", "b", "d", "c", "e"]


def test_feedback_fuses_the_candidates_ranked_by_the_moved_query(retriever) -> None:
    moved = _unit(VECTORS[QUERY]) + 0.75 * np.mean(
        [_unit(VECTORS[TEXTS["a"]]), _unit(VECTORS[TEXTS["b"]])], axis=0
    )
    moved /= np.linalg.norm(moved)
    dense = sorted(
        ((i, max(0.0, float(moved @ _unit(VECTORS[t])))) for i, t in TEXTS.items()),
        key=lambda pair: pair[1],
        reverse=True,
    )
    keyword = [(h.id, h.score) for h in retriever.keyword_index.search(QUERY, 300)]
    expected = convex_score_fusion(
        [dense, keyword, []], weights=[0.7, 0.3, 0.2], lower_bounds=[0.0, 0.0, 0.0]
    )
    docs = retriever.invoke(QUERY)
    assert [(d.id, d.metadata["fused_score"]) for d in docs] == [
        (i, pytest.approx(s)) for i, s in expected
    ]


def test_semantic_score_and_rank_stay_the_querys_own(retriever) -> None:
    docs = {d.id: d.metadata for d in retriever.invoke(QUERY)}
    assert docs["d"]["semantic_score"] == pytest.approx(0.6)  # cos(query, d), not the moved query
    assert docs["c"]["semantic_rank"] == 2  # the dense leg ranked c above b and d
    assert docs["d"]["semantic_rank"] == 4


async def test_async_path_gives_the_same_results(retriever) -> None:
    sync = [(d.id, d.metadata["fused_score"]) for d in retriever.invoke(QUERY)]
    result = await retriever.ainvoke(QUERY)
    assert [(d.id, d.metadata["fused_score"]) for d in result] == sync


def test_no_feedback_when_the_keyword_leg_finds_nothing(retriever) -> None:
    off = retriever.model_copy(update={"feedback_docs": 0})
    # "galley" is a stop-word-free term of c only: change the query to one BM25 cannot match
    query = "crew roster"
    VECTORS.setdefault(query, [0.0, 0.0, 1.0])
    keyword_free = retriever.model_copy(update={"keyword_index": BM25KeywordIndex()})
    keyword_free_off = off.model_copy(update={"keyword_index": BM25KeywordIndex()})
    assert [d.id for d in keyword_free.invoke(query)] == [
        d.id for d in keyword_free_off.invoke(query)
    ]


def test_no_feedback_on_a_store_without_stored_vectors(docs) -> None:
    store = InMemoryVectorStore(TableEmbeddings())
    store.add_documents(docs)
    bm25 = BM25KeywordIndex()
    bm25.upsert(docs)
    on = HybridRetriever(vector_store=store, keyword_index=bm25, k=5, feedback_docs=2)
    off = on.model_copy(update={"feedback_docs": 0})
    assert (
        [d.id for d in on.invoke(QUERY)]
        == [d.id for d in off.invoke(QUERY)]
        == [
            "a",
            "b",
            "c",
            "d",
            "e",
        ]
    )


def test_feedback_query_is_unit_and_weight_zero_keeps_the_query() -> None:
    q = [3.0, 4.0, 0.0]
    assert feedback_query(q, [[0.0, 0.0, 2.0]], weight=0.0) == pytest.approx([0.6, 0.8, 0.0])
    moved = feedback_query(q, [[0.0, 0.0, 2.0], [0.0, 0.0, 5.0]], weight=1.0)
    assert float(np.linalg.norm(moved)) == pytest.approx(1.0)
    assert moved == pytest.approx(np.array([0.6, 0.8, 1.0]) / np.sqrt(2.0))
    assert feedback_query(q, [], weight=1.0) == pytest.approx([0.6, 0.8, 0.0])


@pytest.mark.parametrize(("field", "value"), [("feedback_docs", -1), ("feedback_weight", -0.5)])
def test_negative_feedback_settings_are_rejected(retriever, field, value) -> None:
    with pytest.raises(ValidationError, match=field):
        HybridRetriever(vector_store=retriever.vector_store, **{field: value})
    with pytest.raises(ValidationError, match=field):
        HierarchicalDocumentToolConfig(
            type="hierarchical_document", name="docs", source="docs", **{field: value}
        )


def test_tool_config_passes_feedback_to_the_retriever() -> None:
    config = HierarchicalDocumentToolConfig(
        type="hierarchical_document", name="docs", source="docs", feedback_docs=0
    )
    assert config.feedback_docs == 0
    assert (
        HierarchicalDocumentToolConfig(
            type="hierarchical_document", name="docs", source="docs"
        ).feedback_docs
        == HybridRetriever.model_fields["feedback_docs"].default
    )


def test_similarity_by_ids_takes_the_best_window_and_clips_at_zero() -> None:
    store = MatrixVectorStore(TableEmbeddings())
    rows = [
        Document(id="x", page_content=""),
        Document(id="x:w1", page_content="", metadata={"window_of": "x"}),
        Document(id="y", page_content=""),
    ]
    store.add_vectors(rows, np.array([[0.6, 0.8, 0.0], [1.0, 0.0, 0.0], [-1.0, 0.0, 0.0]]))
    found = store.similarity_by_ids([2.0, 0.0, 0.0], ["y", "missing", "x", "x"])
    assert found == {"x": pytest.approx(1.0), "y": 0.0}


def _with_types(docs: list[Document], types: dict[str, str]) -> HybridRetriever:
    typed = [
        d.model_copy(update={"metadata": {"chunk_type": types[d.id]}}) if d.id in types else d
        for d in docs
    ]
    store = MatrixVectorStore(TableEmbeddings())
    store.add_documents(typed)
    bm25 = BM25KeywordIndex()
    bm25.upsert(typed)
    return HybridRetriever(
        vector_store=store, keyword_index=bm25, k=5, feedback_docs=2, feedback_weight=0.75
    )


def test_no_feedback_when_the_best_chunk_is_code(docs) -> None:
    retriever = _with_types(docs, {"a": "code"})
    off = retriever.model_copy(update={"feedback_docs": 0})
    assert [d.id for d in retriever.invoke(QUERY)] == [d.id for d in off.invoke(QUERY)]
    assert [d.id for d in off.invoke(QUERY)] == ["a", "b", "c", "d", "e"]


def test_code_chunks_are_not_fed_back(docs) -> None:
    # b (second) is code: only a is fed back, as feedback_docs=1 would on untyped chunks
    typed = _with_types(docs, {"b": "code", "e": "content"})
    one = _with_types(docs, {}).model_copy(update={"feedback_docs": 1})
    assert [(d.id, d.metadata["fused_score"]) for d in typed.invoke(QUERY)] == [
        (d.id, pytest.approx(d.metadata["fused_score"])) for d in one.invoke(QUERY)
    ]
    two = _with_types(docs, {})
    assert [d.metadata["fused_score"] for d in two.invoke(QUERY)] != pytest.approx(
        [d.metadata["fused_score"] for d in one.invoke(QUERY)]
    )


class _CountingStore(MatrixVectorStore):
    """Records how many candidates each feedback re-scores (the array twin and its plain one)."""

    rescored: list[int]

    def similarity_by_ids(self, embedding, ids):  # type: ignore[no-untyped-def]  # a spy
        self.rescored.append(len(ids))
        return super().similarity_by_ids(embedding, ids)

    def rank_ids(self, embedding, ids):  # type: ignore[no-untyped-def]  # a spy
        self.rescored.append(len(ids))
        return super().rank_ids(embedding, ids)


@pytest.mark.parametrize(("k", "per_leg"), [(10, FEEDBACK_DEPTH), (80, 80)])
def test_feedback_rescores_the_first_depth_candidates_of_each_leg(k: int, per_leg: int) -> None:
    rng = np.random.default_rng(5)
    texts = [f"reactor note {i}" for i in range(200)]  # every chunk matches the query's words
    table = {t: rng.standard_normal(4).tolist() for t in texts} | {"reactor": [1.0, 0, 0, 0]}

    store = _CountingStore(LookupEmbeddings(table))
    store.rescored = []
    chunks = [Document(id=f"c{i}", page_content=t) for i, t in enumerate(texts)]
    store.add_documents(chunks)
    bm25 = BM25KeywordIndex()
    bm25.upsert(chunks)
    retriever = HybridRetriever(vector_store=store, keyword_index=bm25, fetch_k=150)
    retriever.invoke("reactor", k=k)
    # the first per_leg of each leg (150 candidates each), the ids both hold once
    dense = [i for i, _ in store.search_ids_by_vector(table["reactor"], per_leg)]
    keyword = [h.id for h in bm25.search("reactor", per_leg)]
    assert store.rescored == [len(set(dense) | set(keyword))]
    assert FEEDBACK_DEPTH == 50


def _feedback_query_reference(query: list[float], vectors: np.ndarray, weight: float) -> np.ndarray:
    """``unit(unit(q) + weight * mean(unit(v)))`` with ``np.linalg.norm`` and ``mean``."""
    q = np.asarray(query, dtype=np.float32)
    q = q / float(np.linalg.norm(q)) if float(np.linalg.norm(q)) > 0 else q
    if len(vectors) and weight > 0:
        lengths = np.linalg.norm(vectors, axis=1, keepdims=True)
        q = (q + weight * (vectors / np.where(lengths > 0, lengths, 1.0)).mean(axis=0)).astype(
            np.float32
        )
    norm = float(np.linalg.norm(q))
    return q / norm if norm > 0 else q


@pytest.mark.parametrize("seed", range(40))
def test_feedback_query_is_bit_identical_to_norm_and_mean(seed: int) -> None:
    rng = np.random.default_rng(seed)
    dim, n = int(rng.integers(1, 400)), int(rng.integers(0, 6))
    query = (rng.standard_normal(dim) * 10.0 ** rng.integers(-3, 3)).astype(np.float32)
    vectors = (rng.standard_normal((n, dim)) * 10.0 ** rng.integers(-3, 3)).astype(np.float32)
    if n and seed % 4 == 0:
        vectors[0] = 0.0  # a zero row counts as zero, not as NaN
    weight = [0.0, 0.25, 0.75, 3.0][seed % 4]
    got = feedback_query(query.tolist(), vectors, weight=weight)
    expected = _feedback_query_reference(query.tolist(), vectors, weight)
    assert got.dtype == np.float32
    assert got.tobytes() == expected.tobytes()
