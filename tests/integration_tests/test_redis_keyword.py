"""RedisKeywordIndex against Redis Stack: BM25 on the vector index, no injection, hybrid."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.documents import Document

from langchain_holodeck.keyword_index import KeywordIndex, RedisKeywordIndex
from langchain_holodeck.retrievers import HybridRetriever
from langchain_holodeck.splitters import StructuredMarkdownSplitter
from langchain_holodeck.sync import stable_id
from langchain_holodeck.vectorstores.redis import build_redis_store

pytestmark = pytest.mark.redis
ACT = "legal/holodeck_act.md"


def act_chunks(data_dir: Path, namespace: str) -> list[Document]:
    text = (data_dir / "legal" / "holodeck_act.md").read_text(encoding="utf-8")
    doc = Document(page_content=text, metadata={"source_path": ACT, "namespace": namespace})
    chunks = StructuredMarkdownSplitter().split_documents([doc])
    return [
        c.model_copy(
            update={"id": stable_id(namespace, f"{ACT}_chunk_{c.metadata['chunk_index']}")}
        )
        for c in chunks
    ]


@pytest.fixture
def store(redis_url, redis_index_name, embeddings):
    return build_redis_store(
        embeddings,
        url=redis_url,
        index_name=redis_index_name,
        algorithm="FLAT",
        metric="COSINE",
        connect_timeout=2.0,
    )


@pytest.fixture
def chunks(store, data_dir) -> list[Document]:
    docs = act_chunks(data_dir, "legal")
    store.add_documents(docs)
    store.add_documents(act_chunks(data_dir, "other"))  # same text, another namespace
    return docs


def test_bm25_search_on_the_vector_index(store, chunks) -> None:
    index = RedisKeywordIndex(store, namespace="legal")
    assert isinstance(index, KeywordIndex)
    by_sid = {c.metadata["section_id"]: c.id for c in chunks}
    hits = index.search("arch controls", k=5)
    assert hits[0].id == by_sid["202(a)"]
    assert all(h.score > 0 for h in hits)
    assert {h.id for h in hits} <= {c.id for c in chunks}  # namespace filter held


def test_without_namespace_both_copies_match(store, chunks) -> None:
    hits = RedisKeywordIndex(store).search("arch controls", k=10)
    assert len({h.id for h in hits}) == 2


def test_index_follows_the_store(store, chunks) -> None:
    index = RedisKeywordIndex(store, namespace="legal")
    target = next(c for c in chunks if c.metadata["section_id"] == "202(a)")
    store.delete([target.id])
    assert target.id not in {h.id for h in index.search("arch controls", k=10)}
    store.add_documents([target.model_copy(update={"page_content": "Replicator quartermaster"})])
    assert [h.id for h in index.search("quartermaster", k=3)] == [target.id]
    assert index.rebuild_from_store(store) == 2 * len(chunks)


@pytest.mark.parametrize(
    "query",
    [
        '@text:(*) | -foo {bar} [baz] "qu\'ote" ~x %y% : ; , . < > ! $ & = ^ \\ /',
        "*",
        "-",
        "@namespace:{other}",
        "arch) | @namespace:{other} (controls",
        "\x00\x01\x1b[31m arch \x7f controls",
        "",
        "   ",
        "the and of",
        "arch " * 20_000,  # 100 KB
    ],
)
def test_query_syntax_is_never_injected(store, chunks, query) -> None:
    index = RedisKeywordIndex(store, namespace="legal")
    hits = index.search(query, k=10)
    allowed = {c.id for c in chunks}
    assert {h.id for h in hits} <= allowed  # the namespace filter cannot be escaped


def test_hybrid_retriever_over_redis(store, chunks) -> None:
    by_sid = {c.metadata["section_id"]: c.id for c in chunks}
    r = HybridRetriever(
        vector_store=store, keyword_index=RedisKeywordIndex(store, namespace="legal"), k=3
    )
    docs = r.invoke("second officer arch controls")
    assert by_sid["202(a)"] in {d.id for d in docs}
    assert any(d.metadata["keyword_rank"] == 1 for d in docs)


async def test_async_search(store, chunks) -> None:
    index = RedisKeywordIndex(store, namespace="legal")
    assert await index.asearch("arch controls", 3) == index.search("arch controls", 3)


def test_bad_arguments(store) -> None:
    with pytest.raises(ValueError, match="scorer must be 'BM25STD' or 'BM25', got 'TFIDF'"):
        RedisKeywordIndex(store, scorer="TFIDF")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="needs a langchain-redis RedisVectorStore"):
        RedisKeywordIndex(object())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="k must be a positive integer"):
        RedisKeywordIndex(store).search("x", 0)


def test_the_namespace_filter_adds_nothing_to_the_bm25_scores(store, data_dir) -> None:
    """One corpus in the index: every chunk carries the namespace TAG. RediSearch 2.10 scores
    a TAG clause intersected with the text, and for a TAG on every document that score is a
    large arbitrary number; the filter must keep the documents and leave the scores alone."""
    docs = act_chunks(data_dir, "legal")
    store.add_documents(docs)
    query = "arch controls safety protocols"
    plain = RedisKeywordIndex(store).search(query, k=20)
    scoped = RedisKeywordIndex(store, namespace="legal").search(query, k=20)
    assert [h.id for h in scoped] == [h.id for h in plain]
    assert [h.score for h in scoped] == pytest.approx([h.score for h in plain], rel=1e-9)
    top = max(h.score for h in scoped)
    assert top < 4 * 2.2 * 10  # each of the 4 terms: at most (k1 + 1) x an IDF below 10
