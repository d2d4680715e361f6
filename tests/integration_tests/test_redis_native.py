"""Redis native hybrid search (one request, fused by the server) on Redis Stack (REDIS_URL)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from langchain_core.documents import Document
from redisvl.query import AggregateHybridQuery
from redisvl.query.filter import Tag

from langchain_holodeck.config import HierarchicalDocumentToolConfig
from langchain_holodeck.search_strategy import supports_native_hybrid
from langchain_holodeck.tools import HierarchicalDocumentTool
from langchain_holodeck.vectorstores import create_vector_store
from langchain_holodeck.vectorstores.redis import (
    CONTENT_FIELD,
    EMBEDDING_FIELD,
    METADATA_FIELD,
    HolodeckRedisVectorStore,
)
from tests.helpers import DATA_DIR, HashingEmbeddings

pytestmark = pytest.mark.redis

TEXTS = [
    ("safety protocols stay on in the holodeck", "kb"),
    ("arch controls near the doorway", "kb"),
    ("safety protocols are logged each shift", "kb"),
    ("replicators are maintained monthly", "kb"),
    ("safety protocols of another corpus", "other"),
    ("arch safety of another corpus", "other"),
]


@pytest.fixture
def store(redis_url: str, redis_index_name: str, embeddings: HashingEmbeddings) -> Any:
    built = create_vector_store(
        {"provider": "redis", "connection_string": redis_url, "index_name": redis_index_name},
        embeddings,
        fallback=False,
    )
    built.add_documents(
        [
            Document(id=f"d{i}", page_content=text, metadata={"namespace": ns})
            for i, (text, ns) in enumerate(TEXTS)
        ]
    )
    return built


def test_native_hybrid_returns_the_same_hits_as_raw_redisvl(
    store: HolodeckRedisVectorStore, embeddings: HashingEmbeddings
) -> None:
    assert supports_native_hybrid(store)
    query = "safety protocols arch"
    raw = AggregateHybridQuery(
        text=query,
        text_field_name=CONTENT_FIELD,
        vector=embeddings.embed_query(query),
        vector_field_name=EMBEDDING_FIELD,
        alpha=0.99,  # linear_alpha((0.5, 0.5))
        num_results=6,
        return_fields=["__key"],
        stopwords=None,
    )
    raw_ids = [str(r["__key"]).rsplit(":", 1)[1] for r in store._index.query(raw)][:3]
    if store.server_supports_ft_hybrid():
        pytest.skip("the server has FT.HYBRID: the native path is RRF, not the aggregate")
    hits = store.native_hybrid_search(query, k=3, fetch_k=6)
    assert [h.document.id for h in hits] == raw_ids
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert all(h.document.page_content for h in hits)  # documents in the same request


def test_native_hybrid_keeps_the_namespace_and_the_threshold(
    store: HolodeckRedisVectorStore,
) -> None:
    ours = Tag("namespace") == "kb"
    hits = store.native_hybrid_search("safety protocols", k=10, fetch_k=10, filter=ours)
    assert {h.document.metadata["namespace"] for h in hits} == {"kb"}
    assert len(hits) == 4
    similarities = sorted(h.similarity for h in hits)  # type: ignore[type-var]
    threshold = (similarities[-1] + similarities[-2]) / 2
    strict = store.native_hybrid_search(
        "safety protocols", k=10, fetch_k=10, filter=ours, min_similarity_score=threshold
    )
    assert len(strict) == 1
    assert strict[0].similarity >= threshold  # type: ignore[operator]
    # a query of stop words only: dense search alone, still in the namespace
    plain = store.native_hybrid_search("the of and", k=10, fetch_k=10, filter=ours)
    assert {h.document.metadata["namespace"] for h in plain} == {"kb"}


def test_ft_hybrid_detection_follows_the_server_version(store: HolodeckRedisVectorStore) -> None:
    version = str(store._index.client.info("server")["redis_version"])
    major, minor = (int(p) for p in version.split(".")[:2])
    assert store.server_supports_ft_hybrid() == ((major, minor) >= (8, 4))


@pytest.mark.parametrize("keyword_provider", ["redis", "in-memory"])
def test_tool_on_redis_is_native_and_exact_lookups_stay_first(
    keyword_provider: str,
    redis_url: str,
    redis_index_name: str,
    embeddings: HashingEmbeddings,
    tmp_path: Path,
) -> None:
    shutil.copytree(DATA_DIR / "legal", tmp_path / "legal")
    config = HierarchicalDocumentToolConfig(
        type="hierarchical_document",
        name="legal_docs",
        source=str(tmp_path / "legal"),
        top_k=3,
        database={
            "provider": "redis",
            "connection_string": redis_url,
            "index_name": redis_index_name,
        },
        keyword_index={"provider": keyword_provider},
    )
    tool = HierarchicalDocumentTool(
        config, embeddings=embeddings, project_dir=tmp_path, home_dir=tmp_path
    )
    tool.initialize_sync()
    assert tool.search_strategy == "native"
    docs = tool.as_retriever().invoke("Section 203(a)(1)")
    assert docs[0].metadata["section_id"] == "203(a)(1)"
    assert all(d.metadata["namespace"] == tool.namespace for d in docs)
    assert "Section" in tool.search_sync("What does Section 203(a)(1) require?")


def test_native_hybrid_ranks_fetch_k_candidates_and_reads_the_k_it_returns(
    store: HolodeckRedisVectorStore, embeddings: HashingEmbeddings
) -> None:
    if store.server_supports_ft_hybrid():
        pytest.skip("the server has FT.HYBRID: the native path is RRF, not the aggregate")
    query = "safety protocols arch"
    raw = AggregateHybridQuery(  # redisvl as documented: LOAD first, every candidate read
        text=query,
        text_field_name=CONTENT_FIELD,
        vector=embeddings.embed_query(query),
        vector_field_name=EMBEDDING_FIELD,
        alpha=0.99,  # linear_alpha((0.5, 0.5))
        num_results=6,
        return_fields=["__key", CONTENT_FIELD, METADATA_FIELD],
        stopwords=None,
    )
    best = store._index.query(raw)[:2]
    hits = store.native_hybrid_search(query, k=2, fetch_k=6)
    assert [h.document.id for h in hits] == [str(r["__key"]).rsplit(":", 1)[1] for r in best]
    assert [h.document.page_content for h in hits] == [r[CONTENT_FIELD] for r in best]
    stored = {d.id: d.metadata for d in store.get_by_ids([h.document.id for h in hits])}
    assert all(h.document.metadata == stored[h.document.id] for h in hits)
    assert [h.score for h in hits] == [float(r["hybrid_score"]) for r in best]
