"""Model windows on Redis and Qdrant: the chunk is found by its last window, and the keyword
leg (RediSearch on the shared index, Qdrant's sparse vectors) never returns a window."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document

from langchain_holodeck import HybridRetriever
from langchain_holodeck.sync import stable_id, sync_documents
from langchain_holodeck.vectorstores.qdrant import point_id
from tests.helpers import (
    LONG_CHUNK,
    SHORT_CHUNK,
    WINDOW_TAIL,
    WindowedHashingEmbeddings,
    chunk_documents,
)

LONG, SHORT, TAIL = LONG_CHUNK, SHORT_CHUNK, WINDOW_TAIL


def _docs() -> list[Document]:
    return chunk_documents(LONG, SHORT)


def test_redis_dense_leg_finds_the_tail_and_keyword_leg_skips_windows(
    redis_url: str, redis_index_name: str
) -> None:
    from langchain_holodeck.keyword_index import RedisKeywordIndex
    from langchain_holodeck.vectorstores.redis import build_redis_store

    store = build_redis_store(
        WindowedHashingEmbeddings(),
        url=redis_url,
        index_name=redis_index_name,
        algorithm="FLAT",
        metric="COSINE",
        connect_timeout=2.0,
    )
    result = sync_documents(_docs(), store, namespace="kb")
    assert (result.added, result.failed) == (2, 0)
    long_id = stable_id("kb", "a.md_chunk_0")
    assert [d.id for d in store.get_by_ids([f"{long_id}:w2"])] == [f"{long_id}:w2"]

    keywords = RedisKeywordIndex(store, namespace="kb")
    assert [h.id for h in keywords.search("replicator earl grey", 5)] == [long_id]

    dense_only = HybridRetriever(vector_store=store, keyword_index=None, k=2)
    hits = dense_only.invoke(TAIL)
    assert [h.page_content for h in hits] == [LONG, SHORT]
    assert hits[0].metadata["semantic_score"] == pytest.approx(1.0, abs=1e-5)

    # min_similarity_score reads a keyword-only hit's best window, as the dense leg ranks it
    vector = store.embeddings.embed_query(TAIL)
    similar = store.similarity_by_ids(vector, [long_id, stable_id("kb", "a.md_chunk_1")])
    assert similar[long_id] == pytest.approx(1.0, abs=1e-5)
    assert similar[stable_id("kb", "a.md_chunk_1")] < 0.5

    native = HybridRetriever(
        vector_store=store, keyword_index=keywords, k=2, search_strategy="native"
    )
    hits = native.invoke(TAIL)
    assert [h.id for h in hits] == [long_id, stable_id("kb", "a.md_chunk_1")]
    assert hits[0].page_content == LONG


def test_qdrant_native_hybrid_counts_a_window_for_its_chunk() -> None:
    pytest.importorskip("qdrant_client")
    from qdrant_client import QdrantClient

    from langchain_holodeck.backends.qdrant import HolodeckQdrantVectorStore

    store = HolodeckQdrantVectorStore(
        QdrantClient(location=":memory:"), "windows", WindowedHashingEmbeddings()
    )
    sync_documents(_docs(), store, namespace="kb")
    long_id = stable_id("kb", "a.md_chunk_0")
    assert len(store.get_by_ids([f"{long_id}:w1", f"{long_id}:w2"])) == 2

    native = HybridRetriever(vector_store=store, k=2, search_strategy="native")
    hits = native.invoke(TAIL)
    assert [h.id for h in hits] == [long_id, stable_id("kb", "a.md_chunk_1")]
    assert hits[0].page_content == LONG
    assert hits[0].metadata["semantic_score"] == pytest.approx(1.0, abs=1e-5)
    # the sparse leg never returns a window: a keyword-only query finds the chunk once
    sparse = store.native_hybrid_search("replicator earl grey", k=5, weights=(0.0, 1.0))
    assert [h.document.id for h in sparse] == [long_id]


def test_qdrant_convex_threshold_scores_a_chunk_by_its_best_window() -> None:
    """Under a threshold a keyword-only chunk's similarity is read from its stored vectors:
    its own entry's and its windows', the best of them, as the dense leg would rank it."""
    pytest.importorskip("qdrant_client")
    import numpy as np
    from qdrant_client import QdrantClient

    from langchain_holodeck.backends.qdrant import HolodeckQdrantVectorStore

    embeddings = WindowedHashingEmbeddings()
    store = HolodeckQdrantVectorStore(QdrantClient(location=":memory:"), "windows", embeddings)
    sync_documents(_docs(), store, namespace="kb")
    long_id = stable_id("kb", "a.md_chunk_0")
    query = np.asarray(embeddings.embed_query(TAIL), dtype=np.float32)
    own = store.client.retrieve(store.collection_name, [point_id(long_id)], with_vectors=True)
    own_score = float(np.asarray(own[0].vector["dense"]) @ query)
    assert own_score < 0.99  # the chunk's own entry does not hold the tail
    assert store._similarities(query, [long_id]) == {long_id: pytest.approx(1.0, abs=1e-5)}
