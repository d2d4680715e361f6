"""The Redis backend of create_vector_store against Redis Stack at REDIS_URL."""

from __future__ import annotations

import contextlib
import logging
import re
import uuid

import pytest
import redis
from langchain_core.documents import Document
from langchain_core.stores import InMemoryByteStore
from langchain_core.vectorstores import VectorStore
from langchain_tests.integration_tests import VectorStoreIntegrationTests
from pydantic import SecretStr
from redisvl.query.filter import Num, Tag

from langchain_holodeck.embeddings import CachedEmbeddings, RedisByteStore
from langchain_holodeck.retrievers import HybridRetriever
from langchain_holodeck.vectorstores import (
    MatrixVectorStore,
    create_vector_store,
    create_vector_store_with_status,
    scan_documents,
)
from langchain_holodeck.vectorstores.redis import HolodeckRedisVectorStore, search_index
from tests.helpers import (
    HashingEmbeddings,
    RedisDatabase,
    check_bad_k_is_named,
    check_misspelt_filter_is_refused,
)

pytestmark = pytest.mark.redis

CHUNK_META = {
    "source": "data/docs/my file, v2.md",
    "source_path": "data/docs/my file, v2.md",
    "file_type": "md",
    "mtime": 1717171717.123456,
    "size_bytes": 2048,
    "chunk_index": 3,
    "parent_chain": ["Title I", "Section 201"],
    "section_id": "201(a)(1)",
    "heading": "Scope — ünïcode",
    "chunk_type": "definition",
    "cross_references": ["4.2", "7"],
    "defined_terms": [],
    "namespace": "kb",
    "chunk_key": "data/docs/my file, v2.md_chunk_3",
    "content_hash": "ab" * 32,
    "chunk_count": 9,
    "embedding_model": "HashingEmbeddings:size=64",
    "flag": True,
    "ratio": 0.1,
    "nothing": None,
    "mixed": [1, 2.5, "x", True, None],
}


def open_store(
    url: str, index: str, embeddings: HashingEmbeddings, **settings: str
) -> HolodeckRedisVectorStore:
    handle = create_vector_store_with_status(
        RedisDatabase(SecretStr(url), index, **settings), embeddings
    )
    assert handle.backend == "redis", handle.reason
    assert isinstance(handle.store, HolodeckRedisVectorStore)
    return handle.store


@pytest.fixture
def store(
    redis_url: str, redis_index_name: str, embeddings: HashingEmbeddings
) -> HolodeckRedisVectorStore:
    return open_store(redis_url, redis_index_name, embeddings)


def docs(namespace: str = "kb") -> list[Document]:
    texts = {
        "a": "holodeck safety protocols require two officers",
        "b": "the replicator menu lists tea earl grey hot",
        "c": "warp core maintenance happens every shift rotation",
        "d": "safety protocols can be disabled by the captain",
    }
    return [
        Document(
            id=f"{namespace}-{key}",
            page_content=text,
            metadata={"namespace": namespace, "source_path": f"docs/{key}.md", "chunk_index": n},
        )
        for n, (key, text) in enumerate(texts.items())
    ]


def test_all_metadata_types_round_trip(store: HolodeckRedisVectorStore) -> None:
    store.add_documents([Document(id="x", page_content="chunk text", metadata=CHUNK_META)])
    (got,) = store.get_by_ids(["x"])
    assert got == Document(id="x", page_content="chunk text", metadata=CHUNK_META)
    (hit,) = store.similarity_search("chunk text", k=1)
    assert hit == got
    assert store.max_marginal_relevance_search("chunk text", k=1, fetch_k=2) == [got]


def test_upsert_replaces_without_duplicates_or_stale_fields(
    store: HolodeckRedisVectorStore,
) -> None:
    store.add_documents(docs())
    store.add_documents(
        [Document(id="kb-a", page_content="tea is served hot", metadata={"chunk_index": 9})]
    )
    ids = sorted(d.id for d in scan_documents(store))  # type: ignore[type-var]
    assert ids == ["kb-a", "kb-b", "kb-c", "kb-d"]
    assert store.get_by_ids(["kb-a"])[0].metadata == {"chunk_index": 9}
    in_kb = store.similarity_search("tea", k=10, filter=Tag("namespace") == "kb")
    assert "kb-a" not in {d.id for d in in_kb}  # its old namespace tag is gone


def test_get_by_ids_order_and_missing(store: HolodeckRedisVectorStore) -> None:
    store.add_documents(docs())
    assert [d.id for d in store.get_by_ids(["kb-d", "nope", "kb-a"])] == ["kb-d", "kb-a"]
    assert store.get_by_ids([]) == []


def test_from_documents_and_from_texts_keep_the_given_ids(
    redis_url: str, redis_index_name: str, embeddings: HashingEmbeddings
) -> None:
    built = HolodeckRedisVectorStore.from_documents(
        [*docs(), Document(page_content="an id-less chunk")],
        embeddings,
        redis_url=redis_url,
        index_name=redis_index_name,
    )
    assert isinstance(built, HolodeckRedisVectorStore)
    want = [d.id for d in docs()]
    assert [d.id for d in built.get_by_ids(want)] == want
    assert built.similarity_search("safety protocols officers", k=1)[0].id == "kb-a"
    assert len(built.similarity_search("an id-less chunk", k=10)) == 5  # it got its own id
    texts = HolodeckRedisVectorStore.from_texts(
        ["replicator tea"], embeddings, ids=["t1"], redis_url=redis_url, index_name=redis_index_name
    )
    assert [d.page_content for d in texts.get_by_ids(["t1"])] == ["replicator tea"]


def test_a_bad_k_is_named_by_every_search(store: HolodeckRedisVectorStore) -> None:
    check_bad_k_is_named(store)


def test_delete(store: HolodeckRedisVectorStore) -> None:
    store.add_documents(docs())
    assert store.delete(["kb-a", "nope"]) is True
    assert store.delete(["nope"]) is False
    assert store.get_by_ids(["kb-a"]) == []
    assert "kb-a" not in {d.id for d in store.similarity_search("holodeck safety", k=10)}


@pytest.mark.parametrize(
    ("algorithm", "metric"),
    [("FLAT", "COSINE"), ("HNSW", "COSINE"), ("FLAT", "L2"), ("FLAT", "IP"), ("HNSW", "L2")],
)
def test_relevance_scores_in_unit_interval(
    redis_url: str, redis_index_name: str, algorithm: str, metric: str
) -> None:
    embeddings = HashingEmbeddings()
    store = open_store(
        redis_url,
        redis_index_name,
        embeddings,
        vector_algorithm=algorithm,
        distance_metric=metric,
    )
    store.add_documents(docs())
    results = store.similarity_search_with_relevance_scores("safety protocols", k=4)
    scores = [s for _, s in results]
    assert len(results) == 4
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert scores == sorted(scores, reverse=True)
    # same numbers as the in-memory store (cosine clipped at 0) for unit vectors
    memory = MatrixVectorStore(embeddings)
    memory.add_documents(docs())
    expected = dict(
        (d.id, s) for d, s in memory.similarity_search_with_relevance_scores("safety protocols", 4)
    )
    for doc, score in results:
        assert score == pytest.approx(expected[doc.id], abs=1e-4)


@pytest.mark.parametrize("metric", ["COSINE", "IP", "L2"])
def test_id_search_matches_the_document_search(
    redis_url: str, redis_index_name: str, metric: str
) -> None:
    embeddings = HashingEmbeddings()
    store = open_store(redis_url, redis_index_name, embeddings, distance_metric=metric)
    store.add_documents([*docs(), *docs("other")])
    query = "safety protocols"
    vector = embeddings.embed_query(query)
    in_kb = Tag("namespace") == "kb"
    expected = store.similarity_search_with_relevance_scores(query, k=3, filter=in_kb)
    got = store.search_ids_by_vector(vector, 3, filter=in_kb)
    everything = dict(
        (d.id, s) for d, s in store.similarity_search_with_relevance_scores(query, k=8)
    )
    assert [s for _, s in got] == pytest.approx([s for _, s in expected], abs=1e-4)
    for (got_id, _), (doc, score) in zip(got, expected, strict=True):
        # same id, or a tie: chunks with equal similarity may come in either order
        assert got_id == doc.id or everything[got_id] == pytest.approx(score, abs=1e-6)
    assert len({i for i, _ in got}) == len(got)
    # the similarity of chunks the search did not return: same numbers, unknown ids absent
    looked_up = store.similarity_by_ids(vector, ["kb-b", "kb-a", "missing"])
    assert set(looked_up) == {"kb-a", "kb-b"}
    for doc_id, score in looked_up.items():
        assert score == pytest.approx(everything[doc_id], abs=1e-4)


@pytest.mark.parametrize("search", ["documents", "ids"])
def test_searches_recreate_a_lost_index(
    store: HolodeckRedisVectorStore, embeddings: HashingEmbeddings, search: str
) -> None:
    store.add_documents(docs())
    search_index(store).delete(drop=True)  # as after a restart without persistence
    vector = embeddings.embed_query("safety")
    if search == "documents":
        assert store.similarity_search_by_vector(vector, k=2) == []
    else:
        assert store.search_ids_by_vector(vector, 2) == []
    assert search_index(store).exists()
    store.add_documents(docs())
    assert len(store.search_ids_by_vector(vector, 1)) == 1  # usable again


def test_hybrid_retriever_on_redis_reads_only_the_final_k(
    store: HolodeckRedisVectorStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langchain_holodeck.keyword_index import BM25KeywordIndex
    from langchain_holodeck.retrievers import HybridRetriever

    store.add_documents([*docs(), *docs("other")])
    bm25 = BM25KeywordIndex()
    bm25.upsert(docs())
    read: list[list[str]] = []
    real = store.get_by_ids

    def recording(ids):  # type: ignore[no-untyped-def]
        read.append(list(ids))
        return real(ids)

    monkeypatch.setattr(store, "get_by_ids", recording)
    retriever = HybridRetriever(
        vector_store=store,
        keyword_index=bm25,
        k=2,
        search_kwargs={"filter": Tag("namespace") == "kb"},
    )
    result = retriever.invoke("safety protocols")
    assert {d.id for d in result} == {"kb-a", "kb-d"}  # both legs' top two; kb namespace only
    assert read == [[d.id for d in result]]  # one read, of the final k only
    assert all(d.page_content for d in result)
    strict = retriever.model_copy(update={"min_similarity_score": 0.99})
    assert strict.invoke("safety protocols") == []


def test_tag_and_numeric_filters(store: HolodeckRedisVectorStore) -> None:
    store.add_documents(docs("kb") + docs("other"))
    hits = store.similarity_search("safety", k=10, filter=Tag("namespace") == "other")
    assert {d.id for d in hits} == {"other-a", "other-b", "other-c", "other-d"}
    path = store.similarity_search("x", k=10, filter=Tag("source_path") == "docs/c.md")
    assert {d.id for d in path} == {"kb-c", "other-c"}
    low = store.similarity_search("x", k=10, filter=Num("chunk_index") <= 1)
    assert {d.metadata["chunk_index"] for d in low} == {0, 1}


@pytest.mark.parametrize(
    "doc_filter",
    [{"namespace": "kb"}, lambda d: d.metadata["namespace"] == "kb"],
    ids=["mapping", "callable"],
)
@pytest.mark.parametrize("strategy", ["native", "fallback"])
def test_a_filter_redis_cannot_apply_is_refused(
    store: HolodeckRedisVectorStore, doc_filter: object, strategy: str
) -> None:
    """A mapping or a callable was written into the RediSearch query as its str(): on native
    no row (a callable) or a ResponseError served as an outage (a mapping); on fallback a
    TypeError per query, served as keyword hits of every namespace."""
    from langchain_holodeck.keyword_index import BM25KeywordIndex
    from langchain_holodeck.retrievers import HybridRetriever

    store.add_documents([*docs(), *docs("other")])
    bm25 = BM25KeywordIndex()
    bm25.upsert(docs())  # the tool's keyword index: its namespace's chunks
    parts = {"vector_store": store, "keyword_index": bm25, "search_strategy": strategy}
    refused = r"filter must be a redisvl FilterExpression .* or a RediSearch filter string"
    with pytest.raises(TypeError, match=rf"{refused} .* got (dict|function)"):
        HybridRetriever(**parts, search_kwargs={"filter": doc_filter})
    vector = store.embeddings.embed_query("safety")
    for search in (
        lambda: store.similarity_search("safety", k=2, filter=doc_filter),
        lambda: store.search_ids_by_vector(vector, 2, filter=doc_filter),
        lambda: store.native_hybrid_search("safety", k=2, fetch_k=4, filter=doc_filter),
    ):
        with pytest.raises(TypeError, match=refused):
            search()
    for taken in (Tag("namespace") == "kb", "@namespace:{kb}"):  # the tool's, and a string
        retriever = HybridRetriever(**parts, k=3, search_kwargs={"filter": taken})
        found = retriever.invoke("safety protocols")
        assert found
        assert {d.metadata["namespace"] for d in found} == {"kb"}


def test_a_misspelt_filter_is_refused_by_the_store_and_through_a_namespace_view(
    store: HolodeckRedisVectorStore,
) -> None:
    """Found 2026-12-07 (late probe): ``filters=`` was dropped by every search, and a
    ``HybridRetriever`` over the store's ``NamespaceFilteredStore`` took it (the view's
    searches take ``**kwargs``): every query unfiltered, nothing said."""
    check_misspelt_filter_is_refused(
        store,
        Tag("source_path") == "a.md",
        wrong_type={"source_path": "a.md"},
        wrong_type_error="filter must be a redisvl FilterExpression",
    )


@pytest.mark.parametrize("strategy", ["native", "fallback"])
def test_an_unescaped_tag_value_in_a_filter_string_is_refused_showing_it_escaped(
    store: HolodeckRedisVectorStore, strategy: str
) -> None:
    """Found 2026-12-07 (late probe): ``@namespace:{837b770f-...}`` or
    ``@source_path:{docs/a.md}`` matched nothing (or failed with a syntax error, served as an
    outage of the dense leg), silently; the escaped form matches."""
    namespace = "837b770f-1f2a-5e1c"
    chunks = [
        Document(id=d.id, page_content=d.page_content, metadata={**d.metadata, "namespace": ns})
        for ns in (namespace, "other")
        for d in docs(ns)
    ]
    store.add_documents(chunks)  # no keyword index: on fallback it is not filtered by Redis
    parts = {"vector_store": store, "search_strategy": strategy, "k": 8}
    for given, escaped in (
        (f"@namespace:{{{namespace}}}", r"@namespace:{837b770f\-1f2a\-5e1c}"),
        ("@source_path:{docs/a.md}", r"@source_path:{docs\/a\.md}"),
        ("@chunk_index:[0 1] @source_path:{docs/a.md|x}", r"@source_path:{docs\/a\.md|x}"),
    ):
        shown = re.escape(f"write {escaped} (a raw string")
        with pytest.raises(ValueError, match=rf"holds an unescaped TAG value, .*; {shown}"):
            HybridRetriever(**parts, search_kwargs={"filter": given})
        with pytest.raises(ValueError, match=shown):
            store.similarity_search("safety", k=4, filter=given)
    kept = {
        r"@namespace:{837b770f\-1f2a\-5e1c}": {namespace},
        r"@source_path:{docs\/a\.md}": {namespace, "other"},
        str(Tag("namespace") == namespace): {namespace},  # the same, escaped by redisvl
    }
    for taken, namespaces in kept.items():
        found = HybridRetriever(**parts, search_kwargs={"filter": taken}).invoke("safety")
        assert found
        assert {d.metadata["namespace"] for d in found} == namespaces
        if "source_path" in taken:
            assert {d.metadata["source_path"] for d in found} == {"docs/a.md"}


def test_scan_documents_by_namespace(store: HolodeckRedisVectorStore) -> None:
    store.add_documents(docs("kb") + docs("other"))
    kb = list(scan_documents(store, namespace="kb", batch_size=2))
    assert sorted(d.id for d in kb) == ["kb-a", "kb-b", "kb-c", "kb-d"]  # type: ignore[type-var]
    assert all(d.metadata["namespace"] == "kb" for d in kb)
    assert len(list(scan_documents(store))) == 8


def test_reopening_an_index_reads_its_dimension_without_embedding(
    store: HolodeckRedisVectorStore, redis_url: str, redis_index_name: str
) -> None:
    store.add_documents(docs())
    fresh = HashingEmbeddings()
    again = open_store(redis_url, redis_index_name, fresh)
    assert fresh.calls == 0
    assert [d.id for d in again.get_by_ids(["kb-b"])] == ["kb-b"]


def test_unreachable_redis_falls_back_with_masked_warning(
    caplog: pytest.LogCaptureFixture, embeddings: HashingEmbeddings
) -> None:
    config = RedisDatabase(SecretStr("redis://admin:hunter2-secret@127.0.0.1:1/0"), "idx")
    with caplog.at_level(logging.WARNING):
        handle = create_vector_store_with_status(config, embeddings)
    assert handle.fell_back is True
    assert isinstance(handle.store, MatrixVectorStore)
    assert "redis://admin:***@127.0.0.1:1/0" in caplog.text
    assert "hunter2-secret" not in caplog.text
    assert isinstance(create_vector_store(config, embeddings), MatrixVectorStore)


def test_embedding_cache_in_redis(redis_url: str, embeddings: HashingEmbeddings) -> None:
    client = redis.Redis.from_url(redis_url)
    prefix = f"holodeck_test_cache_{uuid.uuid4().hex[:8]}:"
    try:
        first = CachedEmbeddings(embeddings, RedisByteStore(client, prefix=prefix))
        vectors = first.embed_documents(["a b", "c d"])
        second = CachedEmbeddings(embeddings, RedisByteStore(client, prefix=prefix))
        assert second.embed_documents(["c d", "a b"]) == [vectors[1], vectors[0]]
        assert embeddings.calls == 1
        assert len(list(RedisByteStore(client, prefix=prefix).yield_keys())) == 2
        assert InMemoryByteStore().mget(["x"]) == [None]
    finally:
        for key in client.scan_iter(f"{prefix}*"):
            client.delete(key)
        client.close()


def test_client_reconnects_after_server_restart(embeddings: HashingEmbeddings) -> None:
    """A private Redis on another port is restarted under a live store; the store recovers."""
    from tests.reliability.redis_control import private_redis

    with private_redis(6397) as server:
        store = open_store(server.url, "holodeck_restart", embeddings)
        store.add_documents(docs())
        server.stop()
        server.start()
        # the server lost its data (no persistence): the same store object reconnects,
        # re-creates the index and serves again
        assert store.similarity_search("safety", k=2) == []
        store.add_documents(docs())
        assert [d.id for d in store.similarity_search("tea earl grey", k=1)] == ["kb-b"]


class TestHolodeckRedisVectorStoreStandard(VectorStoreIntegrationTests):
    @pytest.fixture
    def vectorstore(self, redis_url: str, redis_index_name: str) -> VectorStore:
        config = RedisDatabase(SecretStr(redis_url), redis_index_name, vector_algorithm="FLAT")
        handle = create_vector_store_with_status(config, self.get_embeddings(), fallback=False)
        return handle.store


def test_delete_existing_returns_only_keys_that_were_there(
    store: HolodeckRedisVectorStore,
) -> None:
    store.add_documents(docs())
    assert store.delete_existing(["kb-b", "nope", "kb-a", "kb-b"]) == ["kb-b", "kb-a"]
    assert store.delete_existing(["kb-a"]) == []
    assert [d.id for d in store.get_by_ids(["kb-a", "kb-b", "kb-c"])] == ["kb-c"]


def test_a_new_index_indexes_each_first_write_once(redis_url: str) -> None:
    """No write races a new index's first keyspace scan (``wait_for_first_scan``).

    Without the wait, 8 of 40 fresh indexes indexed some of their first 24 chunks twice
    (``max_doc_id`` above ``num_docs``): stale postings, and wrapped BM25STD scores for a
    word in most chunks until the collector ran. 15 fresh indexes here: a regression fails
    this with a probability of about 0.97.
    """
    client = redis.Redis.from_url(redis_url)
    docs = [Document(id=f"d{i}", page_content=f"holodeck deck {i}") for i in range(24)]
    try:
        for _ in range(15):
            name = f"holodeck_test_{uuid.uuid4().hex[:10]}"
            store = create_vector_store(
                {"provider": "redis", "connection_string": redis_url, "index_name": name},
                HashingEmbeddings(),
                fallback=False,
            )
            try:
                store.add_documents(docs)
                info = client.ft(name).info()
                assert int(info["num_docs"]) == len(docs)
                assert int(info["max_doc_id"]) == len(docs)  # each indexed once
            finally:
                search_index(store).delete(drop=True)
    finally:
        client.close()


def test_a_word_inside_an_identifier_is_found_by_full_text(redis_url: str) -> None:
    """RediSearch keeps ``currency_name`` whole; the parts field lets ``currency`` match it."""
    from langchain_holodeck.keyword_index import RedisKeywordIndex

    name = f"holodeck_test_{uuid.uuid4().hex[:10]}"
    config = {"provider": "redis", "connection_string": redis_url, "index_name": name}
    store = create_vector_store(config, HashingEmbeddings(), fallback=False)
    try:
        assert store.full_text_fields == "text|identifier_parts"
        store.add_documents(
            [
                Document(id="table", page_content="| ISO4217-currency_name | Dial |"),
                Document(id="prose", page_content="Currency exchange is out of scope here."),
                Document(id="code", page_content="def getUserName(user_id): ..."),
            ]
        )
        keywords = RedisKeywordIndex(store)
        assert {h.id for h in keywords.search("currency", k=5)} == {"table", "prose"}
        assert [h.id for h in keywords.search("user", k=5)] == ["code"]
        hits = store.native_hybrid_search("get user", k=3, fetch_k=10, fusion="convex")
        assert hits[0].document.id == "code"
        assert hits[0].document.page_content == "def getUserName(user_id): ..."  # unchanged
        assert "identifier_parts" not in hits[0].document.metadata
    finally:
        search_index(store).delete(drop=True)


def _create_index_without_parts(client: redis.Redis, name: str) -> None:
    """The index a version before the ``identifier_parts`` field created."""
    client.execute_command(
        "FT.CREATE", name, "ON", "HASH", "PREFIX", "1", f"{name}:", "SCHEMA",
        "text", "TEXT", "embedding", "VECTOR", "HNSW", "6", "TYPE", "FLOAT32", "DIM", "64",
        "DISTANCE_METRIC", "COSINE", "namespace", "TAG", "SEPARATOR", "|", "CASESENSITIVE",
    )  # fmt: skip


def test_an_index_without_the_parts_field_is_given_it(redis_url: str) -> None:
    """An index created before the parts field gets it on open (FT.ALTER); new writes use it."""
    import numpy as np
    from redisvl.index import SearchIndex

    from langchain_holodeck.keyword_index import RedisKeywordIndex
    from langchain_holodeck.vectorstores.redis import wait_for_first_scan

    name = f"holodeck_test_{uuid.uuid4().hex[:10]}"
    client = redis.Redis.from_url(redis_url)
    _create_index_without_parts(client, name)
    config = {"provider": "redis", "connection_string": redis_url, "index_name": name}
    try:
        wait_for_first_scan(SearchIndex.from_existing(name, redis_client=client))
        embedding = HashingEmbeddings().embed_query("old")
        for n in range(12):  # chunks an older version wrote: no parts field
            client.hset(
                f"{name}:old{n}",
                mapping={"text": f"old chunk {n}", "namespace": "kb",
                         "embedding": np.asarray(embedding, dtype=np.float32).tobytes()},
            )  # fmt: skip
        before = int(client.ft(name).info()["max_doc_id"])
        store = create_vector_store(config, HashingEmbeddings(), fallback=False)
        assert store.full_text_fields == "text|identifier_parts"
        assert "identifier_parts" in str(client.execute_command("FT.INFO", name))
        # no rescan: a rescan indexes every chunk again and leaves its old entries behind
        assert int(client.ft(name).info()["max_doc_id"]) == before
        store.add_documents([Document(id="a", page_content="the max_retries setting")])
        keywords = RedisKeywordIndex(store)
        assert [h.id for h in keywords.search("retries", k=5)] == ["a"]
        assert len(keywords.search("old chunk", k=20)) == 12  # the older chunks: still found
    finally:
        with contextlib.suppress(redis.ResponseError):
            client.ft(name).dropindex(delete_documents=True)
        client.close()


def test_chunks_written_before_the_parts_field_are_given_their_parts(redis_url: str) -> None:
    """An upgrade gives the older chunks their identifier parts: a re-ingest never rewrites
    an unchanged chunk, so ``send`` would never find an older ``send_file`` chunk."""
    import numpy as np

    from langchain_holodeck.keyword_index import RedisKeywordIndex

    name = f"holodeck_test_{uuid.uuid4().hex[:10]}"
    client = redis.Redis.from_url(redis_url)
    _create_index_without_parts(client, name)
    config = {"provider": "redis", "connection_string": redis_url, "index_name": name}
    vector = np.asarray(HashingEmbeddings().embed_query("old"), dtype=np.float32).tobytes()
    texts = {"code": "Call send_file(path) to stream it.", "prose": "Plain words only."}
    try:
        for key, text in texts.items():  # chunks an older version wrote: no parts field
            client.hset(
                f"{name}:{key}", mapping={"text": text, "namespace": "kb", "embedding": vector}
            )
        store = create_vector_store(config, HashingEmbeddings(), fallback=False)
        assert store.full_text_fields == "text|identifier_parts"
        assert client.hget(f"{name}:code", "identifier_parts") == b"send file"
        assert client.hget(f"{name}:prose", "identifier_parts") is None  # nothing to add
        assert client.hget(f"{name}:code", "text") == texts["code"].encode()  # the rest kept
        assert [h.id for h in RedisKeywordIndex(store).search("send", k=5)] == ["code"]
    finally:
        with contextlib.suppress(redis.ResponseError):
            client.ft(name).dropindex(delete_documents=True)
        client.close()
