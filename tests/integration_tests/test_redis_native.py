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
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def _manuals(root: Path) -> None:
    """Four manuals with the same numbered sections; the handbook alone says "remote"."""
    root.mkdir()
    for name in ("employee_handbook", "billing_manual", "onboarding_guide", "deployment_guide"):
        title = name.replace("_", " ")
        lines = [f"# {title}"]
        for i in range(1, 6):
            lines += ["", f"## {i}. Topic {i} of {title}", "", f"General text of topic {i}."]
            for j in (1, 2):
                lines += ["", f"### {i}.{j} Details {j}", ""]
                lines.append(f"Subsection {i}.{j} of the {title} covers topic {i} part {j}.")
        (root / f"{name}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.mark.parametrize("min_similarity_score", [None, 0.99])
def test_native_weighs_another_documents_copy_of_a_named_section_by_its_score(
    min_similarity_score: float | None,
    redis_url: str,
    redis_index_name: str,
    embeddings: HashingEmbeddings,
    tmp_path: Path,
) -> None:
    """A query naming a section of one document (docs/search-strategy.md).

    The handbook's 4.2 is pinned (exact score 2.0); the other manuals' 4.2 are exact hits at
    0.5 and add a quarter of the exact leg's share at their rank. Plain RRF gave them nearly
    all of it: billing's 4.2 ranked above the handbook's chunks the engine ranked first. With
    a threshold the engine drops the pinned chunk's row; its ``semantic_score`` is still its
    cosine, computed from the stored vector (it was ``None``).
    """
    _manuals(tmp_path / "docs")
    config = HierarchicalDocumentToolConfig(
        type="hierarchical_document",
        name="manuals",
        source=str(tmp_path / "docs"),
        top_k=50,
        min_similarity_score=min_similarity_score,
        database={
            "provider": "redis",
            "connection_string": redis_url,
            "index_name": redis_index_name,
        },
    )
    tool = HierarchicalDocumentTool(
        config, embeddings=embeddings, project_dir=tmp_path, home_dir=tmp_path
    )
    tool.initialize_sync()
    assert tool.search_strategy == "native"
    retriever = tool.as_retriever()
    docs = retriever.invoke("section 4.2 of the employee handbook")
    first = docs[0].metadata
    assert (first["source_path"], first["exact_rank"]) == ("docs/employee_handbook.md", 1)
    store = retriever.vector_store
    vector = embeddings.embed_query("section 4.2 of the employee handbook")
    assert first["semantic_score"] == pytest.approx(
        store.similarity_by_ids(vector, [docs[0].id])[docs[0].id]
    )
    if min_similarity_score is not None:  # kept under the threshold, the engine dropped it
        assert first["native_rank"] is None
        assert first["semantic_score"] < min_similarity_score
        assert all(d.metadata["semantic_score"] >= min_similarity_score for d in docs[1:])
        return
    k, best = retriever.rrf_k, sum(retriever.weights) / (retriever.rrf_k + 1)
    engine, exact = retriever.weights[0] + retriever.weights[1], retriever.weights[2]
    demoted = [d.metadata for d in docs if d.metadata["exact_match"]][1:]
    assert demoted
    assert all(m["source_path"] != "docs/employee_handbook.md" for m in demoted)
    for m in demoted:  # 0.5 of the leg's best 2.0: a quarter of the exact share
        share = exact * 0.25 / (k + m["exact_rank"])
        if m["native_rank"] is not None:
            share += engine / (k + m["native_rank"])
        assert m["fused_score"] == pytest.approx(share / best)
    # the case found: billing's 4.2, exact #2, ranked second; the handbook's chunk the engine
    # ranks second now ranks above it
    order = [(m["native_rank"], m["exact_rank"]) for m in (d.metadata for d in docs)]
    billing = next(m for m in demoted if m["source_path"] == "docs/billing_manual.md")
    assert billing["exact_rank"] == 2
    assert order.index((2, None)) < order.index((billing["native_rank"], 2))
