"""Model windows: a chunk longer than the model's window is scored by its best window.

Sync writes each further window as an entry of its own (``<chunk id>:w<n>``), the dense leg
counts a window's hit for its chunk, and keyword indexes, scans and counts see chunks only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore

from langchain_holodeck import BM25KeywordIndex, HybridRetriever, MatrixVectorStore
from langchain_holodeck._chunk import window_id, window_parent
from langchain_holodeck.embeddings.windows import document_texts
from langchain_holodeck.sync import stable_id, sync_documents
from langchain_holodeck.vectorstores import scan_documents
from tests.helpers import (
    LONG_CHUNK,
    SHORT_CHUNK,
    WINDOW_HEAD,
    WINDOW_MIDDLE,
    WINDOW_TAIL,
    HashingEmbeddings,
    WindowedHashingEmbeddings,
    chunk_documents,
)

HEAD, MIDDLE, TAIL = WINDOW_HEAD, WINDOW_MIDDLE, WINDOW_TAIL
LONG, SHORT = LONG_CHUNK, SHORT_CHUNK
_docs = chunk_documents


def _stores() -> list[VectorStore]:
    return [
        MatrixVectorStore(WindowedHashingEmbeddings()),
        InMemoryVectorStore(WindowedHashingEmbeddings()),
    ]


def _ids(store: VectorStore, *, windows: bool = True) -> set[str]:
    return {d.id for d in scan_documents(store, windows=windows) if d.id}


def test_window_ids_name_their_chunk() -> None:
    assert window_id("c-1", 2) == "c-1:w2"
    assert window_parent("c-1:w2") == "c-1"
    assert window_parent("c-1") == "c-1"
    assert window_parent("c-1:w0") == "c-1:w0"  # window 0 is the chunk itself


@pytest.mark.parametrize("store", _stores(), ids=lambda s: type(s).__name__)
def test_sync_writes_each_further_window_and_counts_chunks(store: VectorStore) -> None:
    keywords = BM25KeywordIndex()
    result = sync_documents(_docs(LONG, SHORT), store, namespace="kb", keyword_index=keywords)
    assert (result.added, result.failed) == (2, 0)
    long_id, short_id = (stable_id("kb", f"a.md_chunk_{i}") for i in (0, 1))
    assert _ids(store) == {long_id, short_id, f"{long_id}:w1", f"{long_id}:w2"}
    assert _ids(store, windows=False) == {long_id, short_id}
    assert len(keywords) == 2  # the keyword index holds chunks, never windows
    (chunk,) = store.get_by_ids([long_id])
    assert chunk.page_content == LONG
    assert chunk.metadata["window_count"] == 2
    (window,) = store.get_by_ids([f"{long_id}:w2"])
    assert window.page_content == TAIL
    assert window.metadata["window_of"] == long_id
    assert window.metadata["window"] == 2
    assert window.metadata["chunk_type"] == "window"
    assert window.metadata["namespace"] == "kb"  # scoped like its chunk
    assert "chunk_index" not in window.metadata  # not a chunk: no file record

    again = sync_documents(_docs(LONG, SHORT), store, namespace="kb")
    assert (again.added, again.updated, again.skipped, again.deleted) == (0, 0, 2, 0)


@pytest.mark.parametrize("store", _stores(), ids=lambda s: type(s).__name__)
def test_the_chunk_is_found_by_its_last_window(store: VectorStore) -> None:
    sync_documents(_docs(LONG, SHORT, HEAD), store, namespace="kb")
    retriever = HybridRetriever(vector_store=store, keyword_index=None, k=2)
    hits = retriever.invoke(TAIL)
    assert hits[0].id == stable_id("kb", "a.md_chunk_0")
    assert hits[0].page_content == LONG  # the chunk is returned, never the window
    assert hits[0].metadata["semantic_score"] == pytest.approx(1.0, abs=1e-5)
    assert len({h.id for h in hits}) == len(hits) == 2


def test_without_windows_the_tail_is_not_seen() -> None:
    store = MatrixVectorStore(WindowedHashingEmbeddings())
    store.add_documents(_docs(LONG, SHORT))  # not through sync: the first window only
    retriever = HybridRetriever(vector_store=store, keyword_index=None, k=1)
    assert retriever.invoke(TAIL)[0].metadata["semantic_score"] < 0.5


@pytest.mark.parametrize("store", _stores(), ids=lambda s: type(s).__name__)
async def test_async_search_merges_windows_too(store: VectorStore) -> None:
    sync_documents(_docs(LONG, SHORT), store, namespace="kb")
    retriever = HybridRetriever(vector_store=store, keyword_index=None, k=2)
    hits = await retriever.ainvoke(TAIL)
    assert [h.page_content for h in hits] == [LONG, SHORT]


@pytest.mark.parametrize("store", _stores(), ids=lambda s: type(s).__name__)
def test_windows_a_chunk_no_longer_has_are_deleted(store: VectorStore) -> None:
    sync_documents(_docs(LONG, SHORT), store, namespace="kb")
    long_id = stable_id("kb", "a.md_chunk_0")
    result = sync_documents(_docs(f"{HEAD} {MIDDLE}", SHORT), store, namespace="kb")
    assert (result.updated, result.deleted) == (1, 0)  # chunks: the dropped window is not one
    assert _ids(store) == {long_id, f"{long_id}:w1", stable_id("kb", "a.md_chunk_1")}


@pytest.mark.parametrize("store", _stores(), ids=lambda s: type(s).__name__)
def test_a_stale_tail_chunk_goes_with_its_windows(store: VectorStore) -> None:
    sync_documents(_docs(SHORT, LONG), store, namespace="kb")
    result = sync_documents(_docs(SHORT), store, namespace="kb")
    assert result.deleted == 1  # chunk 1 (its two windows go with it, uncounted: one unit)
    assert _ids(store) == {stable_id("kb", "a.md_chunk_0")}


@pytest.mark.parametrize("store", _stores(), ids=lambda s: type(s).__name__)
def test_cleanup_of_a_deleted_file_takes_its_windows(store: VectorStore) -> None:
    sync_documents([*_docs(LONG), *_docs(SHORT, source="b.md")], store, namespace="kb")
    sync_documents(_docs(LONG, source="x.md"), store, namespace="other")
    result = sync_documents(_docs(SHORT, source="b.md"), store, namespace="kb", cleanup=True)
    assert result.deleted == 1  # a.md's one chunk; its two windows go with it, uncounted
    kept = stable_id("other", "x.md_chunk_0")
    assert _ids(store) == {stable_id("kb", "b.md_chunk_0"), kept, f"{kept}:w1", f"{kept}:w2"}


class _RefusesWindows(MatrixVectorStore):
    """Fails every write that holds a window until ``healed``."""

    healed = False

    def add_vectors(self, documents: Sequence[Document], vectors: Any, **kwargs: Any) -> list[str]:
        # sync writes by vector (a model in this process embeds ahead of the writes)
        if not self.healed and any(":w" in (d.id or "") for d in documents):
            msg = "window batch refused"
            raise RuntimeError(msg)
        return super().add_vectors(documents, vectors, **kwargs)


def test_a_chunk_whose_windows_failed_is_not_written_and_the_rerun_converges() -> None:
    store = _RefusesWindows(WindowedHashingEmbeddings())
    result = sync_documents(_docs(SHORT, LONG), store, namespace="kb", batch_size=1)
    # chunk 1 is held (its windows failed), so chunk 0, the file's record, waits too
    assert (result.added, result.failed) == (0, 2)
    assert any("model windows failed" in e for e in result.errors)
    assert _ids(store) == set()
    store.healed = True
    again = sync_documents(_docs(SHORT, LONG), store, namespace="kb", batch_size=1)
    assert (again.added, again.failed) == (2, 0)
    long_id = stable_id("kb", "a.md_chunk_1")
    assert {f"{long_id}:w1", f"{long_id}:w2", long_id} <= _ids(store)


def test_a_model_without_windows_writes_chunks_only() -> None:
    store = MatrixVectorStore(HashingEmbeddings())
    sync_documents(_docs(LONG), store, namespace="kb")
    assert _ids(store) == {stable_id("kb", "a.md_chunk_0")}


@pytest.mark.parametrize("store", _stores(), ids=lambda s: type(s).__name__)
def test_a_keyword_only_hit_is_held_to_the_threshold_by_its_best_window(
    store: VectorStore,
) -> None:
    from langchain_holodeck.retrievers._dense import DenseLeg, DenseResult

    sync_documents(_docs(LONG, SHORT), store, namespace="kb")
    long_id = stable_id("kb", "a.md_chunk_0")
    leg = DenseLeg(store, {})
    documents = {d.id: d for d in store.get_by_ids([long_id]) if d.id}
    vector = store.embeddings.embed_query(TAIL)  # type: ignore[union-attr]  # set above
    for result in (
        DenseResult(hits=[], kind="relevance"),  # the store's embeddings embed the windows
        DenseResult(hits=[], kind="relevance", vector=vector),  # MatrixVectorStore: lookups
    ):
        found = leg.similarities(result, TAIL, [long_id], documents)
        assert found[long_id] == pytest.approx(1.0, abs=1e-5)  # the tail window, not the first


def test_the_first_search_already_returns_k_chunks() -> None:
    from langchain_holodeck.retrievers._dense import DenseLeg

    store = MatrixVectorStore(WindowedHashingEmbeddings())
    sync_documents(_docs(LONG, SHORT, HEAD), store, namespace="kb")
    # LONG's two further windows are the best entries: asked for 3 entries, the store would
    # give 2 chunks; a model that keeps windows makes the leg ask for twice as many
    hits = DenseLeg(store, {}).search(f"{MIDDLE} {TAIL}", 3).hits
    assert hits[0][0] == stable_id("kb", "a.md_chunk_0")
    assert len({doc_id for doc_id, _ in hits}) == len(hits) == 3


class _CountsWrites(MatrixVectorStore):
    """Records the ids of every write."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.written: list[str] = []

    def add_vectors(self, documents: Sequence[Document], vectors: Any, **kwargs: Any) -> list[str]:
        self.written += [d.id or "" for d in documents]
        return super().add_vectors(documents, vectors, **kwargs)


def test_a_touched_file_rewrites_its_record_but_not_the_windows() -> None:
    store = _CountsWrites(WindowedHashingEmbeddings())
    docs = _docs(LONG, SHORT)
    sync_documents(docs, store, namespace="kb")
    store.written.clear()
    for doc in docs:
        doc.metadata["mtime"] = 2.0  # the file was touched: same text, a new record
    result = sync_documents(docs, store, namespace="kb")
    long_id = stable_id("kb", "a.md_chunk_0")
    assert (result.skipped, result.deleted) == (2, 0)
    assert store.written == [long_id]  # chunk 0, the record; its windows are unchanged
    (chunk,) = store.get_by_ids([long_id])
    assert chunk.metadata["window_count"] == 2
    assert {f"{long_id}:w1", f"{long_id}:w2"} <= _ids(store)


def test_auto_keeps_a_text_that_fits_whole_and_adds_windows_to_a_longer_one() -> None:
    offsets = [(0, 1), (2, 3), (4, 5), (6, 7), (8, 9)]  # "a b c d e": five one-letter tokens
    text = "a b c d e"
    assert document_texts(text, offsets, mode="auto", whole=5, window=2, overlap=0) == [text]
    assert document_texts(text, offsets, mode="auto", whole=4, window=2, overlap=0) == [
        text,
        "a b",
        "c d",
        "d e",
    ]
    assert document_texts(text, offsets, mode="best", whole=5, window=2, overlap=0) == [
        "a b",
        "c d",
        "d e",
    ]
    # windows as large as the model's window: the text's own entry is its first window
    assert document_texts(text, offsets, mode="auto", whole=4, window=4, overlap=0) == [
        "a b c d",
        "b c d e",
    ]


def test_fit_keeps_a_text_that_fits_whole_beside_its_windows_and_cuts_a_longer_one() -> None:
    offsets = [(0, 1), (2, 3), (4, 5), (6, 7), (8, 9)]  # "a b c d e": five one-letter tokens
    text = "a b c d e"
    assert document_texts("a b", offsets[:2], mode="fit", whole=4, window=2, overlap=0) == ["a b"]
    assert document_texts(text, offsets, mode="fit", whole=5, window=2, overlap=0) == [
        text,  # fits the model: itself, then its windows
        "a b",
        "c d",
        "d e",
    ]
    assert document_texts(text, offsets, mode="fit", whole=4, window=2, overlap=0) == [
        "a b",  # longer than the model reads: its windows, the first its own entry
        "c d",
        "d e",
    ]


def test_auto_stores_no_windows_for_code_chunks() -> None:
    store = MatrixVectorStore(WindowedHashingEmbeddings(long_text="auto"))
    docs = _docs(LONG, LONG + " again")
    docs[1].metadata["chunk_type"] = "code"
    result = sync_documents(docs, store, namespace="kb")
    assert (result.added, result.failed) == (2, 0)
    prose_id, code_id = (stable_id("kb", f"a.md_chunk_{i}") for i in (0, 1))
    # prose: itself (whole) plus its three windows; code: itself only
    assert _ids(store) == {prose_id, code_id, *(f"{prose_id}:w{n}" for n in (1, 2, 3))}
    (code,) = store.get_by_ids([code_id])
    assert code.metadata["window_count"] == 0
    (window,) = store.get_by_ids([f"{prose_id}:w3"])
    assert window.page_content == TAIL


def test_best_stores_windows_for_code_chunks_too() -> None:
    store = MatrixVectorStore(WindowedHashingEmbeddings())
    docs = _docs(LONG)
    docs[0].metadata["chunk_type"] = "code"
    sync_documents(docs, store, namespace="kb")
    chunk_id = stable_id("kb", "a.md_chunk_0")
    assert _ids(store) == {chunk_id, f"{chunk_id}:w1", f"{chunk_id}:w2"}
