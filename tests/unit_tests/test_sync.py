from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore

from langchain_holodeck._sync_write import AHEAD_BATCHES, SINGLY_FAILURES
from langchain_holodeck.contracts import CountingDelete
from langchain_holodeck.errors import EmbeddingModelMismatchError
from langchain_holodeck.sync import (
    DocumentSync,
    SyncResult,
    assign_ids,
    content_hash,
    plan_sync,
    sanitize_error,
    stable_id,
    sync_documents,
)
from langchain_holodeck.vectorstores import MatrixVectorStore, scan_documents
from tests.helpers import HashingEmbeddings, OverlappingStore


def chunks(source: str, texts: list[str], **meta: Any) -> list[Document]:
    return [
        Document(page_content=t, metadata={"source_path": source, "chunk_index": i, **meta})
        for i, t in enumerate(texts)
    ]


CORPUS = chunks("a.md", ["alpha one", "alpha two", "alpha three"]) + chunks(
    "b.md", ["beta one", "beta two"]
)


def test_stable_id_is_uuid5_and_namespaced() -> None:
    first = stable_id("kb", "a.md_chunk_0")
    assert first == stable_id("kb", "a.md_chunk_0")
    assert uuid.UUID(first).version == 5
    assert first != stable_id("other", "a.md_chunk_0")
    assert first != stable_id("kb", "a.md_chunk_1")


def test_content_hash_ignores_volatile_metadata_but_not_content() -> None:
    doc = Document(page_content="x", metadata={"source_path": "a", "mtime": 1.0})
    touched = Document(page_content="x", metadata={"source_path": "a", "mtime": 2.0})
    edited = Document(page_content="y", metadata={"source_path": "a", "mtime": 1.0})
    moved = Document(page_content="x", metadata={"source_path": "a", "section_id": "2"})
    assert content_hash(doc) == content_hash(touched)
    assert content_hash(doc) != content_hash(edited)
    assert content_hash(doc) != content_hash(moved)


def test_assign_ids_sets_ids_and_metadata_without_mutating_input() -> None:
    docs = chunks("a.md", ["one", "two"])
    out = assign_ids(docs, namespace="kb", embedding_model="m")
    assert [d.id for d in out] == [stable_id("kb", f"a.md_chunk_{i}") for i in range(2)]
    assert out[1].metadata["chunk_key"] == "a.md_chunk_1"
    assert out[1].metadata["chunk_count"] == 2
    assert out[0].metadata["embedding_model"] == "m"
    assert len(out[0].metadata["content_hash"]) == 64
    assert docs[0].id is None
    assert "content_hash" not in docs[0].metadata


def test_assign_ids_rejects_documents_without_source() -> None:
    with pytest.raises(ValueError, match="document 0 has no 'source_path'"):
        assign_ids([Document(page_content="x")], namespace="kb")


def test_assign_ids_rejects_duplicate_chunk_keys() -> None:
    docs = [Document(page_content=t, metadata={"source": "a", "chunk_index": 0}) for t in "xy"]
    with pytest.raises(ValueError, match="a_chunk_0"):
        assign_ids(docs, namespace="kb")


def test_plan_sync_classifies_add_update_skip() -> None:
    new = assign_ids(chunks("a.md", ["same", "changed", "fresh"]), namespace="kb")
    old = assign_ids(chunks("a.md", ["same", "before"]), namespace="kb")
    plan = plan_sync(new, {d.id: d for d in old if d.id}, overwrite=False)
    assert [d.page_content for d in plan.add] == ["fresh"]
    assert [d.page_content for d in plan.update] == ["changed"]
    assert [d.page_content for d in plan.skip] == ["same"]
    forced = plan_sync(new, {d.id: d for d in old if d.id}, overwrite=True)
    assert len(forced.update) == 2
    assert not forced.skip


def test_first_sync_adds_everything(embeddings: HashingEmbeddings) -> None:
    store = InMemoryVectorStore(embeddings)
    result = sync_documents(CORPUS, store, namespace="kb")
    assert result == SyncResult(added=5)
    stored = store.get_by_ids([stable_id("kb", "b.md_chunk_1")])
    assert stored[0].page_content == "beta two"


def test_sync_twice_adds_nothing_and_embeds_nothing(embeddings: HashingEmbeddings) -> None:
    store = InMemoryVectorStore(embeddings)
    sync_documents(CORPUS, store, namespace="kb")
    calls = embeddings.texts_embedded
    result = sync_documents(CORPUS, store, namespace="kb")
    assert (result.added, result.updated, result.skipped) == (0, 0, 5)
    assert embeddings.texts_embedded == calls


def test_edited_chunk_is_updated_in_place(embeddings: HashingEmbeddings) -> None:
    store = InMemoryVectorStore(embeddings)
    sync_documents(CORPUS, store, namespace="kb")
    edited = [*chunks("a.md", ["alpha one", "alpha 2", "alpha three"]), *CORPUS[3:]]
    before = embeddings.texts_embedded
    result = sync_documents(edited, store, namespace="kb")
    assert (result.added, result.updated, result.skipped) == (0, 1, 4)
    assert embeddings.texts_embedded == before + 1
    assert len(store.store) == 5
    assert store.get_by_ids([stable_id("kb", "a.md_chunk_1")])[0].page_content == "alpha 2"


def test_shrunk_file_loses_its_tail(embeddings: HashingEmbeddings) -> None:
    store = InMemoryVectorStore(embeddings)
    sync_documents(CORPUS, store, namespace="kb")
    result = sync_documents([*chunks("a.md", ["alpha one"]), *CORPUS[3:]], store, namespace="kb")
    assert result.deleted == 2
    assert len(store.store) == 3
    assert not store.get_by_ids([stable_id("kb", "a.md_chunk_2")])


def test_tail_deletion_crosses_a_gap(embeddings: HashingEmbeddings) -> None:
    store = InMemoryVectorStore(embeddings)
    many = chunks("a.md", [f"chunk {i}" for i in range(100)])
    sync_documents(many, store, namespace="kb")
    store.delete([stable_id("kb", f"a.md_chunk_{i}") for i in range(5, 40)])
    result = sync_documents(many[:3], store, namespace="kb")
    assert result.deleted == 2 + 60
    assert len(store.store) == 3


def _indexed(source: str, indexes: Sequence[int]) -> list[Document]:
    return [
        Document(page_content=f"part {i}", metadata={"source_path": source, "chunk_index": i})
        for i in indexes
    ]


def _stored_indexes(store: InMemoryVectorStore) -> list[int]:
    return sorted(d["metadata"]["chunk_index"] for d in store.store.values())


def test_chunk_indexes_with_gaps_resync_to_nothing(embeddings: HashingEmbeddings) -> None:
    """A caller's chunks 0, 2, 4 (one filtered out after splitting): the tail was looked for
    from the number of chunks (3), so every other re-sync deleted chunk 4 and the next
    added it back."""
    store = InMemoryVectorStore(embeddings)
    docs = _indexed("a.md", [0, 2, 4])
    assert sync_documents(docs, store, namespace="kb").added == 3
    for _ in range(3):
        result = sync_documents(docs, store, namespace="kb")
        assert (result.added, result.skipped, result.deleted) == (0, 3, 0)
        assert _stored_indexes(store) == [0, 2, 4]


def test_a_stored_chunk_in_a_new_gap_is_stale(embeddings: HashingEmbeddings) -> None:
    store = InMemoryVectorStore(embeddings)
    sync_documents(_indexed("a.md", range(6)), store, namespace="kb")
    result = sync_documents(_indexed("a.md", [0, 2, 4]), store, namespace="kb")
    assert (result.skipped, result.deleted) == (3, 3)  # 1 and 3 in the gaps, 5 the tail
    assert _stored_indexes(store) == [0, 2, 4]


def test_sparse_chunk_indexes_cost_no_probe_per_number_skipped(
    embeddings: HashingEmbeddings,
) -> None:
    """A byte offset as chunk_index: the gaps below it are not each looked up."""

    class Counting(InMemoryVectorStore):
        probed = 0

        def get_by_ids(self, ids: Sequence[str], /) -> list[Document]:
            Counting.probed += len(ids)
            return super().get_by_ids(ids)

    store = Counting(embeddings)
    docs = _indexed("a.md", [0, 40_000, 90_000])
    sync_documents(docs, store, namespace="kb")
    Counting.probed = 0
    result = sync_documents(docs, store, namespace="kb")
    assert (result.skipped, result.deleted) == (3, 0)
    assert Counting.probed < 1_000


def test_namespaces_do_not_collide(embeddings: HashingEmbeddings) -> None:
    store = InMemoryVectorStore(embeddings)
    sync_documents(CORPUS, store, namespace="one")
    result = sync_documents(CORPUS[:1], store, namespace="two")
    assert result.added == 1
    assert len(store.store) == 6


def test_overwrite_updates_and_reembeds_everything(embeddings: HashingEmbeddings) -> None:
    store = InMemoryVectorStore(embeddings)
    sync_documents(CORPUS, store, namespace="kb")
    before = embeddings.texts_embedded
    result = sync_documents(CORPUS, store, namespace="kb", overwrite=True)
    assert (result.added, result.updated, result.skipped) == (0, 5, 0)
    assert embeddings.texts_embedded == before + 5


def test_failed_batch_is_counted_and_later_batches_run() -> None:
    embeddings = HashingEmbeddings(fail_on="poison")
    store = InMemoryVectorStore(embeddings)
    docs = chunks("a.md", ["a zero", "poison here"]) + chunks("b.md", ["b zero", "b one"])
    result = sync_documents(docs, store, namespace="kb", batch_size=1)
    assert (result.added, result.failed) == (2, 2)
    assert "RuntimeError" in result.errors[0]
    assert "\n" not in result.errors[0]
    assert "a.md" in result.errors[1]
    # a.md's file record (chunk 0) was held back, so the fast path cannot skip a.md next time
    assert not store.get_by_ids([stable_id("kb", "a.md_chunk_0")])
    fixed = chunks("a.md", ["a zero", "fine"]) + chunks("b.md", ["b zero", "b one"])
    healed = sync_documents(fixed, store, namespace="kb")
    assert (healed.added, healed.skipped, healed.failed) == (2, 2, 0)
    assert len(store.store) == 4


def test_a_failed_batch_is_written_again_one_chunk_at_a_time() -> None:
    # one chunk the store refuses (PostgreSQL and a NUL) failed its whole batch, and the
    # error named only the batch's first file
    store = InMemoryVectorStore(HashingEmbeddings(fail_on="poison"))
    docs = chunks("a.md", ["a zero", "a one"]) + chunks("b.md", ["b zero", "poison here"])
    result = sync_documents(docs, store, namespace="kb", batch_size=10)
    assert (result.added, result.failed) == (2, 2)  # "poison here" and b.md's held chunk 0
    assert len(store.store) == 2
    assert result.errors[0].startswith(f"chunk {stable_id('kb', 'b.md_chunk_1')} from 'b.md': ")
    assert "RuntimeError" in result.errors[0]
    healed = sync_documents(chunks("b.md", ["b zero", "fine"]), store, namespace="kb")
    assert (healed.added, healed.failed) == (2, 0)


class _RefusesWrites(InMemoryVectorStore):
    """A store that is down: every write fails; counts the attempts."""

    writes = 0

    def add_documents(self, documents: list[Document], **kwargs: Any) -> list[str]:
        type(self).writes += 1
        msg = "connection refused"
        raise ConnectionError(msg)


def test_a_store_refusing_every_write_is_not_tried_chunk_by_chunk() -> None:
    store = _RefusesWrites(HashingEmbeddings())
    docs = chunks("a.md", [f"a {n}" for n in range(6)]) + chunks("b.md", ["b zero", "b one"])
    result = sync_documents(docs, store, namespace="kb", batch_size=8)
    assert result.failed == 8
    # the batch, then SINGLY_FAILURES chunks alone; chunk 0s (held back) are not written
    assert _RefusesWrites.writes == 1 + SINGLY_FAILURES
    assert result.errors[0].startswith("batch of 6 chunks from 2 files ('a.md', 'b.md'): ")


def test_changed_embedding_model_is_detected(embeddings: HashingEmbeddings) -> None:
    store = InMemoryVectorStore(embeddings)
    sync_documents(CORPUS, store, namespace="kb", embedding_model="model-a")
    with pytest.raises(EmbeddingModelMismatchError, match="force_ingest"):
        sync_documents(CORPUS, store, namespace="kb", embedding_model="model-b")
    forced = sync_documents(
        CORPUS, store, namespace="kb", embedding_model="model-b", overwrite=True
    )
    assert forced.updated == 5


class _NoGetByIds(VectorStore):
    def add_texts(self, texts: Any, metadatas: Any = None, **kwargs: Any) -> list[str]:
        return []

    def similarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Document]:
        return []

    @classmethod
    def from_texts(cls, texts: Any, embedding: Any, metadatas: Any = None, **kwargs: Any) -> Any:
        return cls()


def test_store_without_get_by_ids_is_rejected_before_any_write() -> None:
    with pytest.raises(TypeError, match="_NoGetByIds does not override get_by_ids"):
        sync_documents(CORPUS, _NoGetByIds(), namespace="kb")


def test_bad_batch_size_is_rejected(embeddings: HashingEmbeddings) -> None:
    with pytest.raises(ValueError, match="got 0"):
        sync_documents(CORPUS, InMemoryVectorStore(embeddings), namespace="kb", batch_size=0)


class _Index:
    def __init__(self) -> None:
        self.docs: dict[str, str] = {}

    def upsert(self, documents: Any) -> None:
        self.docs.update({d.id: d.page_content for d in documents})

    def delete(self, ids: Any) -> None:
        for i in ids:
            self.docs.pop(i, None)


def test_keyword_index_follows_the_sync(embeddings: HashingEmbeddings) -> None:
    store = InMemoryVectorStore(embeddings)
    index = _Index()
    sync_documents(CORPUS, store, namespace="kb", keyword_index=index)
    assert set(index.docs) == set(store.store)
    sync_documents(CORPUS[:1] + CORPUS[3:], store, namespace="kb", keyword_index=index)
    assert set(index.docs) == set(store.store)
    assert len(index.docs) == 3


def test_sanitize_error_strips_credentials_and_newlines() -> None:
    error = ConnectionError("cannot reach redis://user:hunter2@db:6379\nBearer sk-secret")
    line = sanitize_error(error)
    assert "hunter2" not in line
    assert "sk-secret" not in line
    assert "\n" not in line
    assert line.startswith("ConnectionError: ")


def test_document_sync_runnable_matches_function(embeddings: HashingEmbeddings) -> None:
    store = InMemoryVectorStore(embeddings)
    sync = DocumentSync(store, namespace="kb")
    assert sync.invoke(CORPUS) == SyncResult(added=5)
    assert sync.batch([CORPUS])[0].skipped == 5


async def test_document_sync_ainvoke(embeddings: HashingEmbeddings) -> None:
    store = InMemoryVectorStore(embeddings)
    result = await DocumentSync(store, namespace="kb").ainvoke(CORPUS)
    assert result.added == 5


async def test_document_sync_refuses_a_batch_of_other_sources_with_cleanup(
    embeddings: HashingEmbeddings,
) -> None:
    """Found 2026-12-07: each run's cleanup deleted the chunks of the other lists' sources,
    so a batch of two chunk lists kept only one (or none, run side by side)."""
    store = InMemoryVectorStore(embeddings)
    sync = DocumentSync(store, namespace="kb", cleanup=True)
    lists = [chunks("one/a.md", ["alpha"]), chunks("two/b.md", ["beta"])]
    refused = (
        r"batch got 2 chunk lists of 2 different sets of sources \(\['one/a.md'\], "
        r"\['two/b.md'\]\) for namespace 'kb' with cleanup on: .* or pass cleanup=False\."
    )
    with pytest.raises(ValueError, match=refused):
        sync.batch(lists)
    with pytest.raises(ValueError, match=r"^abatch got 2 chunk lists"):
        await sync.abatch(lists)
    with pytest.raises(ValueError, match=r"^batch_as_completed got 2 chunk lists"):
        sync.batch_as_completed(lists)
    with pytest.raises(ValueError, match=r"^abatch_as_completed got 2 chunk lists"):
        sync.abatch_as_completed(lists)
    with pytest.raises(ValueError, match=r"\(\['one/a.md'\], \[\]\)"):
        sync.batch([lists[0], []])  # an empty list's run would delete everything
    assert store.store == {}
    # the same sources in each list undo nothing; without cleanup both lists are kept
    one_by_one: RunnableConfig = {"max_concurrency": 1}
    assert [r.added for r in sync.batch([CORPUS, CORPUS[::-1]], one_by_one)] == [5, 0]
    keep = DocumentSync(store, namespace="kb")
    assert [r.added for r in keep.batch(lists)] == [1, 1]
    assert len(store.store) == 7


async def test_a_chain_of_other_sources_with_cleanup_runs_one_and_refuses_the_other(
    embeddings: HashingEmbeddings,
) -> None:
    """Found 2026-12-07: ``(prep | DocumentSync(cleanup=True)).batch_as_completed`` syncs each
    list through ``invoke``, past the batch check: two lists of other sources ran side by side,
    each cleanup deleting the other's chunks. A run is now refused at its start while one of
    other sources syncs into the namespace; one after the other, as before."""
    lists = [chunks("one/a.md", ["alpha", "beta"]), chunks("two/b.md", ["gamma"])]
    for run_async in (False, True):
        store = OverlappingStore(embeddings)  # the first run waits until the other came
        chain = RunnableLambda(lambda docs: docs) | DocumentSync(
            store, namespace="kb", cleanup=True
        )
        done: dict[int, SyncResult | Exception] = {}
        if run_async:
            async for i, out in chain.abatch_as_completed(lists, return_exceptions=True):
                done[i] = out
                store.go.set()  # the refused run came first: the other may go on
        else:
            for i, out in chain.batch_as_completed(lists, return_exceptions=True):
                done[i] = out
                store.go.set()
        refused = [i for i, out in done.items() if isinstance(out, Exception)]
        assert len(refused) == 1, done  # before: both ran, each deleting the other's chunks
        (i,), ran = refused, 1 - refused[0]
        names = [repr([docs[0].metadata["source_path"]]).replace('"', "'") for docs in lists]
        assert str(done[i]) == (
            f"sync_documents got chunks of {names[i]} for namespace 'kb' with cleanup on while "
            f"a run of {names[ran]} is syncing into it: each run deletes the chunks of the "
            "sources not in its own list, so one list's would stay, or none. Sync them as one "
            "list, give each its own DocumentSync and namespace, or pass cleanup=False."
        )
        assert isinstance(done[ran], SyncResult)
        assert sorted(d.page_content for d in store.get_by_ids(list(store.store))) == sorted(
            d.page_content for d in lists[ran]
        )
        after = chain.invoke(lists[i])  # one after the other: the later list is mirrored
        assert (after.added, after.deleted) == (len(lists[i]), len(lists[ran]))


async def test_syncs_of_the_same_sources_with_cleanup_may_overlap(
    embeddings: HashingEmbeddings,
) -> None:
    for run_async in (False, True):
        store = OverlappingStore(embeddings)  # each run waits until the other reached the store
        sync = DocumentSync(store, namespace="kb", cleanup=True)
        if run_async:
            results = await asyncio.gather(sync.ainvoke(CORPUS), sync.ainvoke(CORPUS[::-1]))
        else:
            with ThreadPoolExecutor(2) as pool:  # sync_documents itself, from two threads
                futures = [
                    pool.submit(sync_documents, docs, store, namespace="kb", cleanup=True)
                    for docs in (CORPUS, CORPUS[::-1])
                ]
                results = [future.result() for future in futures]
        assert store.go.is_set()  # set by the second run's arrival: both were under way
        assert [(r.failed, r.deleted) for r in results] == [(0, 0), (0, 0)]
        assert len(store.store) == len(CORPUS)


class _FailsOnceStore(InMemoryVectorStore):
    """Its first ``get_by_ids`` fails (a connection reset mid-sync); the next ones answer."""

    def __init__(self, embedding: Embeddings) -> None:
        super().__init__(embedding)
        self.failed = False

    def get_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        if not self.failed:
            self.failed = True
            msg = "connection reset"
            raise ConnectionError(msg)
        return super().get_by_ids(ids)


def test_a_sync_that_fails_midway_lets_other_sources_in(embeddings: HashingEmbeddings) -> None:
    store = _FailsOnceStore(embeddings)
    with pytest.raises(ConnectionError, match="connection reset"):
        sync_documents(CORPUS, store, namespace="kb", cleanup=True)
    sync = DocumentSync(store, namespace="kb", cleanup=True)
    with ThreadPoolExecutor(1) as pool:  # another thread: nothing of the failed run's context
        result = pool.submit(sync.invoke, chunks("c.md", ["gamma"])).result()
    assert (result.added, result.failed) == (1, 0)


class _DictStore(VectorStore):
    """A store with ids, get_by_ids and delete, but no way to list what it holds."""

    def __init__(self) -> None:
        self.docs: dict[str, Document] = {}

    def add_texts(self, texts: Any, metadatas: Any = None, **kwargs: Any) -> list[str]:
        ids = kwargs["ids"]
        for text, meta, doc_id in zip(texts, metadatas, ids, strict=True):
            self.docs[doc_id] = Document(id=doc_id, page_content=text, metadata=meta)
        return list(ids)

    def get_by_ids(self, ids: Any, /) -> list[Document]:
        return [self.docs[i] for i in ids if i in self.docs]

    def delete(self, ids: Any = None, **kwargs: Any) -> bool:
        for i in ids or []:
            self.docs.pop(i, None)
        return True

    def similarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Document]:
        return []

    @classmethod
    def from_texts(cls, texts: Any, embedding: Any, metadatas: Any = None, **kwargs: Any) -> Any:
        return cls()


def test_cleanup_keeps_the_sources_still_present_says_are_there(embeddings: Embeddings) -> None:
    """``still_present`` is asked about the sources the cleanup would delete, once, and only
    about them; what it returns keeps its chunks (a file added since the caller's listing);
    without it they all go, as before."""
    store = MatrixVectorStore(embeddings)
    sync_documents([*CORPUS, *chunks("c.md", ["gamma one"])], store, namespace="kb")
    asked: list[set[str]] = []

    def present(sources: Any) -> set[str]:
        asked.append(set(sources))
        return {"b.md"}

    a_only = chunks("a.md", ["alpha one", "alpha two", "alpha three"])
    kept = sync_documents(a_only, store, namespace="kb", cleanup=True, still_present=present)
    assert asked == [{"b.md", "c.md"}]
    assert kept.deleted == 1  # c.md
    stored = sorted(str(d.metadata["source_path"]) for d in scan_documents(store, namespace="kb"))
    assert stored == ["a.md", "a.md", "a.md", "b.md", "b.md"]
    assert sync_documents(a_only, store, namespace="kb", cleanup=True).deleted == 2  # b.md


def test_cleanup_on_a_store_that_cannot_list_still_trims_tails_and_says_why() -> None:
    store = _DictStore()
    sync_documents(CORPUS, store, namespace="kb")
    result = sync_documents(chunks("a.md", ["alpha one"]), store, namespace="kb", cleanup=True)
    assert result.deleted == 2  # a.md's tail, found by id
    assert len(store.docs) == 3  # b.md stays: deleted files cannot be found in this store
    assert len(result.errors) == 1
    assert result.errors[0].startswith("cleanup of deleted files skipped: ")
    assert "_DictStore" in result.errors[0]


class _NoDelete(InMemoryVectorStore):
    """``get_by_ids`` and ``ids=`` (all the sync contract asks), but no ``delete``."""

    delete = VectorStore.delete  # type: ignore[assignment]  # the base's NotImplementedError


def test_store_without_delete_syncs_and_skips_stale_cleanup_with_a_reason(
    embeddings: HashingEmbeddings,
) -> None:
    store = _NoDelete(embeddings)
    assert sync_documents(CORPUS, store, namespace="kb") == SyncResult(added=5)
    shrunk = chunks("a.md", ["alpha one", "alpha 2"])
    result = sync_documents(shrunk, store, namespace="kb", cleanup=True)
    assert (result.updated, result.deleted) == (1, 0)
    assert result.errors == (
        "stale-chunk cleanup skipped: _NoDelete does not override delete(), so 3 stale "
        "chunk(s) stay in the store; use a store that implements delete() to remove them.",
    )
    assert len(store.store) == 5  # a.md's tail and b.md stay


class _RecordsWrites(MatrixVectorStore):
    """Records how each write arrived: by vector (sync embedded ahead) or as documents."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.by_vector = 0

    def add_vectors(self, documents: Sequence[Document], vectors: Any, **kwargs: Any) -> list[str]:
        self.by_vector += len(documents)
        return super().add_vectors(documents, vectors, **kwargs)


def test_a_model_in_process_embeds_slices_ahead_of_the_writes() -> None:
    embeddings = HashingEmbeddings()
    store = _RecordsWrites(embeddings)
    docs = chunks("a.md", [f"alpha {n}" for n in range(9)])
    result = sync_documents(docs, store, namespace="kb", batch_size=1)
    assert result.added == 9
    assert store.by_vector == 9  # every write came with its vector
    # nine batches of one, embedded AHEAD_BATCHES at a time: 3 calls, not 9
    assert embeddings.calls == -(-9 // AHEAD_BATCHES)
    assert embeddings.texts_embedded == 9
    hits = store.similarity_search("alpha 7", k=1)
    assert hits[0].page_content == "alpha 7"


def test_a_failing_slice_fails_only_the_batch_that_fails_alone() -> None:
    embeddings = HashingEmbeddings(fail_on="poison")
    store = MatrixVectorStore(embeddings)
    texts = ["a zero", "a one", "poison two", "a three", "a four", "a five"]
    result = sync_documents(chunks("a.md", texts), store, namespace="kb", batch_size=1)
    # the slice of 4 failed as a whole; each of its batches was embedded alone again
    assert (result.added, result.failed) == (4, 2)  # "poison two" and the held chunk 0
    assert any("poison" in line for line in result.errors)
    kept = store.get_by_ids([stable_id("kb", f"a.md_chunk_{n}") for n in (1, 3, 4, 5)])
    assert len(kept) == 4


def test_matrix_store_reports_the_ids_it_deleted(embeddings: HashingEmbeddings) -> None:
    store = MatrixVectorStore(embeddings)
    sync_documents(CORPUS, store, namespace="kb")
    ids = [stable_id("kb", "a.md_chunk_2"), "not-stored", stable_id("kb", "a.md_chunk_2")]
    assert isinstance(store, CountingDelete)
    assert store.delete_existing(ids) == [stable_id("kb", "a.md_chunk_2")]
    assert store.delete_existing(ids) == []  # already gone: nothing to count


def test_deleted_counts_only_chunks_the_store_still_held(embeddings: HashingEmbeddings) -> None:
    store = MatrixVectorStore(embeddings)
    sync_documents(CORPUS, store, namespace="kb")
    shrunk = [*chunks("a.md", ["alpha one"]), *CORPUS[3:]]
    assert sync_documents(shrunk, store, namespace="kb").deleted == 2
    assert sync_documents(shrunk, store, namespace="kb", overwrite=True).deleted == 0
