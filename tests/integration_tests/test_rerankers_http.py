"""Rerankers against a Cohere-compatible server on loopback: real HTTP, real cohere client."""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections.abc import Iterator

import pytest
from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore

from langchain_holodeck.config import CohereRerankerConfig
from langchain_holodeck.rerankers import (
    CohereReranker,
    RerankRetriever,
    VLLMReranker,
    create_reranker,
)
from tests.helpers import HashingEmbeddings
from tests.rerank_server import RerankServer, expected_order

FAKE_KEY = "sk-holodeck-FAKE-7f3a9c2e41"  # distinctive: any log line containing it is a leak
QUERY = "holodeck safety protocols audit"
DOCS = [
    Document(id="id-0", page_content="Shifts rotate every week.", metadata={"source": "a.md"}),
    Document(
        id="id-1",
        page_content="ctx: safety\n\nThe holodeck safety protocols stay on.",
        metadata={"source": "b.md", "original_content": "The holodeck safety protocols stay on."},
    ),
    Document(id="id-2", page_content="Replicators serve tea.", metadata={"chunk_index": 2}),
    Document(
        id="id-3",
        page_content="Holodeck safety protocols audit every stardate.",
        metadata={"source": "d.md", "tags": ["x", "y"]},
    ),
    Document(id="id-4", page_content="The audit found nothing.", metadata={}),
]
TEXTS = [d.metadata.get("original_content", d.page_content) for d in DOCS]
EXPECTED_IDS = [DOCS[i].id for i in expected_order(QUERY, TEXTS)]


@pytest.fixture
def server() -> Iterator[RerankServer]:
    # echo_auth_in_errors: a 401 body repeats the Authorization header, so scrubbing is tested.
    with RerankServer(api_key=FAKE_KEY, echo_auth_in_errors=True, delay=5.0) as srv:
        yield srv


@pytest.fixture
def closed_port_url() -> str:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there any more
    return f"http://127.0.0.1:{port}"


def cohere(url: str, **kwargs: object) -> CohereReranker:
    return CohereReranker(api_key=FAKE_KEY, base_url=url, **kwargs)  # type: ignore[arg-type]


def assert_no_key_logged(caplog: pytest.LogCaptureFixture) -> None:
    assert FAKE_KEY not in caplog.text
    for record in caplog.records:
        assert FAKE_KEY not in record.getMessage()


# -- success paths ---------------------------------------------------------------------------


def test_reorders_by_the_server_scores_and_keeps_ids_and_metadata(server: RerankServer) -> None:
    out = cohere(server.url, top_n=None).compress_documents(DOCS, QUERY)
    assert [d.id for d in out] == EXPECTED_IDS
    by_id = {d.id: d for d in DOCS}
    for doc in out:
        original = by_id[doc.id]
        assert doc.page_content == original.page_content
        assert {
            k: v
            for k, v in doc.metadata.items()
            if k not in {"relevance_score", "rerank_input_rank"}
        } == original.metadata
        assert doc.metadata["rerank_input_rank"] == DOCS.index(original) + 1
    assert out[0].metadata["relevance_score"] == 1.0
    request = server.requests[-1]
    assert request.path == "/v2/rerank"
    assert request.authorization == f"Bearer {FAKE_KEY}"
    assert request.model == "rerank-v3.5"
    assert request.documents == TEXTS  # original_content, not the contextualized text


def test_top_n_is_sent_and_respected(server: RerankServer) -> None:
    out = cohere(server.url, top_n=2).compress_documents(DOCS, QUERY)
    assert [d.id for d in out] == EXPECTED_IDS[:2]
    assert server.requests[-1].top_n == 2


def test_use_contextualized_sends_page_content(server: RerankServer) -> None:
    cohere(server.url, use_contextualized=True).compress_documents(DOCS, QUERY)
    assert server.requests[-1].documents == [d.page_content for d in DOCS]


def test_vllm_base_url_and_model_pass_through() -> None:
    with RerankServer() as srv:
        reranker = VLLMReranker(url=f"{srv.url}/v1/", model="BAAI/bge-reranker-v2-m3", top_n=3)
        out = reranker.compress_documents(DOCS, QUERY)
        assert [d.id for d in out] == EXPECTED_IDS[:3]
        request = srv.requests[-1]
        assert (request.path, request.model, request.top_n) == (
            "/v2/rerank",
            "BAAI/bge-reranker-v2-m3",
            3,
        )
        assert request.query == QUERY


@pytest.mark.parametrize("missing_status", [404, 405])
def test_falls_back_from_v2_to_v1_once_and_remembers(missing_status: int) -> None:
    with RerankServer(only="v1", missing_status=missing_status) as srv:
        reranker = VLLMReranker(url=srv.url, model="m", top_n=2)
        first = reranker.compress_documents(DOCS, QUERY)
        second = reranker.compress_documents(DOCS, QUERY)
        assert [d.id for d in first] == [d.id for d in second] == EXPECTED_IDS[:2]
        assert srv.paths() == ["/v2/rerank", "/v1/rerank", "/v1/rerank"]
        assert reranker.active_api_version == "v1"


def test_configured_v1_falls_back_to_v2() -> None:
    with RerankServer(only="v2") as srv:
        reranker = VLLMReranker(url=srv.url, model="m", api_version="v1")
        out = reranker.compress_documents(DOCS, QUERY)
        assert out[0].id == EXPECTED_IDS[0]
        assert srv.paths() == ["/v1/rerank", "/v2/rerank"]


def test_v1_request_uses_cohere_v1_shape(server: RerankServer) -> None:
    out = cohere(server.url, api_version="v1", top_n=1).compress_documents(DOCS, QUERY)
    assert [d.id for d in out] == EXPECTED_IDS[:1]
    assert server.requests[-1].path == "/v1/rerank"
    assert server.requests[-1].documents == TEXTS


async def test_async_path_reorders_and_falls_back_between_versions() -> None:
    with RerankServer(only="v1") as srv:
        reranker = VLLMReranker(url=srv.url, model="m", top_n=None)
        out = await reranker.acompress_documents(DOCS, QUERY)
        assert [d.id for d in out] == EXPECTED_IDS
        assert out[0].metadata["relevance_score"] == 1.0
        assert srv.paths() == ["/v2/rerank", "/v1/rerank"]


# -- failure paths: each one falls back to the input order with one clean warning -----------


FAILURES = ["bad_key", "error_500", "malformed_json", "bad_index", "missing_fields", "slow", "down"]


def _failing_reranker(case: str, server: RerankServer, closed_port_url: str) -> CohereReranker:
    if case == "down":
        return cohere(closed_port_url, top_n=3, timeout=0.5)
    if case == "bad_key":
        return CohereReranker(api_key="sk-wrong-key", base_url=server.url, top_n=3)
    server.mode = case  # type: ignore[assignment]
    return cohere(server.url, top_n=3, timeout=0.5)


@pytest.mark.parametrize("case", FAILURES)
def test_failure_falls_back_to_the_input_order(
    case: str, server: RerankServer, closed_port_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    reranker = _failing_reranker(case, server, closed_port_url)
    with caplog.at_level(logging.DEBUG):
        out = reranker.compress_documents(DOCS, QUERY)
    assert [d.id for d in out] == ["id-0", "id-1", "id-2"]
    assert [d.metadata for d in out] == [d.metadata for d in DOCS[:3]]
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1
    assert warnings[0].getMessage().startswith("cohere reranker failed")
    assert_no_key_logged(caplog)
    if case != "down":
        assert len(server.requests) == 1  # no retries by the client


@pytest.mark.parametrize("case", FAILURES)
async def test_async_failure_falls_back_to_the_input_order(
    case: str, server: RerankServer, closed_port_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    reranker = _failing_reranker(case, server, closed_port_url)
    with caplog.at_level(logging.DEBUG):
        out = await reranker.acompress_documents(DOCS, QUERY)
    assert [d.id for d in out] == ["id-0", "id-1", "id-2"]
    assert len([r for r in caplog.records if r.levelno >= logging.WARNING]) == 1
    assert_no_key_logged(caplog)


def test_bad_key_warning_names_401_and_scrubs_the_echoed_key(
    server: RerankServer, caplog: pytest.LogCaptureFixture
) -> None:
    wrong = "sk-wrong-DISTINCT-0042"
    reranker = CohereReranker(api_key=wrong, base_url=server.url)
    with caplog.at_level(logging.WARNING):
        reranker.compress_documents(DOCS, QUERY)
    assert server.requests[-1].authorization == f"Bearer {wrong}"  # the server did get it...
    assert "HTTP 401" in caplog.text
    assert "Bearer ***" in caplog.text  # ...and echoed it, scrubbed in our warning
    assert wrong not in caplog.text


def test_timeout_warning_says_timeout(
    server: RerankServer, caplog: pytest.LogCaptureFixture
) -> None:
    server.mode = "slow"
    with caplog.at_level(logging.WARNING):
        cohere(server.url, timeout=0.5).compress_documents(DOCS, QUERY)
    assert "no answer within the 0.5 s timeout" in caplog.text


@pytest.mark.parametrize("path", ["sync", "async"])
async def test_the_timeout_bounds_the_whole_answer_of_a_trickling_server(
    server: RerankServer, caplog: pytest.LogCaptureFixture, path: str
) -> None:
    # One byte every 20 ms: each network read gets one in time, so the client's timeout (a
    # read timeout) never fired and timeout=2 waited ~20 s for the answer (a probe)
    server.mode = "trickle"
    reranker = cohere(server.url, timeout=0.5, top_n=2)
    start = time.monotonic()
    with caplog.at_level(logging.WARNING):
        if path == "sync":
            out = reranker.compress_documents(DOCS, QUERY)
        else:
            out = await reranker.acompress_documents(DOCS, QUERY)
    assert time.monotonic() - start < 1.5  # the whole answer takes ~6 s
    assert [d.id for d in out] == ["id-0", "id-1"]  # the fallback: the retrieval order
    assert "no answer within the 0.5 s timeout" in caplog.text


def test_vllm_warning_names_its_provider(
    closed_port_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        VLLMReranker(url=closed_port_url, model="m", timeout=0.5).compress_documents(DOCS, QUERY)
    assert caplog.records[0].getMessage().startswith("vllm reranker failed")


# -- circuit-breaker over HTTP -----------------------------------------------------------------


def test_breaker_opens_after_n_failures_then_half_opens(
    server: RerankServer, caplog: pytest.LogCaptureFixture
) -> None:
    server.mode = "error_500"
    reranker = cohere(server.url, failure_threshold=2, cooldown=3600, top_n=2)
    with caplog.at_level(logging.WARNING):
        for _ in range(5):
            assert [d.id for d in reranker.compress_documents(DOCS, QUERY)] == ["id-0", "id-1"]
    assert len(server.requests) == 2  # calls 3..5 skipped: no added latency
    assert len(caplog.records) == 2
    assert "skipping it for 3600 s" in caplog.records[1].getMessage()

    server.mode = "ok"
    reranker.cooldown = 0.0  # the cool-down is over: the next call is the half-open trial
    assert [d.id for d in reranker.compress_documents(DOCS, QUERY)] == EXPECTED_IDS[:2]
    reranker.cooldown = 3600
    assert [d.id for d in reranker.compress_documents(DOCS, QUERY)] == EXPECTED_IDS[:2]
    assert len(server.requests) == 4  # closed again: every call reaches the server


def test_failed_half_open_trial_reopens(server: RerankServer) -> None:
    server.mode = "error_500"
    reranker = cohere(server.url, failure_threshold=1, cooldown=0.0)
    reranker.compress_documents(DOCS, QUERY)  # opens
    reranker.compress_documents(DOCS, QUERY)  # trial fails, re-opens
    reranker.cooldown = 3600
    reranker.compress_documents(DOCS, QUERY)  # skipped
    assert len(server.requests) == 2


async def test_a_cancelled_half_open_trial_lets_the_next_trial_through(
    server: RerankServer,
) -> None:
    server.mode = "error_500"
    reranker = cohere(server.url, failure_threshold=1, cooldown=0.0, top_n=2)
    await reranker.acompress_documents(DOCS, QUERY)  # opens
    server.mode = "slow"  # the trial hangs, and its caller gives up (a tool's timeout)
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(reranker.acompress_documents(DOCS, QUERY), 0.3)
    server.mode = "ok"  # healthy again: the next call after the cool-down is a trial again
    assert [d.id for d in await reranker.acompress_documents(DOCS, QUERY)] == EXPECTED_IDS[:2]
    assert [d.id for d in reranker.compress_documents(DOCS, QUERY)] == EXPECTED_IDS[:2]
    assert len(server.requests) == 4  # before: the breaker let no call through, for good


# -- composition -------------------------------------------------------------------------------


async def test_rerank_retriever_over_http(server: RerankServer) -> None:
    store = InMemoryVectorStore(HashingEmbeddings())
    store.add_documents(DOCS)
    retriever = RerankRetriever(
        retriever=store.as_retriever(), reranker=cohere(server.url, top_n=None), k=2, fetch_k=5
    )
    assert [d.id for d in retriever.invoke(QUERY)] == EXPECTED_IDS[:2]
    assert [d.id for d in await retriever.ainvoke(QUERY, k=1)] == EXPECTED_IDS[:1]
    assert len(server.requests[-1].documents) == 5


def test_async_client_works_across_event_loops(server: RerankServer) -> None:
    import asyncio

    reranker = cohere(server.url, top_n=1)
    first = asyncio.run(reranker.acompress_documents(DOCS, QUERY))
    second = asyncio.run(reranker.acompress_documents(DOCS, QUERY))  # a new loop: new pool
    assert [d.id for d in first] == [d.id for d in second] == EXPECTED_IDS[:1]
    assert first[0].metadata["relevance_score"] == 1.0
    assert second[0].metadata["relevance_score"] == 1.0


# -- where the cohere provider sends its requests ----------------------------------------------


def test_cohere_config_base_url_points_the_reranker_at_a_gateway(server: RerankServer) -> None:
    config = CohereRerankerConfig(provider="cohere", api_key=FAKE_KEY, base_url=server.url)
    out = create_reranker(config).compress_documents(DOCS, QUERY)
    assert [d.id for d in out] == EXPECTED_IDS
    assert server.paths() == ["/v2/rerank"]


def test_cohere_config_timeout_bounds_the_wait(
    server: RerankServer, caplog: pytest.LogCaptureFixture
) -> None:
    server.mode = "slow"  # answers after 2 s: the config's 0.5 s gives up first
    config = CohereRerankerConfig(
        provider="cohere", api_key=FAKE_KEY, base_url=server.url, timeout=0.5
    )
    with caplog.at_level(logging.WARNING):
        out = create_reranker(config).compress_documents(DOCS, QUERY)
    assert "no answer within the 0.5 s timeout" in caplog.text
    assert [d.id for d in out] == [d.id for d in DOCS]  # the un-reranked order


def test_cohere_reads_co_api_url_when_base_url_is_unset(
    server: RerankServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CO_API_URL", server.url)  # what Cohere's own client honours
    config = CohereRerankerConfig(provider="cohere", api_key=FAKE_KEY)
    out = create_reranker(config).compress_documents(DOCS, QUERY)
    assert [d.id for d in out] == EXPECTED_IDS
    assert server.paths() == ["/v2/rerank"]


def test_cohere_config_base_url_wins_over_co_api_url(
    server: RerankServer, closed_port_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CO_API_URL", closed_port_url)
    config = CohereRerankerConfig(provider="cohere", api_key=FAKE_KEY, base_url=server.url)
    create_reranker(config).compress_documents(DOCS, QUERY)
    assert server.paths() == ["/v2/rerank"]
