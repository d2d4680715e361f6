"""OpenSearch keyword index: bulk upsert, BM25 ``match`` search, delete.

Imported eagerly but opens ``opensearch-py`` lazily: it needs the ``opensearch`` extra
(``pip install "langchain-holodeck[opensearch]"``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import SecretStr

from langchain_holodeck._chunk import source_path
from langchain_holodeck._defaults import check_seconds
from langchain_holodeck.keyword_index.base import KeywordHit, check_ids, check_k, scan_store

if TYPE_CHECKING:
    from langchain_core.documents import Document
    from langchain_core.vectorstores import VectorStore

logger = logging.getLogger(__name__)

_BATCH = 500
_MAPPINGS = {
    "properties": {
        "text": {"type": "text", "analyzer": "english"},
        "namespace": {"type": "keyword"},
        "source_path": {"type": "keyword"},
        "section_id": {"type": "keyword"},
    }
}


def _secret(value: str | SecretStr | None) -> str | None:
    return value.get_secret_value() if isinstance(value, SecretStr) else value


class OpenSearchKeywordIndex:
    """Keyword index in an OpenSearch index: BM25 ``match`` queries on an ``english`` field.

    Each chunk is one OpenSearch document (``_id`` = ``Document.id``) with ``text`` (the
    ``page_content``, contextualized when enriched), ``namespace``, ``source_path`` and
    ``section_id``. Writes go through ``_bulk`` in batches of 500 and are made searchable at
    once (``refresh``). Queries are ``match`` queries (analyzed text, never query syntax), so
    user input cannot inject operators. With ``namespace``, searches are filtered to it.

    Setup:
        ``pip install "langchain-holodeck[opensearch]"``

    Instantiate:
        ```python
        index = OpenSearchKeywordIndex(
            "https://search.example:9200", index_name="holodeck_keywords",
            username="admin", password=SecretStr("..."),
        )
        index.upsert(chunks)
        index.search("arch controls", k=5)  # -> [KeywordHit(id='…', score=4.2), ...]
        ```
    """

    def __init__(
        self,
        endpoint: str,
        *,
        index_name: str = "holodeck_keywords",
        username: str | None = None,
        password: str | SecretStr | None = None,
        api_key: str | SecretStr | None = None,
        verify_certs: bool = True,
        timeout: float = 10.0,
        namespace: str | None = None,
    ) -> None:
        if not endpoint.startswith(("http://", "https://")):
            msg = f"endpoint must be an http:// or https:// URL, got {endpoint!r}."
            raise ValueError(msg)
        if (username is None) != (password is None):
            msg = "username and password go together; pass both or neither."
            raise ValueError(msg)
        if api_key is not None and password is not None:
            msg = "pass either api_key or username/password, not both."
            raise ValueError(msg)
        if timeout is None:
            msg = "timeout must be a number of seconds, got None; the default is 10."
            raise TypeError(msg)
        check_seconds("timeout", timeout)  # a bool, inf or past a week: refused too
        self.endpoint = endpoint
        self.index_name = index_name
        self.username = username
        self._password = (
            password
            if isinstance(password, SecretStr) or password is None
            else (SecretStr(password))
        )
        self._api_key = (
            api_key if isinstance(api_key, SecretStr) or api_key is None else (SecretStr(api_key))
        )
        self.verify_certs = verify_certs
        self.timeout = timeout
        self.namespace = namespace
        self._client: Any = None
        self._index_ready = False

    def __repr__(self) -> str:  # never shows a secret
        return (
            f"OpenSearchKeywordIndex(endpoint={self.endpoint!r}, index_name={self.index_name!r}, "
            f"namespace={self.namespace!r})"
        )

    @property
    def client(self) -> Any:
        """The ``opensearchpy.OpenSearch`` client (created on first use)."""
        if self._client is None:
            try:
                from opensearchpy import OpenSearch
            except ImportError as e:
                msg = (
                    "OpenSearchKeywordIndex needs the opensearch extra: "
                    'pip install "langchain-holodeck[opensearch]".'
                )
                raise ImportError(msg) from e
            kwargs: dict[str, Any] = {
                "hosts": [self.endpoint],
                "verify_certs": self.verify_certs,
                "timeout": self.timeout,
                "ssl_show_warn": self.verify_certs,
            }
            if self.username is not None:
                kwargs["http_auth"] = (self.username, _secret(self._password))
            if self._api_key is not None:
                kwargs["headers"] = {"Authorization": f"ApiKey {_secret(self._api_key)}"}
            self._client = OpenSearch(**kwargs)
        return self._client

    def _ensure_index(self) -> None:
        if self._index_ready:
            return
        if not self.client.indices.exists(index=self.index_name):
            self.client.indices.create(index=self.index_name, body={"mappings": _MAPPINGS})
        self._index_ready = True

    # -- writes -------------------------------------------------------------------------
    def upsert(self, documents: Sequence[Document]) -> None:
        """Index (create or replace) ``documents`` by id with ``_bulk``.

        Raises:
            ValueError: When a document has no id (nothing is sent).
            RuntimeError: When OpenSearch rejects some items (their ids are named).
        """
        ids = check_ids(documents, type(self).__name__)
        if not documents:
            return
        self._ensure_index()
        for start in range(0, len(documents), _BATCH):
            lines: list[dict[str, Any]] = []
            for doc_id, doc in zip(
                ids[start : start + _BATCH], documents[start : start + _BATCH], strict=True
            ):
                meta = doc.metadata
                lines.append({"index": {"_index": self.index_name, "_id": doc_id}})
                lines.append(
                    {
                        "text": doc.page_content,
                        "namespace": meta.get("namespace"),
                        "source_path": source_path(meta) or None,
                        "section_id": meta.get("section_id"),
                    }
                )
            self._bulk(lines)
        self.client.indices.refresh(index=self.index_name)

    def delete(self, ids: Iterable[str]) -> None:
        """Delete documents by id; unknown ids are ignored."""
        ids = list(ids)
        if not ids:
            return
        self._ensure_index()
        for start in range(0, len(ids), _BATCH):
            lines = [
                {"delete": {"_index": self.index_name, "_id": doc_id}}
                for doc_id in ids[start : start + _BATCH]
            ]
            self._bulk(lines, ignore_missing=True)
        self.client.indices.refresh(index=self.index_name)

    def _bulk(self, lines: list[dict[str, Any]], *, ignore_missing: bool = False) -> None:
        response = self.client.bulk(body=lines)
        if not response.get("errors"):
            return
        failed = []
        for item in response.get("items", []):
            ((action, result),) = item.items()
            status = int(result.get("status", 500))
            if status >= 300 and not (ignore_missing and status == 404):
                failed.append(f"{result.get('_id')} ({action}: {status})")
        if failed:
            msg = f"OpenSearch rejected {len(failed)} bulk items: {', '.join(failed[:5])}."
            raise RuntimeError(msg)

    def rebuild_from_store(self, store: VectorStore, *, namespace: str | None = None) -> int:
        """Replace one namespace's documents by what ``store`` holds for it; return the count.

        Only documents of ``namespace`` (default: this index's own ``namespace``) are deleted
        (``_delete_by_query`` on the ``namespace`` term), so corpora sharing the OpenSearch
        index keep theirs. With no namespace at all, every document of the index is replaced.
        """
        scope = namespace if namespace is not None else self.namespace
        docs = [d for d in scan_store(store, scope) if d.id]
        self._ensure_index()
        query = {"match_all": {}} if scope is None else {"term": {"namespace": scope}}
        self.client.delete_by_query(
            index=self.index_name, body={"query": query}, params={"refresh": "true"}
        )
        self.upsert(docs)
        return len(docs)

    def count(self, *, namespace: str | None = None) -> int:
        """Documents of ``namespace`` (default: this index's own) the index holds (``_count``)."""
        scope = namespace if namespace is not None else self.namespace
        if not self.client.indices.exists(index=self.index_name):
            return 0
        query = {"match_all": {}} if scope is None else {"term": {"namespace": scope}}
        return int(self.client.count(index=self.index_name, body={"query": query})["count"])

    # -- search -------------------------------------------------------------------------
    def search(self, query: str, k: int) -> list[KeywordHit]:
        """The ``k`` best BM25 ``match`` hits, best first; ``[]`` for a blank query.

        Raises:
            ValueError: When ``k`` is not a positive integer.
        """
        check_k(k)
        if not query.strip():
            return []
        match = {"match": {"text": {"query": query[:10_000]}}}
        body: dict[str, Any] = {"query": match, "size": k, "_source": False}
        if self.namespace is not None:
            body["query"] = {
                "bool": {"must": [match], "filter": [{"term": {"namespace": self.namespace}}]}
            }
        self._ensure_index()
        response = self.client.search(index=self.index_name, body=body)
        return [
            KeywordHit(str(hit["_id"]), float(hit.get("_score") or 0.0))
            for hit in response.get("hits", {}).get("hits", [])
        ]

    async def asearch(self, query: str, k: int) -> list[KeywordHit]:
        """:meth:`search` in a worker thread."""
        return await asyncio.to_thread(self.search, query, k)
