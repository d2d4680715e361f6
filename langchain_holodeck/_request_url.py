"""Where an HTTP request that got no answer went: ``Connection error.`` does not say it.

The clients built on httpx (openai, anthropic, cohere, LangChain's wrappers of them) raise
connection and timeout errors that carry the request but do not name its server, where a
Redis or PostgreSQL error names its URL. Imports nothing of the package but ``_redact``.
"""

from __future__ import annotations

from langchain_holodeck._redact import mask_url_password


def unanswered_url(error: BaseException) -> str | None:
    """The URL of the request ``error`` (or an exception it was raised from) got no answer to.

    Its password and secret query values are masked. None when no request is attached, or
    when the server answered: an HTTP status error says the status it got.
    """
    seen: set[int] = set()
    link: BaseException | None = error
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        if getattr(link, "response", None) is not None:
            return None
        try:
            request = getattr(link, "request", None)
        except RuntimeError:  # httpx: an error raised without its request
            request = None
        url = getattr(request, "url", None)
        if url is not None and str(url):
            return mask_url_password(str(url))
        link = link.__cause__ or link.__context__
    return None


def with_unanswered_url(line: str, error: BaseException) -> str:
    """``line`` ending ``(no answer from <url>)`` when ``error`` is a request's unanswered."""
    url = unanswered_url(error)
    return line if url is None else f"{line} (no answer from {url})"
