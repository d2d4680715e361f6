"""An OpenAI-compatible chat server on loopback that calls tools, for the ``chat`` tests.

It speaks ``POST /v1/chat/completions`` (non-streaming): when the last message is the user's
and the request offers tools, it answers with one ``tool_calls`` entry calling the first tool
with ``{"query": <the user's text>}`` (a user text starting with ``BAD-JSON`` gets arguments
that are not JSON, as a model may write, and one starting with ``LIST-ARGS`` gets JSON that
is not an object, ``[1, 2]``); when the last message is a tool result, it answers with text
that quotes the first ``Source:`` line of that result. A last message holding
``LONE-SURROGATE``, or a tool result for a user text starting with it, gets an answer with a
lone surrogate (``"\\ud800"`` in the JSON: valid JSON, no text), as a broken model server may
send. A user text starting with ``MODEL-DOWN`` is answered HTTP 400 with an OpenAI error body
(the client does not retry): one failing question in a session; one starting with
``MODEL-SILENT`` is accepted and never answered (a hung server: the connection is held open
until the server stops); one starting with ``MODEL-TRICKLE`` is answered HTTP 200 and then one
byte of its body every 0.1 s, never all of it, until the server stops (a congested gateway: no
read waits long, the answer never ends), and one starting with ``TRICKLE-AFTER-TOOL`` gets its
tool call, then that answer to the call after the tool's result. A user text starting with
``RATE-LIMITED`` is answered HTTP 429 with ``Retry-After: <retry_after>`` (a rate limit; the
openai client waits as asked, then retries) the first time it is asked, then as usual, and
one starting with ``RATE-LIMITED-TRICKLE`` is answered, after its 429, as ``MODEL-TRICKLE``
is. A user text starting with ``NO-CHOICES`` is answered HTTP 200 with ``"choices": []`` (a
gateway's empty answer), one starting with ``NOT-JSON`` HTTP 200 with an HTML page, and one
starting with ``REFUSAL`` a message with no content and a ``refusal`` (as OpenAI's structured
refusals). Every request body is recorded.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_SOURCE = re.compile(r"Source: (\S+)")


@dataclass
class ChatServer:
    """The running server: ``base_url`` (``http://127.0.0.1:PORT/v1``) and what it received."""

    base_url: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    in_flight: int = 0
    max_in_flight: int = 0
    """The most requests the server was answering at once."""
    error_status: int = 0
    """Non-zero: every request is answered this HTTP status with an OpenAI error body (400:
    the client does not retry). Changeable while running."""
    retry_after: float = 4.0
    """The ``Retry-After`` (seconds) of a ``RATE-LIMITED`` question's 429."""
    rate_limited: list[str] = field(default_factory=list)
    """The questions answered 429 so far."""
    echo_key: bool = False
    """With ``error_status``: the error's message repeats the key received, without
    ``Bearer`` (``Invalid key: sk-... is not valid``), as some gateways do."""


def reply(body: dict[str, Any]) -> dict[str, Any]:
    """The completion the server returns for ``body``."""
    messages = body.get("messages") or []
    last = messages[-1] if messages else {}
    tools = body.get("tools") or []
    if str(last.get("content", "")).startswith("REFUSAL"):
        message = {"role": "assistant", "content": None, "refusal": "I can't help with that."}
        finish = "stop"
    elif last.get("role") == "user" and tools:
        name = tools[0]["function"]["name"]
        arguments = json.dumps({"query": last["content"]})
        if str(last["content"]).startswith("BAD-JSON"):
            arguments = '{"query": "unterminated'
        if str(last["content"]).startswith("LIST-ARGS"):
            arguments = "[1, 2]"
        message: dict[str, Any] = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": f"call_{len(messages)}",
                    "type": "function",
                    "function": {"name": name, "arguments": arguments},
                }
            ],
        }
        finish = "tool_calls"
    elif "LONE-SURROGATE" in str(last.get("content", "")) or _question(messages).startswith(
        "LONE-SURROGATE"
    ):
        message = {"role": "assistant", "content": "a context \ud800 cut mid-character"}
        finish = "stop"
    else:
        found = _SOURCE.search(str(last.get("content", "")))
        where = found.group(1) if found else "nowhere"
        message = {"role": "assistant", "content": f"The answer is in {where}."}
        finish = "stop"
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "fake"),
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def _asks(body: dict[str, Any], prefix: str) -> bool:
    """Whether the last message of ``body`` starts with ``prefix`` (a test's instruction)."""
    messages = body.get("messages") or [{}]
    return str(messages[-1].get("content") or "").startswith(prefix)


def _question(messages: list[dict[str, Any]]) -> str:
    """The last user message's text: the question a tool result answers."""
    asked = [m for m in messages if m.get("role") == "user"]
    return str(asked[-1].get("content") or "") if asked else ""


def _trickles(body: dict[str, Any]) -> bool:
    """Whether ``body`` gets its answer a byte at a time, never complete."""
    messages = body.get("messages") or [{}]
    if messages[-1].get("role") == "tool":
        return _question(messages).startswith("TRICKLE-AFTER-TOOL")
    return _asks(body, "MODEL-TRICKLE") or _asks(body, "RATE-LIMITED-TRICKLE")


@contextmanager
def chat_server(*, keep_alive: bool = False, delay: float = 0.0) -> Iterator[ChatServer]:
    """Start the server on a free loopback port; stop it on exit.

    ``keep_alive``: HTTP/1.1 with persistent connections, as OpenAI's servers (a client's
    connection pool then holds open connections between calls). ``delay``: seconds each
    answer takes (a model's latency).
    """
    state = ChatServer(base_url="")
    lock = threading.Lock()
    stopping = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1" if keep_alive else "HTTP/1.0"

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            with lock:
                state.requests.append(body)
                state.in_flight += 1
                state.max_in_flight = max(state.max_in_flight, state.in_flight)
            try:
                time.sleep(delay)
                if _asks(body, "MODEL-SILENT"):
                    stopping.wait()  # read, never answered: the client's timeout must end it
                    return
                question = str((body.get("messages") or [{}])[-1].get("content") or "")
                if question.startswith("RATE-LIMITED") and question not in state.rate_limited:
                    state.rate_limited.append(question)
                    self._rate_limit()
                    return
                if _trickles(body):
                    self._trickle()
                    return
                self._answer(body, self.headers.get("Authorization") or "")
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client stopped waiting (its timeout): nothing to answer
            finally:
                with lock:
                    state.in_flight -= 1

        def _answer(self, body: dict[str, Any], authorization: str) -> None:
            if not self.path.endswith("/chat/completions"):
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if _asks(body, "NOT-JSON"):
                self._send(200, b"<html><body>502 Bad Gateway</body></html>", "text/html")
                return
            status = state.error_status or (400 if _asks(body, "MODEL-DOWN") else 200)
            said = "the model is unavailable"
            if state.echo_key:
                said = f"Invalid key: {authorization.removeprefix('Bearer ')} is not valid"
            answer = (
                {"error": {"message": said, "type": "server_error"}}
                if status != 200
                else reply(body)
            )
            if status == 200 and _asks(body, "NO-CHOICES"):
                answer = {**answer, "choices": []}
            self._send(status, json.dumps(answer).encode(), "application/json")

        def _trickle(self) -> None:
            """HTTP 200, then a byte every 0.1 s until the server stops: no read times out."""
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "1000000")
            self.end_headers()
            while not stopping.wait(0.1):
                self.wfile.write(b" ")
                self.wfile.flush()

        def _rate_limit(self) -> None:
            """HTTP 429 with ``Retry-After``, as a rate-limited OpenAI-compatible server."""
            error = {"message": "Rate limit reached", "type": "rate_limit_error"}
            data = json.dumps({"error": error}).encode()
            self.send_response(429)
            self.send_header("Retry-After", f"{state.retry_after:g}")
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _send(self, status: int, data: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        stopping.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
