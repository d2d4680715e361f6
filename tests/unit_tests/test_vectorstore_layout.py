"""MatrixVectorStore's compact layout: document columns, packed texts, filters, saves."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import FakeEmbeddings

from langchain_holodeck.vectorstores import MatrixVectorStore, _matrix_io
from langchain_holodeck.vectorstores._columns import pack_text, unpack_text

DIM = 8
LONG = " ".join(f"word{i % 37} shift rotation" for i in range(60))
TEXTS = [
    "",
    "short",
    LONG,
    "Ünïcödé — 日本語のテキスト 🚀 " * 20,
    "lone surrogate \ud800 kept " * 10,
    "x" * 127,
    "y" * 128,
]

SAVABLE = [t for t in TEXTS if "\ud800" not in t]  # JSON lines are strict UTF-8


def _vectors(n: int, seed: int = 0) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _store(**kwargs: object) -> MatrixVectorStore:
    return MatrixVectorStore(FakeEmbeddings(size=DIM), **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("text", TEXTS)
def test_every_text_round_trips_through_its_packed_form(text: str) -> None:
    assert unpack_text(pack_text(text)) == text


def test_long_texts_are_kept_compressed_and_short_ones_as_they_are() -> None:
    packed = pack_text(LONG)
    assert isinstance(packed, bytes)
    assert len(packed) < len(LONG) / 2
    assert pack_text("short") == "short"
    assert pack_text("x" * 127) == "x" * 127  # below the threshold


def test_the_store_keeps_columns_not_documents_and_returns_equal_documents() -> None:
    store = _store(search_mode="exact")
    docs = [
        Document(id=f"d{i}", page_content=t, metadata={"n": i, "tags": ["a"]} if i % 2 else {})
        for i, t in enumerate(TEXTS)
    ]
    store.add_vectors(docs, _vectors(len(docs)))
    columns = store._docs
    assert not any(isinstance(v, Document) for v in (*columns.texts, *columns.metadatas))
    assert columns.metadatas[0] is None  # empty metadata: no dict per row
    assert isinstance(columns.texts[2], bytes)
    assert store.get_by_ids([d.id for d in docs]) == docs  # type: ignore[misc]
    assert list(store.iter_documents()) == docs
    found = store.similarity_search_by_vector(_vectors(1)[0].tolist(), k=len(docs))
    assert sorted(found, key=lambda d: d.id) == sorted(docs, key=lambda d: d.id)  # type: ignore[arg-type, return-value]
    found[1].metadata["n"] = "changed"  # a caller's copy: the store is unaffected
    assert store.get_by_ids(["d1"])[0].metadata == {"n": 1, "tags": ["a"]}


def test_a_mapping_filter_gives_what_the_same_callable_gives() -> None:
    store = _store(search_mode="exact")
    n = 300
    docs = [
        Document(id=str(i), page_content=f"chunk {i}", metadata={"namespace": f"c{i % 7}"})
        for i in range(n)
    ]
    store.add_vectors(docs, _vectors(n))
    for q in _vectors(10, seed=3):
        for ns in ("c0", "c3", "missing"):
            by_map = store.similarity_search_with_score_by_vector(q, 5, filter={"namespace": ns})
            by_fn = store.similarity_search_with_score_by_vector(
                q, 5, filter=lambda d, ns=ns: d.metadata.get("namespace") == ns
            )
            assert by_map == by_fn
            assert len(by_map) == (0 if ns == "missing" else 5)
    assert len(store.similarity_search_by_vector(_vectors(1)[0].tolist(), 9, filter={})) == 9


def test_quantized_search_with_a_mapping_filter_and_each_row_judged_once() -> None:
    pytest.importorskip("faiss")
    store = _store(search_mode="quantized", quantize_min_rows=4_096)
    n = 6_000
    docs = [
        Document(id=str(i), page_content=f"chunk {i}", metadata={"namespace": f"c{i % 50}"})
        for i in range(n)
    ]
    store.add_vectors(docs, _vectors(n))
    for q in _vectors(5, seed=4):
        seen: list[str] = []

        def judge(doc: Document, seen: list[str] = seen) -> bool:
            seen.append(doc.id)  # type: ignore[arg-type]
            return doc.metadata["namespace"] == "c7"

        by_fn = store.similarity_search_with_score_by_vector(q, 10, filter=judge)
        assert len(seen) == len(set(seen))  # the pool grew in rounds, no row twice
        by_map = store.similarity_search_with_score_by_vector(q, 10, filter={"namespace": "c7"})
        exact = store.similarity_search_with_score_by_vector(
            q, 10, filter={"namespace": "c7"}, exact=True
        )
        assert [d.id for d, _ in by_map] == [d.id for d, _ in by_fn] == [d.id for d, _ in exact]


def test_a_filter_of_the_wrong_type_is_rejected_by_name() -> None:
    store = _store()
    with pytest.raises(TypeError, match=r"filter must be a callable .* got int 3"):
        store.similarity_search_by_vector([1.0] * DIM, 2, filter=3)


def test_dump_writes_live_rows_a_chunk_at_a_time_and_load_reads_them_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_matrix_io, "_CHUNK_ROWS", 3)
    store = _store(search_mode="exact")
    docs = [
        Document(id=f"d{i}", page_content=SAVABLE[i % len(SAVABLE)], metadata={"i": i})
        for i in range(20)
    ]
    store.add_vectors(docs, _vectors(20))
    store.delete(["d0", "d5", "d6", "d19"])  # tombstones: only live rows are written
    store.dump(tmp_path)
    loaded = MatrixVectorStore.load(tmp_path, FakeEmbeddings(size=DIM), search_mode="exact")
    assert list(loaded.iter_documents()) == list(store.iter_documents())
    live = [d.id for d in store.iter_documents()]
    assert loaded.get_vectors(live) == store.get_vectors(live)  # type: ignore[arg-type]


def test_load_reads_a_save_in_the_plain_numpy_and_jsonl_layout(tmp_path: Path) -> None:
    """What ``dump`` wrote before this layout: ``np.save`` + one JSON object per line."""
    vectors = _vectors(3)
    np.save(tmp_path / "vectors-old.npy", vectors)
    lines = [
        {"id": "a", "page_content": LONG, "metadata": {"namespace": "kb"}},
        {"id": "b", "page_content": "second", "metadata": {}},
        {"id": "a", "page_content": "a again", "metadata": {"v": 2}},  # the last one wins
    ]
    (tmp_path / "documents-old.jsonl").write_text(
        "".join(json.dumps(rec) + "\n" for rec in lines), encoding="utf-8"
    )
    manifest = {
        "format": "holodeck-matrix-store",
        "version": 1,
        "count": 3,
        "dimension": DIM,
        "vectors": "vectors-old.npy",
        "documents": "documents-old.jsonl",
    }
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    store = MatrixVectorStore.load(tmp_path, FakeEmbeddings(size=DIM))
    assert store.document_count == 2
    assert store.get_by_ids(["a", "b"]) == [
        Document(id="a", page_content="a again", metadata={"v": 2}),
        Document(id="b", page_content="second", metadata={}),
    ]
    assert store.get_vectors(["a"])["a"] == vectors[2].tolist()


def test_load_rejects_a_truncated_vector_file(tmp_path: Path) -> None:
    store = _store()
    store.add_vectors([Document(id=str(i), page_content="t") for i in range(4)], _vectors(4))
    store.dump(tmp_path)
    name = json.loads((tmp_path / "manifest.json").read_text())["vectors"]
    data = (tmp_path / name).read_bytes()
    (tmp_path / name).write_bytes(data[:-DIM])
    with pytest.raises(ValueError, match="is truncated: fewer than 4 rows"):
        MatrixVectorStore.load(tmp_path, FakeEmbeddings(size=DIM))
