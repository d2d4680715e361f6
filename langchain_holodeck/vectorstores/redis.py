"""Redis backend: a ``RedisVectorStore`` with exact metadata round-trip and [0, 1] scores.

Imported lazily: it needs the ``redis`` extra (``pip install "langchain-holodeck[redis]"``).
``HolodeckRedisVectorStore`` is ``RedisVectorStoreCore`` (``_redis_store``: documents, writes,
dense search) with the native hybrid search, both legs in one round trip, defined here;
``build_redis_store`` opens it as a ``database:`` section describes. The index it searches
(``_redis_index``), its hash layout (``_redis_schema``) and the server-side convex search
(``_redis_convex``) live beside it; their public names stay importable from here.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Mapping, Sequence
from typing import Any, get_args

import numpy as np
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_redis import RedisConfig
from redis.exceptions import ResponseError
from redisvl.query.filter import FilterExpression

from langchain_holodeck._chunk import CHUNK_TYPE, WINDOW_CHUNK_TYPE
from langchain_holodeck._redact import check_userinfo, one_line
from langchain_holodeck._redisearch import (
    escape_tag,
    match_any,
    query_terms,
    query_words,
    unscored,
)
from langchain_holodeck.contracts import NativeHit, check_native_hybrid_args
from langchain_holodeck.fusion import Fusion
from langchain_holodeck.vectorstores._client_fusion import convex_hits
from langchain_holodeck.vectorstores._redis_aggregate import LateLoadHybridQuery
from langchain_holodeck.vectorstores._redis_convex import (
    CONVEX_SCRIPT,
    convex_rows,
    reply_rows,
    script_refused,
)
from langchain_holodeck.vectorstores._redis_index import (
    FIRST_SCAN_TIMEOUT_S,
    TESTED_LANGCHAIN_REDIS,
    full_text_fields,
    search_index,
    wait_for_first_scan,
)
from langchain_holodeck.vectorstores._redis_schema import (
    CONTENT_FIELD,
    EMBEDDING_FIELD,
    METADATA_FIELD,
    Algorithm,
    Metric,
    as_text,
    existing_vector_settings,
    index_schema,
    known_setting,
    make_client,
    require_search_module,
    stored_metadata,
)
from langchain_holodeck.vectorstores._redis_store import (
    RedisVectorStoreCore,
    relevance_fn,
    scan_redis,
)

__all__ = [
    "CONTENT_FIELD",
    "EMBEDDING_FIELD",
    "FIRST_SCAN_TIMEOUT_S",
    "LINEAR_VECTOR_SCALE",
    "METADATA_FIELD",
    "TESTED_LANGCHAIN_REDIS",
    "HolodeckRedisVectorStore",
    "build_redis_store",
    "full_text_fields",
    "linear_alpha",
    "relevance_fn",
    "scan_redis",
    "search_index",
    "wait_for_first_scan",
]

logger = logging.getLogger(__name__)


class HolodeckRedisVectorStore(RedisVectorStoreCore):
    """``RedisVectorStore`` whose documents round-trip unchanged and whose scores are in [0, 1].

    Differences from ``RedisVectorStore`` (same constructor, same hash layout
    ``{index_name}:{id}``):

    - every metadata value round-trips exactly through ``get_by_ids`` and searches (lists,
      ints, floats, bools, nested values): the full metadata is stored as JSON in
      ``_metadata_json``; ``namespace``, ``source_path``, ``section_id``, ``chunk_type``
      (TAG) and ``chunk_index`` (NUMERIC) are also written as indexed hash fields;
    - ``add_texts``/``add_documents`` upsert by id: each key is deleted and rewritten in one
      MULTI/EXEC, so a replaced document keeps no stale field and a concurrent query sees
      the old or the new version;
    - search results carry ``Document.id``;
    - ``similarity_search_with_relevance_scores`` maps Redis distances to [0, 1]: COSINE
      ``1 - d``; IP ``1 - d`` (Redis reports ``1 - dot``); L2 ``1 - d / 2`` (Redis reports
      the squared distance, ``2 - 2 cos`` for unit vectors); all clipped to [0, 1]. For
      unit-length embeddings all three equal the cosine similarity clipped at 0.

    ``similarity_search_with_score`` keeps ``RedisVectorStore``'s convention: the raw distance.

    The constructor returns once the index's first scan of the keyspace is over
    (``wait_for_first_scan``), so no write of ours races it. It refuses (``ConfigError``,
    before the index is created or anything written) an index whose key prefix nests with
    another index's on the server (``kb`` beside ``kb:v2``: ``check_prefixes``).
    """

    # -- native hybrid: both legs in one round trip, fused here or by the server ----------
    native_fusions = ("rrf", "convex")
    """How ``native_hybrid_search`` can fuse (the retriever passes its ``fusion``)."""
    _ft_hybrid: bool | None = None  # detected on first use
    _scripts: Any = None  # the convex script (registered on first use); False: refused

    def server_supports_ft_hybrid(self) -> bool:
        """True when the server (Redis >= 8.4) and redis-py offer ``FT.HYBRID``; cached."""
        if self._ft_hybrid is None:
            try:
                from redis.commands.search.hybrid_query import CombineResultsMethod  # noqa: F401
            except ImportError:
                self._ft_hybrid = False
            else:
                version = str(self._index.client.info("server").get("redis_version", "0"))
                self._ft_hybrid = _version(version) >= (8, 4)
        return self._ft_hybrid

    def native_hybrid_search(
        self,
        query: str,
        *,
        k: int = 4,
        fetch_k: int = 50,
        weights: tuple[float, float] = (0.5, 0.5),
        rrf_k: int = 60,
        min_similarity_score: float | None = None,
        filter: FilterExpression | str | None = None,
        embedding: Sequence[float] | None = None,
        fusion: Fusion = "rrf",
    ) -> list[NativeHit]:
        """Full text (BM25STD) and vector search, fused by the server or as the retriever fuses.

        ``fusion="convex"`` (the tool's default fusion): each leg's ``fetch_k`` best ids and
        scores (``KNN`` by vector; the BM25STD full-text match of the query's words, model
        windows excluded as the keyword index excludes them, the filter scoring nothing) are
        fused as the retriever fuses in-process (``w_dense * s / best_s + w_keyword * b /
        best_b``, a chunk scoring its best entry: see ``_client_fusion``) and the text and
        metadata of the ``k`` best are read: in one server-side script (``_redis_convex``),
        or, with ``min_similarity_score`` or on a server that refuses scripts, in two round
        trips with the fusion here. A keyword-only hit's similarity is read from its stored
        vectors when ``min_similarity_score`` is set (else ``None``). Neither server fusion
        below can rank this way: they weigh raw BM25 (unbounded) or ranks, so a query naming
        an identifier (a code, a number) loses its one exact match to chunks that are merely
        similar.

        ``fusion="rrf"``:

        - Redis >= 8.4 (``FT.HYBRID``, detected): reciprocal rank fusion over a window of
          ``fetch_k`` per leg with constant ``rrf_k``, unweighted (the server's RRF takes no
          weights); used when no ``min_similarity_score`` is set.
        - Otherwise (Redis Stack 7.4: redisvl ``AggregateHybridQuery``, one ``FT.AGGREGATE``):
          the candidates are the ``fetch_k`` nearest chunks by vector (``KNN``; the text
          clause is optional, so it only adds score), ranked by the *linear* combination
          ``alpha * (2 - distance) / 2 + (1 - alpha) * BM25STD``. The vector term lies in
          [0.5, 1] while raw BM25STD is unbounded (typically 5 to 30), so the weights are
          rescaled by ``LINEAR_VECTOR_SCALE``: ``alpha = 99 w0 / (99 w0 + w1)``, 0.99 at
          equal weights. A chunk that matches the words but is not among the ``fetch_k``
          nearest is never a candidate. Each row's distance gives its similarity, so
          ``min_similarity_score`` drops rows below it. The text clause is written as the
          convex full-text leg is (each word intersected with the filter, the filter scoring
          nothing: ``LateLoadHybridQuery(text_clause=...)``). The server returns the best
          ``k`` rows (all ``fetch_k`` with a threshold) and reads their fields after ranking,
          so a deep ``fetch_k`` costs the ranking, not the reading of every candidate.

        A query without a searchable word runs the dense search alone. Documents (content and
        metadata as stored) come back in the same request, for the returned rows only.

        Raises:
            ValueError: When ``k`` or ``fetch_k`` is not positive, ``weights`` are not two
                non-negative numbers with at least one above 0, or ``fusion`` is neither
                ``"rrf"`` nor ``"convex"``.
            TypeError: When ``filter`` is not a ``FilterExpression``, a string or ``None``.
        """
        check_native_hybrid_args(k=k, fetch_k=fetch_k, weights=weights)
        self.check_filter(filter)
        if fusion not in self.native_fusions:
            msg = f"fusion must be 'rrf' or 'convex', got {fusion!r}."
            raise ValueError(msg)
        vector = list(embedding) if embedding is not None else self.embeddings.embed_query(query)
        words = query_words(query)
        relevance = self._select_relevance_score_fn()
        if not words or weights[1] == 0:
            rows = self._search(vector, fetch_k if min_similarity_score else k, filter)
            hits = [NativeHit(d, relevance(s), relevance(s)) for d, s, _ in rows]
            return _above(hits, min_similarity_score)[:k]
        if fusion == "convex":
            return self._convex_search(
                words,
                vector,
                k=k,
                fetch_k=fetch_k,
                weights=weights,
                min_similarity_score=min_similarity_score,
                filter=filter,
            )
        if min_similarity_score is None and self.server_supports_ft_hybrid():
            return self._ft_hybrid_search(
                words, vector, k=k, fetch_k=fetch_k, rrf_k=rrf_k, filter=filter
            )
        legs = _hybrid_legs(words, vector, filter)
        fields = legs.pop("return_fields")
        aggregate = LateLoadHybridQuery(
            **legs,
            text_clause=match_any(
                self.full_text_fields, query_terms(" ".join(words)), self._chunks_only(filter)
            ),
            scope=_unscored_filter(filter),
            load_fields=fields,
            alpha=linear_alpha(weights),
            num_results=fetch_k,  # the KNN candidates: the fusion depth
            limit=k if min_similarity_score is None else None,  # the rows the server returns
        )
        hits = []
        for row in self._index.query(aggregate):
            similarity = relevance(float(row.get(LateLoadHybridQuery.DISTANCE_ID, 2.0)))
            hits.append(NativeHit(self._row_document(row), float(row["hybrid_score"]), similarity))
        return _above(hits, min_similarity_score)[:k]

    async def anative_hybrid_search(self, query: str, **kwargs: Any) -> list[NativeHit]:
        """:meth:`native_hybrid_search` in a worker thread (the client is synchronous)."""
        return await asyncio.to_thread(self.native_hybrid_search, query, **kwargs)

    def _ft_hybrid_search(
        self,
        words: list[str],
        vector: list[float],
        *,
        k: int,
        fetch_k: int,
        rrf_k: int,
        filter: FilterExpression | str | None,
    ) -> list[NativeHit]:
        from redisvl.query import HybridQuery

        hybrid = HybridQuery(
            **_hybrid_legs(words, vector, filter),
            combination_method="RRF",
            rrf_window=fetch_k,
            rrf_constant=rrf_k,
            yield_combined_score_as="hybrid_score",
            num_results=k,
        )
        rows = self._index.query(hybrid)
        return [
            NativeHit(self._row_document(r), float(r.get("hybrid_score", 0.0)), None) for r in rows
        ]

    def _convex_search(
        self,
        words: list[str],
        vector: list[float],
        *,
        k: int,
        fetch_k: int,
        weights: tuple[float, float],
        min_similarity_score: float | None,
        filter: FilterExpression | str | None,
    ) -> list[NativeHit]:
        """``native_hybrid_search(fusion="convex")``: the legs' ids and scores, fused.

        Without a threshold, one server-side script runs both legs, the fusion and the reads
        (``_redis_convex``). With one, or where the server refuses scripts, both
        ``FT.SEARCH`` requests go in one pipeline, their replies are read as they come (ids
        and one number each, RESP2 or RESP3; redis-py ``Result`` objects cost more than the
        server's work), the fusion runs here and a second round trip reads the rows.
        """
        where = str(filter) if filter is not None else "*"
        depth = ["LIMIT", 0, fetch_k, "DIALECT", 2]
        text = match_any(
            self.full_text_fields, query_terms(" ".join(words)), self._chunks_only(filter)
        )
        knn = f"({where})=>[KNN {fetch_k} @{EMBEDDING_FIELD} $vector AS {_DISTANCE}]"
        blob = np.asarray(vector, dtype=np.float32).tobytes()
        if min_similarity_score is None and self._scripts is not False:
            try:
                return self._scripted_convex(knn, blob, text, k, fetch_k, weights)
            except ResponseError as e:  # refused (ACL, a managed service), or it failed
                script_error: ResponseError | None = e
        else:
            script_error = None
        with self._index.client.pipeline(transaction=False) as pipe:
            if weights[0] > 0:
                pipe.execute_command(
                    "FT.SEARCH", self._index.name, knn, "PARAMS", 2, "vector", blob,
                    "NOCONTENT", "WITHSORTKEYS", "SORTBY", _DISTANCE, "ASC", *depth,
                )  # fmt: skip
            pipe.execute_command(
                "FT.SEARCH", self._index.name, text, "NOCONTENT", "WITHSCORES",
                "SCORER", "BM25STD", *depth,
            )  # fmt: skip
            replies = pipe.execute()
        if script_error is not None and script_refused(script_error):
            self._scripts = False  # for good: two trips from now
            logger.info(
                "Redis refused the native search script (%s); searching in two round trips.",
                one_line(script_error),
            )
        elif script_error is not None:  # this query only (a key deleted meanwhile, ...)
            logger.debug("The native search script failed (%s).", one_line(script_error))
        relevance = self._select_relevance_score_fn()
        return convex_hits(
            [
                (self._id_from_key(key), relevance(value))
                for key, value in (reply_rows(replies[0]) if weights[0] > 0 else [])
            ],
            [(self._id_from_key(key), value) for key, value in reply_rows(replies[-1])],
            weights,
            k=k,
            min_similarity_score=min_similarity_score,
            similarities=lambda ids: self.similarity_by_ids(vector, ids),
            read=self.get_by_ids,
        )

    def _scripted_convex(
        self,
        knn: str,
        blob: bytes,
        text: str,
        k: int,
        fetch_k: int,
        weights: tuple[float, float],
    ) -> list[NativeHit]:
        """The convex search in one server-side script (``_redis_convex.CONVEX_SCRIPT``)."""
        if self._scripts is None:
            self._scripts = self._index.client.register_script(CONVEX_SCRIPT)
        rows = convex_rows(
            self._scripts,
            self._index.name,
            knn=knn,
            vector=blob,
            text=text,
            fetch_k=fetch_k,
            k=k,
            weights=weights,
            metric=str(self.config.distance_metric).upper(),
            fields=[CONTENT_FIELD, METADATA_FIELD],
        )
        return [
            NativeHit(
                Document(
                    id=self._id_from_key(as_text(key)),
                    page_content=as_text(content),
                    metadata=stored_metadata(meta),
                ),
                score,
                similarity,
            )
            for key, score, similarity, (content, meta) in rows
            if content is not None  # deleted since the search
        ]

    def _chunks_only(self, filter: FilterExpression | str | None) -> str:
        """The query text of ``filter`` and of no model window, scoring nothing (``unscored``).

        The window clause is left out when the index has no ``chunk_type`` TAG.
        """
        given = _unscored_filter(filter)
        if CHUNK_TYPE not in self._index.schema.field_names:
            return given
        return f"{given} -@{CHUNK_TYPE}:{{{escape_tag(WINDOW_CHUNK_TYPE)}}}".strip()

    def _row_document(self, row: Mapping[str, Any]) -> Document:
        return Document(
            id=self._id_from_key(as_text(row.get("__key") or row.get("id") or "")),
            page_content=as_text(row.get(CONTENT_FIELD, "")),
            metadata=stored_metadata(row.get(METADATA_FIELD)),
        )


def _unscored_filter(filter: FilterExpression | str | None) -> str:
    """``filter``'s query text as a clause that scores nothing (``unscored``); none: empty."""
    return "" if filter is None or str(filter) == "*" else unscored(str(filter))


def _hybrid_legs(
    words: list[str], vector: list[float], filter: FilterExpression | str | None
) -> dict[str, Any]:
    """The arguments both redisvl hybrid queries take: text leg, vector leg, filter, fields.

    The text leg is scored by BM25STD; the fields are those ``_row_document`` reads.
    """
    return {
        "text": " ".join(words),
        "text_field_name": CONTENT_FIELD,
        "vector": vector,
        "vector_field_name": EMBEDDING_FIELD,
        "text_scorer": "BM25STD",
        "filter_expression": filter,
        "return_fields": ["__key", CONTENT_FIELD, METADATA_FIELD],
        "stopwords": None,
    }


LINEAR_VECTOR_SCALE = 99.0
"""How much the vector similarity is scaled against raw BM25STD in the linear combination.

Chosen on SciFact's 809 train claims (cached MiniLM vectors, KNN 200, best 100): alpha 0.5 ->
0.673 nDCG@10, 0.95 -> 0.691, 0.98 -> 0.712, 0.99 -> 0.723, 0.995 -> 0.724; 0.99 is the
smallest alpha within 0.001 of the best. See the README's strategy table for the test split.
"""


def linear_alpha(weights: tuple[float, float]) -> float:
    """The ``AggregateHybridQuery`` alpha of (dense, keyword) weights: 0.99 when they are equal."""
    dense = weights[0] * LINEAR_VECTOR_SCALE
    return dense / (dense + weights[1])


def _version(text: str) -> tuple[int, int]:
    parts = [int(p) for p in re.findall(r"\d+", text)[:2]] + [0, 0]
    return parts[0], parts[1]


def _above(hits: list[NativeHit], threshold: float | None) -> list[NativeHit]:
    if threshold is None:
        return hits
    return [h for h in hits if h.similarity is not None and h.similarity >= threshold]


def build_redis_store(
    embeddings: Embeddings,
    *,
    url: str,
    index_name: str,
    algorithm: Algorithm,
    metric: Metric,
    connect_timeout: float,
) -> HolodeckRedisVectorStore:
    """Probe the server (fast failure), then open or create the index.

    Raises:
        ValueError: If the URL's password is not percent-encoded (redis-py would misread it).
        redis.RedisError: If the server is unreachable or lacks RediSearch.
    """
    check_userinfo(url, name="url")
    probe = make_client(url, connect_timeout=connect_timeout, probe=True)
    try:
        probe.ping()
        require_search_module(probe)
    finally:
        probe.close()
    client = make_client(url, connect_timeout=connect_timeout)
    existing = existing_vector_settings(client, index_name)
    if existing is None:
        dims = len(embeddings.embed_query("dimension probe"))
    else:  # the index keeps its settings: the store searches (and scores) it as it is
        dims = existing.dims
        algorithm = known_setting(existing.algorithm, get_args(Algorithm), algorithm)
        metric = known_setting(existing.metric, get_args(Metric), metric)
    schema = index_schema(index_name, dims=dims, algorithm=algorithm, metric=metric)
    config = RedisConfig(  # type: ignore[call-arg]  # index_schema is populated by name
        index_name=index_name,
        key_prefix=index_name,
        redis_client=client,
        distance_metric=metric,
        indexing_algorithm=algorithm,
        embedding_dimensions=dims,
        index_schema=schema,
    )
    return HolodeckRedisVectorStore(embeddings, config=config)


_DISTANCE = "vector_distance"
