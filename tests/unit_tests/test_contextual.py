from __future__ import annotations

import asyncio
import logging
import re
import threading
from pathlib import Path
from typing import Any

import pytest
from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.stores import InMemoryByteStore
from pydantic import Field, ValidationError

from langchain_holodeck._tokens import count_tokens
from langchain_holodeck.contextual import (
    DEFAULT_PROMPT,
    ContextualChunkEnricher,
    CostEstimate,
    EnrichmentStats,
)
from langchain_holodeck.splitters import StructuredMarkdownSplitter

_CHUNK = re.compile(r"<chunk>\n(.*?)\n</chunk>", re.S)
_DOC = re.compile(r"<document>\n(.*?)\n</document>", re.S)


class ScriptedChatModel(BaseChatModel):
    """Answers ``Context of: <first words of the chunk>``; fails on FAIL, hangs on HANG."""

    calls: int = 0
    max_active: int = 0
    active: int = 0
    documents_seen: list[str] = Field(default_factory=list)
    answer_suffix: str = ""
    lock: Any = None

    def model_post_init(self, _: Any) -> None:
        self.lock = threading.Lock()

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _answer(self, messages: list[BaseMessage]) -> str:
        prompt = str(messages[-1].content)
        chunk = _CHUNK.search(prompt)
        document = _DOC.search(prompt)
        assert chunk is not None
        assert document is not None
        self.documents_seen.append(document.group(1))
        if "FAIL" in chunk.group(1):
            msg = "model exploded\nsecond line"
            raise RuntimeError(msg)
        if "EMPTY" in chunk.group(1):
            return "  "
        return f"Context of: {' '.join(chunk.group(1).split()[:3])}{self.answer_suffix}"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        with self.lock:
            self.calls += 1
        if "HANG" in str(messages[-1].content).split("<chunk>")[-1]:
            threading.Event().wait(10)  # abandoned at the enricher's timeout
        text = self._answer(messages)
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.calls += 1
        self.active += 1
        self.max_active = max(self.max_active, self.active)
        try:
            await asyncio.sleep(0.001)
            if "HANG" in str(messages[-1].content).split("<chunk>")[-1]:
                await asyncio.sleep(3600)
            text = self._answer(messages)
        finally:
            self.active -= 1
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])


DOC_TEXT = (
    "# Holodeck Manual\n\nHow to run the holodeck safely.\n\n"
    "## Safety\n\nThe safety interlock must stay engaged.\n\n"
    "## Scheduling\n\nShifts are assigned weekly by the duty officer.\n\n"
    "## Records\n\nEvery program run is logged.\n"
)


@pytest.fixture
def document() -> Document:
    return Document(page_content=DOC_TEXT, metadata={"source_path": "manual.md"})


@pytest.fixture
def chunks(document: Document) -> list[Document]:
    docs = StructuredMarkdownSplitter().split_documents([document])
    for i, doc in enumerate(docs):
        doc.id = f"id-{i}"
    return docs


@pytest.fixture
def llm() -> ScriptedChatModel:
    return ScriptedChatModel()


def test_default_prompt_is_anthropics() -> None:
    assert DEFAULT_PROMPT.startswith("<document>\n{{WHOLE_DOCUMENT}}\n</document>")
    assert "Answer only with the succinct context and nothing else." in DEFAULT_PROMPT


def test_enrich_prepends_context_and_keeps_original(
    llm: ScriptedChatModel, document: Document, chunks: list[Document]
) -> None:
    out = ContextualChunkEnricher(llm).enrich(document, chunks)
    assert [d.id for d in out] == [c.id for c in chunks]
    safety = out[1]
    assert safety.metadata["original_content"] == chunks[1].page_content
    assert safety.metadata["context"] == "Context of: ## Safety The"
    assert safety.page_content == f"{safety.metadata['context']}\n\n{chunks[1].page_content}"
    assert safety.metadata["heading"] == chunks[1].metadata["heading"] == "Safety"
    assert llm.documents_seen[0] == DOC_TEXT  # the whole document is in the prompt
    assert chunks[1].page_content == "## Safety\n\nThe safety interlock must stay engaged."


async def test_aenrich_matches_enrich(document: Document, chunks: list[Document]) -> None:
    sync_out = ContextualChunkEnricher(ScriptedChatModel()).enrich(document, chunks)
    async_out = await ContextualChunkEnricher(ScriptedChatModel()).aenrich(document, chunks)
    assert sync_out == async_out


def test_rerun_makes_zero_llm_calls(
    llm: ScriptedChatModel, document: Document, chunks: list[Document]
) -> None:
    enricher = ContextualChunkEnricher(llm)
    first = enricher.enrich_with_stats(document, chunks)
    assert first.stats.llm_calls == len(chunks) == llm.calls
    second = enricher.enrich_with_stats(document, chunks)
    assert llm.calls == len(chunks)
    assert second.stats == EnrichmentStats(
        chunks=len(chunks), contextualized=len(chunks), cached=len(chunks), llm_calls=0,
        failed=0, timed_out=0,
    )  # fmt: skip
    assert second.chunks == first.chunks


def test_enriching_enriched_chunks_does_not_stack_contexts(
    llm: ScriptedChatModel, document: Document, chunks: list[Document]
) -> None:
    enricher = ContextualChunkEnricher(llm)
    once = enricher.enrich(document, chunks)
    twice = enricher.enrich(document, once)
    assert twice == once


def test_shared_cache_across_enrichers_and_changed_chunk_is_recomputed(
    document: Document, chunks: list[Document]
) -> None:
    store = InMemoryByteStore()
    ContextualChunkEnricher(ScriptedChatModel(), cache=store).enrich(document, chunks)
    llm = ScriptedChatModel()
    edited = [*chunks[:-1], chunks[-1].model_copy(update={"page_content": "## Records\n\nNew."})]
    stats = ContextualChunkEnricher(llm, cache=store).enrich_with_stats(document, edited).stats
    assert (stats.llm_calls, stats.cached) == (1, len(chunks) - 1)
    other_model = ContextualChunkEnricher(ScriptedChatModel(), cache=store, model_id="other")
    assert other_model.enrich_with_stats(document, chunks).stats.cached == 0


def test_failures_leave_chunks_unchanged_and_are_counted(
    llm: ScriptedChatModel, caplog: pytest.LogCaptureFixture
) -> None:
    doc = Document(
        page_content="a\n\nFAIL here\n\nEMPTY here\n\nok here", metadata={"source_path": "f"}
    )
    chunks = [Document(page_content=t, metadata={"source_path": "f", "chunk_index": i})
              for i, t in enumerate(doc.page_content.split("\n\n"))]  # fmt: skip
    with caplog.at_level(logging.WARNING, logger="langchain_holodeck.contextual"):
        result = ContextualChunkEnricher(llm).enrich_with_stats(doc, chunks)
    assert result.chunks[1] == chunks[1]
    assert result.chunks[2] == chunks[2]
    assert result.chunks[3].metadata["context"] == "Context of: ok here"
    assert (result.stats.failed, result.stats.contextualized, result.stats.timed_out) == (2, 2, 0)
    assert "RuntimeError: model exploded" in caplog.text
    assert "second line" not in caplog.text
    assert "2 of 4 chunks were left without context" in caplog.text


@pytest.mark.parametrize("timeout", [float("inf"), 1e12])
def test_a_timeout_past_a_week_is_refused(llm: ScriptedChatModel, timeout: float) -> None:
    """Found 2026-12-07 (context_timeout's twin): accepted, then every wait overflowed."""
    with pytest.raises(ValidationError, match=r"timeout\n.*(finite|less than or equal to 604800)"):
        ContextualChunkEnricher(llm, timeout=timeout)


@pytest.mark.parametrize(
    ("kwargs", "bound"),
    [({"concurrency": 1_000_000}, 1024), ({"max_context_tokens": 10**9}, 128_000)],
)
def test_concurrency_and_context_length_past_their_bound_are_refused(
    llm: ScriptedChatModel, kwargs: dict[str, int], bound: int
) -> None:
    """Found 2026-12-07 (context_concurrency's and context_max_tokens' twins): no bound, so a
    million calls were started at once and a cap past any model's was refused on every call."""
    (name,) = kwargs
    with pytest.raises(ValidationError, match=rf"{name}\n.*less than or equal to {bound}"):
        ContextualChunkEnricher(llm, **kwargs)
    assert getattr(ContextualChunkEnricher(llm, **{name: bound}), name) == bound


@pytest.mark.parametrize("name", ["concurrency", "max_context_tokens", "timeout"])
def test_a_bool_for_a_number_is_refused(llm: ScriptedChatModel, name: str) -> None:
    """Found 2026-12-07 (the rerankers' twin): timeout=True was a limit of 1 s and
    concurrency=True one call at a time (a bool is an int in Python)."""
    with pytest.raises(ValidationError, match=rf"{name}\n.*not a bool .*got True"):
        ContextualChunkEnricher(llm, **{name: True})


async def test_timeout_leaves_chunk_uncontextualized(llm: ScriptedChatModel) -> None:
    doc = Document(page_content="fine\n\nHANG forever", metadata={"source_path": "h"})
    chunks = [
        Document(page_content=t, metadata={"source_path": "h"}) for t in ("fine", "HANG forever")
    ]
    enricher = ContextualChunkEnricher(llm, timeout=0.05)
    result = await enricher.aenrich_with_stats(doc, chunks)
    assert result.stats.timed_out == 1
    assert result.stats.failed == 1
    assert result.chunks[1] == chunks[1]
    assert "context" in result.chunks[0].metadata
    sync_result = enricher.enrich_with_stats(doc, chunks)
    assert sync_result.stats.timed_out == 1
    assert sync_result.stats.cached == 1


async def test_concurrency_is_bounded(llm: ScriptedChatModel) -> None:
    text = "\n\n".join(f"Chunk number {i} text." for i in range(30))
    doc = Document(page_content=text, metadata={"source_path": "c"})
    chunks = [Document(page_content=t, metadata={"source_path": "c"}) for t in text.split("\n\n")]
    await ContextualChunkEnricher(llm, concurrency=3).aenrich(doc, chunks)
    assert llm.calls == 30
    assert 1 <= llm.max_active <= 3


def test_invoke_rebuilds_documents_from_chunks_and_keeps_input_order(
    llm: ScriptedChatModel,
) -> None:
    a = [
        Document(page_content=f"alpha {i}", metadata={"source_path": "a", "chunk_index": i})
        for i in range(2)
    ]
    b = [
        Document(page_content=f"beta {i}", metadata={"source_path": "b", "chunk_index": i})
        for i in range(2)
    ]
    mixed = [a[1], b[0], a[0], b[1]]
    out = ContextualChunkEnricher(llm).invoke(mixed)
    assert [d.metadata["original_content"] for d in out] == [d.page_content for d in mixed]
    assert set(llm.documents_seen) == {"alpha 0\n\nalpha 1", "beta 0\n\nbeta 1"}


async def test_ainvoke_and_batch(llm: ScriptedChatModel, chunks: list[Document]) -> None:
    enricher = ContextualChunkEnricher(llm)
    enriched = await enricher.ainvoke(chunks)
    assert enriched[0].metadata["context"].startswith("Context")
    batched = enricher.batch([chunks[:2], chunks[2:]])
    assert [len(b) for b in batched] == [2, len(chunks) - 2]
    assert all("context" in d.metadata for b in batched for d in b)


def test_long_documents_use_a_window_around_the_chunk(llm: ScriptedChatModel) -> None:
    paragraphs = [f"Paragraph {i} about holodeck topic {i}." for i in range(400)]
    doc = Document(page_content="\n\n".join(paragraphs), metadata={"source_path": "long"})
    target = Document(page_content=paragraphs[300], metadata={"source_path": "long"})
    ContextualChunkEnricher(llm, max_document_tokens=200).enrich(doc, [target])
    seen = llm.documents_seen[0]
    assert count_tokens(seen) <= 200
    assert paragraphs[300] in seen
    assert paragraphs[0] not in seen
    assert seen.startswith("[…]")


def test_context_is_cut_to_max_context_tokens(document: Document, chunks: list[Document]) -> None:
    llm = ScriptedChatModel(answer_suffix=" word" * 500)
    out = ContextualChunkEnricher(llm, max_context_tokens=20).enrich(document, chunks)
    assert all(count_tokens(d.metadata["context"]) <= 20 for d in out)


def test_estimate_cost_counts_uncached_calls(
    llm: ScriptedChatModel, document: Document, chunks: list[Document]
) -> None:
    enricher = ContextualChunkEnricher(llm, max_context_tokens=50)
    estimate = enricher.estimate_cost([document], chunks)
    assert estimate.calls == len(chunks)
    assert estimate.output_tokens == 50 * len(chunks)
    assert estimate.input_tokens > len(chunks) * count_tokens(DOC_TEXT)
    assert llm.calls == 0
    enricher.enrich(document, chunks)
    assert enricher.estimate_cost([document], chunks) == CostEstimate(0, 0, 0, len(chunks))


def test_prompt_must_have_both_placeholders(llm: ScriptedChatModel) -> None:
    with pytest.raises(ValueError, match=r"prompt must contain \{\{CHUNK_CONTENT\}\}"):
        ContextualChunkEnricher(llm, prompt="{{WHOLE_DOCUMENT}} only")


def test_concurrency_must_be_positive(llm: ScriptedChatModel) -> None:
    with pytest.raises(ValueError, match="concurrency"):
        ContextualChunkEnricher(llm, concurrency=0)


def test_cache_none_means_in_memory(llm: ScriptedChatModel) -> None:
    assert isinstance(ContextualChunkEnricher(llm, cache=None).cache, InMemoryByteStore)


def test_empty_input_makes_no_call(llm: ScriptedChatModel, document: Document) -> None:
    assert ContextualChunkEnricher(llm).enrich(document, []) == []
    assert ContextualChunkEnricher(llm).invoke([]) == []
    assert llm.calls == 0


def test_one_chat_openai_enriches_file_after_file() -> None:
    """The CLI enriches file by file with one ChatOpenAI. Its async client binds to the event
    loop of its first call; a new loop per file (asyncio.run) left it bound to a closed one, so
    every other file's contexts failed with 'Event loop is closed'."""
    from langchain_openai import ChatOpenAI

    from tests.openai_server import chat_server

    with chat_server(keep_alive=True) as server:
        llm = ChatOpenAI(model="fake-chat", api_key="sk-test", base_url=server.base_url)
        enricher = ContextualChunkEnricher(llm, concurrency=4)
        for n in range(3):
            source = {"source_path": f"d{n}.md"}
            doc = Document(page_content=f"doc {n} alpha beta gamma delta", metadata=source)
            chunks = [
                Document(page_content=f"doc {n} part {i}", metadata={**source, "chunk_index": i})
                for i in range(4)
            ]
            stats = enricher.enrich_with_stats(doc, chunks).stats
            assert (stats.contextualized, stats.failed) == (4, 0), (n, stats)


@pytest.mark.parametrize("how", ["gather", "abatch"])
def test_async_calls_share_the_concurrency(how: str) -> None:
    """Four files enriched on one event loop, ``concurrency=2``: each ``aenrich`` made its own
    semaphore, so gathered calls (or ``abatch``) had 6 to 8 requests in flight (a probe)."""
    from langchain_openai import ChatOpenAI

    from tests.openai_server import chat_server

    def files() -> list[tuple[Document, list[Document]]]:
        out = []
        for n in range(4):
            meta = {"source_path": f"f{n}.md"}
            chunks = [
                Document(page_content=f"file {n} part {i}", metadata={**meta, "chunk_index": i})
                for i in range(3)
            ]
            out.append((Document(page_content=f"file {n} words", metadata=meta), chunks))
        return out

    with chat_server(keep_alive=True, delay=0.1) as server:
        llm = ChatOpenAI(model="m", api_key="sk-test", base_url=server.base_url)
        enricher = ContextualChunkEnricher(llm, concurrency=2)

        async def run() -> list[list[Document]]:
            if how == "abatch":
                return await enricher.abatch([chunks for _, chunks in files()])
            return list(await asyncio.gather(*(enricher.aenrich(d, c) for d, c in files())))

        results = asyncio.run(run())
    assert sum("context" in c.metadata for chunks in results for c in chunks) == 12
    assert server.max_in_flight == 2


def test_a_sync_enrichment_leaves_chat_openai_usable_in_the_callers_loop() -> None:
    """langchain-openai shares one async HTTP client per base URL between its ChatOpenAI
    models: the sync API ran ``ainvoke`` on a private loop, so a connection of that loop was
    then used in the caller's ``asyncio.run``, and the agent's own model failed there (a
    probe). The sync API calls the model's sync ``invoke`` now."""
    from langchain_openai import ChatOpenAI

    from tests.openai_server import chat_server

    with chat_server(keep_alive=True) as server:
        enricher = ContextualChunkEnricher(
            ChatOpenAI(model="ctx", api_key="sk-test", base_url=server.base_url, max_retries=0)
        )
        doc = Document(page_content="alpha beta", metadata={"source_path": "a.md"})
        assert enricher.enrich(doc, [doc])[0].metadata["context"]
        agent = ChatOpenAI(
            model="agent", api_key="sk-test", base_url=server.base_url, max_retries=0
        )

        async def ask() -> list[object]:
            calls = (agent.ainvoke(f"question {i}") for i in range(3))
            return list(await asyncio.gather(*calls, return_exceptions=True))

        answers = asyncio.run(ask())
    assert [type(a).__name__ for a in answers] == ["AIMessage"] * 3


def test_the_context_model_is_capped_at_context_max_tokens(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """context_max_tokens ("longest context the model may write") reaches the model: it was
    never sent, so a model wrote (and billed) 500 tokens per chunk that were then cut to 20."""
    from langchain_holodeck.config import HierarchicalDocumentToolConfig
    from langchain_holodeck.tools._wiring import chat_model
    from tests.openai_server import chat_server

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with chat_server() as server:
        config = HierarchicalDocumentToolConfig(
            type="hierarchical_document", name="kb", description="d", source="docs",
            contextual_embeddings=True, context_max_tokens=20,
            context_model={"provider": "openai", "name": "m", "base_url": server.base_url},
        )  # fmt: skip
        chat_model(config).invoke("Situate this chunk.")
    body = server.requests[0]
    assert body.get("max_completion_tokens", body.get("max_tokens")) == 20


def test_the_context_models_client_gives_up_at_context_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """context_timeout reaches the OpenAI client: the enricher abandons a call past its
    deadline, but the client waited on (openai's default, 600 s), holding a request in flight
    beyond context_concurrency."""
    import openai

    from langchain_holodeck.config import HierarchicalDocumentToolConfig
    from langchain_holodeck.tools._wiring import chat_model
    from tests.openai_server import chat_server

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with chat_server(delay=3.0) as server:
        config = HierarchicalDocumentToolConfig(
            type="hierarchical_document", name="kb", description="d", source="docs",
            contextual_embeddings=True, context_timeout=0.2,
            context_model={"provider": "openai", "name": "m", "base_url": server.base_url},
        )  # fmt: skip
        with pytest.raises(openai.APITimeoutError):
            chat_model(config).invoke("Situate this chunk.")


def test_files_are_enriched_side_by_side_within_the_concurrency(tmp_path: Path) -> None:
    """Eight one-chunk files: enriched file after file, one call was in flight at a time
    (eight round trips); side by side, up to ``concurrency`` calls, never more."""
    from langchain_openai import ChatOpenAI

    from langchain_holodeck import IngestionPipeline
    from langchain_holodeck.vectorstores import MatrixVectorStore, scan_documents
    from tests.helpers import HashingEmbeddings
    from tests.openai_server import chat_server

    docs = tmp_path / "docs"
    docs.mkdir()
    for n in range(8):
        (docs / f"f{n}.md").write_text(f"# Note {n}\n\nThe arch opens on deck {n}.\n")
    with chat_server(keep_alive=True, delay=0.2) as server:
        llm = ChatOpenAI(model="m", api_key="sk-test", base_url=server.base_url)
        store = MatrixVectorStore(HashingEmbeddings())
        pipeline = IngestionPipeline(
            store,
            namespace="kb",
            base_dir=tmp_path,
            enricher=ContextualChunkEnricher(llm, concurrency=4),
        )
        result = pipeline.invoke("docs")
    assert (result.added, result.errors) == (8, ())
    assert server.max_in_flight == 4
    stored = list(scan_documents(store, namespace="kb"))
    assert all(d.metadata.get("context") for d in stored)


def test_an_answer_with_a_lone_surrogate_leaves_its_chunk_without_context(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An OpenAI-compatible server answering ``"ctx \\ud800"`` (valid JSON, no text): encoding
    it for the cache raised UnicodeEncodeError outside the per-chunk handling, and the whole
    ingest died with a traceback. Now that chunk is indexed without context, with the WARNING
    other bad answers get, the other files are enriched, and nothing of it is cached."""
    from langchain_openai import ChatOpenAI

    from langchain_holodeck import IngestionPipeline
    from langchain_holodeck.vectorstores import MatrixVectorStore, scan_documents
    from tests.helpers import HashingEmbeddings
    from tests.openai_server import chat_server

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "bad.md").write_text("# Bad\n\nLONE-SURROGATE in this note.\n")
    for n in range(2):
        (docs / f"good{n}.md").write_text(f"# Note {n}\n\nThe arch opens on deck {n}.\n")
    cache = InMemoryByteStore()
    store = MatrixVectorStore(HashingEmbeddings())
    with chat_server() as server, caplog.at_level(logging.WARNING):
        llm = ChatOpenAI(model="m", api_key="sk-test", base_url=server.base_url)
        enricher = ContextualChunkEnricher(llm, cache=cache)
        pipeline = IngestionPipeline(store, namespace="kb", base_dir=tmp_path, enricher=enricher)
        result = pipeline.invoke("docs")
    assert result.added == 3
    contexts = {d.metadata["source_path"]: d.metadata.get("context") for d in
                scan_documents(store, namespace="kb")}  # fmt: skip
    assert contexts["docs/bad.md"] is None
    assert contexts["docs/good0.md"]
    assert contexts["docs/good1.md"]
    warned = [r.message for r in caplog.records if "No context for chunk" in r.message]
    assert len(warned) == 1
    assert "bad.md" in warned[0]
    assert len(list(cache.yield_keys())) == 2  # the good files' contexts only


@pytest.mark.parametrize(
    "changed",
    [{"max_context_tokens": 3}, {"prompt": "Situate it for search.\n" + DEFAULT_PROMPT}],
    ids=["max_context_tokens", "prompt"],
)
def test_changing_what_the_model_is_asked_makes_new_contexts(
    tmp_path: Path, changed: dict[str, Any]
) -> None:
    """A new prompt over an unchanged folder made 0 calls (the pipeline's fingerprint held only
    the model id, so the files were skipped), and max_context_tokens was in neither the
    fingerprint nor the cache key: contexts cut at 5 tokens stayed cut at 100. Now each
    change makes new contexts, and the same settings again make no call."""
    from langchain_holodeck import IngestionPipeline
    from langchain_holodeck.vectorstores import MatrixVectorStore, scan_documents
    from tests.helpers import HashingEmbeddings

    (tmp_path / "a.md").write_text("# A\n\nThe arch opens on deck four at dawn.\n")
    store, cache = MatrixVectorStore(HashingEmbeddings()), InMemoryByteStore()

    def ingest(**settings: Any) -> tuple[int, list[str]]:
        llm = ScriptedChatModel(answer_suffix=f" asked with {sorted(settings)}")
        enricher = ContextualChunkEnricher(llm, cache=cache, **settings)
        IngestionPipeline(store, namespace="kb", enricher=enricher).invoke(str(tmp_path))
        return llm.calls, [d.metadata["context"] for d in scan_documents(store, namespace="kb")]

    calls, before = ingest()
    assert calls == 1
    calls, after = ingest(**changed)
    assert calls == 1
    assert after != before
    assert ingest(**changed) == (0, after)  # the same settings again: no call, same contexts
    assert ingest() == (0, before)  # back to the defaults: their contexts are still cached


def test_default_settings_keep_the_cache_keys_and_fingerprint_of_earlier_versions(
    llm: ScriptedChatModel, document: Document, chunks: list[Document]
) -> None:
    """The defaults add nothing to the cache key or the fingerprint: an upgrade does not pay
    every LLM call again, nor re-read every file, for settings nobody changed."""
    from types import SimpleNamespace

    from langchain_holodeck.ingestion import pipeline_fingerprint

    enricher = ContextualChunkEnricher(llm)
    job = enricher._jobs([(document.page_content, [(0, chunks[0])])])[0]
    assert job.key == (  # computed by the version before max_context_tokens was in the key
        "holodeck-context-af5e501a7b87d342a5286ac8979009a931c0472e7d6a91ee5b51dc57b6ecf5e8"
    )
    splitter = StructuredMarkdownSplitter()
    by_model_id = SimpleNamespace(context_model_id=enricher.context_model_id)  # as before
    assert pipeline_fingerprint(splitter, enricher) == pipeline_fingerprint(splitter, by_model_id)
    assert enricher.context_settings_id == "scripted:"


def _openai_context_model(base_url: str, **settings: Any) -> BaseChatModel:
    """The chat model an agent.yaml's ``context_model: {provider: openai, ...}`` builds."""
    from langchain_holodeck.config import HierarchicalDocumentToolConfig
    from langchain_holodeck.tools._wiring import chat_model

    config = HierarchicalDocumentToolConfig(
        type="hierarchical_document", name="kb", description="d", source="docs",
        contextual_embeddings=True,
        context_model={"provider": "openai", "name": "gpt-4o-mini", "base_url": base_url,
                       **settings},
    )  # fmt: skip
    return chat_model(config)


def test_a_default_context_model_keeps_the_cache_key_of_earlier_versions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The context model's settings joined the key; at the defaults (temperature 0, capped at
    context_max_tokens) they add nothing: no one pays every LLM call again on upgrade."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    enricher = ContextualChunkEnricher(_openai_context_model("http://127.0.0.1:9/v1"))
    text = "# A\n\nThe arch opens on deck four at dawn.\n"
    chunk = Document(page_content=text, metadata={"source_path": "a.md", "chunk_index": 0})
    job = enricher._jobs([(text, [(0, chunk)])])[0]
    assert job.key == (  # computed by the version before (ba1195a)
        "holodeck-context-c5f26da65c68b02e52f9e064a33ce5773042f1fba057fb21e40f0594ad3a3121"
    )
    assert enricher.context_settings_id == "openai-chat:gpt-4o-mini"


@pytest.mark.parametrize(
    "changed",
    [{"temperature": 0.7}, {"top_p": 0.5}, {"max_tokens": 5}, {"seed": 7}],
    ids=["temperature", "top_p", "max_tokens_below_the_cap", "seed"],
)
def test_changing_how_the_context_model_writes_makes_new_contexts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, changed: dict[str, Any]
) -> None:
    """temperature (and top_p, seed, a model cap below context_max_tokens) was in neither the
    cache key nor the fingerprint: raising it over an unchanged folder made 0 calls, and only
    edited files got contexts written at the new setting. Now a change writes every context
    again, the same setting again makes no call, and the defaults' contexts stay cached."""
    from langchain_holodeck import IngestionPipeline
    from langchain_holodeck.vectorstores import MatrixVectorStore
    from tests.helpers import HashingEmbeddings
    from tests.openai_server import chat_server

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    (tmp_path / "a.md").write_text("# A\n\nThe arch opens on deck four at dawn.\n")
    (tmp_path / "b.md").write_text("# B\n\nThe brig is on deck nine.\n")
    store, cache = MatrixVectorStore(HashingEmbeddings()), InMemoryByteStore()
    with chat_server() as server:

        def ingest(**settings: Any) -> int:
            """LLM calls of one ingest with these settings."""
            asked = len(server.requests)
            config_keys = {"temperature"}
            model = _openai_context_model(
                server.base_url, **{k: v for k, v in settings.items() if k in config_keys}
            )
            model = model.model_copy(
                update={k: v for k, v in settings.items() if k not in config_keys}
            )
            enricher = ContextualChunkEnricher(model, cache=cache)
            IngestionPipeline(store, namespace="kb", enricher=enricher).invoke(str(tmp_path))
            return len(server.requests) - asked

        assert ingest() == 2
        assert ingest() == 0
        assert ingest(**changed) == 2  # before: 0, the old contexts kept
        (name, value), *_ = changed.items()
        sent = server.requests[-1].get(name, server.requests[-1].get("max_completion_tokens"))
        assert sent == value  # the setting reached the model
        assert ingest(**changed) == 0
        assert ingest() == 0  # back to the defaults: their contexts are still cached
