"""Search strategy: chosen from what the store can do; native keeps exact lookups first."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore

from langchain_holodeck.backends import get_backend
from langchain_holodeck.config import HierarchicalDocumentToolConfig, load_agent_config
from langchain_holodeck.errors import ConfigError
from langchain_holodeck.exact import ExactMatchIndex
from langchain_holodeck.keyword_index import BM25KeywordIndex
from langchain_holodeck.retrievers.hybrid import HybridRetriever
from langchain_holodeck.search_strategy import (
    choose_search_strategy,
    supports_native_hybrid,
    tool_search_strategy,
)
from langchain_holodeck.tools import HierarchicalDocumentTool
from langchain_holodeck.vectorstores import MatrixVectorStore
from tests.helpers import DATA_DIR, HashingEmbeddings

qdrant = pytest.importorskip("langchain_holodeck.backends.qdrant")
pytest.importorskip("qdrant_client")


def qdrant_store(embeddings: HashingEmbeddings) -> Any:
    from qdrant_client import QdrantClient

    return qdrant.HolodeckQdrantVectorStore(QdrantClient(location=":memory:"), "s", embeddings)


def test_auto_is_native_only_when_the_backend_fuses_and_both_legs_count(
    embeddings: HashingEmbeddings,
) -> None:
    assert not supports_native_hybrid(MatrixVectorStore(embeddings))
    assert supports_native_hybrid(qdrant_store(embeddings))
    assert get_backend(None).capabilities.native_hybrid is False
    assert get_backend({"provider": "qdrant", "location": ":memory:"}).capabilities.native_hybrid
    assert choose_search_strategy("auto", native_hybrid=False) == "fallback"
    assert choose_search_strategy("auto", native_hybrid=True) == "native"
    assert choose_search_strategy("auto", native_hybrid=True, separate_keyword_engine=True) == (
        "fallback"
    )
    assert choose_search_strategy("auto", native_hybrid=True, weights=(1.0, 0.0)) == "fallback"
    assert choose_search_strategy("fallback", native_hybrid=True) == "fallback"
    assert choose_search_strategy("native", native_hybrid=True) == "native"


def test_native_on_a_backend_that_cannot_fuse_names_it(embeddings: HashingEmbeddings) -> None:
    with pytest.raises(ConfigError, match="got in-memory"):
        choose_search_strategy("native", native_hybrid=False, backend="in-memory")
    with pytest.raises(ConfigError, match="got 'fast'"):
        choose_search_strategy("fast", native_hybrid=True)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="got MatrixVectorStore"):
        HybridRetriever(vector_store=MatrixVectorStore(embeddings), search_strategy="native")


DOCS = [
    Document(
        id=f"d{i}",
        page_content=text,
        metadata={"namespace": ns, "section_id": section, "source_path": "act.md"},
    )
    for i, (text, section, ns) in enumerate(
        [
            ("Section 101. The holodeck safety protocols must stay on.", "101", "kb"),
            ("Section 102. Arch controls are reachable from the doorway.", "102", "kb"),
            ("Section 103. Safety protocols are logged each shift.", "103", "kb"),
            ("Section 104. Replicators are maintained monthly.", "104", "kb"),
            ("Safety protocols of another corpus entirely.", "101", "other"),
        ]
    )
]


def native_retriever(embeddings: HashingEmbeddings, **kwargs: Any) -> HybridRetriever:
    store = qdrant_store(embeddings)
    store.add_documents(DOCS)
    ours = [d for d in DOCS if d.metadata["namespace"] == "kb"]
    exact = ExactMatchIndex()
    exact.upsert(ours)
    return HybridRetriever(
        vector_store=store,
        keyword_index=BM25KeywordIndex(),  # not consulted on the native strategy
        exact_index=exact,
        search_strategy="native",
        search_kwargs={"filter": store.namespace_filter("kb")},
        **kwargs,
    )


def test_native_retriever_fuses_in_the_store_and_keeps_the_namespace(
    embeddings: HashingEmbeddings,
) -> None:
    retriever = native_retriever(embeddings, k=3)
    docs = retriever.invoke("safety protocols")
    assert {d.id for d in docs[:2]} == {"d0", "d2"}
    assert all(d.metadata["namespace"] == "kb" for d in docs)
    first = docs[0].metadata
    assert first["native_rank"] == 1
    assert first["keyword_rank"] is None  # no separate keyword leg ran
    assert 0.0 <= first["semantic_score"] <= 1.0


async def test_exact_section_lookup_stays_first_on_the_native_strategy(
    embeddings: HashingEmbeddings,
) -> None:
    retriever = native_retriever(embeddings, k=3)
    for docs in (retriever.invoke("Section 104"), await retriever.ainvoke("Section 104")):
        assert docs[0].id == "d3"
        assert docs[0].metadata["exact_match"] is True
        assert docs[0].metadata["fused_score"] > docs[1].metadata["fused_score"]


def test_native_scores_are_the_engines_ranks(embeddings: HashingEmbeddings) -> None:
    """docs/search-strategy.md: on the native strategy the shown score reads ranks (61/61,
    61/62, 61/63 with rrf_k 60), the engine's own score being native_score."""
    docs = native_retriever(embeddings, k=3).invoke("safety protocols")
    assert [d.metadata["native_rank"] for d in docs] == [1, 2, 3]
    assert [d.metadata["fused_score"] for d in docs] == pytest.approx([1.0, 61 / 62, 61 / 63])
    natives = [d.metadata["native_score"] for d in docs]
    assert natives == sorted(natives, reverse=True)


def test_native_retriever_applies_min_similarity_score(embeddings: HashingEmbeddings) -> None:
    loose = native_retriever(embeddings, k=4).invoke("replicators")
    strict = native_retriever(embeddings, k=4, min_similarity_score=0.99).invoke("replicators")
    assert len(loose) > len(strict)
    assert all(d.metadata["semantic_score"] >= 0.99 for d in strict)


def test_native_exact_hit_under_the_threshold_reports_its_cosine(
    embeddings: HashingEmbeddings,
) -> None:
    """The engine drops the pinned section's row under the threshold; the hit is kept and its
    semantic_score is its cosine (the fallback's value), computed for it alone."""
    retriever = native_retriever(embeddings, k=3, min_similarity_score=0.99)
    docs = retriever.invoke("Section 104")
    assert docs[0].id == "d3"
    first = docs[0].metadata
    assert (first["exact_match"], first["native_rank"]) == (True, None)
    fallback = native_retriever(embeddings, k=3, min_similarity_score=0.99)
    fallback.search_strategy = "fallback"
    fell = fallback.invoke("Section 104")[0].metadata
    assert "native_rank" not in fell
    assert fell["semantic_score"] == pytest.approx(first["semantic_score"])
    assert first["semantic_score"] < 0.99


def test_native_request_fuses_fetch_k_candidates_and_returns_the_rows_it_uses(
    embeddings: HashingEmbeddings,
) -> None:
    retriever = native_retriever(embeddings, k=2, fetch_k=300)
    store = retriever.vector_store
    asked: list[dict[str, Any]] = []
    search = store.native_hybrid_search  # type: ignore[attr-defined]  # a native store

    def recording(query: str, **kwargs: Any) -> Any:
        asked.append(kwargs)
        return search(query, **kwargs)

    store.native_hybrid_search = recording  # type: ignore[attr-defined]  # records the request
    retriever.invoke("replicators maintained")
    retriever.invoke("Section 104 replicators")  # one exact hit: one more row
    retriever.model_copy(update={"min_similarity_score": 0.1}).invoke("replicators")
    # rows returned: k, plus one per exact hit; candidates fused: fetch_k, always
    assert [(a["k"], a["fetch_k"]) for a in asked] == [(2, 300), (3, 300), (2, 300)]


@pytest.mark.parametrize(
    ("requested", "database", "expected"),
    [
        ("auto", None, "fallback"),
        ("auto", {"provider": "qdrant", "location": ":memory:"}, "native"),
        ("fallback", {"provider": "qdrant", "location": ":memory:"}, "fallback"),
    ],
)
def test_tool_reports_its_search_strategy(
    requested: str,
    database: dict[str, str] | None,
    expected: str,
    embeddings: HashingEmbeddings,
    tmp_path: Path,
) -> None:
    legal = tmp_path / "legal"
    shutil.copytree(DATA_DIR / "legal", legal)
    config = HierarchicalDocumentToolConfig(
        type="hierarchical_document",
        name="legal_docs",
        source=str(legal),
        top_k=3,
        database=database,
        search_strategy=requested,
    )
    tool = HierarchicalDocumentTool(
        config, embeddings=embeddings, project_dir=tmp_path, home_dir=tmp_path
    )
    assert tool.search_strategy is None
    tool.initialize_sync()
    assert tool.search_strategy == expected
    assert tool.as_retriever().invoke("Section 203(a)(1)")[0].metadata["section_id"] == "203(a)(1)"


def test_tool_forced_native_on_memory_is_a_config_error(
    embeddings: HashingEmbeddings, tmp_path: Path
) -> None:
    config = HierarchicalDocumentToolConfig(
        type="hierarchical_document",
        name="legal_docs",
        source=str(DATA_DIR / "legal"),
        search_strategy="native",
    )
    tool = HierarchicalDocumentTool(
        config, embeddings=embeddings, project_dir=tmp_path, home_dir=tmp_path
    )
    with pytest.raises(ConfigError, match="search_strategy 'native' needs"):
        tool.initialize_sync()


def test_native_on_memory_names_the_file_and_the_field(
    embeddings: HashingEmbeddings, tmp_path: Path
) -> None:
    """Found 2026-12-07: the error of a tool from an agent.yaml named neither (the store, so
    the strategy's check, is known only once the project's config is read)."""
    path = tmp_path / "agent.yaml"
    path.write_text(
        f"tools:\n  - {{type: vectorstore, name: kb, source: '{DATA_DIR / 'legal'}'}}\n"
        f"  - {{type: hierarchical_document, name: act, source: '{DATA_DIR / 'legal'}',\n"
        "     search_strategy: native}\n",
        encoding="utf-8",
    )
    config = load_agent_config(path)
    tool = HierarchicalDocumentTool(
        config.tools[1],  # type: ignore[arg-type]  # a hierarchical_document tool
        embeddings=embeddings,
        project_dir=tmp_path,
        home_dir=tmp_path,
    )
    with pytest.raises(ConfigError) as info:
        tool.initialize_sync()
    assert str(info.value).startswith(
        f"{path}: tools[1].search_strategy 'native' needs a backend that fuses dense and keyword "
    )
    assert str(info.value).endswith("got in-memory; use 'auto' or 'fallback'.")


def test_search_span_carries_the_mode(embeddings: HashingEmbeddings) -> None:
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    native_retriever(embeddings).invoke("safety")
    HybridRetriever(vector_store=MatrixVectorStore(embeddings)).invoke("safety")
    spans = exporter.get_finished_spans()
    modes = [s.attributes["search.mode"] for s in spans if s.name == "holodeck.hybrid_search"]
    assert modes == ["native", "fallback"]
    assert [s.name for s in spans].count("holodeck.native_hybrid_search") == 1
    exporter.shutdown()


class ThirdPartyStore(VectorStore):
    """A stand-in for a store no backend of ours knows (Chroma, PGVector, Pinecone...).

    It keeps its data in langchain-core's ``InMemoryVectorStore`` by composition, so no
    backend adopts it by its class; it ignores ``filter`` like a store with its own syntax.
    """

    def __init__(self, embeddings: HashingEmbeddings) -> None:
        self._inner = InMemoryVectorStore(embeddings)

    @classmethod
    def from_texts(cls, texts: Any, embedding: Any, metadatas: Any = None, **kwargs: Any) -> Any:
        store = cls(embedding)
        store.add_texts(texts, metadatas, **kwargs)
        return store

    def add_texts(self, texts: Any, metadatas: Any = None, **kwargs: Any) -> list[str]:
        return self._inner.add_texts(texts, metadatas, **kwargs)

    def get_by_ids(self, ids: Any, /) -> list[Document]:
        return self._inner.get_by_ids(ids)

    def delete(self, ids: Any = None, **kwargs: Any) -> bool | None:
        self._inner.delete(ids)
        return True

    def similarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Document]:
        return self._inner.similarity_search(query, k=k)

    def similarity_search_with_score(
        self, query: str, k: int = 4, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        return self._inner.similarity_search_with_score(query, k=k)

    def _select_relevance_score_fn(self) -> Any:
        return lambda score: max(0.0, min(1.0, score))


def test_any_langchain_store_plugs_in_on_the_fallback_strategy(
    embeddings: HashingEmbeddings,
) -> None:
    from langchain_holodeck import BM25KeywordIndex, HybridRetriever, sync_documents
    from langchain_holodeck.backends import LangChainStoreBackend, backend_for_store

    # the README's "Any other LangChain vector store" example, with the stand-in store
    store = ThirdPartyStore(embeddings)  # Chroma(...), PGVector(...), PineconeVectorStore(...)
    keywords = BM25KeywordIndex()  # or OpenSearchKeywordIndex(endpoint, namespace="docs")
    sync_documents(DOCS[:4], store, namespace="docs", keyword_index=keywords)
    sync_documents(DOCS[4:], store, namespace="other")  # another corpus in the same store
    view, search_kwargs = backend_for_store(store).search_scope(store, "docs")
    retriever = HybridRetriever(
        vector_store=view, keyword_index=keywords, search_kwargs=search_kwargs, k=3
    )

    assert type(backend_for_store(store)) is LangChainStoreBackend
    assert retriever.search_strategy == "fallback"  # the store cannot fuse: RRF here
    docs = retriever.invoke("safety protocols")
    assert {d.page_content for d in docs[:2]} == {DOCS[0].page_content, DOCS[2].page_content}
    assert all(d.metadata["namespace"] == "docs" for d in docs)  # post-filtered by namespace
    assert any(d.metadata["keyword_rank"] is not None for d in docs)
    again = sync_documents(DOCS[:4], store, namespace="docs", keyword_index=keywords)
    assert (again.added, again.skipped) == (0, 4)


def _tool_config(**overrides: Any) -> HierarchicalDocumentToolConfig:
    fields: dict[str, Any] = {"type": "hierarchical_document", "name": "t", "source": "."}
    return HierarchicalDocumentToolConfig(**{**fields, **overrides})


def test_the_tool_strategy_builder_reads_the_backend_and_the_keyword_index() -> None:
    redis = get_backend({"provider": "redis", "connection_string": "redis://127.0.0.1:1"})
    memory = get_backend(None)
    assert tool_search_strategy(_tool_config(), redis) == "native"
    assert tool_search_strategy(_tool_config(), memory) == "fallback"
    opensearch = {"provider": "opensearch", "endpoint": "http://127.0.0.1:9200"}
    assert tool_search_strategy(_tool_config(keyword_index=opensearch), redis) == "fallback"
    # an open store that cannot fuse keeps the fallback even on a native backend
    plain = InMemoryVectorStore(HashingEmbeddings())
    assert tool_search_strategy(_tool_config(), redis, store=plain) == "fallback"
    with pytest.raises(ConfigError, match=r"itself \(postgres, qdrant, redis\), got in-memory"):
        tool_search_strategy(_tool_config(search_strategy="native"), memory)
