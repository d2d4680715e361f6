"""A request that got no answer names its URL: ``Connection error.`` does not say which server."""

from __future__ import annotations

import socket

import openai
import pytest

from langchain_holodeck._request_url import unanswered_url, with_unanswered_url
from langchain_holodeck._sync_write import sanitize_error
from tests.embedding_server import EmbeddingServer


def closed_port() -> int:
    """A loopback port nothing listens on (bound once, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def embed_error(base_url: str) -> openai.OpenAIError:
    client = openai.OpenAI(api_key="sk-test-not-a-real-key", base_url=base_url, max_retries=0)
    with pytest.raises(openai.OpenAIError) as raised:
        client.embeddings.create(model="text-embedding-3-small", input=["deck"])
    return raised.value


def test_a_server_not_running_is_named_by_its_url_with_the_password_masked() -> None:
    """The ingest said `Failed to generate embeddings: APIConnectionError: Connection error.`
    with OPENAI_BASE_URL at a closed port, where a Redis error names its URL."""
    port = closed_port()
    error = embed_error(f"http://proxy:pw-do-not-leak@127.0.0.1:{port}/v1")
    assert isinstance(error, openai.APIConnectionError)
    url = f"http://proxy:***@127.0.0.1:{port}/v1/embeddings"
    assert unanswered_url(error) == url
    assert sanitize_error(error) == (
        f"APIConnectionError: Connection error. (no answer from {url})"
    )
    wrapped = RuntimeError("embedding failed")  # a wrapper raised from it names it too
    wrapped.__cause__ = error
    assert with_unanswered_url("x", wrapped) == f"x (no answer from {url})"


def test_a_server_that_answered_is_not_said_to_be_silent() -> None:
    with EmbeddingServer(mode="error_500") as server:
        error = embed_error(server.url)
    assert isinstance(error, openai.InternalServerError)
    assert unanswered_url(error) is None
    assert sanitize_error(error).startswith("InternalServerError: Error code: 500")
    assert unanswered_url(ValueError("no request")) is None
