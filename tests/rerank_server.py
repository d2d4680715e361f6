"""A Cohere-compatible rerank server on loopback, for tests and benchmarks.

It speaks the wire format of Cohere's ``POST /v1/rerank`` and ``POST /v2/rerank`` (the one vLLM
also serves): the request carries ``model``, ``query``, ``documents`` (strings; v1 also accepts
``{"text": ...}`` objects) and ``top_n``; the answer is
``{"id", "results": [{"index", "relevance_score"}], "meta"}``, best first.

Scoring is transparent so tests know the expected order: the fraction of the query's distinct
words that appear in the document (ties keep the input order).

Modes (``server.mode``, changeable while running):
    ``ok``              answer normally.
    ``error_500``       HTTP 500 with a JSON error body.
    ``malformed_json``  HTTP 200 with a body that is not JSON.
    ``bad_index``       HTTP 200, valid JSON, but an index outside the documents.
    ``missing_fields``  HTTP 200, valid JSON, results without ``relevance_score``.
    ``fewer``           HTTP 200, only the best result whatever ``top_n`` (a gateway applying
                        its own relevance threshold).
    ``error_200``       HTTP 200 with an error body and no results
                        (``{"error": {"message": "model overloaded"}}``).
    ``slow``            wait ``delay`` seconds, then answer normally.
    ``trickle``         answer normally, but send the body one byte every ``trickle_interval``
                        seconds (a congested gateway): each network read gets a byte in time.

``only="v1"`` or ``only="v2"`` answers ``missing_status`` (404 by default) on the other path.
With ``api_key`` set, a request whose ``Authorization`` is not ``Bearer <api_key>`` gets 401;
``echo_auth_in_errors=True`` makes that 401 body repeat the header it received, like a careless
proxy, so tests can check that callers scrub secrets from error text.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

Mode = Literal[
    "ok",
    "error_500",
    "malformed_json",
    "bad_index",
    "missing_fields",
    "fewer",
    "error_200",
    "slow",
    "trickle",
]
_WORD = re.compile(r"\w+")


def lexical_score(query: str, document: str) -> float:
    """Fraction of the query's distinct lowercase words present in the document."""
    query_words = set(_WORD.findall(query.lower()))
    if not query_words:
        return 0.0
    return len(query_words & set(_WORD.findall(document.lower()))) / len(query_words)


def expected_order(query: str, documents: list[str]) -> list[int]:
    """Input indices, best first, exactly as the server ranks them."""
    scores = [lexical_score(query, d) for d in documents]
    return sorted(range(len(documents)), key=lambda i: -scores[i])


@dataclass(frozen=True)
class RecordedRequest:
    """One request the server received."""

    path: str
    authorization: str | None
    body: dict[str, Any] | None

    @property
    def model(self) -> object:
        return (self.body or {}).get("model")

    @property
    def top_n(self) -> object:
        return (self.body or {}).get("top_n")

    @property
    def query(self) -> object:
        return (self.body or {}).get("query")

    @property
    def documents(self) -> list[str]:
        docs = (self.body or {}).get("documents") or []
        return [d["text"] if isinstance(d, dict) else d for d in docs]


@dataclass
class RerankServer:
    """Threaded loopback server; use as a context manager or call ``start``/``stop``."""

    api_key: str | None = None
    mode: Mode = "ok"
    only: Literal["v1", "v2"] | None = None
    missing_status: int = 404
    delay: float = 2.0
    trickle_interval: float = 0.02
    echo_auth_in_errors: bool = False
    requests: list[RecordedRequest] = field(default_factory=list)
    _httpd: ThreadingHTTPServer | None = field(default=None, repr=False)
    _thread: threading.Thread | None = field(default=None, repr=False)
    _stop: threading.Event = field(default_factory=threading.Event, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def url(self) -> str:
        """Base URL, e.g. ``http://127.0.0.1:54321`` (what the Cohere client takes)."""
        if self._httpd is None:
            msg = "RerankServer is not started; call start() or use it as a context manager."
            raise RuntimeError(msg)
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def paths(self) -> list[str]:
        """Paths of the recorded requests, in arrival order."""
        with self._lock:
            return [r.path for r in self.requests]

    def start(self) -> RerankServer:
        handler = _make_handler(self)
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._httpd.block_on_close = False
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()  # wakes handlers sleeping in "slow" mode
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> RerankServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- request handling (called from handler threads) -------------------------------------

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _answer(self, path: str, authorization: str | None, raw: bytes) -> tuple[int, str | bytes]:
        try:
            body = json.loads(raw or b"null")
        except json.JSONDecodeError:
            body = None
        self._record(RecordedRequest(path, authorization, body if isinstance(body, dict) else None))

        version = {"/v1/rerank": "v1", "/v2/rerank": "v2"}.get(path)
        if version is None or (self.only is not None and version != self.only):
            return self.missing_status, json.dumps({"detail": "Not Found"})
        if self.api_key is not None and authorization != f"Bearer {self.api_key}":
            message: dict[str, Any] = {"id": str(uuid.uuid4()), "message": "invalid api token"}
            if self.echo_auth_in_errors:
                message["received_authorization"] = authorization
            return 401, json.dumps(message)
        if not isinstance(body, dict) or not isinstance(body.get("query"), str):
            return 400, json.dumps({"message": "body must be a JSON object with a query string"})

        mode = self.mode
        if mode == "error_500":
            return 500, json.dumps({"message": "internal server error"})
        if mode == "malformed_json":
            return 200, b'{"results": [{"index": 0, "relevance_score": '
        if mode == "error_200":
            return 200, json.dumps({"error": {"message": "model overloaded", "code": 503}})
        if mode == "slow":
            self._stop.wait(self.delay)

        documents = RecordedRequest(path, authorization, body).documents
        order = expected_order(body["query"], documents)
        top_n = body.get("top_n")
        if isinstance(top_n, int):
            order = order[:top_n]
        results: list[dict[str, Any]] = [
            {"index": i, "relevance_score": lexical_score(body["query"], documents[i])}
            for i in order
        ]
        if mode == "bad_index":
            results[0]["index"] = len(documents) + 7
        if mode == "missing_fields":
            results = [{"index": r["index"]} for r in results]
        if mode == "fewer":
            results = results[:1]
        if version == "v1" and body.get("return_documents"):
            for r in results:
                r["document"] = {"text": documents[r["index"]]}
        meta = {"api_version": {"version": version[1:]}, "billed_units": {"search_units": 1}}
        return 200, json.dumps({"id": str(uuid.uuid4()), "results": results, "meta": meta})


def _make_handler(server: RerankServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, like real servers
        disable_nagle_algorithm = True  # no 40 ms delayed-ACK stalls on keep-alive

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            status, payload = server._answer(self.path, self.headers.get("Authorization"), raw)
            data = payload if isinstance(payload, bytes) else payload.encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                if server.mode == "trickle":
                    for n in range(len(data)):
                        self.wfile.write(data[n : n + 1])
                        self.wfile.flush()
                        if server._stop.wait(server.trickle_interval):
                            return
                    return
                self.wfile.write(data)  # fails when the client gave up (timeout)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep test output quiet

    return Handler


@contextmanager
def running_server(**kwargs: Any) -> Iterator[RerankServer]:
    """``with running_server(mode="ok") as server: ...``."""
    with RerankServer(**kwargs) as server:
        yield server
