"""OpenTelemetry spans, recorded by the SDK's in-memory exporter (no patched tracer)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from langchain_holodeck import _tracing
from langchain_holodeck.config import HierarchicalDocumentToolConfig
from langchain_holodeck.exact import ExactMatchIndex
from langchain_holodeck.keyword_index import BM25KeywordIndex
from langchain_holodeck.retrievers import HybridRetriever
from langchain_holodeck.tools import HierarchicalDocumentTool
from langchain_holodeck.vectorstores import MatrixVectorStore
from tests.helpers import DATA_DIR, HashingEmbeddings
from tests.unit_tests.test_retrievers import act_chunks

_EXPORTER = InMemorySpanExporter()


@pytest.fixture(scope="module", autouse=True)
def _sdk_provider() -> None:
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    _EXPORTER.clear()
    yield _EXPORTER
    _EXPORTER.clear()


def named(exporter: InMemorySpanExporter, name: str) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.name == name]


@pytest.fixture
def retriever() -> HybridRetriever:
    chunks = act_chunks(DATA_DIR)
    store = MatrixVectorStore(HashingEmbeddings())
    store.add_documents(chunks)
    bm25 = BM25KeywordIndex()
    bm25.upsert(chunks)
    exact = ExactMatchIndex()
    exact.upsert(chunks)
    return HybridRetriever(
        vector_store=store, keyword_index=bm25, exact_index=exact, k=3, provider="in-memory"
    )


def test_search_span_carries_mode_provider_top_k_and_result_count(retriever, spans) -> None:
    docs = retriever.invoke("Section 202 arch controls", k=2)
    (search,) = named(spans, "holodeck.hybrid_search")
    attributes = dict(search.attributes or {})
    assert attributes["search.mode"] == "fallback"
    assert attributes["search.provider"] == "in-memory"
    assert attributes["search.top_k"] == 2
    assert attributes["search.fetch_k"] == retriever.fetch_k
    assert attributes["search.fusion"] == retriever.fusion
    assert attributes["search.result_count"] == len(docs) == 2


@pytest.mark.parametrize("path", ["sync", "async"])
async def test_a_search_that_records_nothing_asks_for_the_provider_once(
    retriever, monkeypatch, path
) -> None:
    asked: list[str] = []

    class _NoProvider:  # opentelemetry.trace before a provider is set, counting the look-ups
        ProxyTracerProvider = trace.ProxyTracerProvider

        def get_tracer_provider(self) -> trace.TracerProvider:
            asked.append("provider")
            return trace.ProxyTracerProvider()

    monkeypatch.setattr(_tracing, "_trace", _NoProvider())
    query = "Section 202 arch controls"
    docs = retriever.invoke(query, k=2) if path == "sync" else await retriever.ainvoke(query, k=2)
    assert len(docs) == 2
    assert asked == ["provider"]  # the search's span; its children (legs, reads) do not ask


@pytest.mark.parametrize("path", ["sync", "async"])
async def test_each_leg_has_a_child_span_with_its_result_count(retriever, spans, path) -> None:
    query = "Section 202 arch controls"
    retriever = retriever.model_copy(update={"feedback_docs": 0})  # one read: the final k
    if path == "sync":
        retriever.invoke(query)
    else:
        await retriever.ainvoke(query)
    (search,) = named(spans, "holodeck.hybrid_search")
    legs = {
        name: named(spans, name)
        for name in ("holodeck.semantic_search", "holodeck.keyword_search", "holodeck.exact_search")
    }
    for name, found in legs.items():
        assert len(found) == 1, name
        (leg,) = found
        assert leg.parent is not None
        assert leg.parent.span_id == search.context.span_id  # nested, also from the pool
        assert leg.attributes["search.result_count"] >= 1
    dense = legs["holodeck.semantic_search"][0]
    assert dense.attributes["search.dense_path"] == "ids"
    (read,) = named(spans, "holodeck.read_documents")
    assert read.attributes["search.read_count"] == 3


@pytest.mark.parametrize("path", ["sync", "async"])
async def test_feedback_has_a_child_span_and_its_read_is_not_repeated(
    retriever, spans, path
) -> None:
    query = "arch controls"
    docs = retriever.invoke(query) if path == "sync" else await retriever.ainvoke(query)
    (search,) = named(spans, "holodeck.hybrid_search")
    (feedback,) = named(spans, "holodeck.feedback")
    assert feedback.parent is not None
    assert feedback.parent.span_id == search.context.span_id
    assert feedback.attributes["search.feedback_docs"] == retriever.feedback_docs
    # the chunks fed back were read once, under the feedback's span (a search whose result
    # they hold had no read span at all); the final read asks only for the others
    reads = named(spans, "holodeck.read_documents")
    (fed,) = [r for r in reads if r.parent.span_id == feedback.context.span_id]
    assert fed.attributes["search.read_count"] == retriever.feedback_docs
    final = [r for r in reads if r.parent.span_id == search.context.span_id]
    assert len(final) + 1 == len(reads)
    assert sum(r.attributes["search.read_count"] for r in final) <= len(docs)


async def test_a_search_whose_result_feedback_read_has_a_read_span(retriever, spans) -> None:
    # with min_similarity_score the result was often the chunks feedback had read: no
    # holodeck.read_documents span at all, though README lists it for every search
    strict = retriever.model_copy(update={"min_similarity_score": 0.3})
    docs = strict.invoke("arch controls")
    assert 0 < len(docs) <= strict.feedback_docs
    (feedback,) = named(spans, "holodeck.feedback")
    (read,) = named(spans, "holodeck.read_documents")
    assert read.parent.span_id == feedback.context.span_id


def test_a_failing_leg_still_closes_the_search_span(retriever, spans) -> None:
    class Down(BM25KeywordIndex):
        def search(self, query, k):
            msg = "keyword backend is down"
            raise ConnectionError(msg)

    broken = retriever.model_copy(update={"keyword_index": Down()})
    assert broken.invoke("arch controls")
    (search,) = named(spans, "holodeck.hybrid_search")
    assert search.attributes["search.result_count"] == 3


async def test_tool_initialize_traces_index_builds(tmp_path: Path, spans) -> None:
    source = tmp_path / "legal"
    shutil.copytree(DATA_DIR / "legal", source)
    config = HierarchicalDocumentToolConfig(
        type="hierarchical_document", name="legal_docs", source=str(source), top_k=2
    )
    tool = HierarchicalDocumentTool(
        config, embeddings=HashingEmbeddings(), project_dir=tmp_path, home_dir=tmp_path
    )
    await tool.initialize()
    builds = named(spans, "holodeck.index_build")
    kinds = {s.attributes["index.kind"]: s for s in builds}
    assert {"keyword", "exact", "definitions"} <= set(kinds)
    assert kinds["exact"].attributes["index.provider"] == "ExactMatchIndex"
    assert kinds["definitions"].attributes["index.document_count"] == tool.document_count > 0
    assert all({"index.provider", "index.document_count"} <= set(s.attributes) for s in builds)
    spans.clear()
    await tool.search("Section 201(b)")
    (search,) = named(spans, "holodeck.hybrid_search")
    assert search.attributes["search.provider"] == tool.backend == "in-memory"
    assert search.attributes["search.top_k"] == 2


async def test_a_keyword_index_loaded_from_disk_says_its_provider_and_count(
    tmp_path: Path, spans
) -> None:
    # the load's span had index.kind and index.source only; README lists index.provider and
    # index.document_count on every index build
    config = HierarchicalDocumentToolConfig(
        type="hierarchical_document", name="legal_docs", source=str(DATA_DIR / "legal")
    )
    options: dict[str, Any] = {"project_dir": tmp_path, "home_dir": tmp_path}
    first = HierarchicalDocumentTool(
        config, embeddings=HashingEmbeddings(), store_dir=tmp_path / "store", **options
    )
    await first.initialize()
    spans.clear()
    second = HierarchicalDocumentTool(
        config, embeddings=HashingEmbeddings(), store_dir=tmp_path / "store", **options
    )
    await second.initialize()
    (loaded,) = [
        s
        for s in named(spans, "holodeck.index_build")
        if s.attributes.get("index.source") == "disk"
    ]
    assert loaded.attributes["index.provider"] == "BM25KeywordIndex"
    assert loaded.attributes["index.document_count"] == second.document_count > 0


def test_the_readme_names_every_span_the_package_opens() -> None:
    import re

    root = Path(__file__).resolve().parents[2]
    package = "\n".join(
        p.read_text(encoding="utf-8") for p in root.glob("langchain_holodeck/**/*.py")
    )
    spans = set(re.findall(r"\"(holodeck\.[a-z_]+)\"", package))
    readme = (root / "README.md").read_text(encoding="utf-8")
    assert spans
    assert {span for span in spans if f"`{span}`" not in readme} == set()
