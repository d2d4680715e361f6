"""langchain-openai's ``OpenAIEmbeddings`` as ``resolve_embeddings`` builds it.

Private to ``resolve.py``, which imports it only once the ``openai`` extra is known to be
installed. The openai client retries nothing (``max_retries=0``): sync's requests in flight
retry a batch themselves, a 429 pausing every worker until its ``Retry-After``, which a client
retrying on its own hides from them. A query, which no sync retries, is retried here.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from langchain_openai import OpenAIEmbeddings as _LangChainOpenAIEmbeddings

from langchain_holodeck.embeddings.inflight import retry_delay, timed_out

__all__ = ["QUERY_MAX_WAIT", "QUERY_RETRIES", "OpenAIEmbeddings"]

QUERY_RETRIES = 2
"""Retries of one query embedding after a 429, a 408/409/5xx or a connection error (the
openai client's own default count)."""
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
    """

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
