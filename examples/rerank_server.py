"""A tiny rerank server speaking the Cohere / vLLM rerank API, for trying rerankers offline.

    python examples/rerank_server.py --port 8001
    # then: VLLMReranker(url="http://127.0.0.1:8001", ...)

It answers ``POST /v1/rerank`` and ``POST /v2/rerank`` (the wire format vLLM serves for
``vllm serve BAAI/bge-reranker-v2-m3 --task score``): a JSON body with ``model``, ``query``,
``documents`` (strings, or ``{"text": ...}`` objects) and ``top_n``; the answer is
``{"id", "results": [{"index", "relevance_score"}], "meta"}``, best first. Its "model" is
transparent: a document's score is the fraction of the query's distinct words it contains.
It binds loopback only. In Python: ``server = RerankServer().start()``; ``server.url``;
``server.paths()`` (requests received); ``server.stop()``.
"""

from __future__ import annotations

import argparse
import json
import re
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_WORD = re.compile(r"\w+")


def lexical_score(query: str, document: str) -> float:
    """Fraction of the query's distinct lowercase words present in the document."""
    words = set(_WORD.findall(query.lower()))
    return len(words & set(_WORD.findall(document.lower()))) / len(words) if words else 0.0


def rerank(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """Status and JSON answer for one rerank request body."""
    query, documents = body.get("query"), body.get("documents")
    if not isinstance(query, str) or not isinstance(documents, list):
        return 400, {"message": "body must carry a query string and a documents list"}
    texts = [d["text"] if isinstance(d, dict) else str(d) for d in documents]
    order = sorted(range(len(texts)), key=lambda i: -lexical_score(query, texts[i]))
    top_n = body.get("top_n")
    if isinstance(top_n, int):
        order = order[:top_n]
    results = [{"index": i, "relevance_score": lexical_score(query, texts[i])} for i in order]
    return 200, {"id": str(uuid.uuid4()), "results": results, "meta": {"billed_units": {}}}


class RerankServer:
    """The server on ``127.0.0.1`` (a free port unless ``port`` is given), in a thread."""

    def __init__(self, port: int = 0) -> None:
        self.port = port
        self._paths: list[str] = []
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """Base URL, e.g. ``http://127.0.0.1:54321``."""
        if self._httpd is None:
            msg = "RerankServer is not started; call start()."
            raise RuntimeError(msg)
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def paths(self) -> list[str]:
        """Paths of the requests received, in arrival order."""
        with self._lock:
            return list(self._paths)

    def start(self) -> RerankServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with server._lock:
                    server._paths.append(self.path)
                try:
                    body = json.loads(raw or b"null")
                except json.JSONDecodeError:
                    body = None
                if self.path not in ("/v1/rerank", "/v2/rerank"):
                    status, answer = 404, {"detail": "Not Found"}
                else:
                    status, answer = rerank(body if isinstance(body, dict) else {})
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)


def main() -> None:
    """Serve rerank requests on ``--port`` until interrupted."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=8001)
    port = parser.parse_args().port
    server = RerankServer(port).start()
    print(f"rerank server on {server.url} (POST /v1/rerank, /v2/rerank); Ctrl-C stops it")
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
