"""The Postgres backend (PostgresVectorStore, pgvector) against the real server at POSTGRES_URL."""

from __future__ import annotations

import logging
import re
import shutil
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.vectorstores import VectorStore
from langchain_tests.integration_tests import VectorStoreIntegrationTests

from langchain_holodeck.backends import get_backend, open_vector_store
from langchain_holodeck.backends.postgres import PostgresBackend, PostgresByteStore
from langchain_holodeck.config import HierarchicalDocumentToolConfig
from langchain_holodeck.embeddings import CachedEmbeddings
from langchain_holodeck.errors import ConfigError
from langchain_holodeck.keyword_index import BM25KeywordIndex
from langchain_holodeck.retrievers import HybridRetriever
from langchain_holodeck.sync import sync_documents
from langchain_holodeck.tools import HierarchicalDocumentTool
from langchain_holodeck.vectorstores import (
    MatrixVectorStore,
    scan_documents,
)
from langchain_holodeck.vectorstores.postgres import PostgresVectorStore
from tests.helpers import (
    HashingEmbeddings,
    check_bad_k_is_named,
    check_misspelt_filter_is_refused,
    drop_postgres_tables,
)

pytestmark = pytest.mark.postgres

REPO = Path(__file__).resolve().parents[2]

CHUNK_META = {
    "source": "data/docs/my file, v2.md",
    "source_path": "data/docs/my file, v2.md",
    "chunk_index": 3,
    "parent_chain": ["Title I", "Section 201"],
    "section_id": "201(a)(1)",
    "heading": "Scope — ünïcode",
    "namespace": "kb",
    "content_hash": "ab" * 32,
    "flag": True,
    "ratio": 0.1,
    "nothing": None,
    "mixed": [1, 2.5, "x", True, None],
    "nested": {"a": [1, {"b": None}]},
}


def database(url: str, table: str, **settings: Any) -> dict[str, Any]:
    return {"provider": "postgres", "connection_string": url, "table_name": table, **settings}


def open_store(
    url: str, table: str, embeddings: HashingEmbeddings, **settings: Any
) -> PostgresVectorStore:
    handle = open_vector_store(database(url, table, **settings), embeddings, fallback=False)
    assert handle.backend == "postgres", handle.reason
    assert isinstance(handle.store, PostgresVectorStore)
    return handle.store


@pytest.fixture
def store(
    postgres_url: str, postgres_table: str, embeddings: HashingEmbeddings
) -> Iterator[PostgresVectorStore]:
    opened = open_store(postgres_url, postgres_table, embeddings)
    yield opened
    opened.close()


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


def test_all_metadata_types_round_trip(store: PostgresVectorStore) -> None:
    store.add_documents([Document(id="x", page_content="chunk text", metadata=CHUNK_META)])
    (got,) = store.get_by_ids(["x"])
    assert got.metadata == CHUNK_META
    assert store.similarity_search("chunk text", k=1)[0].metadata == CHUNK_META


def test_upsert_replaces_without_duplicates(store: PostgresVectorStore) -> None:
    store.add_documents(docs())
    edited = Document(id="kb-a", page_content="rewritten text", metadata={"namespace": "kb"})
    store.add_documents([edited, edited])  # a repeated id in one call: written once
    assert store.get_by_ids(["kb-a"]) == [edited]
    assert sum(1 for d in scan_documents(store) if d.id == "kb-a") == 1


@pytest.mark.parametrize(
    ("text", "metadata", "where"),
    [
        ("a\x00b", {}, "in its text"),
        ("fine", {"heading": "x\x00y"}, "in metadata['heading']"),
        ("fine", {"parent_chain": ["ok", "x\x00"]}, "in metadata['parent_chain'][1]"),
    ],
)
def test_a_nul_character_is_refused_naming_the_document(
    store: PostgresVectorStore, text: str, metadata: dict[str, Any], where: str
) -> None:
    # PostgreSQL stores no NUL: the driver's DataError named no document
    good = Document(id="good", page_content="kept text")
    bad = Document(id="bad", page_content=text, metadata=metadata)
    refused = rf"document 'bad' holds a NUL character .* {re.escape(where)}"
    with pytest.raises(ValueError, match=refused):
        store.add_documents([good, bad])
    with pytest.raises(ValueError, match="document 'bad' holds a NUL"):
        store.add_vectors([good, bad], [[1.0] + [0.0] * 63] * 2)
    store.add_documents([good])
    assert [d.id for d in store.get_by_ids(["good", "bad"])] == ["good"]


def test_a_chunk_holding_a_nul_fails_alone_in_a_sync(store: PostgresVectorStore) -> None:
    # its batch held the other files' chunks, and all of them failed, every run
    files = {"a.md": ["a zero", "a one"], "b.md": ["b zero", "b\x00one"], "c.md": ["c zero"]}
    chunks = [
        Document(page_content=text, metadata={"source_path": path, "chunk_index": n})
        for path, texts in files.items()
        for n, text in enumerate(texts)
    ]
    for _ in range(2):  # the same on a re-run
        result = sync_documents(chunks, store, namespace="kb")
        assert result.failed == 2  # b's NUL chunk, and b's chunk 0 held back
        assert "from 'b.md': ValueError: document" in result.errors[0]
    assert sorted({d.metadata["source_path"] for d in scan_documents(store)}) == ["a.md", "c.md"]


def test_get_by_ids_order_and_missing(store: PostgresVectorStore) -> None:
    store.add_documents(docs())
    got = store.get_by_ids(["kb-c", "missing", "kb-a"])
    assert [d.id for d in got] == ["kb-c", "kb-a"]


def test_delete_removes_rows_and_postings(store: PostgresVectorStore) -> None:
    store.add_documents(docs())
    assert store.delete(["kb-a", "missing"]) is True
    assert store.delete(["missing"]) is False
    assert store.get_by_ids(["kb-a"]) == []
    assert [i for i, _ in store.keyword_search("holodeck officers", 5)] == []


async def test_mmr_by_query_equals_the_in_memory_store(
    store: PostgresVectorStore, embeddings: HashingEmbeddings
) -> None:
    memory = MatrixVectorStore(embeddings)
    for target in (store, memory):
        target.add_documents(docs())
    for lambda_mult in (0.5, 0.0):  # at 1.0 two chunks tie (similarity 0)
        want = [
            d.id
            for d in memory.max_marginal_relevance_search(
                "safety protocols", k=3, fetch_k=4, lambda_mult=lambda_mult
            )
        ]
        got = store.max_marginal_relevance_search(
            "safety protocols", k=3, fetch_k=4, lambda_mult=lambda_mult
        )
        assert [d.id for d in got] == want
    options = {"k": 2, "fetch_k": 4}
    want = [
        d.id
        for d in memory.as_retriever(search_type="mmr", search_kwargs=options).invoke(
            "safety protocols"
        )
    ]
    retriever = store.as_retriever(search_type="mmr", search_kwargs=options)
    assert [d.id for d in await retriever.ainvoke("safety protocols")] == want


FILTER_METAS = [
    {"namespace": "kb", "team": "a", "tags": ["x", "y"], "n": 1, "ok": True, "o": {"p": [1, 2]}},
    {"namespace": "kb", "team": "b", "tags": ["y"], "n": 1.0, "ok": False, "o": {"p": [2]}},
    {"namespace": "kb2", "team": "a", "tags": [], "n": 2, "ok": 1, "o": {"p": [], "q": 3}},
    {"namespace": "kb", "team": ["a"], "n": "1"},
]
FILTERS = [
    {"team": "a"},
    {"namespace": "kb", "team": "a"},
    {"tags": ["y"]},
    {"tags": ["x", "y"]},
    {"tags": "y"},  # jsonb: an array does not contain a scalar below the top level
    {"n": 1},
    {"ok": True},
    {"o": {"p": [2]}},
    {"o": {}},
    {"namespace": "kb2"},
    {},
]


@pytest.mark.parametrize("only", FILTERS)
def test_the_document_filter_agrees_with_sql(store: PostgresVectorStore, only: dict) -> None:
    store.add_documents(
        [
            Document(id=f"m{i}", page_content=f"note {i}", metadata=m)
            for i, m in enumerate(FILTER_METAS)
        ]
    )
    by_sql = {d.id for d in store.similarity_search("note", k=10, filter=only)}
    accept = store.document_filter(only)
    assert {d.id for d in store.get_by_ids([f"m{i}" for i in range(4)]) if accept(d)} == by_sql


async def test_a_mapping_filter_holds_the_retrievers_keyword_hits_too(
    store: PostgresVectorStore,
) -> None:
    store.add_documents(docs())
    bm25 = BM25KeywordIndex()
    bm25.upsert(docs())
    retriever = HybridRetriever(
        vector_store=store,
        keyword_index=bm25,
        k=4,
        search_kwargs={"filter": {"source_path": "docs/a.md"}},
    )
    assert [d.id for d in retriever.invoke("safety protocols")] == ["kb-a"]
    assert [d.id for d in await retriever.ainvoke("safety protocols")] == ["kb-a"]
    with pytest.raises(TypeError, match="filter must be a mapping of metadata keys to values"):
        store.document_filter("team = 'a'")


def test_a_bad_k_is_named_by_every_search(store: PostgresVectorStore) -> None:
    check_bad_k_is_named(store)


async def test_a_misspelt_filter_is_refused_by_the_store_and_through_a_namespace_view(
    store: PostgresVectorStore,
) -> None:
    """Found 2026-12-07 (late probe): ``filters=`` was dropped by every search, and a
    ``HybridRetriever`` over the store's ``NamespaceFilteredStore`` took it (the view's
    searches take ``**kwargs``): every query unfiltered, nothing said."""
    retriever = check_misspelt_filter_is_refused(
        store,
        {"source_path": "a.md"},
        wrong_type="source_path = 'a.md'",
        wrong_type_error="filter must be a mapping of metadata keys to values",
    )
    assert {d.metadata["source_path"] for d in await retriever.ainvoke("fish")} == {"a.md"}


def test_ids_are_text_so_window_ids_fit(store: PostgresVectorStore) -> None:
    chunk = str(uuid.uuid4())
    window = f"{chunk}:w1"
    store.add_documents(
        [
            Document(id=chunk, page_content="arch controls", metadata={"namespace": "kb"}),
            Document(
                id=window,
                page_content="the far end of the chunk",
                metadata={"namespace": "kb", "window_of": chunk, "window": 1},
            ),
        ]
    )
    assert [d.id for d in store.get_by_ids([window, chunk])] == [window, chunk]
    # the keyword leg ranks chunks only; a window's text finds nothing
    assert store.keyword_search("far end", 5) == []


@pytest.mark.parametrize("metric", ["COSINE", "IP", "L2"])
def test_relevance_scores_equal_the_in_memory_store(
    postgres_url: str, postgres_table: str, metric: str
) -> None:
    embeddings = HashingEmbeddings()
    store = open_store(postgres_url, postgres_table, embeddings, distance_metric=metric)
    store.add_documents(docs())
    results = store.similarity_search_with_relevance_scores("safety protocols", k=4)
    scores = [s for _, s in results]
    assert len(results) == 4
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert scores == sorted(scores, reverse=True)
    memory = MatrixVectorStore(embeddings)
    memory.add_documents(docs())
    expected = dict(
        (d.id, s) for d, s in memory.similarity_search_with_relevance_scores("safety protocols", 4)
    )
    for doc, score in results:
        assert score == pytest.approx(expected[doc.id], abs=1e-4)
    vector = embeddings.embed_query("safety protocols")
    ids = store.search_ids_by_vector(vector, 4)
    assert ids == [(d.id, pytest.approx(s, abs=1e-6)) for d, s in results]
    looked_up = store.similarity_by_ids(vector, ["kb-b", "kb-a", "missing"])
    assert set(looked_up) == {"kb-a", "kb-b"}
    for doc_id, score in looked_up.items():
        assert score == pytest.approx(expected[doc_id], abs=1e-4)
    store.close()


def test_similarity_by_ids_scores_a_chunk_by_its_best_window(store: PostgresVectorStore) -> None:
    store.add_documents(
        [
            Document(id="c", page_content="unrelated words", metadata={"window_count": 1}),
            Document(id="c:w1", page_content="warp core", metadata={"window_of": "c"}),
        ]
    )
    vector = store.embeddings.embed_query("warp core")
    assert store.similarity_by_ids(vector, ["c"]) == {"c": pytest.approx(1.0, abs=1e-5)}


def test_namespace_and_metadata_filters(store: PostgresVectorStore) -> None:
    store.add_documents(docs("kb") + docs("other"))
    hits = store.similarity_search("safety", k=10, filter={"namespace": "other"})
    assert {d.id for d in hits} == {"other-a", "other-b", "other-c", "other-d"}
    path = store.similarity_search("x", k=10, filter={"source_path": "docs/c.md"})
    assert {d.id for d in path} == {"kb-c", "other-c"}
    with pytest.raises(TypeError, match="filter must be a mapping"):
        store.similarity_search("x", k=1, filter="namespace = 'kb'")


def test_scan_documents_by_namespace(store: PostgresVectorStore) -> None:
    store.add_documents(docs("kb") + docs("other"))
    kb = list(scan_documents(store, namespace="kb", batch_size=2))
    assert sorted(d.id for d in kb) == ["kb-a", "kb-b", "kb-c", "kb-d"]  # type: ignore[type-var]
    assert len(list(scan_documents(store))) == 8


def test_bm25_in_sql_equals_the_in_memory_index(store: PostgresVectorStore) -> None:
    corpus = docs("kb") + docs("other")
    store.add_documents(corpus)
    memory = BM25KeywordIndex(pair_weight=0)  # the terms alone, as the SQL scores them
    memory.upsert(docs("kb"))
    for query in ["safety protocols", "tea earl grey captain", "warp shift", "zzz"]:
        got = store.keyword_search(query, 4, namespace="kb")
        expected = memory.search(query, k=4)
        assert [i for i, _ in got] == [h.id for h in expected], query
        assert [s for _, s in got] == pytest.approx([h.score for h in expected], rel=1e-4)


def test_bm25_statistics_follow_updates_and_deletes(store: PostgresVectorStore) -> None:
    store.add_documents(docs())
    store.add_documents(docs())  # rewritten: the same statistics
    store.delete(["kb-c"])
    memory = BM25KeywordIndex(pair_weight=0)  # the terms alone, as the SQL scores them
    memory.upsert([d for d in docs() if d.id != "kb-c"])
    got = store.keyword_search("safety protocols captain", 4, namespace="kb")
    expected = memory.search("safety protocols captain", k=4)
    assert [s for _, s in got] == pytest.approx([h.score for h in expected], rel=1e-4)


@pytest.mark.parametrize("scoring", ["bm25", "ts_rank_cd"])
def test_native_hybrid_search_fuses_both_legs(
    postgres_url: str, postgres_table: str, embeddings: HashingEmbeddings, scoring: str
) -> None:
    store = open_store(postgres_url, postgres_table, embeddings, keyword_scoring=scoring)
    store.add_documents(docs("kb") + docs("other"))
    hits = store.native_hybrid_search(
        "safety protocols", k=3, fetch_k=10, filter={"namespace": "kb"}
    )
    assert [h.document.id for h in hits][:2] in (["kb-a", "kb-d"], ["kb-d", "kb-a"])
    assert all(h.document.metadata["namespace"] == "kb" for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert all(h.similarity is not None and 0 <= h.similarity <= 1 for h in hits)
    dense = dict(store.search_ids_by_vector(embeddings.embed_query("safety protocols"), 8))
    for hit in hits:
        assert hit.similarity == pytest.approx(dense[str(hit.document.id)], abs=1e-5)
    # a dense leg alone: rank 1 scores w / (rrf_k + 1)
    only_dense = store.native_hybrid_search(
        "safety protocols", k=1, fetch_k=10, weights=(1.0, 0.0), filter={"namespace": "kb"}
    )
    assert only_dense[0].score == pytest.approx(1 / 61)
    strict = store.native_hybrid_search(
        "safety protocols", k=3, fetch_k=10, min_similarity_score=0.99
    )
    assert all((h.similarity or 0) >= 0.99 for h in strict)
    with pytest.raises(ValueError, match="fetch_k must be positive"):
        store.native_hybrid_search("x", k=1, fetch_k=0)
    store.close()


def test_backend_picks_native_hybrid(store: PostgresVectorStore) -> None:
    from langchain_holodeck.search_strategy import choose_search_strategy, supports_native_hybrid

    backend = PostgresBackend()
    assert supports_native_hybrid(store)
    assert (
        choose_search_strategy(
            "auto",
            native_hybrid=backend.capabilities.native_hybrid and supports_native_hybrid(store),
        )
        == "native"
    )
    store.add_documents(docs("kb") + docs("other"))
    scope = backend.namespace_filter(store, "other")
    hits = store.native_hybrid_search("tea earl grey", k=1, fetch_k=5, **scope)
    assert [h.document.id for h in hits] == ["other-b"]


def test_reopening_reads_the_dimension_without_embedding(
    store: PostgresVectorStore, postgres_url: str, postgres_table: str
) -> None:
    store.add_documents(docs())
    fresh = HashingEmbeddings()
    again = open_store(postgres_url, postgres_table, fresh)
    assert again.vector_dimension == 64
    assert fresh.calls == 0
    assert [d.id for d in again.get_by_ids(["kb-b"])] == ["kb-b"]
    again.close()


def test_query_of_another_width_names_the_fix(store: PostgresVectorStore) -> None:
    store.add_documents(docs())
    with pytest.raises(ValueError, match="force_ingest"):
        store.similarity_search_by_vector([0.1] * 8, k=1)


def test_unreachable_postgres_falls_back_with_masked_warning(
    caplog: pytest.LogCaptureFixture, embeddings: HashingEmbeddings
) -> None:
    config = database("postgresql://admin:hunter2-secret@127.0.0.1:1/postgres", "t")
    with caplog.at_level(logging.WARNING):
        handle = open_vector_store(config, embeddings)
    assert handle.fell_back is True
    assert isinstance(handle.store, MatrixVectorStore)
    assert "***@127.0.0.1:1" in caplog.text
    assert "hunter2-secret" not in caplog.text
    from langchain_holodeck.backends import BackendUnavailableError

    with pytest.raises(BackendUnavailableError, match="PostgreSQL at postgresql://admin:\\*\\*\\*"):
        open_vector_store({**config, "fallback_to_memory": False}, embeddings)


def test_config_errors_name_the_field() -> None:
    with pytest.raises(ConfigError, match="needs connection_string"):
        get_backend({"provider": "postgres"})
    with pytest.raises(ConfigError, match="must start with postgresql://"):
        get_backend({"provider": "postgres", "connection_string": "redis://x"})
    with pytest.raises(ConfigError, match="two or more"):
        get_backend(
            {
                "provider": "postgres",
                "connection_string": "postgresql://h/d",
                "shards": ["postgresql://s/d"],
            }
        )


def test_embedding_cache_in_postgres(
    postgres_url: str, postgres_table: str, embeddings: HashingEmbeddings
) -> None:
    backend = get_backend(database(postgres_url, postgres_table))
    cache = backend.byte_store(namespace="kb")
    assert isinstance(cache, PostgresByteStore)
    first = CachedEmbeddings(embeddings, cache)
    vectors = first.embed_documents(["a b", "c d"])
    second = CachedEmbeddings(embeddings, backend.byte_store(namespace="kb"))
    assert second.embed_documents(["c d", "a b"]) == [vectors[1], vectors[0]]
    assert embeddings.calls == 1
    assert len(list(backend.byte_store(namespace="kb").yield_keys())) == 2
    assert list(backend.byte_store(namespace="other").yield_keys()) == []  # one cache per corpus
    cache.mdelete(list(cache.yield_keys()))
    assert list(cache.yield_keys()) == []


def age_cache_rows(url: str, table: str, seconds: int) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("UPDATE {} SET written_at = written_at - make_interval(secs => %s)").format(
                sql.Identifier(table)
            ),
            (seconds,),
        )


def test_cache_prune_drops_only_old_unused_entries_of_its_own_prefix(
    postgres_url: str, postgres_table: str
) -> None:
    table = f"{postgres_table}_embcache"
    cache = PostgresByteStore(postgres_url, table=table, prefix="kb:")
    other = PostgresByteStore(postgres_url, table=table, prefix="other:")
    cache.mset([("old-unused", b"1"), ("kept", b"2"), ("also-old", b"3")])
    other.mset([("old-unused", b"4"), ("theirs", b"5")])
    age_cache_rows(postgres_url, table, 60)
    started = time.time() - 1
    cache.mset([("fresh-unused", b"6")])  # written after the sync started
    assert cache.prune({"kept", "not-stored"}, written_before=started) == 2
    assert sorted(cache.yield_keys()) == ["fresh-unused", "kept"]
    assert sorted(other.yield_keys()) == ["old-unused", "theirs"]  # another corpus: untouched
    assert cache.prune(set(), written_before=started) == 1  # kept goes once not kept
    assert other.prune(["theirs"], written_before=time.time() + 60) == 1
    assert sorted(other.yield_keys()) == ["theirs"]


def test_cache_table_made_before_written_at_gains_it(
    postgres_url: str, postgres_table: str
) -> None:
    import psycopg
    from psycopg import sql

    table = f"{postgres_table}_embcache"
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("CREATE TABLE {} (key text PRIMARY KEY, value bytea NOT NULL)").format(
                sql.Identifier(table)
            )
        )
        conn.execute(sql.SQL("INSERT INTO {} VALUES ('kb:a', 'x')").format(sql.Identifier(table)))
    cache = PostgresByteStore(postgres_url, table=table, prefix="kb:")
    assert cache.mget(["a"]) == [b"x"]
    assert cache.prune(set(), written_before=time.time() - 60) == 0  # dated when migrated
    assert cache.prune(set(), written_before=time.time() + 60) == 1


class TestPostgresVectorStoreStandard(VectorStoreIntegrationTests):
    @pytest.fixture
    def vectorstore(self, postgres_url: str) -> Iterator[VectorStore]:
        table = f"holodeck_std_{uuid.uuid4().hex[:10]}"
        store = PostgresVectorStore(
            self.get_embeddings(), connection_string=postgres_url, table_name=table
        )
        try:
            yield store
        finally:
            store.close()
            drop_postgres_tables(postgres_url, table)


@pytest.mark.parametrize("fusion", ["rrf", "convex"])
def test_native_fusion_equals_the_in_process_fusion(
    store: PostgresVectorStore, embeddings: HashingEmbeddings, fusion: str
) -> None:
    from langchain_holodeck.retrievers import HybridRetriever

    corpus = docs("kb")
    store.add_documents(corpus)
    memory = MatrixVectorStore(embeddings)
    memory.add_documents(corpus)
    bm25 = BM25KeywordIndex()
    bm25.upsert(corpus)
    settings: dict[str, Any] = {"fetch_k": 8, "fusion": fusion, "weights": (0.7, 0.3, 0)}
    in_process = HybridRetriever(vector_store=memory, keyword_index=bm25, **settings)
    # no keyword index: on native the store runs that leg, at the same fetch_k
    native = HybridRetriever(vector_store=store, search_strategy="native", **settings)
    for query in ["safety protocols captain", "tea earl grey", "warp core"]:
        for k in (1, 4):
            expected = [d.id for d in in_process.invoke(query, k=k)]
            assert [d.id for d in native.invoke(query, k=k)] == expected, query
    hits = store.native_hybrid_search("safety protocols", k=4, fetch_k=4, fusion="convex")
    assert hits[0].score <= 1.0 + 1e-9
    with pytest.raises(ValueError, match="fusion must be 'rrf' or 'convex', got 'max'"):
        store.native_hybrid_search("x", k=1, fetch_k=1, fusion="max")  # type: ignore[arg-type]  # the error path


def test_delete_existing_returns_only_rows_that_were_there(store: PostgresVectorStore) -> None:
    store.add_documents(docs())
    assert store.delete_existing(["kb-b", "missing", "kb-a", "kb-b"]) == ["kb-b", "kb-a"]
    assert store.delete_existing(["kb-a"]) == []
    assert store.delete_existing([]) == []


CTE_AND_ALIAS_NAMES = ["q", "st", "p", "df", "d", "dr", "kr", "dm", "km", "f", "c", "x", "t", "w"]
"""Every name the search statements give a CTE or an alias: valid table names all."""


@pytest.mark.parametrize("table", CTE_AND_ALIAS_NAMES)
def test_native_search_works_whatever_the_table_is_called(
    postgres_url: str, embeddings: HashingEmbeddings, table: str
) -> None:
    drop_postgres_tables(postgres_url, table)
    store = open_store(postgres_url, table, embeddings)
    try:
        store.add_documents(docs("kb"))
        assert store.keyword_search("tea earl grey", 1, namespace="kb")[0][0] == "kb-b"
        for fusion in ("rrf", "convex"):
            hits = store.native_hybrid_search(
                "tea earl grey", k=1, fetch_k=4, filter={"namespace": "kb"}, fusion=fusion
            )
            assert [h.document.id for h in hits] == ["kb-b"], fusion
    finally:
        store.close()
        drop_postgres_tables(postgres_url, table)


def existing_tables(url: str, prefix: str) -> list[str]:
    import psycopg

    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT tablename FROM pg_tables WHERE starts_with(tablename, %s) ORDER BY 1",
            (prefix,),
        ).fetchall()
    return [r[0] for r in rows]


@pytest.mark.parametrize("suffix", ["_terms", "_stats", "_embcache"])
def test_another_stores_side_table_is_refused_before_anything_is_created(
    postgres_url: str, postgres_table: str, embeddings: HashingEmbeddings, suffix: str
) -> None:
    first = open_store(postgres_url, postgres_table, embeddings)
    first.add_documents(docs())
    first.close()
    backend = get_backend(database(postgres_url, postgres_table))
    backend.byte_store(namespace="kb").mset([("a", b"1")])  # T_embcache exists too
    before = existing_tables(postgres_url, postgres_table)
    side = postgres_table + suffix
    with pytest.raises(
        ConfigError, match=rf"table_name '{side}' is the .* of the PostgreSQL store"
    ):
        open_vector_store(database(postgres_url, side), embeddings, fallback=False)
    store = PostgresVectorStore(embeddings, connection_string=postgres_url, table_name=side)
    with pytest.raises(ConfigError, match=rf"table_name '{side}' is the "):
        store.add_documents(docs())
    store.close()
    assert existing_tables(postgres_url, postgres_table) == before


def test_a_table_of_something_else_is_refused(postgres_url: str, postgres_table: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE TABLE {} (a int)").format(sql.Identifier(postgres_table)))
    with pytest.raises(ConfigError, match=rf"'{postgres_table}' names an existing .* not a"):
        open_vector_store(database(postgres_url, postgres_table), HashingEmbeddings())
    drop_postgres_tables(postgres_url, postgres_table)
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("CREATE TABLE {} (a int)").format(sql.Identifier(f"{postgres_table}_stats"))
        )
    with pytest.raises(ConfigError, match=rf"BM25 statistics in '{postgres_table}_stats'"):
        open_vector_store(database(postgres_url, postgres_table), HashingEmbeddings())


def test_an_invalid_table_name_is_refused_before_connecting(
    embeddings: HashingEmbeddings,
) -> None:
    with pytest.raises(ValueError, match=r"table_name must be lowercase .* got 'Vectors'"):
        PostgresVectorStore(embeddings, connection_string="postgresql://h/d", table_name="Vectors")
    from langchain_holodeck.config.models import PostgresDatabaseConfig
    from langchain_holodeck.vectorstores._postgres_sql import TABLE_NAME_PATTERN

    field = PostgresDatabaseConfig.model_fields["table_name"]
    assert [m.pattern for m in field.metadata if hasattr(m, "pattern")] == [TABLE_NAME_PATTERN]


class _QueryCounting(HashingEmbeddings):
    """``HashingEmbeddings`` counting ``embed_query`` calls."""

    queries = 0

    def embed_query(self, text: str) -> list[float]:
        self.queries += 1
        return super().embed_query(text)


def test_a_native_exact_hit_the_engine_did_not_return_has_its_cosine(
    postgres_url: str, postgres_table: str, tmp_path: Path
) -> None:
    """Native, no min_similarity_score: an exact hit the engine did not return had
    ``semantic_score: None`` where the fallback gives its cosine (docs/search-strategy.md: the
    cosine on every strategy; found 2026-12-07). It is looked up by id with the vector the
    engine was sent: the query is still embedded once."""
    shutil.copytree(REPO / "examples" / "sample_docs", tmp_path / "docs")
    embeddings = _QueryCounting()
    config = HierarchicalDocumentToolConfig(
        type="hierarchical_document",
        name="kb",
        source=str(tmp_path / "docs"),
        top_k=1,
        database=database(postgres_url, postgres_table, fallback_to_memory=False),
    )
    tool = HierarchicalDocumentTool(
        config, embeddings=embeddings, project_dir=tmp_path, home_dir=tmp_path
    )
    tool.initialize_sync()
    assert tool.search_strategy == "native"
    retriever = tool.as_retriever()
    embeddings.queries = 0
    (doc,) = retriever.invoke("Section 203(a)(1)")
    assert embeddings.queries == 1
    assert (doc.metadata["exact_rank"], doc.metadata["native_rank"]) == (1, None)
    store = retriever.vector_store
    vector = embeddings.embed_query("Section 203(a)(1)")
    expected = store.similarity_by_ids(vector, [doc.id])[doc.id]
    assert doc.metadata["semantic_score"] == pytest.approx(expected)
