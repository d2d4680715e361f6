"""MatrixVectorStore, scan_documents and create_vector_store, in memory."""

from __future__ import annotations

import json
import logging
import re
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore
from pydantic import SecretStr

from langchain_holodeck.backends import BackendUnavailableError
from langchain_holodeck.errors import ConfigError
from langchain_holodeck.vectorstores import (
    MatrixVectorStore,
    VectorStoreHandle,
    create_vector_store,
    create_vector_store_with_status,
    scan_documents,
)
from tests.helpers import HashingEmbeddings, check_bad_k_is_named, check_misspelt_filter_is_refused

CHUNK_META = {
    "source": "data/docs/api.md",
    "source_path": "data/docs/api.md",
    "file_type": "md",
    "mtime": 1717171717.123456,
    "size_bytes": 2048,
    "chunk_index": 3,
    "parent_chain": ["Title I", "Section 201"],
    "section_id": "201(a)(1)",
    "heading": "Scope",
    "chunk_type": "definition",
    "cross_references": ["4.2", "7"],
    "defined_terms": [],
    "namespace": "kb",
    "chunk_key": "data/docs/api.md_chunk_3",
    "content_hash": "ab" * 32,
    "chunk_count": 9,
    "embedding_model": "HashingEmbeddings:size=64",
    "flag": True,
    "nothing": None,
}

TEXTS = {
    "a": "holodeck safety protocols require two officers",
    "b": "the replicator menu lists tea earl grey hot",
    "c": "warp core maintenance happens every shift rotation",
    "d": "safety protocols can be disabled by the captain",
}


def make_store(embeddings: HashingEmbeddings) -> MatrixVectorStore:
    store = MatrixVectorStore(embeddings)
    store.add_documents(
        [
            Document(id=i, page_content=t, metadata={"namespace": "kb", "n": n})
            for n, (i, t) in enumerate(TEXTS.items())
        ]
    )
    return store


def test_upsert_replaces_existing_id_without_duplicates(embeddings: HashingEmbeddings) -> None:
    store = make_store(embeddings)
    store.add_documents([Document(id="a", page_content="tea is served hot", metadata={"v": 2})])
    assert store.document_count == 4
    hits = store.similarity_search("tea served hot", k=4)
    assert [d.id for d in hits].count("a") == 1
    (doc,) = store.get_by_ids(["a"])
    assert doc.page_content == "tea is served hot"
    assert doc.metadata == {"v": 2}


def test_duplicate_ids_in_one_call_keep_the_last(embeddings: HashingEmbeddings) -> None:
    store = MatrixVectorStore(embeddings)
    ids = store.add_texts(["first", "second"], ids=["x", "x"])
    assert ids == ["x", "x"]
    assert store.document_count == 1
    assert store.get_by_ids(["x"])[0].page_content == "second"


def test_add_texts_ids_take_precedence_and_missing_ids_are_generated(
    embeddings: HashingEmbeddings,
) -> None:
    store = MatrixVectorStore(embeddings)
    ids = store.add_documents([Document(id="doc-id", page_content="alpha")], ids=["given"])
    assert ids == ["given"]
    generated = store.add_texts(["beta"])
    assert len(generated) == 1
    assert generated[0]
    assert store.get_by_ids(generated)[0].page_content == "beta"


def test_add_does_not_mutate_inputs(embeddings: HashingEmbeddings) -> None:
    meta = {"parent_chain": ["A"]}
    doc = Document(page_content="alpha", metadata=meta)
    store = MatrixVectorStore(embeddings)
    store.add_documents([doc])
    meta["parent_chain"].append("B")
    assert doc.id is None
    assert store.similarity_search("alpha", k=1)[0].metadata == {"parent_chain": ["A"]}


def test_get_by_ids_returns_found_ids_in_request_order_as_copies(
    embeddings: HashingEmbeddings,
) -> None:
    store = make_store(embeddings)
    docs = store.get_by_ids(["d", "missing", "a", "b"])
    assert [d.id for d in docs] == ["d", "a", "b"]
    docs[0].metadata["namespace"] = "mutated"
    assert store.get_by_ids(["d"])[0].metadata["namespace"] == "kb"


def test_delete_removes_ids_and_ignores_unknown(embeddings: HashingEmbeddings) -> None:
    store = make_store(embeddings)
    assert store.delete(["a", "nope"]) is True
    assert store.delete(["nope"]) is False
    assert store.delete(None) is False
    assert store.get_by_ids(["a"]) == []
    assert "a" not in [d.id for d in store.similarity_search("holodeck safety", k=10)]
    assert store.document_count == 3


def test_many_deletes_compact_and_keep_search_correct(embeddings: HashingEmbeddings) -> None:
    store = MatrixVectorStore(embeddings)
    store.add_texts([f"document number {i}" for i in range(300)], ids=[str(i) for i in range(300)])
    store.delete([str(i) for i in range(0, 300, 3)] + [str(i) for i in range(1, 300, 3)])
    assert store.document_count == 100
    ids = {d.id for d in store.iter_documents()}
    assert ids == {str(i) for i in range(2, 300, 3)}
    hits = store.similarity_search("document number 5", k=100)
    assert {d.id for d in hits} == ids


def test_scores_are_cosine_and_relevance_is_clipped_to_unit(embeddings: HashingEmbeddings) -> None:
    store = MatrixVectorStore(embeddings)
    store.add_vectors(
        [Document(id=i, page_content=i) for i in ("same", "orth", "opposite")],
        [[1.0, 0.0], [0.0, 2.0], [-3.0, 0.0]],
    )
    scored = store.similarity_search_with_score_by_vector([2.0, 0.0], k=3)
    assert [(d.id, round(s, 6)) for d, s in scored] == [
        ("same", 1.0),
        ("orth", 0.0),
        ("opposite", -1.0),
    ]
    fn = store._select_relevance_score_fn()
    assert [fn(s) for _, s in scored] == [1.0, 0.0, 0.0]


def test_relevance_scores_are_in_unit_interval_and_sorted(embeddings: HashingEmbeddings) -> None:
    store = make_store(embeddings)
    results = store.similarity_search_with_relevance_scores("safety protocols", k=4)
    scores = [s for _, s in results]
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert scores == sorted(scores, reverse=True)
    assert results[0][0].id in {"a", "d"}
    above = store.similarity_search_with_relevance_scores(
        "safety protocols", k=4, score_threshold=0.3
    )
    assert {d.id for d, _ in above} == {"a", "d"}


def test_filter_callable_limits_results(embeddings: HashingEmbeddings) -> None:
    store = make_store(embeddings)
    store.add_documents(
        [Document(id="e", page_content="safety first", metadata={"namespace": "x"})]
    )
    hits = store.similarity_search(
        "safety", k=3, filter=lambda d: d.metadata.get("namespace") == "x"
    )
    assert [d.id for d in hits] == ["e"]
    assert store.similarity_search("safety", k=2, filter=lambda d: False) == []


def test_k_larger_than_store_and_empty_store(embeddings: HashingEmbeddings) -> None:
    assert MatrixVectorStore(embeddings).similarity_search("anything", k=3) == []
    store = make_store(embeddings)
    assert len(store.similarity_search("safety", k=50)) == 4
    assert store.similarity_search("safety", k=0) == []


def test_dimension_mismatch_is_rejected(embeddings: HashingEmbeddings) -> None:
    store = MatrixVectorStore(embeddings)
    store.add_vectors([Document(page_content="x")], [[1.0, 0.0, 0.0]])
    assert store.embedding_dimension == 3
    with pytest.raises(ValueError, match="dimension 2 but this store holds dimension 3"):
        store.add_vectors([Document(page_content="y")], [[1.0, 0.0]])
    with pytest.raises(ValueError, match="query vector has dimension 2"):
        store.similarity_search_by_vector([1.0, 0.0])


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), 1e39])  # 1e39: inf in float32
def test_a_non_finite_vector_is_refused(embeddings: HashingEmbeddings, bad: float) -> None:
    store = MatrixVectorStore(embeddings)
    docs = [Document(page_content="x", id="a"), Document(page_content="y", id="b")]
    with pytest.raises(
        ValueError, match=r"vector 1 \(id 'b'\) holds a non-finite number \(inf|nan"
    ):
        store.add_vectors(docs, [[1.0, 0.0], [bad, 0.0]])
    assert store.document_count == 0  # nothing of the call is stored


def test_vectors_of_different_widths_are_named(embeddings: HashingEmbeddings) -> None:
    store = MatrixVectorStore(embeddings)
    docs = [Document(page_content="x", id="a"), Document(page_content="y", id="b")]
    with pytest.raises(ValueError, match=r"vectors have different dimensions \(2, 3\)"):
        store.add_vectors(docs, [[1.0, 0.0], [1.0, 0.0, 0.0]])


def test_length_mismatches_name_the_counts(embeddings: HashingEmbeddings) -> None:
    store = MatrixVectorStore(embeddings)
    with pytest.raises(ValueError, match="ids has 1 entries for 2 documents"):
        store.add_texts(["a", "b"], ids=["1"])
    with pytest.raises(ValueError, match="metadatas has 1 entries for 2 texts"):
        store.add_texts(["a", "b"], metadatas=[{}])


def test_mmr_returns_diverse_results(embeddings: HashingEmbeddings) -> None:
    store = MatrixVectorStore(embeddings)
    store.add_vectors(
        [Document(id=i, page_content=i) for i in ("q1", "q1-dup", "other")],
        [[1.0, 0.05, 0.0], [1.0, 0.06, 0.0], [0.6, 0.0, 0.8]],
    )
    plain = store.similarity_search_by_vector([1.0, 0.0, 0.1], k=2)
    assert [d.id for d in plain] == ["q1", "q1-dup"]
    diverse = store.max_marginal_relevance_search_by_vector(
        [1.0, 0.0, 0.1], k=2, fetch_k=3, lambda_mult=0.3
    )
    assert [d.id for d in diverse] == ["q1", "other"]


def test_metadata_round_trips_unchanged(embeddings: HashingEmbeddings) -> None:
    store = MatrixVectorStore(embeddings)
    store.add_documents([Document(id="x", page_content="text", metadata=CHUNK_META)])
    assert store.get_by_ids(["x"])[0].metadata == CHUNK_META
    assert store.similarity_search("text", k=1)[0].metadata == CHUNK_META


def test_dump_and_load_round_trip(embeddings: HashingEmbeddings, tmp_path: Path) -> None:
    store = make_store(embeddings)
    store.add_documents([Document(id="x", page_content="chunk text", metadata=CHUNK_META)])
    store.delete(["b"])
    store.dump(tmp_path / "idx")
    loaded = MatrixVectorStore.load(tmp_path / "idx", embeddings)
    assert loaded.embedding_dimension == store.embedding_dimension
    ids = ["a", "c", "d", "x"]
    assert loaded.get_by_ids(ids) == store.get_by_ids(ids)
    assert loaded.get_by_ids(["b"]) == []
    assert loaded.similarity_search_with_score("safety protocols", k=5) == (
        store.similarity_search_with_score("safety protocols", k=5)
    )
    np.testing.assert_array_equal(
        np.array(list(loaded.get_vectors(ids).values())),
        np.array(list(store.get_vectors(ids).values())),
    )


def test_dump_replaces_previous_generation_atomically(
    embeddings: HashingEmbeddings, tmp_path: Path
) -> None:
    store = make_store(embeddings)
    store.dump(tmp_path)
    store.delete(["a"])
    store.dump(tmp_path)
    names = sorted(p.name for p in tmp_path.iterdir() if p.name != ".lock")  # the flock file
    assert len(names) == 3
    assert "manifest.json" in names
    assert not [n for n in names if n.endswith(".tmp")]
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["count"] == 3
    assert MatrixVectorStore.load(tmp_path, embeddings).document_count == 3


def test_metadata_json_cannot_hold_stops_the_save_naming_the_document(
    embeddings: HashingEmbeddings, tmp_path: Path
) -> None:
    """A date in metadata: dump raised json's bare 'Object of type date is not JSON
    serializable' after writing the new generation's vectors, which stayed behind."""
    import datetime

    store = make_store(embeddings)
    store.dump(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    when = {"published": datetime.date(2024, 1, 2)}
    store.add_documents([Document(id="dated", page_content="x", metadata=when)])
    with pytest.raises(TypeError, match=r"^metadata of document 'dated' cannot be saved as JSON"):
        store.dump(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing new left behind
    assert MatrixVectorStore.load(tmp_path, embeddings).document_count == 4  # the last save
    store.delete(["dated"])
    store.dump(tmp_path)  # the next save, without it, goes through
    assert MatrixVectorStore.load(tmp_path, embeddings).document_count == 4


def test_empty_store_dump_and_load(embeddings: HashingEmbeddings, tmp_path: Path) -> None:
    MatrixVectorStore(embeddings).dump(tmp_path)
    loaded = MatrixVectorStore.load(tmp_path, embeddings)
    assert loaded.document_count == 0
    assert loaded.similarity_search("x", k=2) == []


def test_load_missing_and_inconsistent_directories(
    embeddings: HashingEmbeddings, tmp_path: Path
) -> None:
    with pytest.raises(FileNotFoundError, match=r"manifest\.json is missing"):
        MatrixVectorStore.load(tmp_path / "nothing", embeddings)
    make_store(embeddings).dump(tmp_path)
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    docs_file = tmp_path / manifest["documents"]
    docs_file.write_text(docs_file.read_text().splitlines()[0] + "\n")
    with pytest.raises(ValueError, match="inconsistent: manifest says 4 documents") as raised:
        MatrixVectorStore.load(tmp_path, embeddings)
    # the fix the message gives works (found 2026-12-07: 'Re-run the ingestion', which failed
    # the same way)
    assert str(raised.value).endswith("Delete the directory and run the ingestion again to "
                                      "rebuild it.")  # fmt: skip


def test_a_save_of_a_newer_version_says_so_not_that_it_is_damaged(
    embeddings: HashingEmbeddings, tmp_path: Path
) -> None:
    make_store(embeddings).dump(tmp_path)
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    (tmp_path / "manifest.json").write_text(json.dumps({**manifest, "version": 2}))
    newer = (
        "was saved by a newer langchain-holodeck (holodeck-matrix-store version 2; this one "
        "reads version 1): upgrade langchain-holodeck, or delete the directory"
    )
    with pytest.raises(ValueError, match=re.escape(newer)):
        MatrixVectorStore.load(tmp_path, embeddings)
    (tmp_path / "manifest.json").write_text(json.dumps({**manifest, "version": "one"}))
    with pytest.raises(ValueError, match=re.escape("version='one'); the save is damaged.")):
        MatrixVectorStore.load(tmp_path, embeddings)


def test_iter_documents_and_scan_by_namespace(embeddings: HashingEmbeddings) -> None:
    store = make_store(embeddings)
    store.add_documents([Document(id="z", page_content="other", metadata={"namespace": "x"})])
    assert {d.id for d in store.iter_documents()} == {"a", "b", "c", "d", "z"}
    assert [d.id for d in scan_documents(store, namespace="x")] == ["z"]
    assert len(list(scan_documents(store, namespace="kb"))) == 4


def test_scan_in_memory_vector_store(embeddings: HashingEmbeddings) -> None:
    store = InMemoryVectorStore(embeddings)
    store.add_documents(
        [
            Document(id="1", page_content="x", metadata={"namespace": "kb", "l": [1]}),
            Document(id="2", page_content="y", metadata={"namespace": "other"}),
        ]
    )
    docs = list(scan_documents(store, namespace="kb"))
    assert docs == [Document(id="1", page_content="x", metadata={"namespace": "kb", "l": [1]})]
    docs[0].metadata["l"].append(2)
    assert store.get_by_ids(["1"])[0].metadata["l"] == [1]


def test_scan_unsupported_store_names_its_class(embeddings: HashingEmbeddings) -> None:
    class OtherStore(InMemoryVectorStore.__base__):  # type: ignore[misc,name-defined]
        def similarity_search(self, query: str, k: int = 4, **kwargs: object) -> list[Document]:
            return []

        @classmethod
        def from_texts(cls, *args: object, **kwargs: object) -> VectorStore:
            raise NotImplementedError

    with pytest.raises(TypeError, match="cannot enumerate documents of OtherStore"):
        scan_documents(OtherStore())
    with pytest.raises(ValueError, match="batch_size must be positive, got 0"):
        scan_documents(MatrixVectorStore(embeddings), batch_size=0)


def test_concurrent_writes_and_queries_never_tear(embeddings: HashingEmbeddings) -> None:
    """Each id's content always carries its own version tag; no query sees a torn chunk."""
    store = MatrixVectorStore(embeddings)
    n_ids = 40
    store.add_texts(
        [f"chunk {i} version 0" for i in range(n_ids)],
        metadatas=[{"version": 0, "i": i} for i in range(n_ids)],
        ids=[f"id{i}" for i in range(n_ids)],
    )
    errors: list[BaseException] = []
    stop = threading.Event()

    def writer() -> None:
        try:
            for version in range(1, 60):
                ids = [f"id{i}" for i in range(n_ids)]
                store.add_texts(
                    [f"chunk {i} version {version}" for i in range(n_ids)],
                    metadatas=[{"version": version, "i": i} for i in range(n_ids)],
                    ids=ids,
                )
                store.delete(ids[:5])
                store.add_texts(
                    [f"chunk {i} version {version}" for i in range(5)],
                    metadatas=[{"version": version, "i": i} for i in range(5)],
                    ids=ids[:5],
                )
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)
        finally:
            stop.set()

    def reader() -> None:
        try:
            while not stop.is_set():
                hits = store.similarity_search("chunk version", k=n_ids)
                seen = [d.id for d in hits]
                assert len(seen) == len(set(seen))
                for doc in hits:
                    i, version = doc.metadata["i"], doc.metadata["version"]
                    assert doc.id == f"id{i}"
                    assert doc.page_content == f"chunk {i} version {version}"
                for doc in store.get_by_ids([f"id{i}" for i in range(n_ids)]):
                    assert doc.page_content.endswith(f"version {doc.metadata['version']}")
        except BaseException as e:
            errors.append(e)
            stop.set()

    threads = [threading.Thread(target=writer)] + [
        threading.Thread(target=reader) for _ in range(3)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert errors == []
    assert store.document_count == n_ids
    assert {d.metadata["version"] for d in store.iter_documents()} == {59}


async def test_async_paths(embeddings: HashingEmbeddings) -> None:
    store = MatrixVectorStore(embeddings)
    ids = await store.aadd_texts(["safety protocols", "tea"], ids=["s", "t"])
    assert ids == ["s", "t"]
    scored = await store.asimilarity_search_with_relevance_scores("safety", k=1)
    assert scored[0][0].id == "s"
    assert 0.0 <= scored[0][1] <= 1.0
    assert [d.id for d in await store.aget_by_ids(["t"])] == ["t"]
    assert await store.adelete(["t"]) is True
    assert [d.id for d in await store.amax_marginal_relevance_search("tea", k=2)] == ["s"]


def test_from_texts_and_clear(embeddings: HashingEmbeddings) -> None:
    store = MatrixVectorStore.from_texts(["a b", "c d"], embeddings, ids=["1", "2"])
    assert store.document_count == 2
    store.clear()
    assert store.document_count == 0
    assert store.similarity_search("a", k=1) == []
    store.add_texts(["e f"], ids=["3"])
    assert [d.id for d in store.similarity_search("e", k=2)] == ["3"]


async def test_from_texts_passes_the_constructor_options_on(
    embeddings: HashingEmbeddings,
) -> None:
    """Found 2026-12-07: from_texts built ``cls(embedding)``, so ``search_mode="exact"`` was
    dropped and ``search_mode="bogus"`` accepted (InMemoryVectorStore passes them on)."""
    store = MatrixVectorStore.from_texts(["a b"], embeddings, search_mode="exact")
    assert store.search_mode == "exact"
    docs = [Document(id="d", page_content="a b")]
    built = await MatrixVectorStore.afrom_documents(docs, embeddings, rescore_candidates=7)
    assert built.rescore_candidates == 7
    assert [d.id for d in built.similarity_search("a", k=1)] == ["d"]
    with pytest.raises(ValueError, match=r"search_mode must be .* got 'bogus'"):
        MatrixVectorStore.from_texts(["a b"], embeddings, search_mode="bogus")
    with pytest.raises(TypeError, match="collection_name"):
        MatrixVectorStore.from_texts(["a b"], embeddings, collection_name="kb")


@dataclass
class FakeDatabaseConfig:
    provider: str = "redis"
    connection_string: SecretStr | None = None
    index_name: str = "holodeck_vectors"
    vector_algorithm: str = "HNSW"
    distance_metric: str = "COSINE"


def test_create_vector_store_defaults_to_memory(embeddings: HashingEmbeddings) -> None:
    assert isinstance(create_vector_store(None, embeddings), MatrixVectorStore)
    handle = create_vector_store_with_status(FakeDatabaseConfig(provider="in-memory"), embeddings)
    assert isinstance(handle, VectorStoreHandle)
    assert (handle.backend, handle.fell_back, handle.reason) == ("in-memory", False, None)


def test_create_vector_store_rejects_bad_settings(embeddings: HashingEmbeddings) -> None:
    expected = "must be 'in-memory' or 'postgres' or 'qdrant' or 'redis', got 'mongo'"
    with pytest.raises(ConfigError, match=expected):
        create_vector_store(FakeDatabaseConfig(provider="mongo"), embeddings)
    with pytest.raises(ConfigError, match="provider 'redis' needs connection_string"):
        create_vector_store(FakeDatabaseConfig(), embeddings)
    bad_metric = FakeDatabaseConfig(
        connection_string=SecretStr("redis://127.0.0.1:1"), distance_metric="dot"
    )
    with pytest.raises(ConfigError, match="distance_metric: Input should be 'COSINE', 'L2'"):
        create_vector_store(bad_metric, embeddings)
    with pytest.raises(ConfigError, match="index_name"):
        create_vector_store(
            {"provider": "redis", "connection_string": "redis://h", "index_name": "a b"}, embeddings
        )


def test_unreachable_redis_falls_back_with_masked_warning(
    embeddings: HashingEmbeddings, caplog: pytest.LogCaptureFixture
) -> None:
    config = FakeDatabaseConfig(
        connection_string=SecretStr("redis://admin:s3cr3t-pw@127.0.0.1:1/0")
    )
    with caplog.at_level(logging.WARNING, logger="langchain_holodeck.vectorstores"):
        handle = create_vector_store_with_status(config, embeddings, connect_timeout=0.5)
    assert isinstance(handle.store, MatrixVectorStore)
    assert (handle.backend, handle.requested, handle.fell_back) == ("in-memory", "redis", True)
    assert handle.reason is not None
    assert "127.0.0.1:1" in handle.reason
    assert "falling back" in caplog.text
    assert "s3cr3t-pw" not in caplog.text
    assert "s3cr3t-pw" not in handle.reason
    assert "s3cr3t-pw" not in repr(handle)
    assert embeddings.calls == 0


def test_unreachable_redis_without_fallback_raises(embeddings: HashingEmbeddings) -> None:
    config = FakeDatabaseConfig(connection_string=SecretStr("redis://u:pw-9x@127.0.0.1:1"))
    with pytest.raises(
        BackendUnavailableError, match=r"Redis at redis://u:\*\*\*@127.0.0.1:1 "
    ) as info:
        create_vector_store(config, embeddings, fallback=False, connect_timeout=0.5)
    assert "pw-9x" not in str(info.value)


def test_fallback_to_memory_false_in_config_raises(embeddings: HashingEmbeddings) -> None:
    config = {
        "provider": "redis",
        "connection_string": "redis://127.0.0.1:1",
        "fallback_to_memory": False,
    }
    with pytest.raises(BackendUnavailableError, match="is unavailable"):
        create_vector_store(config, embeddings, connect_timeout=0.5)
    # the default (true) falls back
    config["fallback_to_memory"] = True
    handle = create_vector_store_with_status(config, embeddings, connect_timeout=0.5)
    assert (handle.backend, handle.requested, handle.fell_back) == ("in-memory", "redis", True)


def test_relevance_fn_per_metric() -> None:
    from langchain_holodeck.vectorstores.redis import relevance_fn

    assert relevance_fn("COSINE")(0.2) == pytest.approx(0.8)
    assert relevance_fn("COSINE")(1.5) == 0.0
    assert relevance_fn("IP")(-0.0000001) == 1.0
    assert relevance_fn("L2")(0.5) == pytest.approx(0.75)
    assert relevance_fn("L2")(4.0) == 0.0
    with pytest.raises(ValueError, match="got 'HAMMING'"):
        relevance_fn("hamming")


def test_add_vectors_normalizes_its_own_copy_never_the_callers_array() -> None:
    import numpy as np
    from langchain_core.documents import Document

    vectors = np.array([[3.0, 4.0], [0.0, 2.0]], dtype=np.float32)
    before = vectors.copy()
    store = MatrixVectorStore(None)  # type: ignore[arg-type]  # vectors are given
    store.add_vectors(
        [Document(id="a", page_content="a"), Document(id="b", page_content="b")], vectors
    )
    assert np.array_equal(vectors, before)
    hits = store.similarity_search_with_score_by_vector([1.0, 0.0], k=2)
    assert [(d.id, round(s, 6)) for d, s in hits] == [("a", 0.6), ("b", 0.0)]


def test_rows_tied_at_the_cut_are_the_lower_ones() -> None:
    """``top_k_rows``' contract (ties: lower row first) holds where ties straddle the k-th."""
    from langchain_holodeck.vectorstores._ranking import top_k_rows

    rng = np.random.default_rng(0)
    for _ in range(100):
        n = int(rng.integers(2, 3000))
        scores = rng.integers(0, 4, n).astype(np.float32)  # a few values: many ties
        for k in (1, int(rng.integers(1, n)), n):
            expected = np.lexsort((np.arange(n), -scores))[:k]
            np.testing.assert_array_equal(top_k_rows(scores, k), expected)


def test_duplicate_chunks_come_back_in_the_order_they_were_added(embeddings) -> None:
    """The same text in many files: equal vectors; a search returns the first added first."""
    store = MatrixVectorStore(embeddings)
    store.add_documents(
        [Document(id=f"copy-{n:04d}", page_content="license header") for n in range(2000)]
        + [Document(id="other", page_content="boarding pass")]
    )
    found = [d.id for d in store.similarity_search("license header", k=5)]
    assert found == [f"copy-{n:04d}" for n in range(5)]


def test_a_bad_k_is_named_by_every_search(embeddings: HashingEmbeddings) -> None:
    check_bad_k_is_named(MatrixVectorStore(embeddings))


def test_a_misspelt_filter_is_refused_by_every_search(embeddings: HashingEmbeddings) -> None:
    """``filters=`` was dropped: the search ran unfiltered (late probe, 2026-12-07)."""
    check_misspelt_filter_is_refused(
        MatrixVectorStore(embeddings),
        {"source_path": "a.md"},
        wrong_type="source_path = 'a.md'",
        wrong_type_error="filter must be a callable taking a Document or a mapping",
    )


def test_the_docstring_example_prints_what_it_says() -> None:
    from langchain_holodeck.embeddings import OnnxEmbeddings

    store = MatrixVectorStore(OnnxEmbeddings())
    store.add_documents([Document(page_content="Shifts rotate weekly.", id="a")])
    [(_, score)] = store.similarity_search_with_relevance_scores("shift rotation", k=1)
    assert f"{score:.2f})]  (the default MiniLM)" in str(MatrixVectorStore.__doc__)


def test_a_merging_dump_tells_the_deletions_another_save_made_first(tmp_path: Path) -> None:
    """Two copies of one save delete the same id; the second to save finds it gone."""
    docs = [Document(page_content=t, id=t) for t in ("alpha", "beta", "gamma")]
    first = MatrixVectorStore(HashingEmbeddings())
    first.add_documents(docs)
    first.dump(tmp_path)
    one = MatrixVectorStore.load(tmp_path, HashingEmbeddings())
    two = MatrixVectorStore.load(tmp_path, HashingEmbeddings())
    assert one.delete_existing(["alpha", "beta"]) == ["alpha", "beta"]
    assert two.delete_existing(["alpha"]) == ["alpha"]  # counted by both copies
    assert one.unsaved_deletions == {"alpha", "beta"}
    one.dump(tmp_path, merge=True)
    assert one.deleted_by_others == frozenset()
    assert one.unsaved_deletions == frozenset()
    two.dump(tmp_path, merge=True)
    assert two.deleted_by_others == {"alpha"}
    assert sorted(d.id for d in two.iter_documents()) == ["gamma"]
