"""RediSearch BM25 on the index langchain-redis keeps for the vectors: no second copy.

Imported lazily: it needs the ``redis`` extra (``pip install "langchain-holodeck[redis]"``).
"""

from __future__ import annotations

import asyncio
import logging
import re
import sys
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from langchain_core.documents import Document

from langchain_holodeck._chunk import CHUNK_TYPE, WINDOW_CHUNK_TYPE
from langchain_holodeck.keyword_index.base import KeywordHit, check_k

if TYPE_CHECKING:
    from langchain_core.vectorstores import VectorStore

logger = logging.getLogger(__name__)

_WORD = re.compile(r"\w+")
_NOT_ALNUM = re.compile(r"([^0-9A-Za-z\u00c0-\uffff])")
_TAG_SPECIAL = re.compile(r"([,.<>{}\[\]\"':;!@#$%^&*()\-+=~|/\\ ?])")
MAX_QUERY_TERMS = 64
"""A query keeps at most this many distinct terms (a 100 KB query stays one cheap search)."""

# RediSearch's default stop words (TEXT fields drop them at index time).
_STOPWORDS = frozenset(
    (
        "a",
        "is",
        "the",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "if",
        "in",
        "into",
        "it",
        "no",
        "not",
        "of",
        "on",
        "or",
        "such",
        "that",
        "their",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "will",
        "with",
    )
)


def query_words(query: str, *, limit: int = MAX_QUERY_TERMS) -> list[str]:
    r"""The distinct lowercase ``\w+`` words of ``query`` without stop words, unescaped.

    At most ``limit``, in order of appearance: what redisvl's hybrid queries take (they
    escape each word themselves).
    """
    words = dict.fromkeys(w.lower() for w in _WORD.findall(query))
    return [w for w in words if w not in _STOPWORDS][:limit]


def query_terms(query: str, *, limit: int = MAX_QUERY_TERMS) -> list[str]:
    r"""The distinct lowercase words of ``query`` without stop words, each escaped for RediSearch.

    Words are ``\w+`` runs, so no query-syntax character (``@ | - * { } ( ) [ ] " ' ~ % : ;
    , . < > ! $ & = ^ \ /``) survives; the escaping of anything else non-alphanumeric (``_``)
    is a second line of defence. At most ``limit`` terms are kept, in order of appearance.
    """
    words = dict.fromkeys(w.lower() for w in _WORD.findall(query))
    terms = [_NOT_ALNUM.sub(r"\\\1", w) for w in words if w not in _STOPWORDS]
    return terms[:limit]


def escape_tag(value: str) -> str:
    """Escape a TAG value (``{...}`` filter) for RediSearch."""
    return _TAG_SPECIAL.sub(r"\\\1", value)


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
        text = f"@{self.content_field}:({' | '.join(terms)})"
        if self._skips_windows:
            text = f"{text} -@{CHUNK_TYPE}:{{{escape_tag(WINDOW_CHUNK_TYPE)}}}"
        if self.namespace is not None:
            text = f"@{self.namespace_field}:{{{escape_tag(self.namespace)}}} {text}"
        return text

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

    # -- single round trip hybrid --------------------------------------------------------
    def server_supports_ft_hybrid(self) -> bool:
        """True when the server (Redis >= 8.4) and redisvl offer ``FT.HYBRID``."""
        try:
            from redisvl.query import HybridQuery  # noqa: F401
        except ImportError:
            return False
        version = str(self._client.info("server").get("redis_version", "0"))
        parts = [int(p) for p in re.findall(r"\d+", version)[:2]] + [0, 0]
        return (parts[0], parts[1]) >= (8, 4)

    def hybrid_search(
        self, query: str, k: int, *, vector: Sequence[float], alpha: float = 0.5
    ) -> list[tuple[Document, float]]:
        """Text + vector in one round trip: ``alpha * vector_sim + (1 - alpha) * bm25``.

        Uses redisvl ``AggregateHybridQuery`` (FT.AGGREGATE; Redis Stack 7.4 and later).
        ``FT.HYBRID`` (redisvl ``HybridQuery``) needs Redis >= 8.4: see
        :meth:`server_supports_ft_hybrid`; this method sticks to the portable aggregate.
        Returns documents (content and metadata as the store keeps them) with the hybrid score.
        """
        check_k(k)
        if not 0 <= alpha <= 1:
            msg = f"alpha must be between 0 and 1, got {alpha!r}."
            raise ValueError(msg)
        terms = query_terms(query)
        if not terms:
            return []
        from redisvl.query import AggregateHybridQuery
        from redisvl.query.filter import Tag

        from langchain_holodeck.vectorstores.redis import EMBEDDING_FIELD, METADATA_FIELD, _meta

        flt = Tag(self.namespace_field) == self.namespace if self.namespace is not None else None
        agg = AggregateHybridQuery(
            text=" ".join(terms),
            text_field_name=self.content_field,
            vector=list(vector),
            vector_field_name=EMBEDDING_FIELD,
            text_scorer=self.scorer,
            filter_expression=flt,
            alpha=alpha,
            num_results=k,
            return_fields=["__key", self.content_field, METADATA_FIELD],
            stopwords=None,
        )
        rows = self._index.query(agg)
        prefix = f"{self.key_prefix}:"
        out = []
        for row in rows:
            key = str(row.get("__key", ""))
            doc = Document(
                id=key[len(prefix) :] if key.startswith(prefix) else key,
                page_content=str(row.get(self.content_field, "")),
                metadata=_meta(row.get(METADATA_FIELD)),
            )
            out.append((doc, float(row.get("hybrid_score", 0.0))))
        return out
