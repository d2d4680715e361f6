"""RediSearch BM25 on the index langchain-redis keeps for the vectors: no second copy.

Imported lazily: it needs the ``redis`` extra (``pip install "langchain-holodeck[redis]"``).
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from langchain_core.documents import Document

from langchain_holodeck._chunk import CHUNK_TYPE, WINDOW_CHUNK_TYPE
from langchain_holodeck._redisearch import (
    MAX_QUERY_TERMS,
    escape_tag,
    match_any,
    query_terms,
    query_words,
    unscored,
)
from langchain_holodeck.keyword_index.base import KeywordHit, check_k

if TYPE_CHECKING:
    from langchain_core.vectorstores import VectorStore

__all__ = [
    "MAX_QUERY_TERMS",
    "RedisKeywordIndex",
    "escape_tag",
    "query_terms",
    "query_words",
]

logger = logging.getLogger(__name__)


def _is_redis_store(store: object) -> bool:
    if "langchain_redis" not in sys.modules:
        return False
    from langchain_redis import RedisVectorStore

    return isinstance(store, RedisVectorStore)


def _import_redis() -> Any:
    try:
        import redis
        from redis.commands.search.query import Query
    except ImportError as e:
        msg = 'RedisKeywordIndex needs the redis extra: pip install "langchain-holodeck[redis]".'
        raise ImportError(msg) from e
    return redis, Query


class RedisKeywordIndex:
    """BM25 full-text search on the RediSearch index a langchain-redis store already keeps.

    The store's content field (``text``) is a TEXT field of the same index that holds the
    vectors, so this index keeps no copy of anything: it follows every write to the store.
    Hence ``upsert`` and ``delete`` do nothing and ``rebuild_from_store`` only counts.

    Queries are reduced to their words (stop words dropped, at most 64 distinct terms), each
    escaped, OR-ed, and restricted to the content field: user text can never inject
    RediSearch syntax. Scoring is RediSearch's ``BM25STD`` (falls back to ``BM25`` on servers
    without it). With ``namespace``, hits are limited to that TAG value. Model windows
    (``chunk_type`` ``window``, when the index has that TAG field) are never hits: the keyword
    leg ranks chunks.

    Setup:
        ``pip install "langchain-holodeck[redis]"``

    Instantiate:
        ```python
        store = create_vector_store({"provider": "redis", ...}, embeddings)
        keywords = RedisKeywordIndex(store, namespace="docs")
        keywords.search("arch controls", k=5)  # -> [KeywordHit(id='…', score=1.7), ...]
        ```
    """

    def __init__(
        self,
        store: VectorStore,
        *,
        namespace: str | None = None,
        scorer: Literal["BM25STD", "BM25"] = "BM25STD",
        namespace_field: str = "namespace",
    ) -> None:
        if scorer not in ("BM25STD", "BM25"):
            msg = f"scorer must be 'BM25STD' or 'BM25', got {scorer!r}."
            raise ValueError(msg)
        config = getattr(store, "config", None)
        if config is None or not _is_redis_store(store):
            msg = (
                f"RedisKeywordIndex needs a langchain-redis RedisVectorStore, got "
                f"{type(store).__name__}."
            )
            raise TypeError(msg)
        from langchain_holodeck.vectorstores.redis import search_index

        index = search_index(store)  # type: ignore[arg-type]  # checked just above
        self.store = store
        self.namespace = namespace
        self.scorer = scorer
        self.namespace_field = namespace_field
        self.index_name: str = config.index_name
        self.content_field: str = config.content_field
        self.key_prefix: str = config.key_prefix
        self._index = index
        self._client = index.client
        self._skips_windows = CHUNK_TYPE in index.schema.field_names
        self._fields: str = getattr(store, "full_text_fields", self.content_field)

    # -- the store is the index: writes are no-ops ---------------------------------------
    def upsert(self, documents: Sequence[Document]) -> None:
        """No-op: the store's own writes update the full-text index."""

    def delete(self, ids: Iterable[str]) -> None:
        """No-op: deleting from the store removes the documents from the full-text index."""

    def rebuild_from_store(self, store: VectorStore, *, namespace: str | None = None) -> int:
        """Nothing to rebuild (the store is the index); return the number of indexed documents."""
        info = self._client.ft(self.index_name).info()
        return int(info.get("num_docs", 0))

    # -- search -------------------------------------------------------------------------
    def build_query(self, query: str) -> str | None:
        """The RediSearch query string for ``query``, or ``None`` when it has no searchable word."""
        terms = query_terms(query)
        if not terms:
            return None
        scope = []
        if self.namespace is not None:
            scope.append(unscored(f"@{self.namespace_field}:{{{escape_tag(self.namespace)}}}"))
        if self._skips_windows:
            scope.append(f"-@{CHUNK_TYPE}:{{{escape_tag(WINDOW_CHUNK_TYPE)}}}")
        return match_any(self._fields, terms, " ".join(scope))

    def search(self, query: str, k: int) -> list[KeywordHit]:
        """Ids of the ``k`` best BM25 matches, best first; ``[]`` when no word is searchable.

        Raises:
            ValueError: When ``k`` is not a positive integer.
            redis.RedisError: When the server fails (the retriever degrades on it).
        """
        check_k(k)
        text = self.build_query(query)
        if text is None:
            return []
        redis, query_cls = _import_redis()
        q = query_cls(text).no_content().with_scores().paging(0, k).dialect(2)
        try:
            result = self._client.ft(self.index_name).search(q.scorer(self.scorer))
        except redis.ResponseError as e:
            if self.scorer != "BM25STD" or "scor" not in str(e).lower():
                raise
            logger.info("RediSearch has no BM25STD scorer; using BM25.")
            self.scorer = "BM25"
            result = self._client.ft(self.index_name).search(q.scorer("BM25"))
        prefix = f"{self.key_prefix}:"
        hits = []
        for doc in result.docs:
            key = doc.id
            doc_id = key[len(prefix) :] if key.startswith(prefix) else key
            hits.append(KeywordHit(doc_id, float(doc.score)))
        return hits

    async def asearch(self, query: str, k: int) -> list[KeywordHit]:
        """:meth:`search` in a worker thread (the store's client is synchronous)."""
        return await asyncio.to_thread(self.search, query, k)
