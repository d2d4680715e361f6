"""langchain-openai's ``OpenAIEmbeddings`` as ``resolve_embeddings`` builds it.

Private to ``resolve.py``, which imports it only once the ``openai`` extra is known to be
installed. The openai client retries nothing (``max_retries=0``): sync's requests in flight
retry a batch themselves, a 429 pausing every worker until its ``Retry-After``, which a client
retrying on its own hides from them. A query, which no sync retries, is retried here.
"""

from __future__ import annotations

import asyncio
import math
import time
from functools import partial
from typing import Any

from langchain_openai import OpenAIEmbeddings as _LangChainOpenAIEmbeddings

from langchain_holodeck._deadline import call_with_deadline
from langchain_holodeck.embeddings.inflight import retry_delay, timed_out

__all__ = ["DEADLINE_GRACE", "QUERY_MAX_WAIT", "QUERY_RETRIES", "OpenAIEmbeddings"]

QUERY_RETRIES = 2
"""Retries of one query embedding after a 429, a 408/409/5xx or a connection error (the
openai client's own default count)."""
DEADLINE_GRACE = 0.25
"""Seconds past ``timeout`` before a request still answering is given up (``TimeoutError``)."""
QUERY_MAX_WAIT = 10.0
"""Longest wait before a query's retry: a search does not wait out a longer ``Retry-After``
(the error is raised, and a hybrid tool serves keyword hits)."""


def _query_retry_in(error: BaseException, attempt: int) -> float | None:
    """Seconds before retrying a failed query embedding, or None (raise it).

    A timeout is not retried: the search would wait the whole timeout again.
    """
    if attempt >= QUERY_RETRIES or timed_out(error):
        return None
    delay = retry_delay(error, attempt)
    return delay if delay is not None and delay <= QUERY_MAX_WAIT else None


class OpenAIEmbeddings(_LangChainOpenAIEmbeddings):
    """``langchain_openai.OpenAIEmbeddings`` whose queries holodeck retries (same name, same id).

    Built with ``max_retries=0``; ``embed_query`` / ``aembed_query`` retry up to
    ``QUERY_RETRIES`` times after a rate limit, a server error or a lost connection.
    ``timeout`` bounds each request's whole answer (``TimeoutError`` past it): the openai
    client's own timeout bounds each network read, so a server sending a byte every 0.1 s
    was waited for as long as it kept sending.
    """

    def _deadline(self, n_texts: int, chunk_size: int | None) -> float | None:
        """Seconds a call embedding ``n_texts`` may take: ``timeout`` per request it sends.

        Plus ``DEADLINE_GRACE``: a server that sends nothing is timed out by the client itself
        (``openai.APITimeoutError``, as before); the deadline stops an answer that keeps
        coming.
        """
        timeout = self.request_timeout
        if isinstance(timeout, bool) or not isinstance(timeout, int | float):
            return None  # None, or an httpx.Timeout / tuple given by hand: the client's own
        requests = max(1, math.ceil(n_texts / (chunk_size or self.chunk_size)))
        return float(timeout) * requests + DEADLINE_GRACE

    def embed_documents(
        self, texts: list[str], chunk_size: int | None = None, **kwargs: Any
    ) -> list[list[float]]:
        call = partial(super().embed_documents, texts, chunk_size, **kwargs)
        try:
            return call_with_deadline(call, self._deadline(len(texts), chunk_size), what="it")
        except TimeoutError as error:
            raise self._timed_out() from error

    async def aembed_documents(
        self, texts: list[str], chunk_size: int | None = None, **kwargs: Any
    ) -> list[list[float]]:
        pending = super().aembed_documents(texts, chunk_size, **kwargs)
        try:
            return await asyncio.wait_for(pending, self._deadline(len(texts), chunk_size))
        except TimeoutError as error:
            raise self._timed_out() from error

    def _timed_out(self) -> TimeoutError:
        msg = (
            f"no complete answer to the embeddings request within its {self.request_timeout} s "
            "timeout (the server kept sending)"
        )
        return TimeoutError(msg)

    def embed_query(self, text: str, **kwargs: Any) -> list[float]:
        attempt = 0
        while True:
            try:
                return super().embed_query(text, **kwargs)
            except Exception as error:
                delay = _query_retry_in(error, attempt)
                if delay is None:
                    raise
                time.sleep(delay)
                attempt += 1

    async def aembed_query(self, text: str, **kwargs: Any) -> list[float]:
        attempt = 0
        while True:
            try:
                return await super().aembed_query(text, **kwargs)
            except Exception as error:
                delay = _query_retry_in(error, attempt)
                if delay is None:
                    raise
                await asyncio.sleep(delay)
                attempt += 1
