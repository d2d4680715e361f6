from __future__ import annotations

import os
import random
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, ToolException

from langchain_holodeck.config import HierarchicalDocumentToolConfig, VectorStoreToolConfig
from langchain_holodeck.errors import IndexNotBuiltError
from langchain_holodeck.tools import (
    HierarchicalDocumentTool,
    VectorStoreTool,
    format_results,
    load_tools,
)
from langchain_holodeck.vectorstores import MatrixVectorStore
from tests.helpers import DATA_DIR, HashingEmbeddings
from tests.openai_server import chat_server
from tests.rerank_server import RerankServer

RESULT_HEADER = re.compile(r"^\[(\d+)\] Score: (\d\.\d\d) \| Source: (\S+)$", re.M)


def make_config(source: Path, **overrides: Any) -> VectorStoreToolConfig:
    fields: dict[str, Any] = {
        "type": "vectorstore",
        "name": "knowledge_base",
        "description": "Search the holodeck documentation.",
        "source": str(source),
        "top_k": 3,
    }
    return VectorStoreToolConfig(**{**fields, **overrides})


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    target = tmp_path / "docs"
    shutil.copytree(DATA_DIR / "docs", target)
    return target


@pytest.fixture
def tool(docs: Path, embeddings: HashingEmbeddings, tmp_path: Path) -> VectorStoreTool:
    return VectorStoreTool(
        make_config(docs), embeddings=embeddings, project_dir=tmp_path, home_dir=tmp_path
    )


async def test_initialize_ingests_every_file(tool: VectorStoreTool) -> None:
    result = await tool.initialize()
    assert tool.is_initialized
    assert result.added == tool.document_count > 0
    assert result.failed == 0
    assert tool.last_ingest_time is not None
    assert tool.backend == "in-memory"
    assert tool.fallback_reason is None


async def test_search_output_follows_the_contract(tool: VectorStoreTool) -> None:
    await tool.initialize()
    output = await tool.search("which endpoint accepts GET and POST requests for users")
    assert output.startswith("Found 3 result(s):\n\n[1] Score: ")
    headers = RESULT_HEADER.findall(output)
    assert [int(rank) for rank, _, _ in headers] == [1, 2, 3]
    scores = [float(score) for _, score, _ in headers]
    assert scores == sorted(scores, reverse=True)
    assert headers[0][2].endswith("docs/api.md")
    assert "The API endpoint /users accepts GET and POST requests" in output


async def test_second_initialize_skips_everything_without_embedding(
    tool: VectorStoreTool, embeddings: HashingEmbeddings
) -> None:
    first = await tool.initialize()
    calls = embeddings.texts_embedded
    second = await tool.initialize()
    assert (second.added, second.updated, second.skipped) == (0, 0, first.added)
    assert embeddings.texts_embedded == calls


async def test_modified_file_is_updated_and_deleted_file_cleaned(
    tool: VectorStoreTool, docs: Path
) -> None:
    await tool.initialize()
    api = docs / "api.md"
    api.write_text(api.read_text() + "\nThe endpoint /decks lists every deck.\n")
    os.utime(api, (1, 1))  # a new mtime even on coarse clocks
    (docs / "auth.md").unlink()
    result = await tool.initialize()
    assert result.updated + result.added >= 1
    assert result.deleted >= 1
    output = await tool.search("revoke tokens DELETE")
    assert "auth.md" not in output
    assert "/decks" in await tool.search("endpoint decks lists every deck")


async def test_force_ingest_reembeds_everything(
    tool: VectorStoreTool, embeddings: HashingEmbeddings
) -> None:
    first = await tool.initialize()
    calls = embeddings.texts_embedded
    forced = await tool.initialize(force_ingest=True)
    assert forced.updated == first.added
    assert embeddings.texts_embedded == calls + first.added


async def test_initialize_takes_force_ingest_positionally(
    tool: VectorStoreTool, embeddings: HashingEmbeddings
) -> None:
    first = await tool.initialize()
    before = embeddings.texts_embedded
    forced = await tool.initialize(True)
    assert forced.updated == first.added > 0
    assert embeddings.texts_embedded - before == first.added
    assert tool.initialize_sync(False).skipped == first.added


@pytest.mark.parametrize(
    ("overrides", "candidates"),
    [({"top_k": 34}, 102), ({"top_k": 5, "rerank_top_n": 1000}, 150)],
)
async def test_rerank_candidate_pools_above_100_reach_the_reranker(
    tmp_path: Path, embeddings: HashingEmbeddings, overrides: dict[str, Any], candidates: int
) -> None:
    corpus = tmp_path / "many"
    corpus.mkdir()
    for n in range(150):  # one chunk each: 150 candidates in all
        (corpus / f"note_{n:03}.txt").write_text(f"Holodeck note {n} about deck {n % 7}.\n")
    with RerankServer() as server:
        reranker = {"provider": "vllm", "url": server.url, "model": "m"}
        config = make_config(corpus, rerank=True, reranker=reranker, **overrides)
        tool = VectorStoreTool(config, embeddings=embeddings, project_dir=tmp_path)
        await tool.initialize()
        output = await tool.search("holodeck note about deck 3")
    assert output.startswith(f"Found {overrides['top_k']} result(s)")
    (request,) = server.requests
    assert len(request.documents) == candidates


async def test_reranked_retriever_returns_k_past_rerank_top_n(
    tmp_path: Path, embeddings: HashingEmbeddings
) -> None:
    corpus = tmp_path / "many"
    corpus.mkdir()
    for n in range(20):
        (corpus / f"note_{n:02}.txt").write_text(f"Holodeck note {n} about deck {n % 7}.\n")
    with RerankServer() as server:
        reranker = {"provider": "vllm", "url": server.url, "model": "m"}
        config = make_config(corpus, rerank=True, reranker=reranker, top_k=3, rerank_top_n=5)
        tool = VectorStoreTool(config, embeddings=embeddings, project_dir=tmp_path)
        await tool.initialize()
        retriever = tool.as_retriever()
        got = [len(retriever.invoke("holodeck note", k=k)) for k in (None, 1, 8)]
    assert got == [3, 1, 8]
    assert [len(r.documents) for r in server.requests] == [5, 5, 8]


async def test_search_before_initialize_raises(tool: VectorStoreTool) -> None:
    with pytest.raises(RuntimeError, match=r"^VectorStoreTool must be initialized before search$"):
        await tool.search("anything")
    with pytest.raises(IndexNotBuiltError, match="must be initialized before search"):
        tool.as_retriever()


@pytest.mark.parametrize("query", ["", "   ", "\n\t"])
async def test_empty_query_is_rejected(tool: VectorStoreTool, query: str) -> None:
    await tool.initialize()
    with pytest.raises(ValueError, match=r"^Search query cannot be empty$"):
        await tool.search(query)


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("", "Search query cannot be empty"),
        ("?!", "Search query has no letters or digits, got '?!'; ask with words, "),
        # bytes that were not UTF-8: the dense leg failed on them (a WARNING) and the
        # keyword leg alone answered
        (
            "caf\udce9 tokens",
            "Search query is not UTF-8 text (byte 0xe9 at character 3); send the words as UTF-8.",
        ),
    ],
)
async def test_agent_tool_answers_an_invalid_query_with_a_tool_error(
    tool: VectorStoreTool, query: str, message: str
) -> None:
    await tool.initialize()
    lc_tool = tool.as_tool()
    assert lc_tool.handle_tool_error is True
    assert lc_tool.invoke({"query": query}).startswith(message)  # the loop goes on
    assert (await lc_tool.ainvoke({"query": query})).startswith(message)
    call = {"type": "tool_call", "name": lc_tool.name, "args": {"query": query}, "id": "c1"}
    answer = await lc_tool.ainvoke(call)
    assert isinstance(answer, ToolMessage)
    assert (answer.status, answer.content.startswith(message)) == ("error", True)
    raw = lc_tool.model_copy(update={"handle_tool_error": False})  # what it raises: ToolException
    with pytest.raises(ToolException, match=f"^{re.escape(message)}"):
        raw.invoke({"query": query})
    with pytest.raises(ValueError, match=f"^{re.escape(message)}"):  # the Python API: unchanged
        tool.search_sync(query)


@pytest.mark.parametrize("query", [5, None, b"tokens"])
async def test_a_query_that_is_not_a_string_is_a_type_error(
    tool: VectorStoreTool, query: object
) -> None:
    await tool.initialize()
    kind = type(query).__name__
    with pytest.raises(TypeError, match=f"^Search query must be a string, got {kind} "):
        tool.search_sync(query)  # type: ignore[arg-type]  # the wrong type under test
    with pytest.raises(TypeError, match=f"^Search query must be a string, got {kind} "):
        await tool.search(query)  # type: ignore[arg-type]  # the wrong type under test


async def test_threshold_message_when_all_results_are_below(
    docs: Path, embeddings: HashingEmbeddings, tmp_path: Path
) -> None:
    config = make_config(docs, min_similarity_score=0.99)
    tool = VectorStoreTool(config, embeddings=embeddings, project_dir=tmp_path, home_dir=tmp_path)
    await tool.initialize()
    assert await tool.search("zebra quantum") == "No results above similarity threshold 0.99"


async def test_threshold_message_only_when_the_tools_own_chunks_match(
    docs: Path, embeddings: HashingEmbeddings, tmp_path: Path
) -> None:
    store = MatrixVectorStore(embeddings)
    config = make_config(docs, name="strict", min_similarity_score=0.99)
    strict = VectorStoreTool(config, embeddings=embeddings, vector_store=store)
    other = VectorStoreTool(
        make_config(docs, name="other"), embeddings=embeddings, vector_store=store
    )
    await strict.initialize()
    await other.initialize()
    assert await strict.search("zebra quantum") == "No results above similarity threshold 0.99"
    mine = strict.namespace
    store.delete([d.id for d in store.iter_documents() if d.metadata["namespace"] == mine])
    assert store.document_count > 0  # only the other tool's chunks are left
    assert (
        await strict.search("zebra quantum") == "No relevant results found for query: zebra quantum"
    )


async def test_no_results_message_on_an_empty_store(
    docs: Path, embeddings: HashingEmbeddings
) -> None:
    store = MatrixVectorStore(embeddings)
    tool = VectorStoreTool(make_config(docs), vector_store=store)
    await tool.initialize()
    store.clear()
    assert await tool.search("holodeck") == "No relevant results found for query: holodeck"


async def test_embedding_failure_is_a_runtime_error_with_cause(docs: Path, tmp_path: Path) -> None:
    class QueryFails(HashingEmbeddings):
        def embed_query(self, text: str) -> list[float]:
            msg = "model server unavailable"
            raise ConnectionError(msg)

    tool = VectorStoreTool(
        make_config(docs), embeddings=QueryFails(), project_dir=tmp_path, home_dir=tmp_path
    )
    await tool.initialize()
    expected = r"^Failed to generate query embedding: ConnectionError: model server unavailable$"
    with pytest.raises(RuntimeError, match=expected) as info:
        await tool.search("holodeck")
    assert isinstance(info.value.__cause__, ConnectionError)
    with pytest.raises(RuntimeError, match=expected):
        tool.search_sync("holodeck")


class _SearchFails(MatrixVectorStore):
    def _fail(self, *args: Any, **kwargs: Any) -> Any:
        msg = "index went away"
        raise OSError(msg)

    search_ids_by_vector = similarity_search_with_score_by_vector = _fail


async def test_a_failing_store_is_a_search_failure_not_an_embedding_failure(
    docs: Path, embeddings: HashingEmbeddings
) -> None:
    tool = VectorStoreTool(make_config(docs), vector_store=_SearchFails(embeddings))
    await tool.initialize()
    with pytest.raises(RuntimeError, match=r"^Search failed: OSError: index went away$"):
        await tool.search("holodeck")


async def test_a_failing_search_is_one_line_the_agent_reads_not_a_crash(
    docs: Path, embeddings: HashingEmbeddings
) -> None:
    """create_agent's tool node re-raises all but ToolException: the run must go on."""
    from langchain.agents import create_agent
    from langchain_openai import ChatOpenAI

    tool = VectorStoreTool(make_config(docs), vector_store=_SearchFails(embeddings))
    await tool.initialize()
    with chat_server() as server:
        model = ChatOpenAI(model="m", base_url=server.base_url, api_key="sk-x", max_retries=0)
        agent = create_agent(model, [tool.as_tool()])
        question = {"messages": [("user", "safety protocols")]}
        for result in (agent.invoke(question), await agent.ainvoke(question)):
            messages = result["messages"]
            said = [m for m in messages if isinstance(m, ToolMessage)]
            assert [(m.status, m.content) for m in said] == [
                ("error", "Search failed: OSError: index went away")
            ]
            assert messages[-1].content == "The answer is in nowhere."


def _thresholded_act(tmp_path: Path, threshold: float) -> HierarchicalDocumentToolConfig:
    """A hybrid tool's config over a copy of the Act, with ``min_similarity_score``."""
    legal = tmp_path / "legal"
    shutil.copytree(DATA_DIR / "legal", legal)
    return HierarchicalDocumentToolConfig(
        type="hierarchical_document",
        name="legal_docs",
        description="The Act.",
        source=str(legal),
        min_similarity_score=threshold,
    )


async def _thresholded_on_a_failing_store(
    embeddings: HashingEmbeddings, tmp_path: Path
) -> HierarchicalDocumentTool:
    """A hybrid tool with min_similarity_score over the Act, whose store's searches fail.

    The threshold is one no chunk reaches: the keyword leg's hits are checked against it
    (their stored vectors still read) and all dropped, so the tool goes on to its 'No results
    above ...' check, which asks the failing store again."""
    config = _thresholded_act(tmp_path, 0.999)
    tool = HierarchicalDocumentTool(config, vector_store=_SearchFails(embeddings))
    await tool.initialize()
    return tool


async def test_a_store_failing_under_a_threshold_is_a_search_failure(
    embeddings: HashingEmbeddings, tmp_path: Path
) -> None:
    """Hybrid with min_similarity_score, the store's searches down: the threshold drops the
    keyword leg's hits; the 'No results above ...' check then asked the store again, outside
    the search's error handling: a raw OSError (Redis: RedisSearchError) left search() and
    crashed the agent's run."""
    tool = await _thresholded_on_a_failing_store(embeddings, tmp_path)
    with pytest.raises(RuntimeError, match=r"^Search failed: OSError: index went away$"):
        await tool.search("safety interlock")
    with pytest.raises(RuntimeError, match=r"^Search failed: OSError: index went away$"):
        tool.search_sync("safety interlock")
    call = {"type": "tool_call", "name": "legal_docs", "args": {"query": "interlock"}, "id": "c"}
    answer = await tool.as_tool().ainvoke(call)
    assert (answer.status, answer.content) == ("error", "Search failed: OSError: index went away")


async def test_chats_agent_tool_tells_the_model_a_store_failing_under_a_threshold(
    embeddings: HashingEmbeddings, tmp_path: Path
) -> None:
    """chat's source_tool formatted 'no results' outside its error handler: the threshold
    check's store failure left the tool call and ended the question."""
    from langchain_holodeck.cli.chat import source_tool

    tool = await _thresholded_on_a_failing_store(embeddings, tmp_path)
    call = {"type": "tool_call", "name": "legal_docs", "args": {"query": "interlock"}, "id": "c"}
    answer = source_tool(tool, max_chars=None).invoke(call)
    assert (answer.status, answer.content) == ("error", "Search failed: OSError: index went away")


async def test_an_embeddings_server_down_under_a_threshold_serves_the_keyword_hits(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Hybrid with min_similarity_score, the OpenAI-compatible embeddings server answering 500
    at query time: the threshold cannot be checked. The tool answered 'No results above
    similarity threshold 0.3', so the agent read 'the documents do not say'; it now serves the
    keyword leg's hits (what it serves without a threshold), unchecked."""
    from langchain_openai import OpenAIEmbeddings

    from tests.embedding_server import EmbeddingServer

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    monkeypatch.delenv("OPENAI_API_BASE", raising=False)
    config = _thresholded_act(tmp_path, 0.3)
    with EmbeddingServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        embeddings = OpenAIEmbeddings(  # as resolve_embeddings builds it, without retries
            model="text-embedding-3-small", check_embedding_ctx_length=False, max_retries=0
        )
        tool = HierarchicalDocumentTool(
            config, embeddings=embeddings, project_dir=tmp_path, home_dir=tmp_path
        )
        await tool.initialize()
        server.mode = "error_500"
        answers = [await tool.search("safety interlock"), tool.search_sync("safety interlock")]
    for answer in answers:
        assert answer.startswith("Found ")
        assert "interlock" in answer.lower()


class _ModelDown(HashingEmbeddings):
    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        msg = "embedding service unavailable"
        raise ConnectionError(msg)

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


async def test_initialize_fails_fast_when_no_chunk_can_be_embedded(
    docs: Path, tmp_path: Path
) -> None:
    tool = VectorStoreTool(
        make_config(docs), embeddings=_ModelDown(), project_dir=tmp_path, home_dir=tmp_path
    )
    with pytest.raises(
        RuntimeError,
        match=r"^Failed to generate embeddings: ConnectionError: embedding service unavailable ",
    ) as info:
        await tool.initialize()
    assert isinstance(info.value.__cause__, ConnectionError)
    assert not tool.is_initialized
    assert tool.last_sync_result is not None
    assert tool.last_sync_result.failed > 0
    assert tool.last_sync_result.added == 0


async def test_partial_embedding_failures_are_counted_not_raised(tmp_path: Path) -> None:
    corpus = tmp_path / "notes"
    corpus.mkdir()
    for n in range(60):  # one chunk each: a batch of 50, then a batch of 10
        marker = " POISON" if n == 59 else ""
        (corpus / f"note_{n:02}.txt").write_text(f"Holodeck note {n}.{marker}\n")
    embeddings = HashingEmbeddings(fail_on="POISON")  # the model refuses the second batch
    tool = VectorStoreTool(
        make_config(corpus), embeddings=embeddings, project_dir=tmp_path, home_dir=tmp_path
    )
    result = await tool.initialize()
    # the failed batch is written again one note at a time: only the poisoned one fails
    assert (result.added, result.failed) == (59, 1)
    assert "note_59.txt" in result.errors[0]
    assert tool.is_initialized


async def test_a_failing_store_write_is_counted_not_blamed_on_the_model(
    docs: Path, embeddings: HashingEmbeddings
) -> None:
    class WriteFails(MatrixVectorStore):
        def add_vectors(self, *args: Any, **kwargs: Any) -> list[str]:
            msg = "disk full"
            raise OSError(msg)

    tool = VectorStoreTool(make_config(docs), vector_store=WriteFails(embeddings))
    result = await tool.initialize()  # the model answers the probe: the store is to blame
    assert result.failed > 0
    assert result.added == 0
    assert "OSError: disk full" in result.errors[0]


async def test_store_dir_persists_across_instances(
    docs: Path, embeddings: HashingEmbeddings, tmp_path: Path
) -> None:
    store_dir = tmp_path / "store"
    first = VectorStoreTool(
        make_config(docs), embeddings=embeddings, store_dir=store_dir, home_dir=tmp_path
    )
    added = (await first.initialize()).added
    calls = embeddings.texts_embedded
    second = VectorStoreTool(
        make_config(docs), embeddings=embeddings, store_dir=store_dir, home_dir=tmp_path
    )
    result = await second.initialize()
    assert (result.added, result.skipped) == (0, added)
    assert embeddings.texts_embedded == calls
    assert "Found 3 result(s)" in await second.search("safety protocols")


async def test_as_tool_is_a_langchain_tool(tool: VectorStoreTool) -> None:
    await tool.initialize()
    lc_tool = tool.as_tool()
    assert isinstance(lc_tool, BaseTool)
    assert lc_tool.name == "knowledge_base"
    assert lc_tool.description == "Search the holodeck documentation."
    schema = lc_tool.get_input_schema().model_json_schema()
    assert schema["required"] == ["query"]
    assert schema["properties"]["query"]["type"] == "string"
    assert lc_tool.invoke({"query": "rate limits"}).startswith("Found 3 result(s)")
    assert (await lc_tool.ainvoke({"query": "rate limits"})).startswith("Found 3 result(s)")


async def test_as_tool_answers_a_bad_argument_with_one_line_naming_it(
    tool: VectorStoreTool,
) -> None:
    """A model's call with a wrong argument type or none is an error answer, not a raise."""
    await tool.initialize()
    lc_tool = tool.as_tool()
    for args, expected in (
        ({"query": 3}, "query must be a string of words to look for, got 3."),
        ({}, "query is required"),
    ):
        call = {"name": lc_tool.name, "args": args, "id": "call-1", "type": "tool_call"}
        for message in (lc_tool.invoke(call), await lc_tool.ainvoke(call)):
            assert isinstance(message, ToolMessage)
            assert message.status == "error"
            assert expected in message.content
            assert "\n" not in message.content


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            {"query": "rate limits", "k": 1},
            "unknown argument k (got 1): the tool takes query only.",
        ),
        (
            {"qeury": "rate limits"},
            "query is required: pass the words to look for, e.g. 'revoke a token'. "
            'unknown argument qeury (got "rate limits"): the tool takes query only.',
        ),
        (
            {"query": "rate limits", "top_k": 2, "limit": 1},
            "unknown arguments top_k (got 2), limit (got 1): the tool takes query only.",
        ),
    ],
)
async def test_as_tool_answers_an_argument_it_does_not_take_with_one_line_naming_it(
    tool: VectorStoreTool, args: dict[str, object], expected: str
) -> None:
    """An argument the tool does not take was dropped without a word: a model asking for
    k=1 got the tool's top_k results and never learnt why (found 2026-12-07)."""
    await tool.initialize()
    lc_tool = tool.as_tool()
    assert lc_tool.get_input_schema().model_json_schema()["additionalProperties"] is False
    call = {"name": lc_tool.name, "args": args, "id": "call-1", "type": "tool_call"}
    for message in (lc_tool.invoke(call), await lc_tool.ainvoke(call)):
        assert isinstance(message, ToolMessage)
        assert (message.status, message.content) == ("error", expected)


async def test_agent_tool_call_round_trips_through_as_tool(tool: VectorStoreTool) -> None:
    await tool.initialize()
    lc_tool = tool.as_tool()
    call = {"name": "knowledge_base", "args": {"query": "safety protocols"}, "id": "call-1"}
    model = FakeMessagesListChatModel(
        responses=[AIMessage(content="", tool_calls=[call]), AIMessage(content="Two officers.")]
    )
    messages: list[Any] = [HumanMessage("Who can disable safety protocols?")]
    ai = model.invoke(messages)
    assert ai.tool_calls[0]["name"] == lc_tool.name
    tool_message = await lc_tool.ainvoke(ai.tool_calls[0])
    assert isinstance(tool_message, ToolMessage)
    assert tool_message.tool_call_id == "call-1"
    assert "two senior" in tool_message.content
    final = model.invoke([*messages, ai, tool_message])
    assert final.content == "Two officers."


async def test_as_retriever_composes_in_lcel(tool: VectorStoreTool) -> None:
    await tool.initialize()
    chain = tool.as_retriever() | (lambda docs: [d.metadata["source_path"] for d in docs])
    sources = await chain.ainvoke("bearer token Authorization header")
    assert sources[0].endswith("auth.md")


def test_format_results_numbers_blocks_and_shows_original_text() -> None:
    from langchain_core.documents import Document

    doc = Document(
        page_content="CONTEXT\n\nbody",
        metadata={"source_path": "a.md", "original_content": "body", "semantic_score": 0.891},
    )
    assert format_results([doc]) == "Found 1 result(s):\n\n[1] Score: 0.89 | Source: a.md\nbody"


def test_defined_terms_quote_the_first_results_document() -> None:
    # each result carries its document's definition; the block quoted the first entry it met,
    # and every result carried the same one, whichever document it came from
    def hit(source: str, *entries: tuple[str, str, bool]) -> Document:
        definitions = [
            {"term": "Operator", "definition": text, "source_path": path, "section_id": "1"}
            | {"elsewhere": elsewhere}
            for path, text, elsewhere in entries
        ]
        metadata = {"source_path": source, "semantic_score": 0.5, "definitions": definitions}
        return Document(page_content="text", metadata=metadata)

    rota = hit("rota.md", ("forklift.md", "a driver.", True), ("policy.md", "on call.", True))
    forklift = hit("forklift.md", ("forklift.md", "a driver.", False))
    policy = hit("policy.md", ("policy.md", "on call.", False))

    def block(*docs: Document) -> str:
        return format_results(docs).split("\n\nDefined terms:\n", 1)[1]

    assert block(rota, policy, forklift) == '- "Operator" (policy.md, section 1): on call.'
    assert block(rota) == (
        '- "Operator" (forklift.md, section 1; not among the results): a driver.\n'
        '- "Operator" (policy.md, section 1; not among the results): on call.'
    )
    old_style = Document(
        page_content="text",
        metadata={"definitions": [{"term": "Deck", "definition": "a room.", "source_path": "a"}]},
    )
    assert block(old_style) == '- "Deck" (a): a room.'


def test_load_tools_builds_each_tool_of_the_agent_yaml(tmp_path: Path) -> None:
    shutil.copytree(DATA_DIR / "docs", tmp_path / "docs")
    agent = tmp_path / "agent.yaml"
    agent.write_text(
        "tools:\n"
        "  - type: vectorstore\n    name: kb\n    description: Docs\n    source: docs/\n"
        "  - type: vectorstore\n    name: kb2\n    description: Docs again\n"
        "    source: docs/api.md\n"
    )
    tools = load_tools(
        agent, project_dir=tmp_path, home_dir=tmp_path, embeddings=HashingEmbeddings()
    )
    assert [t.name for t in tools] == ["kb", "kb2"]
    assert all(isinstance(t, VectorStoreTool) for t in tools)


def test_load_tools_leaves_the_whole_store_root_out_of_every_source(tmp_path: Path) -> None:
    # each tool left out only its own STORE/<name>/: a tool over the project (source: .)
    # indexed the sibling tool's saved chunks, manifest and BM25 index as source files
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.md").write_text("# A\n\nanchor text alpha\n")
    agent = tmp_path / "agent.yaml"
    agent.write_text(
        "tools:\n"
        "  - {type: hierarchical_document, name: sub, source: sub}\n"
        "  - {type: hierarchical_document, name: everything, source: .}\n"
    )
    sub, everything = load_tools(
        agent,
        project_dir=tmp_path,
        home_dir=tmp_path,
        embeddings=HashingEmbeddings(),
        store_dir=tmp_path / "store",
    )
    sub.initialize_sync()
    assert any((tmp_path / "store" / "sub").iterdir())
    everything.initialize_sync()
    found = re.findall(r"Source: (\S+)", everything.search_sync("anchor text alpha"))
    assert sorted(set(found)) == [f"{tmp_path.name}/agent.yaml", f"{tmp_path.name}/sub/a.md"]


def test_breadcrumb_of_a_section_without_an_id_ends_with_its_heading() -> None:
    # docs have no section numbers: the breadcrumb was the parents only, so a hit in
    # "Debug Mode" said "Section: CLI > Run the Server", and a top-level one said nothing
    def hit(heading: str, parents: list[str], **meta: Any) -> Document:
        metadata = {"source_path": "cli.rst", "fused_score": 0.5, "section_id": ""}
        metadata |= {"heading": heading, "parent_chain": parents, **meta}
        return Document(page_content="text", metadata=metadata)

    headers = [
        format_results([doc], hybrid=True).splitlines()[2]
        for doc in (
            hit("Debug Mode", ["CLI", "Run the Server"]),
            hit("CLI", []),
            hit("Notes", ["Section 5. Scope"], section_id="5"),
            hit("url_for, redirect", [], chunk_type="code"),  # symbols, not a section
        )
    ]
    assert headers == [
        "[1] Score: 0.50 | Source: cli.rst | Section: CLI \u203a Run the Server \u203a Debug Mode",
        "[1] Score: 0.50 | Source: cli.rst | Section: CLI",
        "[1] Score: 0.50 | Source: cli.rst | Section: Section 5. Scope \u203a Notes",
        "[1] Score: 0.50 | Source: cli.rst",
    ]


def test_hybrid_format_shows_fused_score_breadcrumb_and_cross_references() -> None:
    from langchain_core.documents import Document

    hit = Document(
        page_content="(a) text",
        metadata={
            "source_path": "act.md",
            "fused_score": 0.8125,
            "semantic_score": 0.9,
            "parent_chain": ["Act", "Section 201. Start"],
            "section_id": "201(a)",
        },
    )
    expanded = Document(
        page_content="(b) other",
        metadata={"source_path": "act.md", "expansion_hops": 1, "section_id": "202(b)"},
    )
    assert format_results([hit, expanded], hybrid=True) == (
        "Found 2 result(s):\n\n"
        "[1] Score: 0.81 | Source: act.md | "
        "Section: Act \u203a Section 201. Start \u203a 201(a)\n"
        "(a) text\n\n"
        "[2] Cross-reference (1 hop) | Source: act.md | Section: 202(b)\n(b) other"
    )
    # the dense tool shows the similarity, not the fused score of its single leg
    assert format_results([hit]).splitlines()[2] == "[1] Score: 0.90 | Source: act.md"


async def test_an_unchanged_reingest_does_not_rewrite_the_saved_store(
    docs: Path, embeddings: HashingEmbeddings, tmp_path: Path
) -> None:
    store_dir = tmp_path / "store"
    config = make_config(docs)
    await VectorStoreTool(config, embeddings=embeddings, store_dir=store_dir).initialize()
    manifest = (store_dir / "manifest.json").read_bytes()
    second = VectorStoreTool(config, embeddings=embeddings, store_dir=store_dir)
    await second.initialize()
    await second.initialize()
    assert (store_dir / "manifest.json").read_bytes() == manifest  # same generation on disk
    (docs / "api.md").write_text("# Holodeck API\n\nRewritten entirely.\n")
    os.utime(docs / "api.md", (2, 2))
    await second.initialize()
    assert (store_dir / "manifest.json").read_bytes() != manifest


def test_initialize_stats_each_file_once(
    tool: VectorStoreTool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README's promise: re-running costs one stat per file (one walk, not a second for
    the legacy-chunk check), on the first ingest and on a re-check."""
    from langchain_holodeck import _source_walk

    walks: list[str] = []
    walk = _source_walk.walk

    def counted(root: str, *args: Any, **kwargs: Any) -> list[tuple[str, str]]:
        walks.append(root)
        return walk(root, *args, **kwargs)

    monkeypatch.setattr(_source_walk, "walk", counted)
    assert tool.initialize_sync().added > 0
    assert len(walks) == 1
    assert tool.initialize_sync().skipped == tool.document_count
    assert len(walks) == 2


def test_only_query_and_search_failures_are_told_to_the_model() -> None:
    """A model reads a bad query or a failing search as one line; a defect of the package (a
    RuntimeError of any other kind, e.g. NotImplementedError) reaches the developer."""
    from langchain_core.tools import ToolException

    from langchain_holodeck.errors import EmbeddingError, SearchError
    from langchain_holodeck.tools.document import told_to_the_model

    for told in (ValueError("q"), SearchError("Search failed: x"), EmbeddingError("e")):
        with pytest.raises(ToolException, match=str(told)), told_to_the_model():
            raise told
    with pytest.raises(NotImplementedError), told_to_the_model():
        raise NotImplementedError


def test_save_errors_other_than_raise_or_warn_are_refused(tmp_path: Path) -> None:
    config = VectorStoreToolConfig(type="vectorstore", name="kb", source=str(DATA_DIR / "docs"))
    tool = VectorStoreTool(config, embeddings=HashingEmbeddings(), store_dir=tmp_path)
    with pytest.raises(ValueError, match="save_errors must be 'raise' or 'warn', got 'ignore'"):
        tool.initialize_sync(save_errors="ignore")  # type: ignore[arg-type]  # the wrong value


@pytest.mark.parametrize("headings", [True, False])
def test_an_inserted_paragraph_embeds_only_new_text_where_the_chunks_realign(
    tmp_path: Path, *, headings: bool
) -> None:
    # README said a paragraph inserted near the top of a long file "only embeds the genuinely
    # new text": true where later chunks realign (at headings, with the structured splitter);
    # a heading-less file cut by the default 512-token splitter re-embeds every later chunk
    words = [
        "plasma",
        "warp",
        "shield",
        "sensor",
        "phaser",
        "tractor",
        "impulse",
        "cloak",
        "deck",
        "crew",
        "coil",
        "relay",
    ]
    rng = random.Random(1)

    def para(n: int) -> str:
        return " ".join(rng.choice(words) for _ in range(n)).capitalize() + "."

    paras = [f"## Part {i}\n\n{para(60)}" if headings else para(60) for i in range(40)]
    inserted = [*paras[:2], para(120), *paras[2:]]
    (tmp_path / "docs").mkdir()

    def ingest(parts: list[str]) -> tuple[int, int]:
        (tmp_path / "docs" / "manual.md").write_text("\n\n".join(parts), encoding="utf-8")
        embeddings = HashingEmbeddings()
        options: dict[str, Any] = {"base_dir": tmp_path, "store_dir": tmp_path / "store"}
        tool: VectorStoreTool | HierarchicalDocumentTool
        if headings:
            config = HierarchicalDocumentToolConfig(
                type="hierarchical_document", name="kb", source="docs"
            )
            tool = HierarchicalDocumentTool(config, embeddings=embeddings, **options)
        else:
            config = VectorStoreToolConfig(type="vectorstore", name="kb", source="docs")
            tool = VectorStoreTool(config, embeddings=embeddings, **options)
        result = tool.initialize_sync()
        return result.added + result.updated, embeddings.texts_embedded

    chunks, _ = ingest(paras)
    rewritten, embedded = ingest(inserted)
    if headings:
        assert (chunks, rewritten, embedded) == (40, 1, 1)  # the section that grew, only
    else:
        assert embedded == rewritten == chunks > 5  # nothing realigns: every chunk again
