"""One component fails: embeddings, reranker, keyword index, context LLM. Each degrades, with
counts, and a re-run completes the work.

The faults are real: an embedding model that refuses a batch holding a marked text, a rerank
HTTP server answering 500 or gone, an OpenSearch endpoint whose port is closed, a chat model
that fails on a marked chunk. Nothing is patched.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from langchain_holodeck.config import HierarchicalDocumentToolConfig
from langchain_holodeck.contextual import ContextualChunkEnricher
from langchain_holodeck.ingestion import IngestionPipeline
from langchain_holodeck.rerankers import RerankRetriever, VLLMReranker
from langchain_holodeck.retrievers import HybridRetriever
from langchain_holodeck.tools import HierarchicalDocumentTool
from langchain_holodeck.vectorstores import MatrixVectorStore
from tests.helpers import HashingEmbeddings
from tests.opensearch_server import FakeOpenSearch, serve
from tests.reliability import corpus
from tests.rerank_server import RerankServer, expected_order

MARKER = "zqxmarker"


def corpus_dir(tmp_path: Path, *, marked: int | None = None) -> Path:
    """Eight manuals; with ``marked``, that manual's third part contains ``MARKER``."""
    root = tmp_path / "manuals"
    corpus.write_files(root, files=8, paragraphs=6)
    if marked is not None:
        path = root / f"manual_{marked:02d}.md"
        text = path.read_text(encoding="utf-8").replace("## Part 2\n", f"## Part 2\n\n{MARKER}\n")
        path.write_text(text, encoding="utf-8")
    return root


def ingest(root: Path, store: MatrixVectorStore, **kwargs: Any) -> tuple[IngestionPipeline, object]:
    pipeline = IngestionPipeline(
        store, namespace=corpus.NAMESPACE, base_dir=root.parent, batch_size=4, **kwargs
    )
    return pipeline, pipeline.invoke(root)


# -- embeddings ---------------------------------------------------------------------------


def test_embedding_batch_failure_is_counted_and_a_rerun_completes(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = corpus_dir(tmp_path, marked=3)
    clean = MatrixVectorStore(HashingEmbeddings())
    ingest(root, clean)

    embeddings = HashingEmbeddings(fail_on=MARKER)  # the model refuses that batch
    store = MatrixVectorStore(embeddings)
    with caplog.at_level(logging.WARNING):
        pipeline, first = ingest(root, store)
    assert first.failed > 0  # type: ignore[attr-defined]
    assert first.added > 0  # type: ignore[attr-defined]  # the other batches went in
    assert any("embedding service refused" in e for e in first.errors)  # type: ignore[attr-defined]
    assert any("file record(s) not written" in e for e in first.errors)  # type: ignore[attr-defined]
    assert "embedding service refused" in caplog.text
    partial = corpus.state(store)
    assert len(partial) == len(corpus.state(clean)) - first.failed  # type: ignore[attr-defined]
    # the broken file's record (chunk 0) was held back: the fast path will not skip it
    heads = {m["source_path"] for _, m in partial.values() if m["chunk_index"] == 0}
    assert "manuals/manual_03.md" not in heads

    embeddings.fail_on = None  # the model recovers
    before = embeddings.texts_embedded
    rerun = pipeline.invoke(root)
    assert (rerun.failed, rerun.errors) == (0, ())
    assert embeddings.texts_embedded - before == first.failed  # type: ignore[attr-defined]
    assert corpus.state(store) == corpus.state(clean)


# -- reranker -----------------------------------------------------------------------------

TEXTS = [
    "warp core maintenance happens every shift rotation",
    "the replicator menu lists tea earl grey hot",
    "holodeck safety protocols require two officers",
    "safety protocols can be disabled by the captain",
    "the arch controls stand near the holodeck door",
    "officers log every holodeck program they run",
]
QUERY = "holodeck safety protocols officers"


@pytest.fixture
def rerank_server() -> Iterator[RerankServer]:
    with RerankServer() as server:
        yield server


def rerank_retriever(url: str, **kwargs: Any) -> tuple[RerankRetriever, HybridRetriever]:
    store = MatrixVectorStore(HashingEmbeddings())
    store.add_documents([Document(id=f"d{i}", page_content=t) for i, t in enumerate(TEXTS)])
    first_stage = HybridRetriever(vector_store=store, k=6)
    reranker = VLLMReranker(url=url, model="rerank-test", top_n=None, timeout=2, **kwargs)
    return RerankRetriever(retriever=first_stage, reranker=reranker, k=3, fetch_k=6), first_stage


def test_reranker_server_failure_keeps_retrieval_order_then_recovers(
    rerank_server: RerankServer, caplog: pytest.LogCaptureFixture
) -> None:
    retriever, first_stage = rerank_retriever(rerank_server.url, cooldown=0.0)
    retrieval_order = [d.id for d in first_stage.invoke(QUERY, k=6)][:3]

    rerank_server.mode = "error_500"
    with caplog.at_level(logging.WARNING):
        degraded = retriever.invoke(QUERY)
    assert [d.id for d in degraded] == retrieval_order
    assert all("relevance_score" not in d.metadata for d in degraded)
    failures = [r for r in caplog.records if "reranker failed" in r.getMessage()]
    assert len(failures) == 1
    assert "HTTP 500" in failures[0].getMessage()

    rerank_server.mode = "ok"  # the server recovers: the very next query is reranked
    recovered = retriever.invoke(QUERY)
    candidates = [d.page_content for d in first_stage.invoke(QUERY, k=6)]
    want = [candidates[i] for i in expected_order(QUERY, candidates)][:3]
    assert [d.page_content for d in recovered] == want
    assert all(0 <= d.metadata["relevance_score"] <= 1 for d in recovered)


def test_reranker_gone_opens_the_breaker_and_costs_no_calls(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = RerankServer().start()
    url = server.url
    retriever, first_stage = rerank_retriever(url, failure_threshold=2, cooldown=3600)
    server.stop()  # port closed: connection refused
    retrieval_order = [d.id for d in first_stage.invoke(QUERY, k=6)][:3]
    with caplog.at_level(logging.WARNING):
        results = [retriever.invoke(QUERY) for _ in range(5)]
    assert all([d.id for d in r] == retrieval_order for r in results)
    warnings = [r.getMessage() for r in caplog.records if "reranker failed" in r.getMessage()]
    assert len(warnings) == 2  # two real attempts, then the breaker skips the dead server
    assert "skipping it for 3600 s" in warnings[1]
    assert server.requests == []


# -- keyword index (OpenSearch) ----------------------------------------------------------


class OpenSearchEndpoint:
    """The loopback OpenSearch stand-in on a fixed port that can go down and come back."""

    def __init__(self) -> None:
        self.state = FakeOpenSearch()
        self._server: ThreadingHTTPServer | None = serve(self.state)
        self.port = self._server.server_address[1]
        self._handler = self._server.RequestHandlerClass

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def down(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def up(self) -> None:
        if self._server is None:
            self._server = ThreadingHTTPServer(("127.0.0.1", self.port), self._handler)
            threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def count(self, index: str = "holodeck_keywords") -> int:
        return len(self.state.indices.get(index, {}))


@pytest.fixture
def opensearch() -> Iterator[OpenSearchEndpoint]:
    endpoint = OpenSearchEndpoint()
    yield endpoint
    endpoint.down()


def hierarchical_tool(
    root: Path, endpoint: str, store: MatrixVectorStore | None = None
) -> HierarchicalDocumentTool:
    config = HierarchicalDocumentToolConfig(
        type="hierarchical_document",
        name="manuals",
        description="Manuals",
        source=str(root),
        keyword_index={"provider": "opensearch", "endpoint": endpoint, "timeout": 2},
    )
    return HierarchicalDocumentTool(
        config, embeddings=HashingEmbeddings(), base_dir=root.parent, vector_store=store
    )


SEARCHES = ["warp core diagnostic", "replicator tea", "Part 3 shield"]


def test_opensearch_down_at_query_time_serves_dense_and_exact(
    tmp_path: Path, opensearch: OpenSearchEndpoint, caplog: pytest.LogCaptureFixture
) -> None:
    tool = hierarchical_tool(corpus_dir(tmp_path), opensearch.url)
    tool.initialize_sync()
    healthy = [tool.search_sync(q) for q in SEARCHES]

    opensearch.down()
    with caplog.at_level(logging.WARNING):
        degraded = [tool.search_sync(q) for q in SEARCHES]
    assert all(text.startswith("Found") for text in degraded)
    assert caplog.text.count("the keyword search failed") == len(SEARCHES)

    opensearch.up()
    assert [tool.search_sync(q) for q in SEARCHES] == healthy


def test_opensearch_down_during_ingest_is_rebuilt_by_the_next_run(
    tmp_path: Path, opensearch: OpenSearchEndpoint, caplog: pytest.LogCaptureFixture
) -> None:
    root = corpus_dir(tmp_path)
    reference_server = OpenSearchEndpoint()
    try:
        reference = hierarchical_tool(root, reference_server.url)
        reference.initialize_sync()
        want = [reference.search_sync(q) for q in SEARCHES]
        chunks = reference_server.count()
    finally:
        reference_server.down()

    opensearch.down()
    tool = hierarchical_tool(root, opensearch.url)
    with caplog.at_level(logging.WARNING):
        first = tool.initialize_sync()
    assert (first.failed, first.added) == (0, chunks)  # the vector store has everything
    assert "keyword index update failed" in caplog.text
    assert all(tool.search_sync(q).startswith("Found") for q in SEARCHES)  # dense + exact

    opensearch.up()
    rerun = tool.initialize_sync()  # same tool, files unchanged: fast path, then rebuild
    assert rerun.skipped == chunks
    assert opensearch.count() == chunks
    assert [tool.search_sync(q) for q in SEARCHES] == want


def test_opensearch_down_during_ingest_is_rebuilt_by_the_next_process(
    tmp_path: Path, opensearch: OpenSearchEndpoint, caplog: pytest.LogCaptureFixture
) -> None:
    """The same, but the next run is another process (as every CLI run is): only the process
    that saw the failure knew the index was behind, so it stayed empty until a file changed.
    The next process compares the index's count of the corpus with the store's chunks."""
    root = corpus_dir(tmp_path)
    store = MatrixVectorStore(HashingEmbeddings())  # what the store directory keeps
    opensearch.down()
    first = hierarchical_tool(root, opensearch.url, store)
    result = first.initialize_sync()
    assert result.added > 0
    opensearch.up()
    assert opensearch.count() == 0

    caplog.clear()
    with caplog.at_level(logging.WARNING):
        second = hierarchical_tool(root, opensearch.url, store)
        rerun = second.initialize_sync()
    assert rerun.skipped == result.added  # nothing re-embedded
    assert opensearch.count() == result.added
    assert f"the keyword index holds 0 chunk(s) of this corpus and the store {result.added}" in (
        caplog.text
    )
    assert second.search_sync("replicator tea").startswith("Found")
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        third = hierarchical_tool(root, opensearch.url, store)
        third.initialize_sync()
    assert "rebuilding" not in caplog.text  # in step: nothing to rebuild


# -- context LLM -------------------------------------------------------------------------


class FlakyChatModel(BaseChatModel):
    """Writes a context from the chunk's first words; fails on chunks holding ``fail_on``."""

    fail_on: str | None = None
    calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "flaky-fake"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.calls += 1
        chunk = str(messages[-1].content).split("<chunk>")[1].split("</chunk>")[0]
        if self.fail_on is not None and self.fail_on in chunk:
            msg = "context model unavailable (HTTP 503)"
            raise RuntimeError(msg)
        context = "Situated: " + " ".join(chunk.split()[:5])
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=context))])


def test_context_llm_failure_indexes_without_context_and_a_rerun_completes(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = corpus_dir(tmp_path, marked=5)
    clean = MatrixVectorStore(HashingEmbeddings())
    ingest(root, clean, enricher=ContextualChunkEnricher(FlakyChatModel()))

    llm = FlakyChatModel(fail_on=MARKER)
    store = MatrixVectorStore(HashingEmbeddings())
    with caplog.at_level(logging.WARNING):
        pipeline, first = ingest(root, store, enricher=ContextualChunkEnricher(llm))
    assert first.failed == 0  # type: ignore[attr-defined]  # every chunk is searchable
    (gap,) = first.errors  # type: ignore[attr-defined]
    assert gap.startswith("manuals/manual_05.md: 1 of ")
    assert "without context" in gap
    assert "No context for chunk" in caplog.text
    partial = corpus.state(store)
    bare = [m for _, m in partial.values() if "context" not in m]
    assert [m["source_path"] for m in bare] == ["manuals/manual_05.md"]

    llm.fail_on = None  # the model recovers
    calls = llm.calls
    rerun = pipeline.invoke(root)
    assert (rerun.failed, rerun.errors) == (0, ())
    assert llm.calls - calls == 1  # only the missing context; the others come from the cache
    assert corpus.essentials(corpus.state(store)) == corpus.essentials(corpus.state(clean))
    assert all("context" in m for _, m in corpus.state(store).values())
