"""The gate in front of ``serve``'s HTTP app: bearer token, request size, requests in flight.

Plain ASGI, no MCP import: a refused request gets a JSON-RPC error object (no traceback) with
401 (no or wrong token), 413 (body too large) or 503 (too many requests in flight).
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


@dataclass(frozen=True)
class HttpLimits:
    """Bounds of the HTTP transport."""

    max_body_bytes: int = 1_000_000
    """Largest request body accepted; a larger one gets 413."""
    max_in_flight: int = 32
    """POST requests handled at once; one more gets 503 (searches also queue on their own)."""


class HttpGuard:
    """ASGI middleware: checks the token, bounds body size and concurrency, then calls ``app``.

    The token is compared in constant time and never logged or echoed. A POST body, read
    whole, reaches ``app`` as ``rewrite`` returns it (unchanged without one).
    """

    def __init__(
        self,
        app: App,
        *,
        token: str | None,
        limits: HttpLimits,
        rewrite: Callable[[bytes], bytes] | None = None,
    ) -> None:
        self.app = app
        self._expected = token.encode() if token else None
        self.limits = limits
        self.in_flight = 0
        self._rewrite = rewrite or (lambda body: body)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # lifespan (the session manager starts there)
            await self.app(scope, receive, send)
            return
        if self._expected is not None and not self._authorized(scope):
            await _refuse(send, 401, "unauthorized: send the header Authorization: Bearer TOKEN")
            return
        if scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        if self.in_flight >= self.limits.max_in_flight:
            await _refuse(send, 503, "server busy: too many requests in flight; retry shortly")
            return
        self.in_flight += 1
        try:
            body = await _read_body(receive, self.limits.max_body_bytes, _content_length(scope))
            if body is None:
                limit = self.limits.max_body_bytes
                await _refuse(send, 413, f"request body larger than {limit} bytes")
                return
            given, body = body, self._rewrite(body)
            if body != given:  # the app may read the length from the headers
                scope = {**scope, "headers": _with_length(scope, len(body))}
            await self.app(scope, _replay(body, receive), send)
        finally:
            self.in_flight -= 1

    def _authorized(self, scope: Scope) -> bool:
        """``Authorization: Bearer <token>``; the scheme in any case (RFC 7235)."""
        given = dict(scope.get("headers") or []).get(b"authorization", b"")
        scheme, _, credentials = given.partition(b" ")
        matches = hmac.compare_digest(credentials.lstrip(b" "), self._expected or b"")
        return scheme.lower() == b"bearer" and matches


def _content_length(scope: Scope) -> int | None:
    value = dict(scope.get("headers") or []).get(b"content-length")
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _with_length(scope: Scope, length: int) -> list[tuple[bytes, bytes]]:
    headers = [(k, v) for k, v in scope.get("headers") or [] if k != b"content-length"]
    return [*headers, (b"content-length", str(length).encode())]


async def _read_body(receive: Receive, limit: int, declared: int | None) -> bytes | None:
    """The whole request body, or None as soon as it is known to exceed ``limit``."""
    if declared is not None and declared > limit:
        return None
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":  # the client left: let the app see it
            return b"".join(chunks)
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` giving ``body`` in one message, then the client's later messages."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


async def _refuse(send: Send, status: int, message: str) -> None:
    code = {401: -32001, 413: -32600, 503: -32000}[status]
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}})
    headers = [(b"content-type", b"application/json")]
    if status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="holodeck-rag"'))
    if status == 503:
        headers.append((b"retry-after", b"1"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body.encode()})
