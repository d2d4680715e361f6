"""MatrixVectorStore's quantized search mode (faiss PQ fast scan + exact re-scoring)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import FakeEmbeddings

from langchain_holodeck.vectorstores import MatrixVectorStore

pytest.importorskip("faiss")

DIM = 16
N = 6_000


def _vectors(n: int, seed: int = 0) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _docs(start: int, stop: int) -> list[Document]:
    return [
        Document(id=str(i), page_content=f"chunk {i}", metadata={"namespace": f"c{i % 50}"})
        for i in range(start, stop)
    ]


def _store(n: int = N, **kwargs: object) -> MatrixVectorStore:
    store = MatrixVectorStore(
        FakeEmbeddings(size=DIM),
        search_mode="quantized",
        quantize_min_rows=4_096,
        **kwargs,  # type: ignore[arg-type]  # test parameters
    )
    store.add_vectors(_docs(0, n), _vectors(n))
    return store


def _ids(store: MatrixVectorStore, query: np.ndarray, k: int, **kwargs: object) -> list[str]:
    hits = store.similarity_search_with_score_by_vector(query, k, **kwargs)  # type: ignore[arg-type]
    return [d.id for d, _ in hits]  # type: ignore[misc]


QUERIES = _vectors(30, seed=1)


def test_quantized_search_matches_exact_top_10_with_exact_scores() -> None:
    store = _store()
    assert store.quantized_rows == N
    overlap = []
    for q in QUERIES:
        approx = store.similarity_search_with_score_by_vector(q, 10)
        exact = store.similarity_search_with_score_by_vector(q, 10, exact=True)
        overlap.append(len({d.id for d, _ in approx} & {d.id for d, _ in exact}) / 10)
        exact_scores = {d.id: s for d, s in exact}
        for doc, score in approx:  # re-scored: the same cosine the exact scan computes
            if doc.id in exact_scores:
                assert score == pytest.approx(exact_scores[doc.id], abs=1e-6)
    assert np.mean(overlap) >= 0.95


def test_exact_mode_and_small_stores_scan_every_row() -> None:
    exact = MatrixVectorStore(FakeEmbeddings(size=DIM), search_mode="exact")
    exact.add_vectors(_docs(0, N), _vectors(N))
    auto_small = MatrixVectorStore(FakeEmbeddings(size=DIM))  # auto: 50,000 rows needed
    auto_small.add_vectors(_docs(0, N), _vectors(N))
    assert exact.quantized_rows == 0
    assert auto_small.quantized_rows == 0


def test_selective_namespace_filter_gets_the_exact_filtered_top_k() -> None:
    store = _store()
    only = "c7"  # 120 of 6,000 chunks: too few among the re-scored candidates

    def in_corpus(doc: Document) -> bool:
        return doc.metadata["namespace"] == only

    for q in QUERIES[:10]:
        found = _ids(store, q, 10, filter=in_corpus)
        assert found == _ids(store, q, 10, filter=in_corpus, exact=True)
        assert all(int(i) % 50 == 7 for i in found)


def test_deleted_and_replaced_rows_are_never_returned() -> None:
    store = _store()
    gone = [str(i) for i in range(0, N, 2)]
    store.delete(gone)
    store.add_vectors(_docs(1, 2), _vectors(1, seed=5))  # replaces id "1": old row dead
    for q in QUERIES[:10]:
        found = _ids(store, q, 20)
        assert len(found) == 20
        assert not set(found) & set(gone)
    assert _ids(store, _vectors(1, seed=5)[0], 1) == ["1"]


def test_new_rows_are_searchable_before_and_after_the_tail_is_sealed() -> None:
    store = _store(n=4_096)
    assert store.quantized_rows == 4_096
    store.add_vectors(_docs(4_096, 4_100), _vectors(4, seed=9))
    assert store.quantized_rows == 4_096  # the tail is scanned exactly
    for i, v in enumerate(_vectors(4, seed=9)):
        assert _ids(store, v, 1) == [str(4_096 + i)]
    store.add_vectors(_docs(4_100, 20_500), _vectors(16_400, seed=10))
    assert store.quantized_rows == 20_500  # sealed into a new segment
    for i, v in enumerate(_vectors(4, seed=9)):
        assert _ids(store, v, 1) == [str(4_096 + i)]


def test_dump_and_load_keep_the_codebook_and_the_results(tmp_path: Path) -> None:
    store = _store()
    store.dump(tmp_path)
    assert len(list(tmp_path.glob("codebook-*.faiss"))) == 1
    loaded = MatrixVectorStore.load(
        tmp_path, FakeEmbeddings(size=DIM), search_mode="quantized", quantize_min_rows=4_096
    )
    assert loaded.quantized_rows == N
    for q in QUERIES[:10]:
        assert _ids(loaded, q, 10) == _ids(store, q, 10)
    store.dump(tmp_path)  # a second generation replaces the first
    assert len(list(tmp_path.glob("codebook-*.faiss"))) == 1


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"search_mode": "hnsw"}, ValueError, "got 'hnsw'"),
        ({"quantize_min_rows": 10}, ValueError, "got 10"),
        ({"quantize_min_rows": 1.5}, TypeError, "got 1.5"),
        ({"rescore_candidates": 0}, ValueError, "got 0"),
    ],
)
def test_bad_settings_are_rejected(
    kwargs: dict[str, object], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        MatrixVectorStore(FakeEmbeddings(size=DIM), **kwargs)  # type: ignore[arg-type]  # bad values under test


def test_id_search_takes_the_same_quantized_path_and_exact_option() -> None:
    store = _store()
    for q in QUERIES[:5]:
        assert [i for i, _ in store.search_ids_by_vector(q, 10)] == _ids(store, q, 10)
        exact = [i for i, _ in store.search_ids_by_vector(q, 10, exact=True)]
        assert exact == _ids(store, q, 10, exact=True)
