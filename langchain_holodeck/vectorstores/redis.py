"""Redis backend: a ``RedisVectorStore`` with exact metadata round-trip and [0, 1] scores.

Imported lazily: it needs the ``redis`` extra (``pip install "langchain-holodeck[redis]"``).
"""

from __future__ import annotations

import asyncio
import functools
import importlib.metadata
import itertools
import json
import logging
import math
import re
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar, get_args

import numpy as np
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_redis import RedisConfig, RedisVectorStore
from redis.exceptions import NoPermissionError, RedisError, ResponseError
from redisvl.exceptions import RedisSearchError
from redisvl.index import SearchIndex
from redisvl.query import VectorQuery
from redisvl.query.filter import FilterExpression
from redisvl.redis.utils import array_to_buffer, buffer_to_array
from redisvl.schema import IndexSchema

from langchain_holodeck._chunk import (
    CHUNK_TYPE,
    WINDOW_CHUNK_TYPE,
    WINDOW_COUNT,
    window_id,
)
from langchain_holodeck._redact import check_userinfo, one_line
from langchain_holodeck._redisearch import (
    escape_tag,
    identifier_parts,
    match_any,
    query_terms,
    query_words,
    unscored,
)
from langchain_holodeck._scores import clip_unit
from langchain_holodeck.contracts import NativeHit, check_native_hybrid_args
from langchain_holodeck.fusion import Fusion
from langchain_holodeck.vectorstores._client_fusion import convex_hits
from langchain_holodeck.vectorstores._columns import copy_metadata
from langchain_holodeck.vectorstores._entries import entry_ids
from langchain_holodeck.vectorstores._ranking import check_k, mmr
from langchain_holodeck.vectorstores._redis_aggregate import LateLoadHybridQuery
from langchain_holodeck.vectorstores._redis_convex import CONVEX_SCRIPT, convex_rows
from langchain_holodeck.vectorstores._redis_schema import (
    CONTENT_FIELD,
    EMBEDDING_FIELD,
    METADATA_FIELD,
    NUMERIC_FIELDS,
    PARTS_FIELD,
    TAG_FIELDS,
    TAG_SEPARATOR,
    Algorithm,
    Metric,
    existing_vector_settings,
    index_schema,
    make_client,
    require_search_module,
    vector_field,
)

logger = logging.getLogger(__name__)

_L = TypeVar("_L", bound=str)

TESTED_LANGCHAIN_REDIS = "0.2"
"""The langchain-redis minor version whose internals ``search_index`` was checked against."""


def search_index(store: RedisVectorStore) -> SearchIndex:
    """The redisvl ``SearchIndex`` behind a langchain-redis store.

    The one place this package reaches into langchain-redis: everything else (queries, the
    client, full-text search) goes through the index this returns. It uses the store's
    ``index`` property (langchain-redis 0.2); other versions log one WARNING.

    Raises:
        TypeError: When ``store`` has no redisvl ``SearchIndex`` (an incompatible version).
    """
    _check_langchain_redis_version()
    index = getattr(store, "index", None)
    if not isinstance(index, SearchIndex):
        msg = (
            f"{type(store).__name__} has no redisvl SearchIndex at .index (got "
            f"{type(index).__name__}); langchain-redis {_installed_langchain_redis()} is not "
            f'compatible, install the tested one: pip install "langchain-redis~='
            f'{TESTED_LANGCHAIN_REDIS}.0".'
        )
        raise TypeError(msg)
    return index


def _installed_langchain_redis() -> str:
    try:
        return importlib.metadata.version("langchain-redis")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


@functools.cache
def _check_langchain_redis_version() -> None:
    installed = _installed_langchain_redis()
    if installed.split(".")[:2] != TESTED_LANGCHAIN_REDIS.split("."):
        logger.warning(
            "langchain-redis %s is untested with langchain-holodeck (tested: %s.x); "
            "HolodeckRedisVectorStore relies on RedisVectorStore.index.",
            installed,
            TESTED_LANGCHAIN_REDIS,
        )


class HolodeckRedisVectorStore(RedisVectorStore):
    """``RedisVectorStore`` whose documents round-trip unchanged and whose scores are in [0, 1].

    Differences from the parent (same constructor, same hash layout ``{index_name}:{id}``):

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

    ``similarity_search_with_score`` keeps the parent's convention: the raw distance.

    The constructor returns once the index's first scan of the keyspace is over
    (``wait_for_first_scan``), so no write of ours races it.
    """

    full_text_fields: str = CONTENT_FIELD
    """The TEXT fields every full-text query reads: ``text|identifier_parts``, or ``text`` on
    an index without the parts field that could not be given one (``full_text_fields()``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)  # creates the index when it is missing
        wait_for_first_scan(search_index(self))
        self.full_text_fields = full_text_fields(search_index(self))

    @classmethod
    def from_texts(  # type: ignore[override]  # the parent's signature, plus LangChain's ids
        cls,
        texts: list[str],
        embedding: Embeddings,
        metadatas: list[dict[str, Any]] | None = None,
        config: RedisConfig | None = None,
        keys: list[str] | None = None,
        return_keys: bool = False,  # noqa: FBT001, FBT002  # the parent's parameter
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> HolodeckRedisVectorStore:
        """A new store holding ``texts``, named by ``ids`` (LangChain's name) or ``keys``.

        The parent reads ``keys`` only, so ``ids`` (and, through ``from_documents``, each
        ``Document.id``) were dropped for random UUIDs.
        """
        if ids is not None and keys is not None and list(ids) != list(keys):
            msg = f"ids={ids!r} and keys={keys!r} disagree; pass one of them."
            raise ValueError(msg)
        return super().from_texts(  # type: ignore[return-value]  # cls builds this class
            texts,
            embedding,
            metadatas,
            config,
            keys if keys is not None else ids,
            return_keys,
            **kwargs,
        )

    @classmethod
    def from_documents(  # type: ignore[override]  # the parent's signature
        cls,
        documents: list[Document],
        embedding: Embeddings,
        config: RedisConfig | None = None,
        return_keys: bool = False,  # noqa: FBT001, FBT002  # the parent's parameter
        **kwargs: Any,
    ) -> HolodeckRedisVectorStore:
        if "ids" not in kwargs and "keys" not in kwargs and any(d.id for d in documents):
            kwargs["ids"] = [d.id for d in documents]  # an id-less one gets a UUID
        return super().from_documents(  # type: ignore[return-value]  # cls builds this class
            documents, embedding, config, return_keys, **kwargs
        )

    def add_texts(
        self,
        texts: Iterable[str],
        metadatas: list[dict[str, Any]] | None = None,
        keys: list[str] | None = None,
        *,
        ids: list[str] | None = None,
        batch_size: int = 500,
        **kwargs: Any,
    ) -> list[str]:
        texts = list(texts)
        out_ids = entry_ids(texts, metadatas, ids if ids is not None else keys)
        if not texts:
            return []
        metas = metadatas or [{} for _ in texts]
        records = [self._record(t, m, i) for t, m, i in zip(texts, metas, out_ids, strict=True)]
        vectors = self.embeddings.embed_documents(texts)
        return self._write(records, vectors, out_ids, batch_size)

    def add_vectors(
        self,
        documents: Sequence[Document],
        vectors: Sequence[Sequence[float]],
        *,
        ids: Sequence[str | None] | None = None,
        batch_size: int = 500,
    ) -> list[str]:
        """Upsert documents with precomputed vectors (no embedding call).

        Args:
            documents: The documents; ``ids`` (else each ``Document.id``, else a random
                UUID) name them.
            vectors: One vector per document, of the index's dimension.
            ids: Optional ids overriding ``Document.id``.
            batch_size: Documents per pipeline (one round trip each).

        Returns:
            The ids written, in input order.

        Raises:
            ValueError: If ``vectors`` or ``ids`` do not have one entry per document.
        """
        if len(vectors) != len(documents):
            msg = f"got {len(vectors)} vectors for {len(documents)} documents; pass one each."
            raise ValueError(msg)
        if ids is not None and len(ids) != len(documents):
            msg = f"ids has {len(ids)} entries for {len(documents)} documents."
            raise ValueError(msg)
        given = ids if ids is not None else [d.id for d in documents]
        out_ids = [i or str(uuid.uuid4()) for i in given]
        records = [
            self._record(d.page_content, dict(d.metadata), i)
            for d, i in zip(documents, out_ids, strict=True)
        ]
        return self._write(records, vectors, out_ids, batch_size)

    def _write(
        self,
        records: Sequence[dict[str, Any]],
        vectors: Sequence[Sequence[float]],
        out_ids: list[str],
        batch_size: int,
    ) -> list[str]:
        if not records:
            return []
        client = search_index(self).client
        self._ensure_index()
        for start in range(0, len(records), batch_size):
            with client.pipeline(transaction=True) as pipe:
                for n in range(start, min(start + batch_size, len(records))):
                    key = self._key(out_ids[n])
                    record = {**records[n], EMBEDDING_FIELD: array_to_buffer(vectors[n], "float32")}
                    pipe.delete(key)
                    pipe.hset(key, mapping=record)  # type: ignore[arg-type]  # str/bytes values
                    if self.ttl:
                        pipe.expire(key, self.ttl)
                pipe.execute()
        return out_ids

    def _record(self, text: str, metadata: dict[str, Any], doc_id: str) -> dict[str, Any]:
        try:
            encoded = json.dumps(metadata, ensure_ascii=False, allow_nan=True)
        except TypeError as e:
            msg = f"metadata of document {doc_id!r} must be JSON-serializable: {e}"
            raise TypeError(msg) from e
        record: dict[str, Any] = {CONTENT_FIELD: text, METADATA_FIELD: encoded}
        parts = identifier_parts(text)
        if parts:
            record[PARTS_FIELD] = parts
        for name in TAG_FIELDS:
            value = metadata.get(name)
            if isinstance(value, list):
                value = TAG_SEPARATOR.join(str(v) for v in value)
            if value is not None and not isinstance(value, (dict, bool)) and value != "":
                record[name] = str(value)
        for name in NUMERIC_FIELDS:
            value = metadata.get(name)
            numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
            if numeric and math.isfinite(value):  # type: ignore[arg-type]  # checked just above
                record[name] = value
        return record

    @property
    def vector_dimension(self) -> int | None:
        """Dimension of the index's vector field (what a query or document vector must have)."""
        field = self._index.schema.fields.get(EMBEDDING_FIELD)
        dims = getattr(getattr(field, "attrs", None), "dims", None)
        return int(dims) if dims else None

    @property
    def vector_algorithm(self) -> str:
        """The algorithm of the index's vector field (``FLAT``, ``HNSW``) on the server."""
        return str(self.config.indexing_algorithm).upper()

    @property
    def distance_metric(self) -> str:
        """The metric of the index's vector field (``COSINE``, ``L2``, ``IP``) on the server.

        What distances, and so scores, are computed with.
        """
        return str(self.config.distance_metric).upper()

    def rebuild_index(
        self,
        dimension: int | None = None,
        *,
        algorithm: Algorithm | None = None,
        metric: Metric | None = None,
    ) -> None:
        """Re-create the RediSearch index with another vector field: dimension, algorithm, metric.

        The index definition is dropped (``FT.DROPINDEX`` without ``DD``: no document is
        deleted) and created again with the same fields and the given vector settings (the
        others kept); the server indexes the stored documents again, and those whose vectors
        have another dimension stay unindexed until they are rewritten.
        """
        data = self._index.schema.to_dict()
        dims = self.vector_dimension if dimension is None else dimension
        if dims is None:
            msg = f"Redis index {self.config.index_name!r} has no vector dimension; pass one."
            raise ValueError(msg)
        algorithm = algorithm or _known(self.vector_algorithm, get_args(Algorithm), "HNSW")
        metric = metric or _known(self.distance_metric, get_args(Metric), "COSINE")
        for n, field in enumerate(data["fields"]):
            if field["name"] == EMBEDDING_FIELD:
                datatype = field["attrs"].get("datatype", "float32")
                data["fields"][n] = vector_field(
                    dims=dims, algorithm=algorithm, metric=metric, datatype=datatype
                )
        schema = IndexSchema.from_dict(data)
        client = self._index.client
        if self._index.exists():
            self._index.delete(drop=False)
        index = SearchIndex(schema=schema, redis_client=client)
        index.create(overwrite=False)
        wait_for_first_scan(index)
        logger.info(
            "Redis index %r re-created: %s-dimensional vectors, %s, %s.",
            index.name,
            dims,
            algorithm,
            metric,
        )
        self._index = index
        self.full_text_fields = full_text_fields(index)
        self.config.embedding_dimensions = dims
        self.config.indexing_algorithm = algorithm
        self.config.distance_metric = metric
        self.config.index_schema = schema

    def _ensure_index(self) -> None:
        """Re-create the index if it vanished (e.g. a Redis restart without persistence)."""
        if not search_index(self).exists():
            logger.warning("Redis index %r is missing; re-creating it.", self.config.index_name)
            search_index(self).create(overwrite=False)
            wait_for_first_scan(search_index(self))

    def _query_index(self, query: VectorQuery) -> list[dict[str, Any]]:
        """Run ``query``; if the server lost the index, re-create it (empty) and run it again."""
        try:
            return search_index(self).query(query)
        except RedisSearchError as e:
            if "index" not in str(e).lower() or search_index(self).exists():
                raise
            self._ensure_index()  # the server lost it: it is empty now, and usable again
            return search_index(self).query(query)

    def _key(self, doc_id: str) -> str:
        return f"{self.config.key_prefix}:{doc_id}"

    def _id_from_key(self, key: str) -> str:
        prefix = f"{self.config.key_prefix}:"
        return key[len(prefix) :] if key.startswith(prefix) else key

    def get_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        """Documents of ``ids`` in input order; unknown ids are skipped."""
        if not ids:
            return []
        with search_index(self).client.pipeline(transaction=False) as pipe:
            for doc_id in ids:
                pipe.hmget(self._key(doc_id), [CONTENT_FIELD, METADATA_FIELD])
            rows = pipe.execute()
        docs = []
        for doc_id, (content, meta) in zip(ids, rows, strict=True):
            if content is None:
                continue
            docs.append(Document(id=doc_id, page_content=_text(content), metadata=_meta(meta)))
        return docs

    def delete(self, ids: list[str] | None = None, **kwargs: Any) -> bool:
        """Delete documents by id; unknown ids are ignored; ``None`` deletes nothing.

        Returns:
            ``True`` if at least one document was deleted.
        """
        if not ids:
            return False
        return bool(search_index(self).client.delete(*(self._key(i) for i in ids)))

    def delete_existing(self, ids: Sequence[str]) -> list[str]:
        """Delete ``ids``; return those that existed, in input order (``CountingDelete``).

        One ``DEL`` per key in a pipeline: Redis runs each atomically, so of two processes
        deleting the same id only one sees it removed.
        """
        unique = list(dict.fromkeys(str(i) for i in ids))
        if not unique:
            return []
        pipe = search_index(self).client.pipeline(transaction=False)
        for doc_id in unique:
            pipe.delete(self._key(doc_id))
        removed = pipe.execute()
        return [doc_id for doc_id, n in zip(unique, removed, strict=True) if n]

    # ------------------------------------------------------------------ search
    def _select_relevance_score_fn(self) -> Callable[[float], float]:
        return relevance_fn(self.config.distance_metric)

    def check_filter(self, doc_filter: Any) -> None:
        """Refuse a ``filter`` the searches cannot send to RediSearch (``FilterCheck``).

        Redis filters in the server: a redisvl ``FilterExpression`` or a RediSearch filter
        string. A mapping or a callable (the filters of ``MatrixVectorStore``) was written
        into the query as its ``str()``: a syntax error, or a query matching nothing.

        Raises:
            TypeError: For any other filter.
        """
        if doc_filter is None or isinstance(doc_filter, FilterExpression | str):
            return
        shown = repr(doc_filter)
        shown = shown if len(shown) <= 80 else shown[:77] + "..."
        msg = (
            "filter must be a redisvl FilterExpression (Tag('namespace') == 'kb') or a "
            f"RediSearch filter string ('@namespace:{{kb}}') on Redis, got "
            f"{type(doc_filter).__name__} {shown}; Redis filters in the server, so it "
            "cannot apply a mapping or a callable."
        )
        raise TypeError(msg)

    def _search(
        self,
        embedding: Sequence[float],
        k: int,
        filter: FilterExpression | str | None,
        *,
        with_vectors: bool = False,
    ) -> list[tuple[Document, float, list[float] | None]]:
        k = check_k(k)
        self.check_filter(filter)
        fields = [CONTENT_FIELD, METADATA_FIELD]
        query = VectorQuery(
            vector=list(embedding),
            vector_field_name=EMBEDDING_FIELD,
            return_fields=fields,
            filter_expression=filter,
            num_results=k,
        )
        if with_vectors:
            query.return_field(EMBEDDING_FIELD, decode_field=False)
        dims = self.vector_dimension
        if dims is not None and len(embedding) != dims:
            msg = (
                f"the query vector has dimension {len(embedding)} but the Redis index "
                f"{self.config.index_name!r} holds dimension {dims}: the embedding model "
                "changed. Re-ingest with force_ingest=True (CLI: --force-ingest) to rebuild "
                "the corpus's vectors and the index schema."
            )
            raise ValueError(msg)
        results = self._query_index(query)
        out = []
        for res in results:
            doc = Document(
                id=self._id_from_key(res["id"]),
                page_content=_text(res.get(CONTENT_FIELD, "")),
                metadata=_meta(res.get(METADATA_FIELD)),
            )
            vector = None
            if with_vectors and res.get(EMBEDDING_FIELD) is not None:
                vector = buffer_to_array(res[EMBEDDING_FIELD], "float32")
            out.append((doc, float(res.get("vector_distance", 0.0)), vector))
        return out

    def search_ids_by_vector(
        self,
        embedding: Sequence[float],
        k: int,
        *,
        filter: FilterExpression | str | None = None,
    ) -> list[tuple[str, float]]:
        """Ids and relevance scores in [0, 1] of the ``k`` nearest, best first.

        One KNN query returning only each hit's key and distance (no text, no metadata):
        what a retriever needs to rank before it reads the few it returns.

        Raises:
            TypeError: For a ``filter`` other than a ``FilterExpression`` or a string.
        """
        self.check_filter(filter)
        query = VectorQuery(
            vector=list(embedding),
            vector_field_name=EMBEDDING_FIELD,
            filter_expression=filter,
            num_results=k,
        )
        results = self._query_index(query)
        relevance = self._select_relevance_score_fn()
        return [
            (self._id_from_key(res["id"]), relevance(float(res.get("vector_distance", 0.0))))
            for res in results
        ]

    def similarity_by_ids(self, embedding: Sequence[float], ids: Sequence[str]) -> dict[str, float]:
        """Relevance scores in [0, 1] of the stored ``ids`` for ``embedding`` (one pipeline).

        The distance is computed here with the index's metric from the stored vectors, and
        mapped to [0, 1] as in ``similarity_search_with_relevance_scores``. A chunk stored with
        model windows (``window_count`` in its metadata; entries ``<id>:w<n>``) scores its best
        window, as the dense search ranks it (a second pipeline reads the windows). Unknown ids
        are absent from the result.
        """
        if not ids:
            return {}
        with self._index.client.pipeline(transaction=False) as pipe:
            for doc_id in ids:
                pipe.hmget(self._key(doc_id), [EMBEDDING_FIELD, METADATA_FIELD])
            rows = pipe.execute()
        windows = [
            (doc_id, window_id(doc_id, n))
            for doc_id, (_, meta) in zip(ids, rows, strict=True)
            for n in range(1, int(_meta(meta).get(WINDOW_COUNT) or 0) + 1)
        ]
        blobs = [(doc_id, blob) for doc_id, (blob, _) in zip(ids, rows, strict=True)]
        if windows:
            with self._index.client.pipeline(transaction=False) as pipe:
                for _, key in windows:
                    pipe.hget(self._key(key), EMBEDDING_FIELD)
                blobs += [(i, b) for (i, _), b in zip(windows, pipe.execute(), strict=True)]
        query = np.asarray(embedding, dtype=np.float32)
        metric = str(self.config.distance_metric).upper()
        relevance = self._select_relevance_score_fn()
        out: dict[str, float] = {}
        for doc_id, blob in blobs:
            if blob is None:
                continue
            vector = np.frombuffer(blob, dtype=np.float32)
            if metric == "L2":
                distance = float(np.sum((vector - query) ** 2))
            elif metric == "IP":
                distance = 1.0 - float(vector @ query)
            else:
                norms = float(np.linalg.norm(vector) * np.linalg.norm(query))
                distance = 1.0 - (float(vector @ query) / norms if norms > 0 else 0.0)
            out[doc_id] = max(out.get(doc_id, 0.0), relevance(distance))
        return out

    def similarity_search_with_score_by_vector(  # type: ignore[override]
        self,
        embedding: list[float],
        k: int = 4,
        filter: FilterExpression | str | None = None,
        sort_by: str | None = None,
        **kwargs: Any,
    ) -> list[tuple[Document, float]]:
        """Documents nearest to ``embedding`` with their Redis distance (lower is closer)."""
        return [(d, s) for d, s, _ in self._search(embedding, k, filter)]

    def similarity_search_with_score(  # type: ignore[override]
        self,
        query: str,
        k: int = 4,
        filter: FilterExpression | str | None = None,
        sort_by: str | None = None,
        **kwargs: Any,
    ) -> list[tuple[Document, float]]:
        embedding = self.embeddings.embed_query(query)
        return self.similarity_search_with_score_by_vector(embedding, k, filter)

    def similarity_search_by_vector(
        self,
        embedding: list[float],
        k: int = 4,
        filter: FilterExpression | str | None = None,
        sort_by: str | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        return [d for d, _, _ in self._search(embedding, k, filter)]

    def similarity_search(
        self,
        query: str,
        k: int = 4,
        filter: FilterExpression | str | None = None,
        sort_by: str | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        embedding = self.embeddings.embed_query(query)
        return self.similarity_search_by_vector(embedding, k, filter)

    def max_marginal_relevance_search_by_vector(
        self,
        embedding: list[float],
        k: int = 4,
        fetch_k: int = 20,
        lambda_mult: float = 0.5,
        **kwargs: Any,
    ) -> list[Document]:
        size = max(check_k(k), check_k(fetch_k, "fetch_k"))
        hits = self._search(embedding, size, kwargs.get("filter"), with_vectors=True)
        if not hits:
            return []
        vectors = np.array([v for _, _, v in hits], dtype=np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        np.divide(vectors, norms, out=vectors, where=norms > 0)
        query = np.asarray(embedding, dtype=np.float32)
        query = query / (float(np.linalg.norm(query)) or 1.0)
        chosen = mmr(vectors, vectors @ query, k, lambda_mult)
        return [hits[i][0] for i in chosen]

    def iter_documents(
        self, *, namespace: str | None = None, batch_size: int = 1000
    ) -> Iterator[Document]:
        """Every stored document (optionally of one ``namespace``); see ``scan_redis``."""
        return scan_redis(self, namespace=namespace, batch_size=batch_size)

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
        if script_error is not None and _refused(script_error):  # for good: two trips from now
            self._scripts = False
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
                for key, value in (_reply_rows(replies[0]) if weights[0] > 0 else [])
            ],
            [(self._id_from_key(key), value) for key, value in _reply_rows(replies[-1])],
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
                    id=self._id_from_key(_text(key)),
                    page_content=_text(content),
                    metadata=_meta(meta),
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
            id=self._id_from_key(_text(row.get("__key") or row.get("id") or "")),
            page_content=_text(row.get(CONTENT_FIELD, "")),
            metadata=_meta(row.get(METADATA_FIELD)),
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


def scan_redis(
    store: RedisVectorStore, *, namespace: str | None = None, batch_size: int = 1000
) -> Iterator[Document]:
    """Documents of a langchain-redis store (hash storage), by SCAN over its key prefix.

    SCAN returns each key present for the whole scan at least once; duplicates are
    dropped here. Documents written during the scan may or may not appear.
    """
    client = search_index(store).client
    prefix = f"{store.config.key_prefix}:"
    content_field = store.config.content_field
    seen: set[bytes] = set()
    batch: list[bytes] = []
    for key in client.scan_iter(match=_glob_escape(prefix) + "*", count=batch_size, _type="HASH"):
        if key not in seen:
            seen.add(key)
            batch.append(key)
        if len(batch) >= batch_size:
            yield from _fetch_keys(client, batch, prefix, content_field, namespace)
            batch = []
    if batch:
        yield from _fetch_keys(client, batch, prefix, content_field, namespace)


def _fetch_keys(
    client: Any, keys: list[bytes], prefix: str, content_field: str, namespace: str | None
) -> Iterator[Document]:
    with client.pipeline(transaction=False) as pipe:
        for key in keys:
            pipe.hmget(key, [content_field, METADATA_FIELD])
        rows = pipe.execute()
    for key, (content, meta) in zip(keys, rows, strict=True):
        if content is None:
            continue  # deleted since the scan saw it
        metadata = _meta(meta)
        if namespace is not None and metadata.get("namespace") != namespace:
            continue
        name = key.decode() if isinstance(key, bytes) else key
        doc_id = name[len(prefix) :] if name.startswith(prefix) else name
        yield Document(id=doc_id, page_content=_text(content), metadata=metadata)


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


def relevance_fn(metric: str) -> Callable[[float], float]:
    """Map a Redis vector distance of ``metric`` to a similarity in [0, 1]."""
    metric = metric.upper()
    if metric == "L2":
        return lambda d: clip_unit(1.0 - d / 2.0)
    if metric in ("COSINE", "IP"):
        return lambda d: clip_unit(1.0 - d)
    msg = f"distance_metric must be 'COSINE', 'L2' or 'IP', got {metric!r}."
    raise ValueError(msg)


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
        algorithm = _known(existing.algorithm, get_args(Algorithm), algorithm)
        metric = _known(existing.metric, get_args(Metric), metric)
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


def _known(value: str, known: tuple[_L, ...], default: _L) -> _L:
    """``value`` if it is one of ``known`` (a server's setting we can search), else ``default``."""
    return next((k for k in known if k == value), default)


def _scanning(index: SearchIndex) -> bool:
    """Whether ``index``'s keyspace scan runs; ``False`` when ``FT.INFO`` is not allowed."""
    try:
        info = index.info()
    except (ResponseError, RedisSearchError) as e:  # an ACL without FT.INFO: do not wait
        logger.debug("FT.INFO %s refused (%s); not waiting for its scan.", index.name, e)
        return False
    return bool(int(float(info.get("indexing", 0) or 0)))


def full_text_fields(index: SearchIndex) -> str:
    """The field list full-text queries read on ``index``, as the server has it.

    ``text|identifier_parts`` (``@text|identifier_parts:word``) when the server's index has
    the parts field; an index created before it had one is given it (``FT.ALTER
    SKIPINITIALSCAN ... ADD``), and its chunks their parts (``_backfill_parts``).
    Without ``SKIPINITIALSCAN`` the server would index every chunk again, and each chunk's
    old entries would stay in the postings until collected (wrapped BM25STD scores for the
    words in most chunks: ``wait_for_first_scan``); a chunk written before has no parts to
    index until given them. Where the server refuses (a replica, an ACL), the content field alone.
    """
    names = _server_fields(index)
    if PARTS_FIELD not in names and CONTENT_FIELD in names:
        try:
            index.client.execute_command(  # no chunk has the field yet: nothing to rescan
                "FT.ALTER", index.name, "SKIPINITIALSCAN", "SCHEMA", "ADD", PARTS_FIELD, "TEXT"
            )
            logger.info("Redis index %r: added the %s field.", index.name, PARTS_FIELD)
            _backfill_parts(index)
        except ResponseError as e:  # read-only, refused, or added meanwhile by another writer
            logger.debug("FT.ALTER %s refused (%s).", index.name, one_line(e))
        names = _server_fields(index)
    return f"{CONTENT_FIELD}|{PARTS_FIELD}" if PARTS_FIELD in names else CONTENT_FIELD


_SET_PARTS = """
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] and redis.call('HEXISTS', KEYS[1], ARGV[3]) == 0
then redis.call('HSET', KEYS[1], ARGV[3], ARGV[4]) end
"""
"""Sets a chunk's parts only if its text is still the one they were computed from (a writer may
have rewritten it meanwhile) and it has none yet."""


def _backfill_parts(index: SearchIndex, *, batch: int = 500) -> None:
    """Give the chunks written before ``index`` had the parts field their identifier parts.

    Run once, by the process whose ``FT.ALTER`` added the field: unchanged chunks are never
    written again (a re-ingest skips them), so without it the store kept missing their
    identifiers' words for good (``send`` did not find ``send_file``). Only chunks with parts
    are written (each is indexed again, as an update is). A failure leaves the rest to their
    next write, with one WARNING.
    """
    client = index.client
    script = client.register_script(_SET_PARTS)
    match = re.sub(r"([*?\[\]\\])", r"\\\1", str(index.prefix)) + "*"
    filled = 0
    try:
        keys = client.scan_iter(match=match, count=batch, _type="HASH")
        while chunk := list(itertools.islice(keys, batch)):
            fields = client.pipeline(transaction=False)
            for key in chunk:
                fields.hmget(key, [CONTENT_FIELD, PARTS_FIELD])
            writes = client.pipeline(transaction=False)
            for key, (text, parts) in zip(chunk, fields.execute(), strict=True):
                new = identifier_parts(_text(text)) if text is not None and parts is None else ""
                if new:
                    script(keys=[key], args=[CONTENT_FIELD, text, PARTS_FIELD, new], client=writes)
                    filled += 1
            writes.execute()
    except RedisError as e:  # refused (an ACL), the server gone: their next write gives them
        logger.warning(
            "Redis index %r: could not give the chunks written before the %s field theirs "
            "(%s); they get them when next written (ingest --force-ingest rewrites all).",
            index.name,
            PARTS_FIELD,
            one_line(e),
        )
    if filled:
        logger.info("Redis index %r: %d chunk(s) given their %s.", index.name, filled, PARTS_FIELD)


def _server_fields(index: SearchIndex) -> set[str]:
    """The field names of ``index`` as the server reports them (``FT.INFO`` attributes)."""
    try:
        attributes = index.info().get("attributes", [])
    except (ResponseError, RedisSearchError):
        return {CONTENT_FIELD}
    names = set()
    for attribute in attributes:
        pairs = dict(zip(attribute[::2], attribute[1::2], strict=False))
        name = pairs.get("attribute", pairs.get(b"attribute"))
        if name is not None:
            names.add(_text(name))
    return names


FIRST_SCAN_TIMEOUT_S = 60.0
"""How long a writer waits for an index's first scan of the keyspace before writing anyway."""


def wait_for_first_scan(index: SearchIndex, *, timeout: float = FIRST_SCAN_TIMEOUT_S) -> None:
    """Return once RediSearch has finished the first scan of a new index (``indexing`` 0).

    ``FT.CREATE`` scans the existing keys in the background, even when there are none. A key
    written while that scan runs can be indexed twice, by the write and by the scan: 8 of 40
    freshly created indexes of 24 chunks (Redis Stack 7.4.1) held more document ids than
    documents. The old entries then stay in the word postings until the garbage collector
    runs, which it does only after 100 deletions, and a word in most chunks gets a wrapped,
    arbitrary BM25STD score (``docs/search-strategy.md``). Waiting first: 0 of 40. An index
    that exists and is scanned answers at once (one ``FT.INFO``); a scan that outlasts
    ``timeout`` is logged and writing goes on.
    """
    deadline = time.monotonic() + timeout
    delay = 0.001
    while _scanning(index):
        if time.monotonic() >= deadline:
            logger.warning(
                "Redis index %r is still scanning the keyspace after %.0f s; writing anyway.",
                index.name,
                timeout,
            )
            return
        time.sleep(delay)
        delay = min(delay * 2, 0.1)


_DISTANCE = "vector_distance"


def _refused(error: ResponseError) -> bool:
    """Whether the server refuses scripts (no permission, or no such command), not a search."""
    return isinstance(error, NoPermissionError) or "unknown command" in str(error).lower()


def _reply_rows(reply: Any) -> list[tuple[str, float]]:
    """``(key, number)`` per row of an ``FT.SEARCH ... NOCONTENT`` reply, RESP2 or RESP3.

    The number is the row's score (``WITHSCORES``) or its sort key (``WITHSORTKEYS``, the KNN
    distance after a ``#``, all its digits). Hot: a few hundred rows per search.
    """
    if isinstance(reply, Mapping):  # RESP3: {"results": [{"id", "score" | "sortkey"}]}
        raw = b"results" in reply
        rows = reply[b"results" if raw else "results"]
        if not rows:
            return []
        key, score, sortkey = (b"id", b"score", b"sortkey") if raw else _RESP3_NAMES
        if score in rows[0]:
            return [(_text(row[key]), float(row[score])) for row in rows]
        return [(_text(row[key]), _sort_number(row[sortkey])) for row in rows]
    keys, values = reply[1::2], reply[2::2]  # RESP2: total, then key and score or sort key
    return [(_text(k), _sort_number(v)) for k, v in zip(keys, values, strict=True)]


def _sort_number(value: bytes | str | float | None) -> float:
    """A score (a number, or its text) or a sort key (``#0.25``); none: the farthest (2)."""
    if value is None:
        return 2.0
    if isinstance(value, float | int):
        return float(value)
    text = _text(value)
    return float(text[1:] if text.startswith("#") else text)


_RESP3_NAMES = ("id", "score", "sortkey")


def _text(value: bytes | str) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else value


def _meta(value: bytes | str | None) -> dict[str, Any]:
    if value is None:
        return {}
    loaded = json.loads(_text(value))
    return copy_metadata(loaded) if isinstance(loaded, dict) else {}


def _glob_escape(text: str) -> str:
    return "".join(f"\\{c}" if c in "*?[]\\" else c for c in text)
