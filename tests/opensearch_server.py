"""A loopback stand-in for the few OpenSearch endpoints OpenSearchKeywordIndex uses.

Speaks OpenSearch's documented request/response shapes (REST API reference, 2.x):
``HEAD/PUT/DELETE /{index}``, ``POST /_bulk`` (NDJSON ``index``/``delete`` actions),
``POST /{index}/_refresh``, ``POST /{index}/_search`` with ``match`` (optionally inside a
``bool`` with a ``term`` filter), ``POST /{index}/_delete_by_query`` (``term`` or
``match_all``), and ``GET /``. Scoring is BM25 (our in-memory index with an
English stemmer standing in for the ``english`` analyzer). No OpenSearch server exists here.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from langchain_core.documents import Document

from langchain_holodeck.keyword_index import BM25KeywordIndex


class FakeOpenSearch:
    """State of the fake cluster, plus a log of the requests it served."""

    def __init__(self) -> None:
        self.indices: dict[str, dict[str, dict[str, Any]]] = {}
        self.engines: dict[str, BM25KeywordIndex] = {}
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self.fail_next: int = 0  # answer this many requests with 503
        self.lock = threading.Lock()

    def _engine(self, index: str) -> BM25KeywordIndex:
        return self.engines.setdefault(index, BM25KeywordIndex())

    def handle(self, method: str, path: str, body: bytes) -> tuple[int, Any]:
        parts = [p for p in path.split("?")[0].split("/") if p]
        if method == "GET" and not parts:
            return 200, {
                "name": "fake",
                "cluster_name": "loopback",
                "version": {"distribution": "opensearch", "number": "2.17.0"},
            }
        if parts == ["_bulk"]:
            return self._bulk(body)
        index = parts[0]
        if len(parts) == 1:
            if method == "HEAD":
                return (200 if index in self.indices else 404), None
            if method == "PUT":
                if index in self.indices:
                    return 400, _error("resource_already_exists_exception", index)
                self.indices[index] = {}
                return 200, {"acknowledged": True, "shards_acknowledged": True, "index": index}
            if method == "DELETE":
                if self.indices.pop(index, None) is None:
                    return 404, _error("index_not_found_exception", index)
                self.engines.pop(index, None)
                return 200, {"acknowledged": True}
        if index not in self.indices:
            return 404, _error("index_not_found_exception", index)
        if parts[1:] == ["_refresh"]:
            return 200, {"_shards": {"total": 1, "successful": 1, "failed": 0}}
        if parts[1:] == ["_count"]:
            term = json.loads(body or b"{}").get("query", {}).get("term")
            docs = self.indices[index].values()
            if term:  # {"term": {field: value}}, as the index's count() sends it
                ((field, value),) = term.items()
                docs = [source for source in docs if source.get(field) == value]
            return 200, {"count": len(docs), "_shards": {"total": 1}}
        if parts[1:] == ["_search"]:
            return self._search(index, json.loads(body or b"{}"))
        if parts[1:] == ["_delete_by_query"] and method == "POST":
            return self._delete_by_query(index, json.loads(body or b"{}"))
        return 400, _error("illegal_argument_exception", path)

    def _bulk(self, body: bytes) -> tuple[int, Any]:
        lines = [json.loads(line) for line in body.decode().splitlines() if line.strip()]
        items, errors, i = [], False, 0
        while i < len(lines):
            ((action, meta),) = lines[i].items()
            index, doc_id = meta["_index"], meta["_id"]
            docs = self.indices.setdefault(index, {})
            if action == "index":
                source = lines[i + 1]
                i += 2
                created = doc_id not in docs
                docs[doc_id] = source
                self._engine(index).upsert([Document(id=doc_id, page_content=source["text"])])
                items.append(
                    {
                        "index": {
                            "_index": index,
                            "_id": doc_id,
                            "result": "created" if created else "updated",
                            "status": 201 if created else 200,
                        }
                    }
                )
            elif action == "delete":
                i += 1
                found = docs.pop(doc_id, None) is not None
                self._engine(index).delete([doc_id])
                errors = errors or not found
                items.append(
                    {
                        "delete": {
                            "_index": index,
                            "_id": doc_id,
                            "result": "deleted" if found else "not_found",
                            "status": 200 if found else 404,
                        }
                    }
                )
            else:
                return 400, _error("illegal_argument_exception", action)
        return 200, {"took": 1, "errors": errors, "items": items}

    def _delete_by_query(self, index: str, body: dict[str, Any]) -> tuple[int, Any]:
        query = body.get("query", {})
        docs = self.indices[index]
        if "match_all" in query:
            doomed = list(docs)
        else:
            ((field, value),) = query["term"].items()
            doomed = [doc_id for doc_id, source in docs.items() if source.get(field) == value]
        for doc_id in doomed:
            docs.pop(doc_id)
        self._engine(index).delete(doomed)
        return 200, {"took": 1, "timed_out": False, "total": len(doomed), "deleted": len(doomed)}

    def _search(self, index: str, body: dict[str, Any]) -> tuple[int, Any]:
        query, flt = body.get("query", {}), None
        if "bool" in query:
            flt = query["bool"].get("filter", [{}])[0].get("term")
            query = query["bool"]["must"][0]
        text = query["match"]["text"]["query"]
        size = int(body.get("size", 10))
        docs = self.indices[index]
        hits = self._engine(index).search(text, max(len(docs), 1))
        if flt:
            ((field, value),) = flt.items()
            hits = [h for h in hits if docs[h.id].get(field) == value]
        shown = [{"_index": index, "_id": h.id, "_score": h.score} for h in hits[:size]]
        return 200, {
            "took": 1,
            "timed_out": False,
            "_shards": {"total": 1, "successful": 1, "skipped": 0, "failed": 0},
            "hits": {
                "total": {"value": len(hits), "relation": "eq"},
                "max_score": shown[0]["_score"] if shown else None,
                "hits": shown,
            },
        }


def _error(kind: str, reason: str) -> dict[str, Any]:
    return {
        "error": {"root_cause": [{"type": kind, "reason": reason}], "type": kind, "reason": reason},
        "status": 400,
    }


def serve(state: FakeOpenSearch) -> ThreadingHTTPServer:
    """Start the fake on 127.0.0.1 (random port) in a daemon thread; ``shutdown()`` it after."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # quiet
            pass

        def _any(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            with state.lock:
                state.requests.append((self.command, self.path, dict(self.headers)))
                if state.fail_next > 0:
                    state.fail_next -= 1
                    status, payload = 503, _error("unavailable", "injected failure")
                else:
                    status, payload = state.handle(self.command, self.path, body)
            data = b"" if payload is None else json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _any

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
