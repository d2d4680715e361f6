"""Secrets never leak: not in logs (any logger, DEBUG included), messages, reprs or SyncResults.

Distinctive fake secrets travel the real paths: ``${VAR}`` references in ``agent.yaml`` for the
Redis password, the OpenSearch password and a reranker key; a rerank server that answers 401
and echoes the Authorization header it got; providers (embeddings, chat model) whose errors
repeat the key the way careless HTTP clients do. Everything logged is captured and scanned.
(Invalid configs holding secrets are covered by ``test_config_bad_input.py``.)
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatResult

from langchain_holodeck._redact import one_line
from langchain_holodeck.cli.main import main
from langchain_holodeck.config import load_agent_config
from langchain_holodeck.contextual import ContextualChunkEnricher
from langchain_holodeck.embeddings import resolve_embeddings
from langchain_holodeck.keyword_index import BM25KeywordIndex
from langchain_holodeck.rerankers import CohereReranker, RerankRetriever
from langchain_holodeck.retrievers import HybridRetriever
from langchain_holodeck.sync import sync_documents
from langchain_holodeck.tools import load_tools
from langchain_holodeck.vectorstores import MatrixVectorStore
from tests.embedding_server import EmbeddingServer
from tests.helpers import HashingEmbeddings
from tests.openai_server import chat_server
from tests.opensearch_server import FakeOpenSearch, serve
from tests.rerank_server import RerankServer

KEY = "sk-LEAKCHECK-7c1e9a44f0b2"
REDIS_PASSWORD = "rp-LEAKCHECK-51d0aa"
OPENSEARCH_PASSWORD = "op-LEAKCHECK-93be17"
SECRETS = (KEY, REDIS_PASSWORD, OPENSEARCH_PASSWORD)


def assert_clean(*texts: object) -> None:
    for text in texts:
        for secret in SECRETS:
            assert secret not in str(text), f"{secret} leaked in: {str(text)[:500]}"


@pytest.fixture
def everything_logged(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.DEBUG)  # every logger: ours, redis, httpx, cohere, opensearch
    return caplog


def test_tool_life_cycle_from_agent_yaml_leaks_nothing(
    tmp_path: Path,
    everything_logged: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    data_dir: Path,
) -> None:
    opensearch = serve(FakeOpenSearch())
    endpoint = f"http://127.0.0.1:{opensearch.server_address[1]}"
    opensearch.shutdown()  # down: every keyword call fails
    opensearch.server_close()
    monkeypatch.setenv("LEAK_REDIS_URL", f"redis://admin:{REDIS_PASSWORD}@127.0.0.1:1/0")
    monkeypatch.setenv("LEAK_OPENSEARCH_PASSWORD", OPENSEARCH_PASSWORD)
    monkeypatch.setenv("LEAK_COHERE_KEY", KEY)
    agent = tmp_path / "agent.yaml"
    agent.write_text(
        f"""
tools:
  - type: vectorstore
    name: kb
    description: Project docs
    source: {data_dir / "docs"}
    database: {{provider: redis, connection_string: "${{LEAK_REDIS_URL}}"}}
    rerank: true
    reranker: {{provider: cohere, api_key: "${{LEAK_COHERE_KEY}}"}}
  - type: hierarchical_document
    name: act
    description: The act
    source: {data_dir / "legal"}
    database: {{provider: redis, connection_string: "${{LEAK_REDIS_URL}}"}}
    keyword_index:
      provider: opensearch
      endpoint: {endpoint}
      username: admin
      password: "${{LEAK_OPENSEARCH_PASSWORD}}"
      timeout: 1
""",
        encoding="utf-8",
    )
    tools = load_tools(agent, embeddings=HashingEmbeddings(), store_dir=tmp_path / "store")
    seen: list[object] = [repr(t.config) for t in tools] + [t.config.model_dump() for t in tools]
    seen += [t.config.model_dump_json() for t in tools]
    act = tools[1]
    result = act.initialize_sync()  # Redis unreachable (fallback), OpenSearch down
    seen += [result, act.fallback_reason, act.search_sync("Section 201 safety interlock")]
    assert act.backend == "in-memory"
    assert "keyword index update failed" in everything_logged.text
    assert_clean(*seen, everything_logged.text)


def test_rerank_401_echoing_the_key_is_scrubbed(
    everything_logged: pytest.LogCaptureFixture,
) -> None:
    with RerankServer(api_key="the-right-key", echo_auth_in_errors=True) as server:
        reranker = CohereReranker(api_key=KEY, base_url=server.url, top_n=None, timeout=2)
        store = MatrixVectorStore(HashingEmbeddings())
        store.add_documents([Document(id=str(i), page_content=f"doc {i} arch") for i in range(4)])
        retriever = RerankRetriever(
            retriever=HybridRetriever(vector_store=store, k=4), reranker=reranker, k=2
        )
        docs = retriever.invoke("arch")
        assert server.requests[0].authorization == f"Bearer {KEY}"  # the key was really sent
    assert len(docs) == 2
    assert "HTTP 401" in everything_logged.text
    assert_clean(repr(reranker), str(reranker), reranker.model_dump(), everything_logged.text)


class KeyEchoingEmbeddings(Embeddings):
    """A provider client whose errors repeat the credentials it sent (seen in the wild)."""

    def __init__(self, *, fail_on: str) -> None:
        self.fail_on = fail_on
        self.inner = HashingEmbeddings()

    def _check(self, texts: list[str]) -> None:
        if any(self.fail_on in t for t in texts):
            msg = (
                f"401 Unauthorized: POST https://user:{KEY}@embed.example/v1 "
                f"(headers: Authorization: Bearer {KEY}; api_key={KEY})"
            )
            raise RuntimeError(msg)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self._check(texts)
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        self._check([text])
        return self.inner.embed_query(text)


def test_provider_errors_echoing_the_key_stay_out_of_sync_results_and_searches(
    everything_logged: pytest.LogCaptureFixture,
) -> None:
    embeddings = KeyEchoingEmbeddings(fail_on="poison")
    store = MatrixVectorStore(embeddings)
    chunks = [
        Document(page_content=text, metadata={"source_path": "a.md", "chunk_index": i})
        for i, text in enumerate(["arch controls", "poison chunk", "safety interlock"])
    ]
    bm25 = BM25KeywordIndex()
    result = sync_documents(chunks, store, namespace="n", batch_size=1, keyword_index=bm25)
    assert result.failed == 2  # the poisoned chunk and the file record held back
    # the dense leg fails on a poisoned query; the keyword leg answers
    retriever = HybridRetriever(vector_store=store, keyword_index=bm25, k=2)
    docs = retriever.invoke("poison safety interlock")
    assert [d.page_content for d in docs] == ["safety interlock"]
    assert "semantic search failed" in everything_logged.text
    assert_clean(result, *result.errors, everything_logged.text)


class KeyEchoingChatModel(BaseChatModel):
    """A chat model whose transport error repeats its key."""

    @property
    def _llm_type(self) -> str:
        return "key-echo-fake"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        msg = f"403 Forbidden for Authorization: Bearer {KEY}"
        raise RuntimeError(msg)


def test_context_llm_error_echoing_the_key_is_scrubbed(
    everything_logged: pytest.LogCaptureFixture,
) -> None:
    enricher = ContextualChunkEnricher(KeyEchoingChatModel())
    document = Document(page_content="arch controls", metadata={"source_path": "a.md"})
    result = enricher.enrich_with_stats(document, [document])
    assert result.stats.failed == 1
    assert "No context for chunk" in everything_logged.text
    assert_clean(result, everything_logged.text)


# -- keys a server repeats bare, without "Bearer " ---------------------------------------------
# The pattern rules mask "Bearer sk-..." and "api_key=sk-..."; a gateway answering
# "401 Invalid key: sk-... is not valid" is masked only because the key is known: the
# environment's keys (OPENAI_API_KEY...), the configured ones and the chat model's own.


def test_an_embeddings_server_repeating_the_env_key_bare_is_scrubbed(
    everything_logged: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    key = "sk-proj-LEAKCHECK-EMB0123456789"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    monkeypatch.delenv("OPENAI_API_BASE", raising=False)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "deck.md").write_text("# Deck\n\nThe holodeck deck opens at dawn.\n")
    with EmbeddingServer(echo_key_in_errors=True) as server:
        server.mode, server.fail_on, server.fail_status = "fail_on", "", 401  # every request
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        embeddings = resolve_embeddings("text-embedding-3-small", timeout=5)
        chunks = [Document(page_content="arch", metadata={"source_path": "a.md"})]
        result = sync_documents(chunks, MatrixVectorStore(embeddings), namespace="n")
        store = ["--store", str(tmp_path / "store")]
        model = ["--embedding-model", "text-embedding-3-small"]
        code = main([*store, "ingest", str(docs), *model])
        err = capsys.readouterr().err
    assert (result.failed, code) == (1, 1)  # the CLI gives up on the model
    assert "Invalid key: *** is not valid" in result.errors[0]
    assert "Invalid key: *** is not valid" in err  # the warning and the error: line
    assert key not in result.errors[0]
    assert key not in err
    assert key not in everything_logged.text


def test_a_context_model_repeating_its_key_bare_is_scrubbed(
    everything_logged: pytest.LogCaptureFixture,
) -> None:
    from langchain_openai import ChatOpenAI

    key = "sk-proj-LEAKCHECK-CTX0123456789"
    with chat_server() as server:
        server.error_status, server.echo_key = 401, True
        llm = ChatOpenAI(model="m", api_key=key, base_url=server.base_url, max_retries=0)
        document = Document(page_content="arch controls", metadata={"source_path": "a.md"})
        result = ContextualChunkEnricher(llm).enrich_with_stats(document, [document])
    assert result.stats.failed == 1
    assert "Invalid key: *** is not valid" in everything_logged.text
    assert key not in everything_logged.text


def test_a_configured_key_repeated_bare_is_masked_in_every_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "sk-proj-LEAKCHECK-CFG0123456789"
    monkeypatch.setenv("LEAK_CTX_KEY", key)
    agent = tmp_path / "agent.yaml"
    agent.write_text(
        "tools:\n  - type: hierarchical_document\n    name: kb\n    source: docs\n"
        "    contextual_embeddings: true\n"
        '    context_model: {provider: openai, name: m, api_key: "${LEAK_CTX_KEY}"}\n',
        encoding="utf-8",
    )
    load_agent_config(agent)
    monkeypatch.delenv("LEAK_CTX_KEY")  # not read from the environment: remembered at load
    line = one_line(RuntimeError(f"Error code: 401 - Invalid key: {key} is not valid"))
    assert line == "RuntimeError: Error code: 401 - Invalid key: *** is not valid"
