"""An OpenAI-compatible embeddings server on loopback, for tests.

It speaks the wire format of OpenAI's ``POST /v1/embeddings`` (what ``OpenAIEmbeddings`` and the
``openai`` client send): the request carries ``model``, ``input`` (a string or a list of
strings), optionally ``dimensions`` and ``encoding_format`` (``float`` or ``base64``, the
client's default: little-endian float32 bytes); the answer is
``{"object": "list", "data": [{"object": "embedding", "index", "embedding"}], "model",
"usage"}``. Errors use OpenAI's body, ``{"error": {"message", "type", "code"}}``.

Vectors are a bag of words hashed into ``dimensions`` buckets (default ``default_dimensions``),
L2-normalized: texts sharing words are close, as with ``tests.helpers.HashingEmbeddings``.

Modes (``server.mode``, changeable while running):
    ``ok``         answer normally.
    ``error_500``  HTTP 500 with an OpenAI error body (every request).
    ``fail_on``    HTTP ``fail_status`` (500) for a request whose input holds ``server.fail_on``
                   (only the first ``fail_times`` such requests when set); others answer.
    ``hang``       accept each request, read it and never answer (until the server stops):
                   a server stuck behind its load balancer (only the first ``hang_times``
                   requests when set; others answer). ``arrivals`` counts them.
    ``trickle``    answer normally, but send the body one byte every ``trickle_interval``
                   seconds (a congested gateway): each network read gets a byte in time.

Glitches (any mode): a text holding ``nan_on`` gets a vector of NaN, one holding ``wide_on`` a
vector 3 numbers wider than the others (what a faulty server may answer once).

``echo_auth_in_errors=True`` makes an error body's message repeat the ``Authorization`` header
received (``Incorrect API key provided: Bearer sk-...``), like a careless proxy, so tests can
check that callers scrub secrets from error text; ``echo_key_in_errors=True`` repeats the key
alone, without ``Bearer`` (``Invalid key: sk-... is not valid``), as some gateways do.

Load (any mode): ``latency`` seconds of sleep before each answer (a real API's round trip);
``throttle_every=n`` answers every n-th request with HTTP 429 and ``Retry-After:
retry_after`` (OpenAI's rate-limit body), and ``throttled`` counts them; ``peak_in_flight``
is the most requests the server held at once; ``arrivals`` holds the ``time.monotonic()`` of
each request's arrival and ``throttled_at`` that of each 429 answer.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import hashlib
import json
import math
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

import numpy as np

Mode = Literal["ok", "error_500", "fail_on", "hang", "trickle"]
_WORD = re.compile(r"\w+")


@functools.lru_cache(maxsize=1 << 16)
def _word_hash(word: str) -> int:
    return int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "little")


def hashed_vector(text: str, dimensions: int) -> list[float]:
    """The server's embedding of ``text``: hashed bag of words, L2-normalized."""
    vec = [0.0] * dimensions
    for word in _WORD.findall(text.lower()):
        vec[_word_hash(word) % dimensions] += 1.0
    norm = math.sqrt(sum(v * v for v in vec)) or 1.0
    return [v / norm for v in vec]


@dataclass
class EmbeddingServer:
    """Threaded loopback server; use as a context manager."""

    default_dimensions: int = 32
    mode: Mode = "ok"
    fail_on: str | None = None
    fail_status: int = 500
    fail_times: int | None = None
    hang_times: int | None = None
    echo_auth_in_errors: bool = False
    echo_key_in_errors: bool = False
    trickle_interval: float = 0.02
    requests: list[dict[str, Any]] = field(default_factory=list)
    latency: float = 0.0
    throttle_every: int = 0
    retry_after: float = 0.05
    throttled: int = 0
    peak_in_flight: int = 0
    arrivals: list[float] = field(default_factory=list)
    throttled_at: list[float] = field(default_factory=list)
    nan_on: str | None = None
    wide_on: str | None = None
    _in_flight: int = field(default=0, repr=False)
    _seen: int = field(default=0, repr=False)
    _httpd: ThreadingHTTPServer | None = field(default=None, repr=False)
    _thread: threading.Thread | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _stopping: threading.Event = field(default_factory=threading.Event, repr=False)

    @property
    def url(self) -> str:
        """Base URL with ``/v1``, e.g. ``http://127.0.0.1:54321/v1`` (the client's base_url)."""
        if self._httpd is None:
            msg = "EmbeddingServer is not started; use it as a context manager."
            raise RuntimeError(msg)
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> EmbeddingServer:
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()  # the requests held by ``hang`` end, unanswered
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def texts_embedded(self) -> int:
        """Inputs received in all requests so far."""
        with self._lock:
            return sum(len(_inputs(r)) for r in self.requests)

    def holds(self) -> bool:
        """``hang``: whether this request is held (counted, then held until the server stops)."""
        with self._lock:
            if self.mode != "hang" or self.hang_times == 0:
                return False
            if self.hang_times is not None:
                self.hang_times -= 1
            self.arrivals.append(time.monotonic())
        self._stopping.wait()
        return True

    def answer(self, body: dict[str, Any]) -> tuple[int, dict[str, Any], dict[str, str]]:
        """Status, JSON body and extra headers of the answer to ``body``."""
        with self._lock:
            self.arrivals.append(time.monotonic())
            self._in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self._in_flight)
            self._seen += 1
            throttle = self.throttle_every > 0 and self._seen % self.throttle_every == 0
        try:
            if self.latency:
                time.sleep(self.latency)
            if throttle:
                with self._lock:
                    self.throttled += 1
                    self.throttled_at.append(time.monotonic())
                error = {"message": "Rate limit reached.", "type": "requests"}
                body_429 = {"error": {**error, "param": None, "code": "rate_limit_exceeded"}}
                return 429, body_429, {"Retry-After": str(self.retry_after)}
            status, answer = self._answer(body)
            return status, answer, {}
        finally:
            with self._lock:
                self._in_flight -= 1

    def _answer(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.requests.append(body)
        texts = _inputs(body)
        poisoned = (
            self.mode == "fail_on"
            and self.fail_on is not None
            and any(self.fail_on in t for t in texts)
        )
        if poisoned and self.fail_times is not None:
            with self._lock:
                poisoned = self.fail_times > 0
                self.fail_times -= int(poisoned)
        if self.mode == "error_500" or poisoned:
            error = {"message": "The embedding server is overloaded.", "type": "server_error"}
            status = 500 if self.mode == "error_500" else self.fail_status
            return status, {"error": {**error, "param": None, "code": None}}
        dims = int(body.get("dimensions") or self.default_dimensions)
        data = []
        for index, text in enumerate(texts):
            vector = hashed_vector(text, dims)
            if self.wide_on is not None and self.wide_on in text:
                vector = hashed_vector(text, dims + 3)
            if self.nan_on is not None and self.nan_on in text:
                vector = [math.nan] * dims
            if body.get("encoding_format") == "base64":
                raw = np.asarray(vector, dtype="<f4").tobytes()
                encoded: object = base64.b64encode(raw).decode("ascii")
            else:
                encoded = vector
            data.append({"object": "embedding", "index": index, "embedding": encoded})
        tokens = sum(len(_WORD.findall(t)) for t in texts)
        usage = {"prompt_tokens": tokens, "total_tokens": tokens}
        return 200, {"object": "list", "data": data, "model": body.get("model"), "usage": usage}


def _inputs(body: dict[str, Any]) -> list[str]:
    raw = body.get("input")
    items = raw if isinstance(raw, list) else [raw]
    return [str(item) for item in items]


def _make_handler(server: EmbeddingServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            return  # quiet

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
            except ValueError:
                body = None
            headers: dict[str, str] = {}
            if server.holds():
                return  # no answer: the client gave up at its timeout
            if self.path.rstrip("/") != "/v1/embeddings" or not isinstance(body, dict):
                status, answer = 404, {"error": {"message": f"no route {self.path}"}}
            else:
                status, answer, headers = server.answer(body)
            if status >= 400 and server.echo_auth_in_errors:
                received = self.headers.get("Authorization")
                answer["error"]["message"] = f"Incorrect API key provided: {received}"
            if status >= 400 and server.echo_key_in_errors:
                key = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
                answer["error"]["message"] = f"Invalid key: {key} is not valid"
            payload = json.dumps(answer).encode()
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                if server.mode == "trickle":
                    for n in range(len(payload)):
                        self.wfile.write(payload[n : n + 1])
                        self.wfile.flush()
                        if server._stopping.wait(server.trickle_interval):
                            return
                    return
                self.wfile.write(payload)  # unless the client stopped waiting (its timeout)

    return Handler
