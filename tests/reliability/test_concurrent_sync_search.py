"""Search while a sync rewrites the corpus: no exception, no torn result.

A writer thread syncs version 2, 1, 2, 1, ... of the corpus (edits, a shrinking file, a removed
file, a new file: updates, deletes and adds) while reader threads query the store and the
hybrid retriever without pause. Every document a reader gets must be one complete version of
its chunk: an id that one of the versions has, and content whose hash is the hash stored with
it (never new content with old metadata, never an id without content).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.vectorstores import VectorStore

from langchain_holodeck.keyword_index import BM25KeywordIndex, KeywordIndex
from langchain_holodeck.retrievers import HybridRetriever
from langchain_holodeck.sync import assign_ids, content_hash, sync_documents
from langchain_holodeck.vectorstores import MatrixVectorStore, create_vector_store_with_status
from tests.helpers import HashingEmbeddings
from tests.reliability import corpus

QUERIES = ["warp core shift", "revised part", "docs/new.md part 3", "tea console", "arch"]
MIN_ROUNDS = 8
MIN_DURING = 200
READERS = 3
RESULT_KEYS = {
    "fused_score",
    "semantic_score",
    "keyword_score",
    "exact_match",
    "semantic_rank",
    "keyword_rank",
    "exact_rank",
}


def versions() -> dict[str, set[tuple[str, str]]]:
    """id -> every (content, content_hash) a complete version of that chunk has."""
    allowed: dict[str, set[tuple[str, str]]] = {}
    for version in (1, 2):
        for doc in assign_ids(corpus.chunks(version), namespace=corpus.NAMESPACE):
            allowed.setdefault(doc.id or "", set()).add(
                (doc.page_content, doc.metadata["content_hash"])
            )
    return allowed


def check(doc: Document, allowed: dict[str, set[tuple[str, str]]]) -> str | None:
    """Why ``doc`` is torn, or None."""
    if doc.id not in allowed:
        return f"unknown id {doc.id}"
    meta = {k: v for k, v in doc.metadata.items() if k not in RESULT_KEYS}
    stored_hash = meta.get("content_hash")
    if (doc.page_content, stored_hash) not in allowed[doc.id]:
        return f"{doc.id}: content and hash from different versions"
    if content_hash(Document(page_content=doc.page_content, metadata=meta)) != stored_hash:
        return f"{doc.id}: metadata does not match content"
    return None


def run_concurrently(
    store: VectorStore, keyword_index: KeywordIndex, *, search_kwargs: dict[str, Any]
) -> tuple[int, list[str]]:
    """Sync back and forth while READERS query; return (queries answered meanwhile, problems)."""
    sync_documents(
        corpus.chunks(1),
        store,
        namespace=corpus.NAMESPACE,
        batch_size=4,
        cleanup=True,
        keyword_index=keyword_index,
    )
    retriever = HybridRetriever(
        vector_store=store, keyword_index=keyword_index, k=5, search_kwargs=search_kwargs
    )
    allowed = versions()
    done = threading.Event()
    problems: list[str] = []
    answered = [0] * READERS
    during = [0] * READERS  # answered while the writer was still syncing
    lock = threading.Lock()

    last = [1]

    def writer() -> None:
        # at least MIN_ROUNDS syncs, and on until the readers answered MIN_DURING queries
        rounds = 0
        try:
            while rounds < MIN_ROUNDS or (sum(answered) < MIN_DURING and rounds < 500):
                version = 2 if rounds % 2 == 0 else 1
                result = sync_documents(
                    corpus.chunks(version),
                    store,
                    namespace=corpus.NAMESPACE,
                    batch_size=2,
                    cleanup=True,
                    keyword_index=keyword_index,
                )
                last[0] = version
                rounds += 1
                if result.failed or result.errors:
                    with lock:
                        problems.append(f"sync failed: {result}")
        finally:
            done.set()

    def reader(n: int) -> None:
        searches: list[Callable[[str], list[Document]]] = [
            lambda q: retriever.invoke(q),
            lambda q: store.similarity_search(q, k=5, **search_kwargs),
        ]
        i = 0
        while not done.is_set() or answered[n] < len(QUERIES):
            query = QUERIES[i % len(QUERIES)]
            try:
                docs = searches[i % 2](query)
            except Exception as error:  # any exception is a failure of this test
                with lock:
                    problems.append(f"{type(error).__name__}: {error}")
                return
            found = [why for why in (check(d, allowed) for d in docs) if why]
            if found or not docs:
                with lock:
                    problems.extend(found or [f"no result for {query!r}"])
            answered[n] += 1
            during[n] += not done.is_set()
            i += 1

    threads = [threading.Thread(target=writer)]
    threads += [threading.Thread(target=reader, args=(n,)) for n in range(READERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    final = corpus.state(store)
    assert corpus.essentials(final) == corpus.essentials(_clean_state(last[0]))
    return sum(during), problems


def _clean_state(version: int) -> corpus.State:
    store = MatrixVectorStore(HashingEmbeddings())
    sync_documents(corpus.chunks(version), store, namespace=corpus.NAMESPACE, cleanup=True)
    return corpus.state(store)


def test_search_during_sync_in_memory_is_never_torn() -> None:
    store = MatrixVectorStore(HashingEmbeddings())
    answered, problems = run_concurrently(
        store,
        BM25KeywordIndex(),
        search_kwargs={"filter": lambda d: d.metadata.get("namespace") == corpus.NAMESPACE},
    )
    assert problems == []
    assert answered >= MIN_DURING
    print(f"queries answered during the sync: {answered}")


@pytest.mark.redis
def test_search_during_sync_on_redis_is_never_torn(redis_url: str, redis_index_name: str) -> None:
    from redisvl.query.filter import Tag

    from langchain_holodeck.keyword_index import RedisKeywordIndex

    config = {"provider": "redis", "connection_string": redis_url, "index_name": redis_index_name}
    store = create_vector_store_with_status(config, HashingEmbeddings(), fallback=False).store
    answered, problems = run_concurrently(
        store,
        RedisKeywordIndex(store, namespace=corpus.NAMESPACE),
        search_kwargs={"filter": Tag("namespace") == corpus.NAMESPACE},
    )
    assert problems == []
    assert answered >= MIN_DURING
    print(f"queries answered during the sync: {answered}")


def test_the_torn_check_catches_mixed_versions() -> None:
    allowed = versions()
    v1 = {d.id: d for d in assign_ids(corpus.chunks(1), namespace=corpus.NAMESPACE)}
    v2 = {d.id: d for d in assign_ids(corpus.chunks(2), namespace=corpus.NAMESPACE)}
    edited = next(i for i in v1 if i in v2 and v1[i].page_content != v2[i].page_content)
    assert check(v1[edited], allowed) is None
    assert check(v2[edited], allowed) is None
    mixed = v2[edited].model_copy(update={"metadata": v1[edited].metadata})
    assert check(mixed, allowed) is not None
    assert check(Document(id="gone", page_content="x"), allowed) == "unknown id gone"
