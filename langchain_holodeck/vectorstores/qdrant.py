"""The Qdrant vector store: dense vectors plus BM25 sparse vectors, fused by Qdrant's own RRF.

The sparse BM25 encoder (our own tokenizer, no model download), ``HolodeckQdrantVectorStore``
and the function that builds it. Imported only when a Qdrant store is opened (the
``QdrantBackend`` in ``backends/qdrant.py`` registers the provider without importing
``qdrant-client``, which takes seconds).

Setup:
    ``pip install "langchain-holodeck[qdrant]"`` (``langchain-qdrant`` and ``qdrant-client``).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import functools
import inspect
import logging
import math
import os
import threading
import uuid
import weakref
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import VectorStore

from langchain_holodeck._chunk import WINDOW_COUNT, is_window, window_id, window_parent
from langchain_holodeck._scores import clip_unit
from langchain_holodeck.backends.base import check_native_hybrid_args
from langchain_holodeck.config._backends import QdrantDatabaseConfig
from langchain_holodeck.contracts import NativeHit
from langchain_holodeck.fusion import Fusion
from langchain_holodeck.keyword_index.bm25 import Tokenizer
from langchain_holodeck.vectorstores._client_fusion import convex_hits
from langchain_holodeck.vectorstores._ranking import check_k

try:
    from langchain_qdrant import QdrantVectorStore as _Base
    from qdrant_client import QdrantClient
    from qdrant_client import models as _models
except ImportError:  # the extra is missing: the config still validates, building raises
    _Base = VectorStore  # type: ignore[assignment, misc]  # placeholder base without the extra
    QdrantClient = None  # type: ignore[assignment, misc]  # checked in _require_extra
    _models = None  # type: ignore[assignment]  # checked in _require_extra

if TYPE_CHECKING:
    from qdrant_client import models

__all__ = [
    "DENSE_VECTOR",
    "ID_KEY",
    "SPARSE_VECTOR",
    "BM25SparseEncoder",
    "HolodeckQdrantVectorStore",
    "as_qdrant_filter",
    "build_qdrant_store",
    "make_client",
    "point_id",
]

logger = logging.getLogger(__name__)

DENSE_VECTOR = "dense"
"""Name of the dense vector in the collection."""
SPARSE_VECTOR = "bm25"
"""Name of the sparse BM25 vector (``modifier: idf``: Qdrant computes the IDF itself)."""
ID_KEY = "doc_id"
"""Payload key holding ``Document.id`` as given (Qdrant point ids must be UUIDs or ints)."""
_ID_NAMESPACE = uuid.UUID("6f1c5c8e-6d0b-5b0e-9a43-3c1e2f9b7a10")


class BM25SparseEncoder:
    """BM25 term weights as sparse vectors; Qdrant's IDF modifier supplies the IDF half.

    Terms come from ``keyword_index.bm25.Tokenizer`` (lowercase, English stop words dropped,
    Snowball-stemmed: the same terms as the in-memory BM25 index); each term's index is its
    CRC-32, so indices are stable across processes without a stored vocabulary. A document
    term weighs ``tf * (k1 + 1) / (tf + k1 * (1 - b + b * len / avg_len))``; a query term 1.0.
    With ``modifier: idf`` Qdrant multiplies each matched term by its IDF over the collection,
    so the dot product is the BM25 score (with ``avg_len`` fixed rather than measured).
    """

    def __init__(self, *, k1: float = 1.2, b: float = 0.75, avg_len: float = 100.0) -> None:
        if not (k1 > 0 and 0 <= b <= 1 and avg_len > 0):
            msg = (
                f"need k1 > 0, 0 <= b <= 1 and avg_len > 0; got k1={k1}, b={b}, avg_len={avg_len}."
            )
            raise ValueError(msg)
        self.k1, self.b, self.avg_len = k1, b, avg_len
        self.tokenizer = Tokenizer()

    @staticmethod
    def index_of(term: str) -> int:
        """The sparse index of ``term`` (its CRC-32, an unsigned 32-bit integer)."""
        return zlib.crc32(term.encode("utf-8"))

    def encode_document(self, text: str) -> tuple[list[int], list[float]]:
        """``(indices, values)`` of a document's BM25 term weights; empty for no term."""
        terms = self.tokenizer.split_terms(text)
        norm = self.k1 * (1 - self.b + self.b * len(terms) / self.avg_len)
        weights: dict[int, float] = {}
        for term, tf in Counter(terms).items():
            weights[self.index_of(term)] = tf * (self.k1 + 1) / (tf + norm)
        return list(weights), list(weights.values())

    def encode_query(self, text: str) -> tuple[list[int], list[float]]:
        """``(indices, values)`` of a query: each distinct term once, weight 1.0."""
        indices = list(dict.fromkeys(self.index_of(t) for t in self.tokenizer.split_terms(text)))
        return indices, [1.0] * len(indices)


def _require_extra() -> None:
    if QdrantClient is None:
        msg = 'database.provider "qdrant" needs: pip install "langchain-holodeck[qdrant]"'
        raise ImportError(msg)


def point_id(doc_id: str) -> str:
    """The Qdrant point id of ``doc_id``: itself when it is a UUID, else a UUIDv5 of it."""
    try:
        return str(uuid.UUID(doc_id))
    except ValueError:
        return str(uuid.uuid5(_ID_NAMESPACE, doc_id))


class HolodeckQdrantVectorStore(_Base):
    """``QdrantVectorStore`` with exact round-trips, [0, 1] scores and native hybrid search.

    Differences from the parent (same client, same ``page_content``/``metadata`` payload):

    - every point carries a dense vector (``dense``) and a BM25 sparse vector (``bm25``, see
      ``BM25SparseEncoder``), except model windows (entries ``<chunk id>:w<n>``), which carry
      the dense vector only, so the keyword leg ranks chunks; ``similarity_search*`` query
      the dense vector only, and
      ``native_hybrid_search`` fuses both legs: by convex from one batch request for their ids
      and scores, or (``fusion="rrf"``) in one Query API request (prefetch + RRF);
    - ``Document.id`` round-trips as given (any string; stored in the payload as ``doc_id``,
      the point id is the id itself when it is a UUID, else a UUIDv5 of it) and metadata
      round-trips unchanged (no ``_id`` / ``_collection_name`` keys are added);
    - relevance scores are the cosine similarity clipped to [0, 1], like the other stores;
    - ``filter`` is a ``qdrant_client.models.Filter`` or, as on the other stores, a mapping
      of metadata keys to values (``filter={"namespace": "kb"}``; see ``as_qdrant_filter``);
    - the collection is created on the first write (its dimension is the embeddings'), and
      reads before that return nothing.

    Setup:
        ``pip install "langchain-holodeck[qdrant]"``

    Instantiate:
        ```python
        from qdrant_client import QdrantClient

        store = HolodeckQdrantVectorStore(QdrantClient(location=":memory:"), "docs", embeddings)
        store.add_documents([Document(id="a", page_content="arch controls")])
        store.native_hybrid_search("arch controls", k=1, fetch_k=10)
        # -> [NativeHit(document=Document(id='a', ...), score=0.0328, similarity=1.0)]
        ```
    """

    def __init__(
        self,
        client: QdrantClient,
        collection_name: str,
        embedding: Embeddings,
        *,
        sparse_encoder: BM25SparseEncoder | None = None,
    ) -> None:
        _require_extra()
        super().__init__(
            client=client,
            collection_name=collection_name,
            embedding=embedding,
            vector_name=DENSE_VECTOR,
            sparse_vector_name=SPARSE_VECTOR,
            validate_collection_config=False,
        )
        if _is_local(client):  # qdrant-client's local mode is not thread-safe: take turns
            self._client = LocalClient(client)  # type: ignore[assignment]  # a proxy of it
        self.sparse_encoder = sparse_encoder or BM25SparseEncoder()
        self._exists = False

    @classmethod
    def from_texts(  # type: ignore[override]  # a client (or where to open one), not its options
        cls,
        texts: list[str],
        embedding: Embeddings,
        metadatas: list[dict[str, Any]] | None = None,
        ids: Sequence[str | None] | None = None,
        *,
        client: QdrantClient | None = None,
        collection_name: str | None = None,
        location: str | None = None,
        path: str | None = None,
        url: str | None = None,
        api_key: str | None = None,
        **kwargs: Any,
    ) -> HolodeckQdrantVectorStore:
        """A new store holding ``texts`` (``from_documents`` comes here with each id).

        Args:
            texts: The texts to add.
            embedding: The embeddings of the store.
            metadatas: One metadata mapping per text.
            ids: One id per text (``None``: a random one).
            client: The client to use; else one is opened from ``location`` (such as
                ``":memory:"``), ``path`` (local mode on disk) or ``url`` (+ ``api_key``).
            collection_name: Default: a random name.
            location: See ``client``.
            path: See ``client``.
            url: See ``client``.
            api_key: See ``client``.
            **kwargs: Passed to ``add_texts`` (``batch_size``).

        Raises:
            ValueError: When neither ``client`` nor one of ``location``, ``path``, ``url``
                is given, or ``client`` is given with one of them.
        """
        client = _given_client("from_texts", client, location, path, url, api_key)
        store = cls(client, collection_name or uuid.uuid4().hex, embedding)
        store.add_texts(texts, metadatas, ids=ids, **kwargs)
        return store

    @classmethod
    def from_existing_collection(  # type: ignore[override]  # a client, not its options
        cls,
        collection_name: str,
        embedding: Embeddings,
        *,
        client: QdrantClient | None = None,
        location: str | None = None,
        path: str | None = None,
        url: str | None = None,
        api_key: str | None = None,
    ) -> HolodeckQdrantVectorStore:
        """The store of an existing collection (one this class wrote), opened as ``from_texts``.

        Raises:
            ValueError: As ``from_texts``, for the client; when the collection does not exist.
        """
        client = _given_client("from_existing_collection", client, location, path, url, api_key)
        if not client.collection_exists(collection_name):
            msg = (
                f"collection_name {collection_name!r} does not exist; create it with "
                "from_texts or add_documents."
            )
            raise ValueError(msg)
        return cls(client, collection_name, embedding)

    # -- collection ---------------------------------------------------------------------
    def _collection_ready(self) -> bool:
        if not self._exists:
            self._exists = bool(self.client.collection_exists(self.collection_name))
        return self._exists

    def _ensure_collection(self, dims: int) -> None:
        if self._collection_ready():
            return
        self.client.create_collection(
            self.collection_name,
            vectors_config={
                DENSE_VECTOR: _models.VectorParams(size=dims, distance=_models.Distance.COSINE)
            },
            sparse_vectors_config={
                SPARSE_VECTOR: _models.SparseVectorParams(modifier=_models.Modifier.IDF)
            },
        )
        if not _is_local(self.client):  # local mode has no payload indexes (and warns)
            self.client.create_payload_index(
                self.collection_name, "metadata.namespace", _models.PayloadSchemaType.KEYWORD
            )
        self._exists = True

    # -- writes -------------------------------------------------------------------------
    def add_texts(  # type: ignore[override]  # ids are strings here
        self,
        texts: Iterable[str],
        metadatas: Sequence[dict[str, Any]] | None = None,
        ids: Sequence[str | None] | None = None,
        batch_size: int = 64,
        **kwargs: Any,
    ) -> list[str]:
        texts = list(texts)
        metas = [dict(m) for m in metadatas] if metadatas is not None else [{} for _ in texts]
        # an id-less Document beside ones with ids arrives as None: it gets its own id too
        given = ids if ids is not None else [None] * len(texts)
        doc_ids = [uuid.uuid4().hex if i is None else str(i) for i in given]
        if not len(texts) == len(metas) == len(doc_ids):
            msg = (
                f"texts, metadatas and ids must have the same length, got {len(texts)}, "
                f"{len(metas)} and {len(doc_ids)}."
            )
            raise ValueError(msg)
        for start in range(0, len(texts), batch_size):
            batch = texts[start : start + batch_size]
            vectors = self._require_embeddings("add_texts").embed_documents(batch)
            if not vectors:
                continue
            self._ensure_collection(len(vectors[0]))
            points = []
            for offset, (text, vector) in enumerate(zip(batch, vectors, strict=True)):
                doc_id = doc_ids[start + offset]
                named: dict[str, Any] = {DENSE_VECTOR: list(vector)}
                if not is_window(metas[start + offset]):  # the keyword leg ranks chunks only
                    indices, values = self.sparse_encoder.encode_document(text)
                    named[SPARSE_VECTOR] = _models.SparseVector(indices=indices, values=values)
                points.append(
                    _models.PointStruct(
                        id=point_id(doc_id),
                        vector=named,
                        payload={
                            self.content_payload_key: text,
                            self.metadata_payload_key: metas[start + offset],
                            ID_KEY: doc_id,
                        },
                    )
                )
            self.client.upsert(self.collection_name, points=points, wait=True)
        return doc_ids

    def delete(self, ids: list[str] | None = None, **kwargs: Any) -> bool:  # type: ignore[override]
        """Delete points by id; unknown ids are ignored; ``None`` deletes nothing.

        As the other stores (and langchain-core's ``InMemoryVectorStore``); to drop
        everything, delete the collection.

        Returns:
            ``True`` if at least one point was deleted.
        """
        if not ids or not self._collection_ready():
            return False
        points = list(dict.fromkeys(point_id(str(i)) for i in ids))
        found = self.client.retrieve(
            self.collection_name, points, with_payload=False, with_vectors=False
        )
        if not found:
            return False
        self.client.delete(
            self.collection_name,
            points_selector=_models.PointIdsList(points=[p.id for p in found]),
            wait=True,
        )
        return True

    # -- reads --------------------------------------------------------------------------
    def get_by_ids(self, ids: Sequence[str | int], /) -> list[Document]:
        if not ids or not self._collection_ready():
            return []
        points = self.client.retrieve(
            self.collection_name, [point_id(str(i)) for i in ids], with_payload=True
        )
        by_id = {d.id: d for d in map(self._to_document, points)}
        return [by_id[str(i)] for i in dict.fromkeys(ids) if str(i) in by_id]

    def iter_documents(
        self, *, namespace: str | None = None, batch_size: int = 1000
    ) -> Iterator[Document]:
        """Every stored document (optionally of one ``namespace``), by scrolling the collection."""
        if not self._collection_ready():
            return
        offset = None
        while True:
            points, offset = self.client.scroll(
                self.collection_name,
                scroll_filter=self.namespace_filter(namespace),
                limit=batch_size,
                offset=offset,
                with_payload=True,
            )
            yield from map(self._to_document, points)
            if offset is None:
                return

    def document_filter(self, doc_filter: Any) -> Callable[[Document], bool]:
        """``filter`` as the searches apply it, as a test of a read ``Document``.

        A mapping (``as_qdrant_filter``) keeps a document whose metadata value equals each
        given value, or is a list holding it (Qdrant matches any element of an array), so a
        keyword hit of ``HybridRetriever`` is held to the filter as the dense leg is. A
        ``models.Filter`` is evaluated by Qdrant only: every document passes here.

        Raises:
            TypeError: For a filter the searches refuse.
        """
        as_qdrant_filter(doc_filter)  # the searches' check and message
        if not isinstance(doc_filter, Mapping):  # None, or a Filter for Qdrant to evaluate
            return lambda _: True
        pairs = tuple(doc_filter.items())

        def accept(doc: Document) -> bool:
            return all(_match_value(doc.metadata.get(key), value) for key, value in pairs)

        return accept

    @property
    def search_keywords(self) -> frozenset[str]:
        """The ``search_kwargs`` its dense search takes (``HybridRetriever`` checks them).

        ``filter``, and the options ``similarity_search_with_score`` hands on to
        ``QdrantClient.query_points`` (``search_params``, ``timeout``, ...), whose own
        ``**kwargs`` refuses any other name only when a query runs (``AssertionError:
        Unknown arguments``).
        """
        return _query_options() | {"filter"}

    @staticmethod
    def namespace_filter(namespace: str | None) -> models.Filter | None:
        """The Qdrant filter keeping one namespace's points (``None``: no filter)."""
        if namespace is None:
            return None
        return _models.Filter(
            must=[
                _models.FieldCondition(
                    key="metadata.namespace", match=_models.MatchValue(value=namespace)
                )
            ]
        )

    def similarity_search(  # type: ignore[override]
        self,
        query: str,
        k: int = 4,
        filter: models.Filter | Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        return [doc for doc, _ in self.similarity_search_with_score(query, k, filter, **kwargs)]

    def similarity_search_with_score(  # type: ignore[override]
        self,
        query: str,
        k: int = 4,
        filter: models.Filter | Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> list[tuple[Document, float]]:
        if not self._collection_ready():
            return []
        vector = self._require_embeddings("similarity_search").embed_query(query)
        return self.similarity_search_with_score_by_vector(vector, k, filter=filter, **kwargs)

    def similarity_search_with_score_by_vector(  # type: ignore[override]
        self,
        embedding: list[float],
        k: int = 4,
        filter: models.Filter | Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> list[tuple[Document, float]]:
        if not check_k(k) or not self._collection_ready():
            return []
        points = self.client.query_points(
            self.collection_name,
            query=list(embedding),
            using=DENSE_VECTOR,
            query_filter=as_qdrant_filter(filter),
            limit=k,
            with_payload=True,
            **kwargs,
        ).points
        return [(self._to_document(p), float(p.score)) for p in points]

    def max_marginal_relevance_search(  # type: ignore[override]
        self,
        query: str,
        k: int = 4,
        fetch_k: int = 20,
        lambda_mult: float = 0.5,
        filter: models.Filter | Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        if not self._collection_ready():  # the parent raises 'Collection ... not found'
            return []
        vector = self._require_embeddings("max_marginal_relevance_search").embed_query(query)
        pairs = self.max_marginal_relevance_search_with_score_by_vector(
            vector, k, fetch_k, lambda_mult, filter, **kwargs
        )
        return [doc for doc, _ in pairs]

    def max_marginal_relevance_search_with_score_by_vector(  # type: ignore[override]
        self,
        embedding: list[float],
        k: int = 4,
        fetch_k: int = 20,
        lambda_mult: float = 0.5,
        filter: models.Filter | Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> list[tuple[Document, float]]:
        """Maximal marginal relevance by Qdrant's MMR query, with this store's Documents.

        ``lambda_mult`` means what it means on every LangChain store (1: relevance only,
        0: diversity only); Qdrant's ``diversity`` is its complement. Every other
        ``max_marginal_relevance_search*`` method of the parent comes here.
        """
        size = max(check_k(k), check_k(fetch_k, "fetch_k"))
        if not k or not self._collection_ready():
            return []
        points = self.client.query_points(
            self.collection_name,
            query=_models.NearestQuery(
                nearest=list(embedding),
                mmr=_models.Mmr(diversity=1.0 - lambda_mult, candidates_limit=size),
            ),
            using=DENSE_VECTOR,
            query_filter=as_qdrant_filter(filter),
            limit=k,
            with_payload=True,
            **kwargs,
        ).points
        return [(self._to_document(p), float(p.score)) for p in points]

    def _select_relevance_score_fn(self) -> Callable[[float], float]:
        return clip_unit

    native_fusions = ("rrf", "convex")
    """How ``native_hybrid_search`` can fuse (the retriever passes its ``fusion``)."""

    def native_hybrid_search(
        self,
        query: str,
        *,
        k: int = 4,
        fetch_k: int = 50,
        weights: tuple[float, float] = (0.5, 0.5),
        rrf_k: int = 60,
        min_similarity_score: float | None = None,
        filter: models.Filter | Mapping[str, Any] | None = None,  # as in similarity_search
        embedding: Sequence[float] | None = None,
        fusion: Fusion = "rrf",
    ) -> list[NativeHit]:
        """Dense + BM25, fused by Qdrant's RRF in one request or as the retriever fuses.

        ``fusion="convex"`` (the tool's default fusion): one batch request asks for each leg's
        ``fetch_k`` best point ids and scores (payload: the id only); they are fused here as
        the retriever fuses in-process (``w_dense * s / best_s + w_keyword * b / best_b``, a
        chunk scoring its best entry: see ``_client_fusion``), and the ``k`` best are read.
        A keyword-only hit's similarity is read from its stored vectors when
        ``min_similarity_score`` is set (else ``None``). Qdrant's RRF cannot rank this way: by
        rank alone, a query naming an identifier (a code, a number) loses its one exact
        keyword match to chunks that are merely similar.

        ``fusion="rrf"``: each leg prefetches ``fetch_k`` points matching ``filter`` (the dense
        leg only those with cosine similarity >= ``min_similarity_score``); Qdrant fuses them
        with weighted RRF (``weights`` = (dense, keyword), constant ``rrf_k``; Qdrant's
        weighted form is ``1 / (rank / w + rrf_k - 1)``) and returns the best points with
        their payloads and dense vectors, so each hit's dense similarity is known (and a
        keyword-only hit below ``min_similarity_score`` is dropped too). Documents are read
        for the returned points only. A query with no keyword term runs the dense leg alone.

        Raises:
            ValueError: When ``k`` or ``fetch_k`` is not positive, or ``weights`` are not two
                non-negative numbers with at least one above 0.
        """
        check_native_hybrid_args(k=k, fetch_k=fetch_k, weights=weights)
        if fusion not in self.native_fusions:
            msg = f"fusion must be 'rrf' or 'convex', got {fusion!r}."
            raise ValueError(msg)
        filter = as_qdrant_filter(filter)  # a mapping, as a Filter
        if not self._collection_ready():
            return []
        vector = np.asarray(
            embedding
            if embedding is not None
            else self._require_embeddings("native_hybrid_search").embed_query(query),
            dtype=np.float32,
        )
        if fusion == "convex":
            return self._convex_search(
                query,
                vector,
                k=k,
                fetch_k=fetch_k,
                weights=weights,
                min_similarity_score=min_similarity_score,
                filter=filter,
            )
        prefetch, legs = [], []
        if weights[0] > 0:
            prefetch.append(
                _models.Prefetch(
                    query=vector.tolist(),
                    using=DENSE_VECTOR,
                    filter=filter,
                    limit=fetch_k,
                    score_threshold=min_similarity_score or None,
                )
            )
            legs.append(weights[0])
        indices, values = self.sparse_encoder.encode_query(query)
        if indices and weights[1] > 0:
            prefetch.append(
                _models.Prefetch(
                    query=_models.SparseVector(indices=indices, values=values),
                    using=SPARSE_VECTOR,
                    filter=filter,
                    limit=fetch_k,
                )
            )
            legs.append(weights[1])
        if not prefetch:
            return []
        points = self.client.query_points(
            self.collection_name,
            prefetch=prefetch,
            query=_models.RrfQuery(rrf=_models.Rrf(k=rrf_k, weights=legs)),
            limit=k if min_similarity_score is None else max(k, fetch_k),
            with_payload=True,
            with_vectors=[DENSE_VECTOR],
        ).points
        unit = vector / (float(np.linalg.norm(vector)) or 1.0)
        hits = []
        for point in points:
            stored = (
                (point.vector or {}).get(DENSE_VECTOR) if isinstance(point.vector, dict) else None
            )
            similarity = None
            if stored is not None:
                v = np.asarray(stored, dtype=np.float32)
                similarity = clip_unit(float(v @ unit) / (float(np.linalg.norm(v)) or 1.0))
            if min_similarity_score is not None and (similarity or 0.0) < min_similarity_score:
                continue
            hits.append(NativeHit(self._to_document(point), float(point.score), similarity))
        return hits[:k]

    async def anative_hybrid_search(self, query: str, **kwargs: Any) -> list[NativeHit]:
        """:meth:`native_hybrid_search` in a worker thread (the client is synchronous)."""
        return await asyncio.to_thread(self.native_hybrid_search, query, **kwargs)

    def _convex_search(
        self,
        query: str,
        vector: np.ndarray,
        *,
        k: int,
        fetch_k: int,
        weights: tuple[float, float],
        min_similarity_score: float | None,
        filter: models.Filter | None,
    ) -> list[NativeHit]:
        """``native_hybrid_search(fusion="convex")``: the legs' ids and scores, fused here."""
        indices, values = self.sparse_encoder.encode_query(query)
        legs: dict[str, Any] = {}
        if weights[0] > 0:
            legs["dense"] = _models.QueryRequest(
                query=vector.tolist(),
                using=DENSE_VECTOR,
                filter=filter,
                limit=fetch_k,
                with_payload=[ID_KEY],
            )
        if indices and weights[1] > 0:
            legs["keyword"] = _models.QueryRequest(
                query=_models.SparseVector(indices=indices, values=values),
                using=SPARSE_VECTOR,
                filter=filter,
                limit=fetch_k,
                with_payload=[ID_KEY],
            )
        if not legs:
            return []
        answers = self.client.query_batch_points(self.collection_name, list(legs.values()))
        scored = {
            name: [(_point_key(p), float(p.score)) for p in answer.points]
            for name, answer in zip(legs, answers, strict=True)
        }
        return convex_hits(
            [(i, clip_unit(s)) for i, s in scored.get("dense", [])],
            scored.get("keyword", []),
            weights,
            k=k,
            min_similarity_score=min_similarity_score,
            similarities=lambda ids: self._similarities(vector, ids),
            read=self.get_by_ids,
        )

    def _similarities(self, vector: np.ndarray, ids: Sequence[str]) -> dict[str, float]:
        """Cosine relevance of the stored ``ids`` (a chunk with model windows: its best)."""
        if not ids:
            return {}
        unit = vector / (float(np.linalg.norm(vector)) or 1.0)
        points = self.client.retrieve(
            self.collection_name,
            [point_id(i) for i in ids],
            with_payload=True,
            with_vectors=[DENSE_VECTOR],
        )
        windows = [
            window_id(_point_key(p), n)
            for p in points
            for n in range(1, int(self._to_document(p).metadata.get(WINDOW_COUNT) or 0) + 1)
        ]
        if windows:
            points += self.client.retrieve(
                self.collection_name,
                [point_id(w) for w in windows],
                with_payload=[ID_KEY],
                with_vectors=[DENSE_VECTOR],
            )
        out: dict[str, float] = {}
        for point in points:
            stored = point.vector.get(DENSE_VECTOR) if isinstance(point.vector, dict) else None
            if stored is None:
                continue
            v = np.asarray(stored, dtype=np.float32)
            score = clip_unit(float(v @ unit) / (float(np.linalg.norm(v)) or 1.0))
            chunk = window_parent(_point_key(point))
            out[chunk] = max(out.get(chunk, 0.0), score)
        return out

    def _to_document(self, point: Any) -> Document:
        payload = point.payload or {}
        return Document(
            id=str(payload.get(ID_KEY, point.id)),
            page_content=payload.get(self.content_payload_key, ""),
            metadata=dict(payload.get(self.metadata_payload_key) or {}),
        )


_SET_BY_SEARCH = frozenset(
    {"collection_name", "query", "using", "query_filter", "limit", "with_payload"}
)
"""The ``query_points`` arguments the dense search sets itself (not options of a caller)."""


@functools.cache
def _query_options() -> frozenset[str]:
    """The named arguments of ``QdrantClient.query_points`` a search passes on."""
    _require_extra()
    parameters = inspect.signature(QdrantClient.query_points).parameters
    named = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return frozenset(
        name
        for name, p in parameters.items()
        if p.kind in named and name != "self" and name not in _SET_BY_SEARCH
    )


def as_qdrant_filter(value: Any) -> models.Filter | None:
    """A search's ``filter`` as Qdrant takes it.

    A ``qdrant_client.models.Filter`` is kept; a mapping of metadata keys to ``str``,
    ``int`` or ``bool`` values keeps the points whose metadata holds each of them (as
    ``MatrixVectorStore`` and ``PostgresVectorStore`` read ``filter={"namespace": "kb"}``).

    Raises:
        TypeError: For any other filter, or a mapping value of another type.
    """
    if value is None or isinstance(value, _models.Filter):
        return value
    if not isinstance(value, Mapping):
        msg = (
            "filter must be a qdrant_client.models.Filter or a mapping of metadata keys to "
            f"values, got {type(value).__name__} {value!r}; e.g. filter={{'namespace': 'kb'}}."
        )
        raise TypeError(msg)
    conditions: list[Any] = []
    for key, expected in value.items():
        if not isinstance(expected, str | int | bool):
            msg = (
                f"filter[{key!r}] must be a str, int or bool to match on Qdrant, got "
                f"{type(expected).__name__} {expected!r}; pass a qdrant_client.models.Filter "
                "for other conditions (ranges, lists, null)."
            )
            raise TypeError(msg)
        conditions.append(
            _models.FieldCondition(key=f"metadata.{key}", match=_models.MatchValue(value=expected))
        )
    return _models.Filter(must=conditions)


def _match_value(have: Any, want: Any) -> bool:
    """Qdrant's ``MatchValue``: the value itself, or an element of a list of values."""
    values = have if isinstance(have, list) else [have]
    return any(v == want and isinstance(v, bool) == isinstance(want, bool) for v in values)


def _given_client(
    method: str,
    client: QdrantClient | None,
    location: str | None,
    path: str | None,
    url: str | None,
    api_key: str | None,
) -> QdrantClient:
    """``client``, or one opened from the one of ``location``, ``path``, ``url`` given."""
    _require_extra()
    where = {"location": location, "path": path, "url": url}
    given = [name for name, value in where.items() if value is not None]
    if (client is None) == (not given) or len(given) > 1:
        msg = (
            f"{method} needs a client, or exactly one of location, path and url to open "
            f"one; got client={'set' if client is not None else None}"
            f"{''.join(f', {n}={where[n]!r}' for n in given)}."
        )
        raise ValueError(msg)
    if client is None:
        client = QdrantClient(location=location, path=path, url=url, api_key=api_key)
    return client


def _point_key(point: Any) -> str:
    """The ``Document.id`` a point holds (its payload's ``doc_id``; else the point id)."""
    return str((point.payload or {}).get(ID_KEY, point.id))


def _is_local(client: Any) -> bool:
    return type(getattr(client, "_client", None)).__name__ == "QdrantLocal"


_LOCAL_LOCKS: weakref.WeakKeyDictionary[Any, threading.RLock] = weakref.WeakKeyDictionary()
_LOCAL_LOCKS_GUARD = threading.Lock()


class LocalClient:
    """A local-mode ``QdrantClient`` (``:memory:`` or ``path=``) whose calls take turns.

    qdrant-client's local mode keeps its collections in plain Python and NumPy structures
    (and SQLite on disk) with no lock: two threads writing at once (tools initialized with
    ``asyncio.gather``, which share one client per path) fail with ``sqlite3`` transaction
    errors or leave mismatched arrays behind. Every method call here holds one lock per
    underlying client, shared by every store on it; attributes pass through.
    """

    _wrapped: Any

    def __init__(self, client: Any) -> None:
        if isinstance(client, LocalClient):  # another store's ``client``: the same lock
            client = client._wrapped
        self._wrapped = client
        with _LOCAL_LOCKS_GUARD:
            lock = _LOCAL_LOCKS.get(client)
            if lock is None:
                lock = _LOCAL_LOCKS[client] = threading.RLock()
        self._lock = lock

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._wrapped, name)
        if not callable(value):
            return value
        lock = self._lock

        def call(*args: Any, **kwargs: Any) -> Any:
            with lock:
                return value(*args, **kwargs)

        return call

    def __repr__(self) -> str:
        return f"LocalClient({self._wrapped!r})"


_LOCAL_CLIENTS: dict[str, QdrantClient] = {}
"""The on-disk local-mode clients of this process, by resolved directory (``make_client``)."""
_LOCAL_CLIENTS_LOCK = threading.Lock()


@atexit.register
def _close_local_clients() -> None:
    """Close the shared local clients while the interpreter can still run their ``close``."""
    with _LOCAL_CLIENTS_LOCK:
        clients = list(_LOCAL_CLIENTS.values())
        _LOCAL_CLIENTS.clear()
    for client in clients:
        with contextlib.suppress(Exception):  # closing at exit: nothing left to report to
            client.close()


def make_client(config: QdrantDatabaseConfig) -> QdrantClient:
    """The qdrant-client a configuration names (local in-process, local on disk, or server).

    On-disk local mode locks its directory for one client, so the tools of one process that
    name the same directory (resolved: ``config.resolved_path()``) share one client; their
    corpora stay apart by namespace, as in a shared server collection. A directory held by
    another process raises qdrant-client's ``RuntimeError``.
    """
    _require_extra()
    if config.location is not None:
        return QdrantClient(location=config.location)
    path = config.resolved_path()
    if path is not None:
        path.mkdir(parents=True, exist_ok=True)
        key = os.path.realpath(path)  # one client per directory, however it is spelled
        with _LOCAL_CLIENTS_LOCK:
            client = _LOCAL_CLIENTS.get(key)
            if client is None or getattr(client._client, "closed", False):
                client = _LOCAL_CLIENTS[key] = QdrantClient(path=key)
            return client
    api_key = config.api_key.get_secret_value() if config.api_key is not None else None
    # check_compatibility off: qdrant-client checks the server's version in a thread of its own
    # and, the server unreachable, printed a UserWarning with its source line above the one
    # error line; the backend reaches the server itself (get_collections) and says why not
    return QdrantClient(
        url=config.url,
        api_key=api_key,
        timeout=math.ceil(config.timeout),
        check_compatibility=False,
    )


def build_qdrant_store(
    config: QdrantDatabaseConfig, embeddings: Embeddings
) -> HolodeckQdrantVectorStore:
    """A ``HolodeckQdrantVectorStore`` on the configured client and collection."""
    return HolodeckQdrantVectorStore(make_client(config), config.collection_name, embeddings)
