"""The Redis store without its native hybrid search: documents in and out, upserts, dense search.

``RedisVectorStoreCore`` is what ``HolodeckRedisVectorStore`` (``redis.py``) adds its native
hybrid search to: documents whose metadata round-trips exactly, writes that upsert by id,
reads by id, deletes, the index's vector settings and its rebuild, KNN search with [0, 1]
relevance scores (``relevance_fn``), MMR, and the SCAN over every stored chunk
(``scan_redis``).
"""

from __future__ import annotations

import json
import logging
import math
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, get_args

import numpy as np
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_redis import RedisConfig, RedisVectorStore
from redisvl.exceptions import RedisSearchError
from redisvl.index import SearchIndex
from redisvl.query import VectorQuery
from redisvl.query.filter import FilterExpression
from redisvl.redis.utils import array_to_buffer, buffer_to_array
from redisvl.schema import IndexSchema

from langchain_holodeck._chunk import WINDOW_COUNT, window_id
from langchain_holodeck._redact import clipped
from langchain_holodeck._redisearch import identifier_parts, unescaped_tag_clause
from langchain_holodeck._scores import clip_unit
from langchain_holodeck.errors import ConfigError
from langchain_holodeck.vectorstores._entries import entry_ids
from langchain_holodeck.vectorstores._ranking import check_k, mmr, refuse_unknown_kwargs
from langchain_holodeck.vectorstores._redis_index import (
    full_text_fields,
    search_index,
    wait_for_first_scan,
)
from langchain_holodeck.vectorstores._redis_prefixes import (
    check_prefixes,
    planned_prefixes,
    server_prefixes,
)
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
    as_text,
    known_setting,
    stored_metadata,
    vector_field,
)

if TYPE_CHECKING:
    from typing_extensions import Self  # typing.Self is Python 3.11+; requires-python is 3.10

logger = logging.getLogger(
    "langchain_holodeck.vectorstores.redis"
)  # the store's: what users filter on


class RedisVectorStoreCore(RedisVectorStore):
    """``HolodeckRedisVectorStore`` without its native hybrid search (see that class).

    Everything but the hybrid search: the exact metadata round-trip, upserts by id, reads,
    deletes, KNN search with [0, 1] relevance scores, MMR, the index's settings and rebuild.
    """

    full_text_fields: str = CONTENT_FIELD
    """The TEXT fields every full-text query reads: ``text|identifier_parts``, or ``text`` on
    an index without the parts field that could not be given one (``full_text_fields()``)."""

    def __init__(
        self,
        embeddings: Embeddings,
        config: RedisConfig | None = None,
        ttl: int | None = None,
        **kwargs: Any,
    ) -> None:
        """Open (or create) the index, refusing one whose keys nest with another index's.

        Raises:
            ConfigError: When the index's key prefix starts with another index's on the
                server, or begins it (``kb`` beside ``kb:v2``: ``check_prefixes``), before
                the index is created or anything written.
        """
        config = config or RedisConfig(**kwargs)
        if config.redis_client is None:  # one client for the check and the store
            config.redis_client = config.redis()
        client = config.redis_client
        prefixes = planned_prefixes(config)
        indexes = server_prefixes(client)
        check_prefixes(client, config.index_name, prefixes, indexes)
        super().__init__(embeddings, config=config, ttl=ttl)  # creates the index if missing
        if indexes is not None and config.index_name not in indexes:
            self._check_created(prefixes)
        wait_for_first_scan(search_index(self))
        self.full_text_fields = full_text_fields(search_index(self))

    def _check_created(self, prefixes: list[str]) -> None:
        """Check a just-created index again, dropping it (its keys kept) when it nests.

        Another process may have created a nesting index meanwhile, both checks having run
        before either index existed: both may refuse then, and neither writes.
        """
        index = search_index(self)
        try:
            check_prefixes(index.client, index.name, prefixes)
        except ConfigError:
            index.delete(drop=False)
            raise

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
    ) -> Self:
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
    ) -> Self:
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
        algorithm = algorithm or known_setting(self.vector_algorithm, get_args(Algorithm), "HNSW")
        metric = metric or known_setting(self.distance_metric, get_args(Metric), "COSINE")
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
        index = search_index(self)
        if not index.exists():
            logger.warning("Redis index %r is missing; re-creating it.", self.config.index_name)
            prefix = index.schema.index.prefix
            prefixes = [prefix] if isinstance(prefix, str) else list(prefix)
            check_prefixes(index.client, index.name, prefixes)
            index.create(overwrite=False)
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
            docs.append(
                Document(id=doc_id, page_content=as_text(content), metadata=stored_metadata(meta))
            )
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
        r"""Refuse a ``filter`` the searches cannot send to RediSearch (``FilterCheck``).

        Redis filters in the server: a redisvl ``FilterExpression`` or a RediSearch filter
        string. A mapping or a callable (the filters of ``MatrixVectorStore``) was written
        into the query as its ``str()``: a syntax error, or a query matching nothing. In a
        string, a TAG value holding query syntax (``-``, ``/``, ``.``, ``:``, ...) must be
        escaped as RediSearch reads it (``@source_path:{docs\/a\.md}``; ``Tag`` escapes it):
        ``@namespace:{837b770f-...}`` failed with a syntax error or matched nothing.

        Raises:
            TypeError: For any other filter.
            ValueError: For a filter string with an unescaped TAG value, showing it escaped.
        """
        if isinstance(doc_filter, str):
            unescaped = unescaped_tag_clause(doc_filter)
            if unescaped is not None:
                msg = (
                    f"filter {unescaped[0]} holds an unescaped TAG value, which RediSearch "
                    "reads as query syntax (a syntax error, or nothing matched); write "
                    f"{unescaped[1]} (a raw string r'...' in Python), or use redisvl's "
                    "Tag(field) == value, which escapes it."
                )
                raise ValueError(msg)
        if doc_filter is None or isinstance(doc_filter, FilterExpression | str):
            return
        shown = repr(doc_filter)
        shown = clipped(shown)
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
                page_content=as_text(res.get(CONTENT_FIELD, "")),
                metadata=stored_metadata(res.get(METADATA_FIELD)),
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
            for n in range(1, int(stored_metadata(meta).get(WINDOW_COUNT) or 0) + 1)
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
        """Documents nearest to ``embedding`` with their Redis distance (lower is closer).

        ``sort_by`` is langchain-redis's and not applied (the nearest come first).

        Raises:
            TypeError: For a keyword argument other than ``filter`` and ``sort_by`` (a
                misspelt ``filters=`` ran unfiltered), as every search of the store does.
        """
        _refuse(kwargs, "similarity_search_with_score_by_vector")
        return [(d, s) for d, s, _ in self._search(embedding, k, filter)]

    def similarity_search_with_score(  # type: ignore[override]
        self,
        query: str,
        k: int = 4,
        filter: FilterExpression | str | None = None,
        sort_by: str | None = None,
        **kwargs: Any,
    ) -> list[tuple[Document, float]]:
        _refuse(kwargs, "similarity_search_with_score")
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
        _refuse(kwargs, "similarity_search_by_vector")
        return [d for d, _, _ in self._search(embedding, k, filter)]

    def similarity_search(
        self,
        query: str,
        k: int = 4,
        filter: FilterExpression | str | None = None,
        sort_by: str | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        _refuse(kwargs, "similarity_search")
        embedding = self.embeddings.embed_query(query)
        return self.similarity_search_by_vector(embedding, k, filter)

    def max_marginal_relevance_search_by_vector(
        self,
        embedding: list[float],
        k: int = 4,
        fetch_k: int = 20,
        lambda_mult: float = 0.5,
        filter: FilterExpression | str | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        _refuse(kwargs, "max_marginal_relevance_search")
        size = max(check_k(k), check_k(fetch_k, "fetch_k"))
        hits = self._search(embedding, size, filter, with_vectors=True)
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


def _refuse(kwargs: Mapping[str, Any], search: str) -> None:
    """Refuse what a search does not take (``refuse_unknown_kwargs``): ``filter``, ``sort_by``."""
    refuse_unknown_kwargs(
        kwargs,
        f"HolodeckRedisVectorStore.{search}",
        "its searches take filter= (a redisvl FilterExpression or a RediSearch filter string) "
        "and langchain-redis's sort_by= only",
    )


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
        metadata = stored_metadata(meta)
        if namespace is not None and metadata.get("namespace") != namespace:
            continue
        name = key.decode() if isinstance(key, bytes) else key
        doc_id = name[len(prefix) :] if name.startswith(prefix) else name
        yield Document(id=doc_id, page_content=as_text(content), metadata=metadata)


def relevance_fn(metric: str) -> Callable[[float], float]:
    """Map a Redis vector distance of ``metric`` to a similarity in [0, 1]."""
    metric = metric.upper()
    if metric == "L2":
        return lambda d: clip_unit(1.0 - d / 2.0)
    if metric in ("COSINE", "IP"):
        return lambda d: clip_unit(1.0 - d)
    msg = f"distance_metric must be 'COSINE', 'L2' or 'IP', got {metric!r}."
    raise ValueError(msg)


def _glob_escape(text: str) -> str:
    return "".join(f"\\{c}" if c in "*?[]\\" else c for c in text)
