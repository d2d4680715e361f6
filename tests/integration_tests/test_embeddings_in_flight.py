"""API embeddings with requests in flight, through the real OpenAI client and a loopback server.

The server answers after a fixed latency, throttles every n-th request with HTTP 429 and
``Retry-After``, and fails chosen requests: sync keeps several requests open, waits as told,
retries, counts what still fails, and a re-run converges.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Iterator

import httpx
import openai
import pytest
from langchain_core.documents import Document
from langchain_openai import OpenAIEmbeddings

from langchain_holodeck.embeddings import resolve_embeddings
from langchain_holodeck.embeddings.inflight import (
    aembed_in_flight,
    embed_in_flight,
    retry_delay,
    runs_in_process,
)
from langchain_holodeck.sync import make_chunk_key, stable_id, sync_documents
from langchain_holodeck.vectorstores import MatrixVectorStore
from tests.embedding_server import EmbeddingServer, hashed_vector


@pytest.fixture
def server() -> Iterator[EmbeddingServer]:
    with EmbeddingServer() as srv:
        yield srv


def openai_embeddings(server: EmbeddingServer) -> OpenAIEmbeddings:
    return OpenAIEmbeddings(
        model="text-embedding-3-small",
        base_url=server.url,
        api_key="sk-test-not-a-key",  # type: ignore[arg-type]  # pydantic coerces to SecretStr
        max_retries=0,  # the client's own retries off: ours answer the 429s
        check_embedding_ctx_length=False,  # plain strings on the wire (no tiktoken download)
    )


def chunks(n: int, *, poison: int | None = None) -> list[Document]:
    return [
        Document(
            page_content=f"note {i} about deck {i % 7}" + (" POISON" if i == poison else ""),
            metadata={"source_path": f"notes/{i // 10:03}.md", "chunk_index": i % 10},
        )
        for i in range(n)
    ]


def test_sync_keeps_requests_in_flight_and_loses_nothing_to_rate_limits(
    server: EmbeddingServer,
) -> None:
    server.latency, server.throttle_every, server.retry_after = 0.05, 4, 0.1
    store = MatrixVectorStore(openai_embeddings(server))
    docs = chunks(300)
    result = sync_documents(docs, store, namespace="kb", batch_size=10, max_concurrency=6)
    assert (result.added, result.failed, result.errors) == (300, 0, ())
    assert server.throttled >= 5  # 429s were answered, waited out and retried
    assert 1 < server.peak_in_flight <= 6
    assert store.document_count == 300
    server.throttle_every = 0  # the query below is not part of the sync
    hit = store.similarity_search_with_relevance_scores("note 17 about deck 3", k=1)[0]
    assert hit[0].page_content == "note 17 about deck 3"
    assert hit[1] == pytest.approx(1.0, abs=1e-5)  # the server's own vector was stored
    requests = len(server.requests)
    again = sync_documents(docs, store, namespace="kb", batch_size=10, max_concurrency=6)
    assert (again.added, again.skipped) == (0, 300)
    assert len(server.requests) == requests  # nothing re-embedded


def test_a_refused_batch_is_counted_the_rest_written_and_the_rerun_converges(
    server: EmbeddingServer,
) -> None:
    server.mode, server.fail_on, server.fail_status = "fail_on", "POISON", 400
    store = MatrixVectorStore(openai_embeddings(server))
    docs = chunks(60, poison=33)
    result = sync_documents(docs, store, namespace="kb", batch_size=10, max_concurrency=4)
    # the refused batch holds chunks 30-39; chunk 30, file notes/003.md's record, waits too
    assert (result.added, result.failed) == (50, 10)
    assert any("BadRequestError" in e and "notes/003.md" in e for e in result.errors)
    server.mode = "ok"
    again = sync_documents(docs, store, namespace="kb", batch_size=10, max_concurrency=4)
    assert (again.added, again.skipped, again.failed) == (10, 50, 0)


def test_server_errors_are_retried_with_backoff(server: EmbeddingServer) -> None:
    server.mode, server.fail_on, server.fail_times = "fail_on", "POISON", 1
    store = MatrixVectorStore(openai_embeddings(server))
    result = sync_documents(chunks(20, poison=5), store, namespace="kb", batch_size=10)
    assert (result.added, result.failed) == (20, 0)
    assert server.fail_times == 0  # the 500 happened, and the retry was answered


async def test_async_requests_in_flight_are_bounded(server: EmbeddingServer) -> None:
    server.latency, server.throttle_every, server.retry_after = 0.05, 5, 0.05
    texts = [f"text number {i}" for i in range(200)]
    result = await aembed_in_flight(
        openai_embeddings(server), texts, batch_size=10, max_concurrency=5
    )
    assert result.failures == ()
    assert result.retries >= 3
    assert result.vectors[7] == pytest.approx(hashed_vector(texts[7], 32), abs=1e-6)
    assert 1 < server.peak_in_flight <= 5


@pytest.mark.parametrize(
    ("field", "problem"),
    [
        ("nan_on", "a vector holding a non-finite number (nan)"),
        ("wide_on", "a 35-dimensional vector where"),
    ],
)
async def test_a_batch_answered_with_an_unusable_vector_fails_alone(
    server: EmbeddingServer, field: str, problem: str
) -> None:
    setattr(server, field, "GLITCH")
    texts = [f"text number {i}" + (" GLITCH" if i == 13 else "") for i in range(30)]
    for result in (
        embed_in_flight(openai_embeddings(server), texts, batch_size=10, packed=True),
        await aembed_in_flight(openai_embeddings(server), texts, batch_size=10),
    ):
        (failure,) = result.failures
        assert (failure.start, failure.size) == (10, 10)
        assert f"unusable vector(s) for 10 texts, for text 13 {problem}" in failure.error
        assert [v is None for v in result.vectors] == [10 <= n < 20 for n in range(30)]


def test_max_concurrency_one_sends_one_request_at_a_time(server: EmbeddingServer) -> None:
    server.latency = 0.01
    result = embed_in_flight(
        openai_embeddings(server), ["a b", "c d", "e f"], batch_size=1, max_concurrency=1
    )
    assert [v is not None for v in result.vectors] == [True, True, True]
    assert server.peak_in_flight == 1


def _status_error(cls: type[openai.APIStatusError], status: int, **headers: str) -> Exception:
    request = httpx.Request("POST", "http://127.0.0.1/v1/embeddings")
    response = httpx.Response(status, headers=headers, request=request)
    return cls("refused", response=response, body=None)


def test_retry_delay_follows_the_answer() -> None:
    limited = _status_error(openai.RateLimitError, 429, **{"retry-after": "2"})
    assert retry_delay(limited, 0) == 2.0
    assert retry_delay(
        _status_error(openai.RateLimitError, 429, **{"retry-after-ms": "250"}), 3
    ) == (0.25)
    unsaid = retry_delay(_status_error(openai.RateLimitError, 429), 2)
    assert unsaid is not None
    assert 1.0 <= unsaid <= 2.0  # backoff 0.5 * 2**2, with jitter
    assert retry_delay(_status_error(openai.InternalServerError, 503), 0) is not None
    assert retry_delay(_status_error(openai.BadRequestError, 400), 0) is None
    assert retry_delay(_status_error(openai.AuthenticationError, 401), 0) is None
    assert retry_delay(ConnectionResetError("reset"), 0) is not None
    assert retry_delay(ValueError("bad input"), 0) is None


def test_only_remote_models_get_requests_in_flight(server: EmbeddingServer) -> None:
    from langchain_holodeck.embeddings import OnnxEmbeddings

    assert not runs_in_process(openai_embeddings(server))
    assert runs_in_process(OnnxEmbeddings.__new__(OnnxEmbeddings))
    with pytest.raises(ValueError, match="max_concurrency must be an integer >= 1, got 0"):
        sync_documents(
            chunks(1),
            MatrixVectorStore(openai_embeddings(server)),
            namespace="kb",
            max_concurrency=0,
        )


def test_redis_store_takes_the_vectors_sync_embedded(server: EmbeddingServer) -> None:
    import os

    url = os.environ.get("REDIS_URL")
    if not url:
        if os.environ.get("HOLODECK_REQUIRE_REDIS") == "1":
            pytest.fail("REDIS_URL is unset but HOLODECK_REQUIRE_REDIS=1")
        pytest.skip("REDIS_URL is unset")
    import uuid

    from langchain_holodeck.vectorstores import create_vector_store_with_status

    name = f"holodeck_inflight_{uuid.uuid4().hex[:8]}"
    store = create_vector_store_with_status(
        {"provider": "redis", "connection_string": url, "index_name": name},
        openai_embeddings(server),
        fallback=False,
    ).store
    server.latency, server.throttle_every, server.retry_after = 0.02, 3, 0.05
    try:
        docs = chunks(40)
        result = sync_documents(docs, store, namespace="kb", batch_size=5, max_concurrency=4)
        assert (result.added, result.failed) == (40, 0)
        assert server.throttled > 0
        server.throttle_every = 0
        hit = store.similarity_search_with_relevance_scores("note 17 about deck 3", k=1)[0]
        assert hit[0].page_content == "note 17 about deck 3"
        again = sync_documents(docs, store, namespace="kb", batch_size=5, max_concurrency=4)
        assert (again.added, again.skipped) == (0, 40)
    finally:
        store._index.delete(drop=True)  # type: ignore[attr-defined]  # a redisvl SearchIndex


def test_progress_counts_chunks_when_their_signatures_are_embedded_with_them(
    server: EmbeddingServer,
) -> None:
    # A code chunk's signature is one more entry, embedded in the same requests; the bar
    # counts chunks (its total), so it must end at the chunks, not at the entries.
    store = MatrixVectorStore(openai_embeddings(server))
    docs = [
        Document(
            page_content=f"def f{i}(deck):\n    return deck + {i}\n",
            metadata={"source_path": f"code/{i // 10}.py", "chunk_index": i % 10}
            | ({"signature": f"f{i}: def f{i}(deck)"} if i % 2 else {}),
        )
        for i in range(40)
    ]
    shown: list[int] = []
    result = sync_documents(
        docs, store, namespace="kb", batch_size=7, max_concurrency=3, on_batch=shown.append
    )
    assert (result.added, result.failed) == (40, 0)
    assert server.texts_embedded() == 60  # 40 chunks and 20 signatures
    assert sum(shown) == 40
    assert all(n > 0 for n in shown)


def test_vectors_embedded_ahead_are_held_packed(server: EmbeddingServer) -> None:
    # Sync embeds every text before it writes; held as lists of Python floats (32 bytes a
    # number) 1,000 vectors of 1,536 took 63 MB at the peak, 4x their size as float64.
    server.default_dimensions = 1536
    store = MatrixVectorStore(openai_embeddings(server))
    docs = chunks(1000)
    tracemalloc.start()
    try:
        result = sync_documents(docs, store, namespace="kb", batch_size=50)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (result.added, result.failed) == (1000, 0)
    assert peak < 40_000_000  # 12 MB of float64 vectors, 6 MB in the store, one batch's lists
    doc_id = stable_id("kb", make_chunk_key("notes/000.md", 7))
    vector = store.get_vectors([doc_id])[doc_id]  # the server's own vector was stored
    assert vector == pytest.approx(hashed_vector(docs[7].page_content, 1536), abs=1e-6)


# The OpenAI model resolve_embeddings builds (the YAML/CLI path): bounded, retried by holodeck.
@pytest.fixture
def openai_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[EmbeddingServer]:
    """A loopback embeddings server at ``OPENAI_BASE_URL`` (read by ``resolve_embeddings``)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    monkeypatch.delenv("OPENAI_API_BASE", raising=False)
    with EmbeddingServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        yield server


def test_the_openai_model_waits_a_bounded_time(openai_server: EmbeddingServer) -> None:
    assert resolve_embeddings("text-embedding-3-small").request_timeout == 60.0  # type: ignore[attr-defined]  # an OpenAIEmbeddings
    openai_server.latency = 3.0  # a server that accepts and does not answer in time
    embeddings = resolve_embeddings("text-embedding-3-small", timeout=0.3)
    with pytest.raises(openai.APITimeoutError):
        embeddings.embed_query("reactor water")
    assert len(openai_server.arrivals) == 1  # a timed-out query is not sent again


def test_the_longest_timeout_taken_embeds(openai_server: EmbeddingServer) -> None:
    """A week, the bound of resolve_embeddings and embedding_timeout: the request is sent and
    answered (1e12 failed every request with OverflowError before it was refused)."""
    embeddings = resolve_embeddings("text-embedding-3-small", timeout=604_800)
    assert len(embeddings.embed_query("reactor water")) == 32
    assert len(openai_server.arrivals) == 1


async def test_a_query_is_retried_after_a_server_error(openai_server: EmbeddingServer) -> None:
    openai_server.mode, openai_server.fail_on = "fail_on", "flaky"
    embeddings = resolve_embeddings("text-embedding-3-small")
    openai_server.fail_times = 1
    assert len(embeddings.embed_query("flaky reactor")) == 32
    openai_server.fail_times = 2
    assert len(await embeddings.aembed_query("flaky reactor")) == 32
    assert len(openai_server.arrivals) == 5  # 500, answer; 500, 500, answer


def test_a_429_pauses_every_request_of_a_sync_until_its_retry_after(
    openai_server: EmbeddingServer,
) -> None:
    """README: a 429 is retried after its Retry-After "and every worker pauses until then".
    The openai client retrying it itself (max_retries=2) hid it from sync: the other
    workers kept sending inside the window."""
    openai_server.latency, openai_server.throttle_every, openai_server.retry_after = 0.05, 6, 1.0
    store = MatrixVectorStore(resolve_embeddings("text-embedding-3-small"))
    result = sync_documents(chunks(48), store, namespace="kb", batch_size=2, max_concurrency=4)
    assert (result.added, result.failed) == (48, 0)
    assert openai_server.throttled >= 2
    for limited in openai_server.throttled_at:
        inside = [t - limited for t in openai_server.arrivals if 0.2 < t - limited < 0.9]
        assert inside == [], f"requests sent {inside} s after a 429 asking to wait 1 s"


def test_a_server_that_never_answers_costs_two_timeouts_not_seven_a_batch(
    openai_server: EmbeddingServer,
) -> None:
    """A server accepting requests and never answering: each batch was tried 7 times (6
    retries), each try the whole timeout, 7 minutes a batch at 60 s. Now a timeout is retried
    once; the batch that timed out twice stops the run from sending more, and the others
    fail at once, in one line; the re-run converges."""
    openai_server.mode = "hang"
    store = MatrixVectorStore(resolve_embeddings("text-embedding-3-small", timeout=0.3))
    docs = chunks(120)
    result = sync_documents(docs, store, namespace="kb", batch_size=10, max_concurrency=3)
    assert (result.added, result.failed) == (0, 120)
    assert len(openai_server.arrivals) <= 6  # the first 3 batches, twice each; before: 84
    (unsent,) = [e for e in result.errors if "not sent" in e]
    assert unsent.startswith("9 embedding batch(es) of 90 text(s) not sent: the embeddings ")
    assert "did not answer a batch in 2 tries (APITimeoutError" in unsent
    timeouts = [e for e in result.errors if e.startswith("embedding batch of 10 from")]
    assert len(timeouts) == 3
    openai_server.mode = "ok"
    again = sync_documents(docs, store, namespace="kb", batch_size=10, max_concurrency=3)
    assert (again.added, again.failed) == (120, 0)


async def test_a_timeout_is_retried_once_and_a_hung_server_stops_async_batches(
    openai_server: EmbeddingServer,
) -> None:
    embeddings = resolve_embeddings("text-embedding-3-small", timeout=0.3)
    texts = [f"text number {i}" for i in range(40)]
    openai_server.mode, openai_server.hang_times = "hang", 1  # slow for a moment: one try
    result = embed_in_flight(embeddings, texts, batch_size=10, max_concurrency=2)
    assert (result.failures, result.retries) == ((), 1)
    assert len(openai_server.arrivals) == 5  # 4 batches, one sent again
    openai_server.hang_times = None
    result = await aembed_in_flight(embeddings, texts, batch_size=10, max_concurrency=2)
    assert [(f.start, f.sent) for f in result.failures] == [
        (0, True),
        (10, True),
        (20, False),
        (30, False),
    ]
    assert len(openai_server.arrivals) == 5 + 4  # batches 0 and 10, twice each
