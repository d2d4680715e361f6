"""The Qdrant backend, for real, in qdrant-client's local mode (in-process and on disk)."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
import threading
import uuid
import warnings
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from langchain_core.documents import Document
from langchain_core.vectorstores import VectorStore
from langchain_tests.integration_tests import VectorStoreIntegrationTests

pytest.importorskip("qdrant_client")
pytest.importorskip("langchain_qdrant")

from qdrant_client import QdrantClient

from langchain_holodeck.backends import get_backend, open_vector_store
from langchain_holodeck.backends.qdrant import (
    BM25SparseEncoder,
    HolodeckQdrantVectorStore,
    QdrantDatabaseConfig,
    build_qdrant_store,
    point_id,
)
from langchain_holodeck.config import HierarchicalDocumentToolConfig
from langchain_holodeck.errors import ConfigError
from langchain_holodeck.search_strategy import supports_native_hybrid
from langchain_holodeck.sync import stable_id, sync_documents
from langchain_holodeck.tools import HierarchicalDocumentTool
from langchain_holodeck.vectorstores import MatrixVectorStore, create_vector_store_with_status
from tests.helpers import DATA_DIR, HashingEmbeddings, check_bad_k_is_named


def memory_store(embeddings: HashingEmbeddings) -> HolodeckQdrantVectorStore:
    return HolodeckQdrantVectorStore(
        QdrantClient(location=":memory:"), f"t_{uuid.uuid4().hex[:8]}", embeddings
    )


class TestQdrantVectorStoreStandard(VectorStoreIntegrationTests):
    @pytest.fixture
    def vectorstore(self) -> VectorStore:
        return HolodeckQdrantVectorStore(
            QdrantClient(location=":memory:"), "standard", self.get_embeddings()
        )


def chunks(source: str, texts: list[str], namespace: str = "kb") -> list[Document]:
    return [
        Document(
            page_content=text,
            metadata={"source": source, "source_path": source, "chunk_index": i},
        )
        for i, text in enumerate(texts)
    ]


CORPUS = [
    *chunks("a.md", ["arch controls and safety", "shift rotation schedule", "holodeck grid"]),
    *chunks("b.md", ["warp core maintenance", "replicator recipes"]),
]


def test_sync_twice_adds_nothing_and_embeds_nothing(embeddings: HashingEmbeddings) -> None:
    store = memory_store(embeddings)
    assert sync_documents(CORPUS, store, namespace="kb").added == 5
    calls = embeddings.texts_embedded
    result = sync_documents(CORPUS, store, namespace="kb")
    assert (result.added, result.updated, result.skipped) == (0, 0, 5)
    assert embeddings.texts_embedded == calls


def test_two_corpora_in_one_collection_never_see_or_delete_each_other(
    embeddings: HashingEmbeddings,
) -> None:
    store = memory_store(embeddings)
    sync_documents(CORPUS, store, namespace="one")
    sync_documents(CORPUS[:3], store, namespace="two")
    # corpus one drops b.md (cleanup) and shrinks a.md: corpus two keeps all three chunks
    result = sync_documents(CORPUS[:1], store, namespace="one", cleanup=True)
    assert result.deleted == 4
    two = list(store.iter_documents(namespace="two"))
    assert len(two) == 3
    assert len(list(store.iter_documents(namespace="one"))) == 1
    hits = store.native_hybrid_search(
        "shift rotation schedule", k=5, fetch_k=5, filter=store.namespace_filter("one")
    )
    assert [h.document.metadata["namespace"] for h in hits] == ["one"]
    dense = store.similarity_search("shift rotation", k=5, filter=store.namespace_filter("two"))
    assert {d.metadata["namespace"] for d in dense} == {"two"}


def test_hybrid_search_fuses_dense_and_bm25_in_one_request(
    embeddings: HashingEmbeddings,
) -> None:
    store = memory_store(embeddings)
    docs = [
        Document(id="kw", page_content="the replicator uses quantum flux capacitors"),
        Document(id="other", page_content="crew schedules for the night shift"),
        Document(id="third", page_content="flux readings of the warp core"),
    ]
    store.add_documents(docs)
    hits = store.native_hybrid_search("quantum flux capacitor", k=3, fetch_k=3)
    assert hits[0].document.id == "kw"  # best on both legs; stemming matches "capacitor(s)"
    assert hits[0].score > hits[-1].score
    assert all(0.0 <= h.similarity <= 1.0 for h in hits)  # type: ignore[operator]
    keyword_only = store.native_hybrid_search("quantum flux", k=1, weights=(0.0, 1.0))
    assert keyword_only[0].document.id == "kw"
    # a query of stop words only runs the dense leg alone
    assert len(store.native_hybrid_search("the of and", k=2)) == 2
    assert supports_native_hybrid(store)


def test_min_similarity_score_applies_to_keyword_hits_too(embeddings: HashingEmbeddings) -> None:
    store = memory_store(embeddings)
    store.add_documents(
        [
            Document(id="near", page_content="alpha beta"),
            Document(id="far", page_content="alpha gamma delta epsilon zeta eta theta"),
        ]
    )
    scores = {d.id: s for d, s in store.similarity_search_with_relevance_scores("alpha")}
    assert scores["near"] > scores["far"]
    threshold = (scores["near"] + scores["far"]) / 2
    assert len(store.native_hybrid_search("alpha", k=5)) == 2  # both match the keyword
    hits = store.native_hybrid_search("alpha", k=5, min_similarity_score=threshold)
    assert [h.document.id for h in hits] == ["near"]
    assert hits[0].similarity == pytest.approx(scores["near"], abs=1e-5)
    assert store.native_hybrid_search("zeta", k=5, min_similarity_score=0.999) == []


def test_ids_and_metadata_round_trip_unchanged(embeddings: HashingEmbeddings) -> None:
    store = memory_store(embeddings)
    meta = {"namespace": "kb", "tags": ["x", "y"], "n": 3, "nested": {"a": 1.5}, "ok": True}
    uid = str(uuid.uuid4())
    store.add_documents(
        [
            Document(id="plain-id", page_content="one", metadata=meta),
            Document(id=uid, page_content="two"),
        ]
    )
    got = store.get_by_ids([uid, "plain-id", "missing"])
    assert [d.id for d in got] == [uid, "plain-id"]
    assert got[1].metadata == meta
    assert point_id(uid) == uid
    assert uuid.UUID(point_id("plain-id")).version == 5
    assert point_id("plain-id") != point_id("plain-id2")


async def test_documents_without_ids_beside_ones_with_ids_each_get_their_own(
    embeddings: HashingEmbeddings,
) -> None:
    store = memory_store(embeddings)
    ids = store.add_documents(
        [
            Document(id="given", page_content="one"),
            Document(page_content="two"),
            Document(page_content="three"),
        ]
    )
    ids += await store.aadd_documents(
        [Document(id="b", page_content="four"), Document(page_content="five")]
    )
    assert ids[0] == "given"
    assert ids[3] == "b"
    assert len(set(ids)) == 5
    assert "None" not in ids
    got = store.get_by_ids(ids)
    assert [(d.id, d.page_content) for d in got] == list(
        zip(ids, ["one", "two", "three", "four", "five"], strict=True)
    )


async def test_from_documents_builds_this_store_with_the_given_ids(
    embeddings: HashingEmbeddings, tmp_path: Path
) -> None:
    docs = [
        Document(id="a", page_content="arch controls", metadata={"n": 1}),
        Document(page_content="warp core"),
    ]
    store = HolodeckQdrantVectorStore.from_documents(docs, embeddings, location=":memory:")
    assert isinstance(store, HolodeckQdrantVectorStore)
    assert [(d.id, d.metadata) for d in store.get_by_ids(["a"])] == [("a", {"n": 1})]
    assert len(list(store.iter_documents())) == 2
    on_disk = await HolodeckQdrantVectorStore.afrom_texts(
        ["replicator tea"], embeddings, ids=["t"], path=str(tmp_path / "q"), collection_name="c"
    )
    assert [d.page_content for d in on_disk.get_by_ids(["t"])] == ["replicator tea"]
    on_disk.client.close()
    with pytest.raises(ValueError, match="needs a client, or exactly one of location"):
        HolodeckQdrantVectorStore.from_texts(["x"], embeddings)
    with pytest.raises(ValueError, match=r"got client=None, location=':memory:', url='http"):
        HolodeckQdrantVectorStore.from_texts(
            ["x"], embeddings, location=":memory:", url="http://localhost:6333"
        )


def test_from_existing_collection_reopens_a_collection(
    embeddings: HashingEmbeddings, tmp_path: Path
) -> None:
    where = str(tmp_path / "q")
    first = HolodeckQdrantVectorStore.from_texts(
        ["arch controls"], embeddings, ids=["a"], path=where, collection_name="docs"
    )
    first.client.close()
    again = HolodeckQdrantVectorStore.from_existing_collection("docs", embeddings, path=where)
    assert isinstance(again, HolodeckQdrantVectorStore)
    assert [d.id for d in again.similarity_search("arch controls", k=1)] == ["a"]
    with pytest.raises(ValueError, match="collection_name 'nope' does not exist"):
        HolodeckQdrantVectorStore.from_existing_collection("nope", embeddings, client=again.client)
    again.client.close()


def test_relevance_scores_are_clipped_cosine(embeddings: HashingEmbeddings) -> None:
    store = memory_store(embeddings)
    store.add_documents(
        [Document(id="a", page_content="alpha"), Document(id="b", page_content="zeta")]
    )
    scored = store.similarity_search_with_relevance_scores("alpha", k=2)
    assert scored[0][0].id == "a"
    assert scored[0][1] == pytest.approx(1.0, abs=1e-5)
    assert all(0.0 <= s <= 1.0 for _, s in scored)


MMR_TEXTS = ["fish fish fish", "fish fish fish one", "fish fish fish two", "cat dog", "bird"]


async def test_mmr_keeps_ids_and_metadata_and_reads_lambda_mult_as_langchain_does(
    embeddings: HashingEmbeddings,
) -> None:
    store = memory_store(embeddings)
    store.add_documents(
        [Document(id=f"d{i}", page_content=t, metadata={"i": i}) for i, t in enumerate(MMR_TEXTS)]
    )
    relevant = store.max_marginal_relevance_search("fish fish fish", k=3, lambda_mult=1.0)
    assert sorted((d.id, d.metadata["i"]) for d in relevant) == [(f"d{i}", i) for i in range(3)]
    assert all(d.metadata == {"i": int(d.id[1:])} for d in relevant)
    diverse = store.as_retriever(
        search_type="mmr", search_kwargs={"k": 3, "lambda_mult": 0.0}
    ).invoke("fish fish fish")
    assert [d.id for d in diverse][:1] == ["d0"]
    assert {"d1", "d2"}.isdisjoint(d.id for d in diverse)
    assert diverse[1].metadata == {"i": int(diverse[1].id[1:])}
    again = await store.amax_marginal_relevance_search("fish fish fish", k=3, lambda_mult=1.0)
    assert sorted(d.id for d in again) == ["d0", "d1", "d2"]


def test_a_mapping_filter_means_what_it_means_on_the_in_memory_store(
    embeddings: HashingEmbeddings,
) -> None:
    docs = [
        Document(id=f"d{i}", page_content=f"reactor notes {i}", metadata=meta)
        for i, meta in enumerate(
            [{"team": "a", "n": 1}, {"team": "b", "n": 1}, {"team": "a", "n": 2}, {"ok": True}]
        )
    ]
    store, memory = memory_store(embeddings), MatrixVectorStore(embeddings)
    for target in (store, memory):
        target.add_documents(docs)
    for mapping in ({"team": "a"}, {"team": "a", "n": 1}, {"ok": True}, {"team": "z"}):
        want = sorted(d.id for d in memory.similarity_search("reactor", k=4, filter=mapping))
        assert sorted(d.id for d in store.similarity_search("reactor", k=4, filter=mapping)) == (
            want
        )
        hits = store.native_hybrid_search("reactor notes", k=4, filter=mapping)
        assert sorted(h.document.id for h in hits) == want
    mmr = store.max_marginal_relevance_search("reactor", k=4, filter={"team": "b"})
    assert [d.id for d in mmr] == ["d1"]
    retriever = store.as_retriever(search_kwargs={"k": 4, "filter": {"team": "a"}})
    assert sorted(d.id for d in retriever.invoke("reactor")) == ["d0", "d2"]
    with pytest.raises(TypeError, match=r"filter\['n'\] must be a str, int or bool.*got float"):
        store.similarity_search("reactor", filter={"n": 1.5})
    with pytest.raises(TypeError, match=r"filter must be a qdrant_client\.models\.Filter or a"):
        store.similarity_search("reactor", filter="team == 'a'")


async def test_a_mapping_filter_holds_the_retrievers_keyword_hits_too(
    embeddings: HashingEmbeddings,
) -> None:
    from langchain_holodeck.keyword_index import BM25KeywordIndex
    from langchain_holodeck.retrievers import HybridRetriever

    docs = [
        Document(id=f"d{i}", page_content=text, metadata={"team": team, "tags": [team, "x"]})
        for i, (text, team) in enumerate(
            [("interlock one", "a"), ("interlock two", "b"), ("warp", "a"), ("tea", "b")]
        )
    ]
    store = memory_store(embeddings)
    store.add_documents(docs)
    bm25 = BM25KeywordIndex()
    bm25.upsert(docs)
    for only in ({"team": "a"}, {"tags": "a"}):
        retriever = HybridRetriever(
            vector_store=store, keyword_index=bm25, k=4, search_kwargs={"filter": only}
        )
        found = [d.id for d in retriever.invoke("interlock")]
        assert found[0] == "d0", only
        assert set(found) <= {"d0", "d2"}, only  # team a only: no keyword hit of team b
        assert [d.id for d in await retriever.ainvoke("interlock")] == found
    unfiltered = HybridRetriever(vector_store=store, keyword_index=bm25, k=4)
    assert "d1" in {d.id for d in unfiltered.invoke("interlock")}  # else nothing is tested
    everyone = store.namespace_filter("kb")  # a Filter: Qdrant's to evaluate, as before
    assert store.document_filter(everyone)(docs[1])
    with pytest.raises(TypeError, match=r"filter\['team'\] must be a str, int or bool"):
        store.document_filter({"team": None})


@pytest.mark.parametrize("strategy", ["native", "fallback"])
def test_a_search_kwarg_the_qdrant_search_does_not_take_is_refused(
    embeddings: HashingEmbeddings, strategy: str
) -> None:
    """'filters' for 'filter' passed the check: native_hybrid_search raised TypeError at each
    query (exact hits only), the fallback's query_points an AssertionError (keyword hits only,
    unfiltered), each served as an outage with a WARNING."""
    from langchain_holodeck.keyword_index import BM25KeywordIndex
    from langchain_holodeck.retrievers import HybridRetriever

    store = memory_store(embeddings)
    ids = store.add_documents(CORPUS)
    bm25 = BM25KeywordIndex()
    bm25.upsert([d.model_copy(update={"id": i}) for d, i in zip(CORPUS, ids, strict=True)])
    parts = {"vector_store": store, "keyword_index": bm25, "search_strategy": strategy, "k": 2}
    only_a = {"filter": {"source_path": "a.md"}}
    with pytest.raises(ValueError, match=r"search_kwargs 'filters' is not an argument of Holo"):
        HybridRetriever(**parts, search_kwargs={"filters": only_a["filter"]})
    with pytest.raises(TypeError, match=r"filter must be a qdrant_client.models.Filter"):
        HybridRetriever(**parts, search_kwargs={"filter": lambda d: True})
    taken = dict(only_a)
    if strategy == "fallback":  # an option query_points takes, handed on by the search
        taken["timeout"] = 10
    found = HybridRetriever(**parts, search_kwargs=taken).invoke("warp core maintenance")
    assert found
    assert {d.metadata["source_path"] for d in found} == {"a.md"}


def test_a_bad_k_is_named_by_every_search(embeddings: HashingEmbeddings) -> None:
    check_bad_k_is_named(memory_store(embeddings))


@pytest.mark.parametrize(("k", "fetch_k"), [(True, 5), (2, True)])
def test_a_bool_k_of_the_native_hybrid_search_is_refused(
    embeddings: HashingEmbeddings, k: int, fetch_k: int
) -> None:
    """check_native_hybrid_args, every store's: k=True was one hit (a bool is an int)."""
    store = memory_store(embeddings)
    with pytest.raises(ValueError, match=r"k and fetch_k must be positive integers, got k="):
        store.native_hybrid_search("fish", k=k, fetch_k=fetch_k)


def test_calls_into_a_local_client_take_turns(embeddings: HashingEmbeddings) -> None:
    """Local mode is not thread-safe: two stores' writes on one client never overlap."""
    client = QdrantClient(location=":memory:")
    stores = [HolodeckQdrantVectorStore(client, "shared", embeddings) for _ in range(2)]
    stores[0].add_documents([Document(id="seed", page_content="seed")])
    both_inside = threading.Barrier(2, timeout=1)
    overlapped: list[bool] = []
    upsert = client.upsert

    def meeting_upsert(*args: object, **kwargs: object) -> object:
        try:
            both_inside.wait()  # passes only if the other thread is inside upsert too
            overlapped.append(True)
        except threading.BrokenBarrierError:
            overlapped.append(False)
        return upsert(*args, **kwargs)

    client.upsert = meeting_upsert  # type: ignore[method-assign]  # the real call, observed
    with ThreadPoolExecutor(2) as pool:
        ids = list(
            pool.map(
                lambda n: stores[n].add_documents([Document(id=f"w{n}", page_content="a b")]),
                range(2),
            )
        )
    assert ids == [["w0"], ["w1"]]
    assert overlapped == [False, False]
    third = HolodeckQdrantVectorStore(stores[0].client, "shared", embeddings)  # a store's client
    assert third.client._lock is stores[0].client._lock  # type: ignore[attr-defined]  # LocalClient
    assert {d.id for d in stores[1].iter_documents()} == {"seed", "w0", "w1"}


def test_threads_writing_one_path_store_lose_nothing(
    embeddings: HashingEmbeddings, tmp_path: Path
) -> None:
    client = QdrantClient(path=str(tmp_path / "q"))
    store = HolodeckQdrantVectorStore(client, "c", embeddings)

    def write(n: int) -> None:
        store.add_documents(
            [Document(id=f"w{n}-{j}", page_content=f"alpha beta {n} {j}") for j in range(10)]
        )
        store.delete([f"w{n}-0"])
        store.similarity_search("alpha", k=3)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(write, range(12)))
    assert len(list(store.iter_documents())) == 12 * 9
    client.close()


def test_reads_before_the_first_write_return_nothing(embeddings: HashingEmbeddings) -> None:
    store = memory_store(embeddings)
    assert store.similarity_search("x") == []
    assert store.max_marginal_relevance_search("x") == []
    assert store.native_hybrid_search("x") == []
    assert store.get_by_ids(["a"]) == []
    assert list(store.iter_documents()) == []
    assert store.delete(["a"]) is False
    assert store.delete(None) is False


async def test_delete_says_whether_it_deleted_anything_as_the_other_stores(
    embeddings: HashingEmbeddings,
) -> None:
    """Unknown ids: False (not True); ``None``: nothing deleted, False (not a ValueError)."""
    docs = [Document(id=i, page_content=f"text {i}") for i in ("a", "b", "c")]
    for store in (memory_store(embeddings), MatrixVectorStore(embeddings)):
        store.add_documents(docs)
        answers = [
            store.delete(["unknown-id"]),
            store.delete(None),
            store.delete([]),
            store.delete(["a", "unknown-id", "a"]),
            await store.adelete(["b"]),
            await store.adelete(None),
        ]
        assert answers == [False, False, False, True, True, False], type(store).__name__
        assert [d.id for d in store.get_by_ids(["a", "b", "c"])] == ["c"]


def test_bm25_encoder_is_stable_and_saturates_term_frequency() -> None:
    encoder = BM25SparseEncoder()
    indices, values = encoder.encode_document("Flux flux FLUX capacitors of the core")
    again, _ = BM25SparseEncoder().encode_document("flux capacitor core")
    assert set(again) <= set(indices)  # same stems, same indices, in a fresh process state
    weights = dict(zip(indices, values, strict=True))
    flux = weights[encoder.index_of("flux")]
    core = weights[encoder.index_of("core")]
    assert core < flux < 3 * core  # tf 3 weighs more than tf 1, but far less than 3x
    assert encoder.encode_query("the of and") == ([], [])
    assert encoder.encode_query("flux flux core")[1] == [1.0, 1.0]
    with pytest.raises(ValueError, match="k1=0"):
        BM25SparseEncoder(k1=0)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({}, "exactly one of location"),
        ({"location": ":memory:", "path": "x"}, "exactly one of location"),
        ({"url": "localhost:6333"}, "got 'localhost:6333'"),
        ({"path": "x", "api_key": "k"}, "api_key is only used with url"),
    ],
)
def test_config_errors_name_the_bad_value(fields: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        QdrantDatabaseConfig(provider="qdrant", **fields)


def test_create_vector_store_builds_qdrant(embeddings: HashingEmbeddings) -> None:
    handle = create_vector_store_with_status(
        {"provider": "qdrant", "location": ":memory:", "collection_name": "c1"}, embeddings
    )
    assert handle.backend == "qdrant"
    assert isinstance(handle.store, HolodeckQdrantVectorStore)
    with pytest.raises(ConfigError, match="got 'qdrantt'"):
        create_vector_store_with_status({"provider": "qdrantt"}, embeddings)


def test_the_backend_is_registered_and_describes_where_vectors_live(
    embeddings: HashingEmbeddings, tmp_path: Path
) -> None:
    from langchain_holodeck.backends import backend_for_store

    backend = get_backend({"provider": "qdrant", "path": str(tmp_path / "q")})
    assert backend.capabilities.native_hybrid
    assert backend.describe() == f"qdrant path {tmp_path / 'q'}, collection holodeck_vectors"
    store = backend.open_store(embeddings)
    assert type(backend_for_store(store)).__name__ == "QdrantBackend"
    store.add_documents([Document(id="a", page_content="arch", metadata={"namespace": "n"})])
    assert [d.id for d in backend.iter_documents(store, namespace="n")] == ["a"]
    assert backend.iter_documents(store, namespace="other") is not None
    assert list(backend.iter_documents(store, namespace="other")) == []
    scope = backend.namespace_filter(store, "n") or {}
    hits = store.native_hybrid_search("arch", k=1, fetch_k=5, **scope)
    assert [h.document.id for h in hits] == ["a"]
    store.client.close()


def test_an_unreachable_server_falls_back_to_memory_or_raises(
    embeddings: HashingEmbeddings, caplog: pytest.LogCaptureFixture
) -> None:
    from langchain_holodeck.backends import BackendUnavailableError

    config = {"provider": "qdrant", "url": "http://127.0.0.1:1", "timeout": 1}
    with warnings.catch_warnings(record=True) as raised:
        warnings.simplefilter("always")
        handle = open_vector_store(config, embeddings)
    # qdrant-client's own UserWarning ('Failed to obtain server version...') reached the
    # terminal with its source line, above the one error line
    assert [str(w.message) for w in raised if w.category is UserWarning] == []
    assert (handle.backend, handle.requested, handle.fell_back) == ("in-memory", "qdrant", True)
    assert "Qdrant at http://127.0.0.1:1 is unavailable" in (handle.reason or "")
    with pytest.raises(BackendUnavailableError, match=r"127\.0\.0\.1:1"):
        open_vector_store({**config, "fallback_to_memory": False}, embeddings)


def test_path_store_reopens_across_runs(embeddings: HashingEmbeddings, tmp_path: Path) -> None:
    config = QdrantDatabaseConfig(provider="qdrant", path=str(tmp_path / "q"))
    store = build_qdrant_store(config, embeddings)
    sync_documents(CORPUS, store, namespace="kb")
    store.client.close()
    reopened = build_qdrant_store(config, embeddings)
    result = sync_documents(CORPUS, reopened, namespace="kb")
    assert (result.added, result.skipped) == (0, 5)
    assert reopened.get_by_ids([stable_id("kb", "b.md_chunk_1")])[0].page_content == (
        "replicator recipes"
    )
    reopened.client.close()


def test_hierarchical_tool_on_a_qdrant_path_store(
    embeddings: HashingEmbeddings, tmp_path: Path
) -> None:
    legal = tmp_path / "legal"
    shutil.copytree(DATA_DIR / "legal", legal)
    config = HierarchicalDocumentToolConfig(
        type="hierarchical_document",
        name="legal_docs",
        source=str(legal),
        top_k=3,
        database={"provider": "qdrant", "path": str(tmp_path / "q")},
    )
    tool = HierarchicalDocumentTool(
        config, embeddings=embeddings, project_dir=tmp_path, home_dir=tmp_path
    )
    first = tool.initialize_sync()
    assert tool.backend == "qdrant"
    docs = tool.as_retriever().invoke("Section 203(a)(1)")
    assert docs[0].metadata["section_id"] == "203(a)(1)"
    tool._vector_store.client.close()  # type: ignore[union-attr]  # a Qdrant store here
    again = HierarchicalDocumentTool(
        config, embeddings=embeddings, project_dir=tmp_path, home_dir=tmp_path
    )
    second = again.initialize_sync()
    assert (second.added, second.skipped) == (0, first.added)
    assert again.as_retriever().invoke("Section 203(a)(1)")[0].metadata["section_id"] == (
        "203(a)(1)"
    )


def test_a_qdrant_path_inside_the_source_is_not_read_as_a_source_file(
    embeddings: HashingEmbeddings, tmp_path: Path
) -> None:
    (tmp_path / "a.md").write_text("# Tokens\n\nRevoke a token in settings.\n")
    config = HierarchicalDocumentToolConfig(
        type="hierarchical_document",
        name="kb",
        source=str(tmp_path),
        database={"provider": "qdrant", "path": str(tmp_path / "qdata")},
    )
    tool = HierarchicalDocumentTool(
        config, embeddings=embeddings, project_dir=tmp_path, home_dir=tmp_path
    )
    first = tool.initialize_sync()
    assert (tmp_path / "qdata" / "meta.json").is_file()
    second = tool.initialize_sync()  # meta.json, read, was added here and updated after
    assert (first.added, second.added, second.updated, second.skipped) == (1, 0, 0, 1)
    tool._vector_store.client.close()  # type: ignore[union-attr]  # a Qdrant store here


def _project(tmp_path: Path, database: str) -> Path:
    """A project with two corpora and an agent.yaml whose tools use ``database``."""
    project = tmp_path / "proj"
    for name, text in [("a", "thorium reactor notes"), ("b", "plutonium reactor notes")]:
        (project / name).mkdir(parents=True)
        (project / name / f"{name}.md").write_text(f"# {name}\n\n{text}\n")
    (project / "agent.yaml").write_text(
        "tools:\n"
        f"  - {{type: vectorstore, name: ta, source: a, database: {database}}}\n"
        f"  - {{type: vectorstore, name: tb, source: b, database: {database}}}\n"
    )
    return project


def test_a_relative_qdrant_path_resolves_against_the_agent_yaml_like_source(
    embeddings: HashingEmbeddings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langchain_holodeck.tools import load_tools

    project = _project(tmp_path, "{provider: qdrant, path: qstore}")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # run from another directory
    (first, _) = load_tools(
        project / "agent.yaml", project_dir=tmp_path, home_dir=tmp_path, embeddings=embeddings
    )
    assert first.initialize_sync().added == 1
    assert (project / "qstore").is_dir()
    assert not (elsewhere / "qstore").exists()
    assert first.describe_storage().startswith(f"qdrant path {project / 'qstore'}")
    monkeypatch.chdir(project)  # the same store from the project directory: nothing re-embedded
    (again, _) = load_tools(
        "agent.yaml", project_dir=tmp_path, home_dir=tmp_path, embeddings=embeddings
    )
    assert (again.initialize_sync().added, again.corpus.store is not None) == (0, True)


def test_a_relative_qdrant_path_in_the_project_config_resolves_against_the_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langchain_holodeck.config import load_project_database_config

    (tmp_path / "proj" / ".holodeck").mkdir(parents=True)
    config_file = tmp_path / "proj" / ".holodeck" / "config.yaml"
    config_file.write_text("vectorstore: {provider: qdrant, path: qstore}\n")
    monkeypatch.chdir(tmp_path)
    database = load_project_database_config(config_file)
    assert isinstance(database, QdrantDatabaseConfig)
    assert database.path == "qstore"  # as configured, for display
    assert database.resolved_path() == tmp_path / "proj" / "qstore"


def test_tools_of_one_process_share_a_qdrant_path_and_keep_their_corpora_apart(
    embeddings: HashingEmbeddings,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from langchain_holodeck.tools import load_tools

    project = _project(tmp_path, "{provider: qdrant, path: qstore}")
    monkeypatch.chdir(tmp_path)
    ta, tb = load_tools(
        project / "agent.yaml", project_dir=tmp_path, home_dir=tmp_path, embeddings=embeddings
    )
    with caplog.at_level("WARNING"):
        assert (ta.initialize_sync().added, tb.initialize_sync().added) == (1, 1)
    assert "in use by another process" not in caplog.text
    assert (ta.backend, tb.backend) == ("qdrant", "qdrant")
    assert (ta.fallback_reason, tb.fallback_reason) == (None, None)
    found = {
        t.name: {d.metadata["source_path"] for d in t.as_retriever().invoke("reactor notes")}
        for t in (ta, tb)
    }
    assert found == {"ta": {"a/a.md"}, "tb": {"b/b.md"}}


def test_a_relative_qdrant_path_follows_a_tools_own_base_dir(
    embeddings: HashingEmbeddings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langchain_holodeck.config import VectorStoreToolConfig
    from langchain_holodeck.tools import VectorStoreTool

    project = _project(tmp_path, "{provider: qdrant, path: qstore}")
    monkeypatch.chdir(tmp_path)
    config = VectorStoreToolConfig(
        type="vectorstore", name="ta", source="a", database={"provider": "qdrant", "path": "q2"}
    )
    tool = VectorStoreTool(
        config, embeddings=embeddings, base_dir=project, project_dir=tmp_path, home_dir=tmp_path
    )
    assert tool.initialize_sync().added == 1  # source and path: both under base_dir
    assert (project / "q2").is_dir()
    assert not (tmp_path / "q2").exists()


@contextlib.contextmanager
def held_by_another_process(path: Path) -> Iterator[None]:
    """``path`` (a Qdrant local directory) open in another process, which holds its lock."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from qdrant_client import QdrantClient; "
            f"c = QdrantClient(path={str(path)!r}); print('ready', flush=True); sys.stdin.read()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "ready"
        yield
    finally:
        holder.communicate(input="", timeout=30)


def test_a_qdrant_path_held_by_another_process_is_named_as_such(
    embeddings: HashingEmbeddings, tmp_path: Path
) -> None:
    from langchain_holodeck.backends import BackendUnavailableError

    path = tmp_path / "held"
    with held_by_another_process(path):
        backend = get_backend({"provider": "qdrant", "path": str(path)})
        with pytest.raises(BackendUnavailableError, match=f"Qdrant path {path} is in use by an"):
            backend.open_store(embeddings)


def test_a_search_while_another_process_holds_the_path_says_why_it_embedded(
    tmp_path: Path,
) -> None:
    """A search during an ingest that holds the Qdrant ``path:`` falls back to memory (as
    documented) and embeds the corpus there; it said 'docs changed since the last ingest',
    though nothing had (found 2026-12-07, a probe). Each command is its own process, as a
    user runs them: one holding the path keeps its lock until it exits."""
    from tests.unit_tests.test_first_hour import cli

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "reactor.md").write_text("# Reactor\n\nThorium at 40 percent.\n")
    (tmp_path / "agent.yaml").write_text(
        "tools:\n  - {type: vectorstore, name: kb, description: d, source: docs,\n"
        "     embedding_model: sentence-transformers/all-MiniLM-L6-v2,\n"
        "     database: {provider: qdrant, path: qd}}\n"
    )
    ingest = cli(tmp_path, "-q", "ingest", "--config", "agent.yaml")
    assert ingest.returncode == 0, ingest.stderr
    with held_by_another_process(tmp_path / "qd"):  # as an ingest in another process does
        search = cli(tmp_path, "search", "--config", "agent.yaml", "thorium")
    assert search.returncode == 0, search.stderr
    assert "changed since the last ingest" not in search.stderr
    assert (
        "note: qdrant is unavailable, so this search ran on an in-memory copy of docs made "
        "now (1 chunks embedded, 0 failed); the source did not necessarily change."
    ) in search.stderr


def test_the_cli_keeps_two_corpora_of_one_qdrant_collection_in_sync_and_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """ingest, ingest again (nothing embedded), edit a file, delete one, search each tool."""
    import json

    from langchain_holodeck.cli.main import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    for path, text in [
        ("a/reactor.md", "# Reactor\n\nThe thorium reactor runs at 40 percent.\n"),
        ("a/shifts.md", "# Shifts\n\nPlutonium shifts rotate weekly.\n"),
        ("b/gamma.md", "# Gamma\n\nPlutonium reactor gamma procedures.\n"),
    ]:
        (tmp_path / path).parent.mkdir(exist_ok=True)
        (tmp_path / path).write_text(text)
    database = "{provider: qdrant, path: qstore, collection_name: shared}"
    (tmp_path / "agent.yaml").write_text(
        "tools:\n"
        f"  - {{type: hierarchical_document, name: ta, source: a, database: {database}}}\n"
        f"  - {{type: vectorstore, name: tb, source: b, database: {database}}}\n"
    )

    def ingest(tool: str) -> str:
        code = main(["ingest", "--config", "agent.yaml", "--tool", tool])
        out, err = capsys.readouterr()
        assert code == 0, err
        return out.split(": ", 1)[1]

    def sources(tool: str) -> set[str]:
        argv = ["search", "plutonium reactor", "--json", "--config", "agent.yaml", "--tool", tool]
        code = main(argv)
        out, err = capsys.readouterr()
        assert code == 0, err
        return {hit["source_path"] for hit in json.loads(out)}

    assert ingest("ta").startswith("2 added, 0 updated, 0 skipped, 0 failed, 0 deleted")
    assert ingest("tb").startswith("1 added, 0 updated, 0 skipped, 0 failed, 0 deleted")
    assert ingest("ta").startswith("0 added, 0 updated, 2 skipped, 0 failed, 0 deleted")
    (tmp_path / "a/reactor.md").write_text("# Reactor\n\nThe thorium reactor runs at 60 percent.\n")
    (tmp_path / "a/shifts.md").unlink()
    assert ingest("ta").startswith("0 added, 1 updated, 0 skipped, 0 failed, 1 deleted")
    assert sources("ta") == {"a/reactor.md"}
    assert sources("tb") == {"b/gamma.md"}
    assert ingest("tb").startswith("0 added, 0 updated, 1 skipped, 0 failed, 0 deleted")


def test_the_docstring_example_prints_what_it_says() -> None:
    store = HolodeckQdrantVectorStore(
        QdrantClient(location=":memory:"), "docs", HashingEmbeddings()
    )
    store.add_documents([Document(id="a", page_content="arch controls")])
    [hit] = store.native_hybrid_search("arch controls", k=1, fetch_k=10)
    shown = f"score={hit.score:.4f}, similarity={hit.similarity:.1f})]"
    assert shown in str(HolodeckQdrantVectorStore.__doc__)
