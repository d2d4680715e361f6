"""MatrixVectorStore: an exact in-memory vector store over one contiguous float32 matrix."""

from __future__ import annotations

import logging
import math
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
import numpy.typing as npt
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import VectorStore

from langchain_holodeck._chunk import window_id
from langchain_holodeck._persist import directory_lock
from langchain_holodeck._scores import clip_unit
from langchain_holodeck.contracts import RankedIds
from langchain_holodeck.vectorstores import _matrix_io, _quantized
from langchain_holodeck.vectorstores._columns import DocumentColumns, copy_metadata
from langchain_holodeck.vectorstores._ranking import (
    DocumentFilter,
    as_documents,
    check_k,
    check_lengths,
    document_predicate,
    mmr,
    normalize_rows,
    refuse_unknown_kwargs,
)
from langchain_holodeck.vectorstores._snapshot import EMPTY, Snapshot, top_row_arrays, top_rows

__all__ = ["DocumentFilter", "MatrixVectorStore", "SearchMode", "copy_metadata"]

logger = logging.getLogger(__name__)

SearchMode = Literal["auto", "exact", "quantized"]
"""How queries find candidates: see ``MatrixVectorStore``."""

_MIN_CAPACITY = 64
_FIRST_WINDOW = window_id("", 1)
"""The suffix of a chunk's first model window id (``<chunk id>:w1``)."""


def _copy_document(docs: DocumentColumns, row: int) -> Document:
    """A caller's own ``Document`` of a stored row (the one place results are built)."""
    return docs.document(row)


_SEARCH_MODES = ("auto", "exact", "quantized")


class MatrixVectorStore(VectorStore):
    """Exact cosine-similarity search over a contiguous float32 matrix, held in memory.

    Vectors are normalized on insert and kept as the rows of one float32 matrix (capacity
    doubles as it grows), so a query is one matrix-vector product plus a partial sort
    (``np.argpartition``) — no per-query conversion of stored vectors, unlike
    ``InMemoryVectorStore``. Writes are upserts by id: an existing id is replaced, never
    duplicated. Deleted and replaced rows are tombstoned and compacted away once they make
    up half of the matrix.

    Memory: no ``Document`` is kept per row. Ids, texts and metadata are stored as columns
    (texts of 128 characters or more zlib-compressed when that saves space), and a
    ``Document`` is built when one is returned or given to a callable ``filter``.

    Search modes: ``"exact"`` scores every row (one matrix-vector product). ``"quantized"``
    also keeps a 4-bit product-quantization code of each row (faiss ``IndexPQFastScan``, 1/8
    of the float32 row): a query scans the codes, re-scores the best ``rescore_candidates``
    rows exactly and returns the best of those, with exact cosines, reading about a tenth of
    the memory an exact scan reads. Rows written since the codes were last extended (up to
    16,384) are always scored exactly. ``"auto"`` (default) is exact below
    ``quantize_min_rows`` rows or when faiss is not installed, quantized above. With a
    ``filter``, candidates are filtered after re-scoring; unless ``20 * k`` of them (or half
    the pool) pass, the candidate pool grows eightfold, and past a quarter of the store the
    query falls back to the exact scan, so a selective filter (a small corpus among many)
    gets its exact top ``k``. ``exact=True`` on any search forces the exact scan.

    Scores: ``similarity_search_with_score`` returns the cosine similarity (-1..1);
    ``similarity_search_with_relevance_scores`` returns it clipped to [0, 1] (negative
    cosine means "unrelated", not "anti-relevant"), so thresholds such as 0.7 mean the
    same as the cosine itself.

    Thread safety: writes are serialized by a lock; each query works on an immutable
    snapshot taken at its start, so it sees every chunk either before or after a
    concurrent write, never a deleted id without its content.

    Setup:
        ``search_mode="quantized"`` (and ``"auto"`` at scale) needs faiss:
        ``pip install "langchain-holodeck[faiss]"``.

    Key init args:
        embedding: The ``Embeddings`` used for documents and queries.
        search_mode: ``"auto"``, ``"exact"`` or ``"quantized"`` (see Search modes).
        quantize_min_rows: Rows from which ``"auto"`` builds the quantized codes.
        rescore_candidates: Candidates re-scored exactly per query (more: better recall).

    Instantiate:
        ```python
        store = MatrixVectorStore(embeddings)
        store.add_documents([Document(page_content="Shifts rotate weekly.", id="a")])
        ```

    Search:
        ```python
        store.similarity_search_with_relevance_scores("shift rotation", k=1)
        # -> [(Document(id='a', ...), 0.64)]  (the default MiniLM)
        store.similarity_search("shift", k=2, filter={"namespace": "kb"})  # metadata values
        store.similarity_search("shift", k=2, filter=lambda d: "rota" in d.page_content)
        ```

    Save and load:
        ```python
        store.dump("index_dir")
        store = MatrixVectorStore.load("index_dir", embeddings)
        ```
    """

    new_documents: ClassVar[tuple[str, ...]] = ("get_by_ids", "aget_by_ids")
    """The reads that build new ``Document`` objects on every call: a caller owns what they
    return (``contracts.returns_new_documents``)."""
    in_process: ClassVar[bool] = True
    """Searches are CPU work in this process (no I/O): an async caller runs its id searches
    on the event loop rather than handing them to a thread (``contracts.IdVectorSearch``)."""

    def __init__(
        self,
        embedding: Embeddings,
        *,
        search_mode: SearchMode = "auto",
        quantize_min_rows: int = 50_000,
        rescore_candidates: int = 1_000,
    ) -> None:
        if search_mode not in _SEARCH_MODES:
            msg = f"search_mode must be 'auto', 'exact' or 'quantized', got {search_mode!r}."
            raise ValueError(msg)
        if isinstance(quantize_min_rows, bool) or not isinstance(quantize_min_rows, int):
            msg = f"quantize_min_rows must be an integer, got {quantize_min_rows!r}."
            raise TypeError(msg)
        if quantize_min_rows < _quantized.MIN_ROWS:
            msg = (
                f"quantize_min_rows must be >= {_quantized.MIN_ROWS} (the codebook trains on "
                f"them), got {quantize_min_rows}."
            )
            raise ValueError(msg)
        if isinstance(rescore_candidates, bool) or not isinstance(rescore_candidates, int):
            msg = f"rescore_candidates must be an integer, got {rescore_candidates!r}."
            raise TypeError(msg)
        if rescore_candidates < 1:
            msg = f"rescore_candidates must be >= 1, got {rescore_candidates}."
            raise ValueError(msg)
        if search_mode == "quantized":
            _quantized.import_faiss()  # fail now, with the install hint, not on the 50,000th row
        self.embedding = embedding
        self.search_mode: SearchMode = search_mode
        """``"auto"``, ``"exact"`` or ``"quantized"``."""
        self.quantize_min_rows = quantize_min_rows
        """Rows from which ``search_mode="auto"`` builds the quantized codes."""
        self.rescore_candidates = rescore_candidates
        """Candidates that a quantized query re-scores exactly."""
        self._quantized: _quantized.QuantizedIndex | None = None
        self._codebook: Any = None  # a trained faiss codebook, kept across compactions
        self._version = 0
        self._lock = threading.RLock()
        self._buffer: npt.NDArray[np.float32] = np.zeros((0, 0), dtype=np.float32)
        self._docs = DocumentColumns()
        self._alive: npt.NDArray[np.bool_] = np.zeros(0, dtype=bool)
        self._rows: dict[str, int] = {}
        self._first_windows = 0  # stored ids that are a chunk's first model window
        self._size = 0
        self._dim: int | None = None
        self._snapshot = EMPTY
        self._base: str | None = None  # the saved generation these rows were loaded from
        self._written: dict[str, bool] = {}  # since then: id -> upserted (True) / deleted
        self._cleared = False  # clear() since then: the next dump replaces, never merges
        self._deleted_by_others: frozenset[str] = frozenset()  # of the last dump's deletions

    # ------------------------------------------------------------------ properties
    @property
    def embeddings(self) -> Embeddings:
        return self.embedding

    @property
    def embedding_dimension(self) -> int | None:
        """Dimension of the stored vectors; ``None`` until the first write or load."""
        return self._dim

    @property
    def quantized_rows(self) -> int:
        """Rows covered by quantized codes; 0 when queries scan every row exactly."""
        index = self._snapshot.quantized
        return 0 if index is None else index.sealed

    @property
    def document_count(self) -> int:
        """Number of documents currently stored."""
        return self._snapshot.live

    @property
    def unsaved_deletions(self) -> frozenset[str]:
        """The ids deleted since the last ``dump`` or load (``contracts.MergingSave``)."""
        with self._lock:
            return frozenset(i for i, upserted in self._written.items() if not upserted)

    @property
    def deleted_by_others(self) -> frozenset[str]:
        """Ids the last ``dump(merge=True)`` was to delete but found gone from the save.

        Another process's save removed them first (``contracts.MergingSave``): of two
        processes deleting the same stale ids, only the first to save removed them.
        """
        return self._deleted_by_others

    # ------------------------------------------------------------------ writes
    def add_texts(
        self,
        texts: Iterable[str],
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> list[str]:
        return self.add_documents(as_documents(texts, metadatas, ids))

    def add_documents(
        self, documents: list[Document], *, ids: list[str] | None = None, **kwargs: Any
    ) -> list[str]:
        """Embed and upsert ``documents``; ``ids`` (else each ``Document.id``) take precedence."""
        check_lengths(len(documents), ids=ids)
        if not documents:
            return []
        vectors = self.embedding.embed_documents([d.page_content for d in documents])
        return self.add_vectors(documents, vectors, ids=ids)

    async def aadd_documents(
        self, documents: list[Document], *, ids: list[str] | None = None, **kwargs: Any
    ) -> list[str]:
        check_lengths(len(documents), ids=ids)
        if not documents:
            return []
        vectors = await self.embedding.aembed_documents([d.page_content for d in documents])
        return self.add_vectors(documents, vectors, ids=ids)

    async def aadd_texts(
        self,
        texts: Iterable[str],
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> list[str]:
        return await self.aadd_documents(as_documents(texts, metadatas, ids))

    def add_vectors(
        self,
        documents: Sequence[Document],
        vectors: Sequence[Sequence[float]] | npt.ArrayLike,
        *,
        ids: Sequence[str | None] | None = None,
    ) -> list[str]:
        """Upsert documents with precomputed vectors (no embedding call).

        Args:
            documents: The documents; they are copied, never mutated.
            vectors: One vector per document, all of the store's dimension.
            ids: Optional ids overriding ``Document.id``; missing ids get a random UUID.

        Returns:
            The ids written, in input order.

        Raises:
            ValueError: If the counts differ, the vectors differ in width or have the wrong
                dimension, or one holds a NaN or an infinite number (its scores would be NaN
                and fail every search).
        """
        # no copy here: rows are normalized once they are in the store's own matrix
        try:
            with np.errstate(over="ignore"):  # past float32: inf, refused below with its id
                matrix = np.asarray(vectors, dtype=np.float32)
        except ValueError as error:  # rows of different lengths
            rows: Sequence[Sequence[float]] = vectors  # type: ignore[assignment]  # ragged: rows
            widths = sorted({len(row) for row in rows})
            msg = (
                f"vectors have different dimensions ({', '.join(map(str, widths))}); pass "
                "vectors of one width, the embedding model's."
            )
            raise ValueError(msg) from error
        if matrix.ndim == 1:
            matrix = matrix.reshape(1, -1)
        if len(documents) == 0:
            return []
        if matrix.shape[0] != len(documents):
            msg = f"got {matrix.shape[0]} vectors for {len(documents)} documents; pass one each."
            raise ValueError(msg)
        check_lengths(len(documents), ids=list(ids) if ids is not None else None)
        finite = np.isfinite(matrix).all(axis=1)
        if not finite.all():
            row = int(np.flatnonzero(~finite)[0])
            doc_id = ids[row] if ids is not None else documents[row].id
            bad = matrix[row][~np.isfinite(matrix[row])][0]
            msg = (
                f"vector {row} (id {doc_id!r}) holds a non-finite number ({bad}); it would make "
                "every search fail: embed the document again."
            )
            raise ValueError(msg)
        return self._upsert(matrix, documents, ids, normalize=True)

    def _upsert(
        self,
        matrix: npt.NDArray[np.float32],
        documents: Sequence[Document],
        ids: Sequence[str | None] | None,
        *,
        normalize: bool,
    ) -> list[str]:
        id_source = ids if ids is not None else [d.id for d in documents]
        out_ids = [i if i else str(uuid.uuid4()) for i in id_source]
        # Within one call the last occurrence of an id wins, as with sequential upserts.
        last = {doc_id: n for n, doc_id in enumerate(out_ids)}
        keep = [n for n, doc_id in enumerate(out_ids) if last[doc_id] == n]
        stored = DocumentColumns()  # packed before the lock: compression is the slow part
        stored.extend(
            [out_ids[n] for n in keep],
            [documents[n].page_content for n in keep],
            [copy_metadata(documents[n].metadata) for n in keep],
        )
        with self._lock:
            if self._dim is None:
                self._dim = int(matrix.shape[1])
            elif matrix.shape[1] != self._dim:
                msg = (
                    f"vectors have dimension {matrix.shape[1]} but this store holds "
                    f"dimension {self._dim}; use the same embedding model (or a new store)."
                )
                raise ValueError(msg)
            rows = matrix if len(keep) == len(out_ids) else matrix[keep]
            self._append(rows, stored, normalize=normalize)
        return out_ids

    def _append(
        self, matrix: npt.NDArray[np.float32], docs: DocumentColumns, *, normalize: bool
    ) -> None:
        """Append rows, tombstoning the previous rows of the same ids (lock held).

        Rows past ``self._size`` are invisible to published snapshots, so they can be written
        and normalized in place before ``_publish``.
        """
        assert self._dim is not None
        n = len(docs)
        self._reserve(self._size + n)
        start = self._size
        self._buffer[start : start + n] = matrix
        if normalize:
            normalize_rows(self._buffer[start : start + n])
        alive = self._alive.copy()
        alive[start : start + n] = True
        for offset, doc_id in enumerate(docs.ids):
            old = self._rows.get(doc_id)
            if old is not None:
                alive[old] = False
            elif doc_id.endswith(_FIRST_WINDOW):
                self._first_windows += 1
            self._rows[doc_id] = start + offset
            self._written[doc_id] = True
        self._docs.extend_packed(docs.ids, docs.texts, docs.metadatas)
        self._size += n
        self._alive = alive
        self._publish()

    def _reserve(self, needed: int) -> None:
        capacity = self._buffer.shape[0]
        if needed <= capacity and self._buffer.shape[1] == self._dim:
            return
        new_capacity = max(_MIN_CAPACITY, capacity)
        while new_capacity < needed:
            new_capacity *= 2
        buffer = np.zeros((new_capacity, self._dim or 0), dtype=np.float32)
        if self._size:
            buffer[: self._size] = self._buffer[: self._size]
        alive = np.zeros(new_capacity, dtype=bool)
        alive[: self._size] = self._alive[: self._size]
        self._buffer, self._alive = buffer, alive  # old snapshots keep the old arrays

    @property
    def version(self) -> int:
        """Incremented by every write (add, delete, clear): tells a caller whether to save."""
        return self._version

    def _publish(self) -> None:
        self._version += 1
        live = len(self._rows)
        dead = self._size - live
        compacted = False
        if dead and dead * 2 >= self._size:
            self._compact()
            dead, compacted = 0, True
        self._update_codes(live, rebuild=compacted)
        alive = None if dead == 0 else self._alive[: self._size]
        self._snapshot = Snapshot(
            self._buffer[: self._size], self._docs, alive, self._size, live, self._quantized
        )

    def _wants_codes(self, live: int) -> bool:
        if self.search_mode == "exact" or live < _quantized.MIN_ROWS:
            return False
        if self.search_mode == "quantized":
            return True
        return live >= self.quantize_min_rows and _quantized.faiss_available()

    def _update_codes(self, live: int, *, rebuild: bool) -> None:
        """Keep the quantized codes in step with the matrix (lock held)."""
        if not self._wants_codes(live):
            self._quantized = None
            return
        if self._codebook is None:
            logger.info("MatrixVectorStore: training the quantization codebook on %d rows", live)
            rows = np.flatnonzero(self._alive[: self._size])
            sample = self._buffer[: self._size] if len(rows) == self._size else self._buffer[rows]
            self._codebook = _quantized.train(sample)
            rebuild = True
        if rebuild or self._quantized is None:
            self._quantized = _quantized.build(self._codebook, self._buffer, self._size)
        else:
            self._quantized = _quantized.extend(self._quantized, self._buffer, self._size)

    def _compact(self) -> None:
        """Drop tombstoned rows into fresh arrays (readers keep the old ones)."""
        rows = np.flatnonzero(self._alive[: self._size])
        capacity = max(_MIN_CAPACITY, 1 << int(max(len(rows), 1) - 1).bit_length())
        buffer = np.zeros((capacity, self._dim or 0), dtype=np.float32)
        buffer[: len(rows)] = self._buffer[rows]
        self._docs = self._docs.take(rows.tolist())
        self._rows = {doc_id: n for n, doc_id in enumerate(self._docs.ids)}
        self._alive = np.zeros(capacity, dtype=bool)
        self._alive[: len(rows)] = True
        self._buffer, self._size = buffer, len(rows)

    def delete(self, ids: list[str] | None = None, **kwargs: Any) -> bool:
        """Delete documents by id; unknown ids are ignored.

        ``ids=None`` deletes nothing (as ``InMemoryVectorStore``); use ``clear()`` to
        empty the store.

        Returns:
            ``True`` if at least one document was deleted.
        """
        return bool(self.delete_existing(ids or []))

    def delete_existing(self, ids: Sequence[str]) -> list[str]:
        """Delete ``ids``; return those that existed, in input order (``CountingDelete``)."""
        gone: list[str] = []
        with self._lock:
            rows = []
            for doc_id in dict.fromkeys(ids):
                row = self._rows.pop(doc_id, None)
                if row is not None:
                    rows.append(row)
                    self._first_windows -= doc_id.endswith(_FIRST_WINDOW)
                    gone.append(doc_id)
                    self._written[doc_id] = False
            if not rows:
                return []
            alive = self._alive.copy()
            alive[rows] = False
            self._alive = alive
            self._publish()
        return gone

    async def adelete(self, ids: list[str] | None = None, **kwargs: Any) -> bool:
        return self.delete(ids, **kwargs)

    def clear(self, *, keep_dimension: bool = True) -> None:
        """Remove every document.

        Args:
            keep_dimension: ``False`` also forgets the vector dimension, so the next write may
                bring vectors of another embedding model.
        """
        with self._lock:
            if not keep_dimension:
                self._dim = None
            self._buffer = np.zeros((0, self._dim or 0), dtype=np.float32)
            self._alive = np.zeros(0, dtype=bool)
            self._docs, self._rows, self._size = DocumentColumns(), {}, 0
            self._first_windows = 0
            self._quantized = None
            self._written, self._cleared = {}, True
            self._publish()

    # ------------------------------------------------------------------ reads
    def get_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        """Copies of the stored documents, in the order of ``ids``; unknown ids are skipped."""
        with self._lock:  # the columns are append-only: their rows stay valid after the lock
            docs = self._docs
            found = [r for r in (self._rows.get(i) for i in ids) if r is not None]
        return [_copy_document(docs, r) for r in found]

    async def aget_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        return self.get_by_ids(ids)

    def iter_documents(self) -> Iterator[Document]:
        """Yield a copy of every stored document (a consistent snapshot, in insertion order)."""
        snap = self._snapshot
        for row in range(snap.size):
            if snap.alive is None or snap.alive[row]:
                yield _copy_document(snap.docs, row)

    def document_filter(self, doc_filter: DocumentFilter) -> Callable[[Document], bool]:
        """``doc_filter`` as its searches apply it, as a test of a read ``Document``.

        Raises:
            TypeError: If ``doc_filter`` is neither a callable nor a mapping.
        """
        return document_predicate(doc_filter)

    def get_vectors(self, ids: Sequence[str]) -> dict[str, list[float]]:
        """The stored (normalized) vectors of ``ids``; unknown ids are absent from the result."""
        with self._lock:
            rows = {i: r for i in ids if (r := self._rows.get(i)) is not None}
            return {i: self._buffer[r].tolist() for i, r in rows.items()}

    def vectors_by_ids(self, ids: Sequence[str]) -> tuple[list[str], npt.NDArray[np.float32]]:
        """:meth:`get_vectors` as the ids found (in the order of ``ids``) and a row each."""
        with self._lock:
            found, rows = self._found_rows(ids)
            return found, self._buffer[np.asarray(rows, dtype=np.intp)]  # a copy, not a view

    def _found_rows(self, ids: Sequence[str]) -> tuple[list[str], list[int]]:
        """The stored ``ids`` (in input order) and their rows (lock held): one look-up each."""
        rows = list(map(self._rows.get, ids))
        if None not in rows:  # the usual case: every id is stored
            return list(ids), rows  # type: ignore[return-value]  # no None: checked
        kept = [(i, r) for i, r in zip(ids, rows, strict=True) if r is not None]
        return [i for i, _ in kept], [r for _, r in kept]

    # ------------------------------------------------------------------ search
    def _select_relevance_score_fn(self) -> Callable[[float], float]:
        return clip_unit

    def similarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Document]:
        return [doc for doc, _ in self.similarity_search_with_score(query, k, **kwargs)]

    async def asimilarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Document]:
        return [doc for doc, _ in await self.asimilarity_search_with_score(query, k, **kwargs)]

    def similarity_search_with_score(
        self, query: str, k: int = 4, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        """Documents most similar to ``query`` with their cosine similarity (-1..1).

        Args:
            query: The query text (embedded with ``embed_query``).
            k: Number of documents to return.
            **kwargs: ``filter``, a ``DocumentFilter`` (a ``Callable[[Document], bool]``,
                or a mapping of metadata values): only documents it accepts are returned.
        """
        vector = self.embedding.embed_query(query)
        return self.similarity_search_with_score_by_vector(vector, k, **kwargs)

    async def asimilarity_search_with_score(
        self, query: str, k: int = 4, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        vector = await self.embedding.aembed_query(query)
        return self.similarity_search_with_score_by_vector(vector, k, **kwargs)

    def similarity_search_by_vector(
        self, embedding: list[float], k: int = 4, **kwargs: Any
    ) -> list[Document]:
        return [d for d, _ in self.similarity_search_with_score_by_vector(embedding, k, **kwargs)]

    async def asimilarity_search_by_vector(
        self, embedding: list[float], k: int = 4, **kwargs: Any
    ) -> list[Document]:
        return self.similarity_search_by_vector(embedding, k, **kwargs)

    def similarity_search_with_score_by_vector(
        self,
        embedding: Sequence[float] | npt.ArrayLike,
        k: int = 4,
        *,
        filter: DocumentFilter | None = None,
        exact: bool = False,
        **kwargs: Any,
    ) -> list[tuple[Document, float]]:
        """Documents most similar to ``embedding`` with their cosine similarity (-1..1).

        ``exact=True`` scores every row even when quantized codes exist.

        Raises:
            TypeError: For a keyword argument other than ``filter`` and ``exact`` (a misspelt
                ``filters=`` ran unfiltered), as every search of the store does.
        """
        _refuse(kwargs, "similarity_search")
        snap = self._snapshot
        rows, scores = top_rows(
            snap,
            embedding,
            check_k(k),
            filter,
            exact=exact,
            rescore_candidates=self.rescore_candidates,
        )
        return [(_copy_document(snap.docs, r), float(s)) for r, s in zip(rows, scores, strict=True)]

    def search_ids_by_vector(
        self,
        embedding: Sequence[float] | npt.ArrayLike,
        k: int,
        *,
        filter: DocumentFilter | None = None,
        exact: bool = False,
    ) -> list[tuple[str, float]]:
        """Ids and relevance scores (cosine clipped to [0, 1]) of the ``k`` nearest, best first.

        The search of ``similarity_search_with_relevance_scores`` without copying a
        ``Document``: what a retriever needs to rank before it reads the few it returns.
        ``exact=True`` scores every row even when quantized codes exist.
        """
        return list(self.rank_ids_by_vector(embedding, k, filter=filter, exact=exact))

    def rank_ids_by_vector(
        self,
        embedding: Sequence[float] | npt.ArrayLike,
        k: int,
        *,
        filter: DocumentFilter | None = None,
        exact: bool = False,
    ) -> RankedIds:
        """:meth:`search_ids_by_vector` as ``RankedIds`` (ids and one float64 score array)."""
        snap = self._snapshot
        rows, scores = top_row_arrays(
            snap,
            embedding,
            check_k(k),
            filter,
            exact=exact,
            rescore_candidates=self.rescore_candidates,
        )
        # the float32 cosines, exactly, clipped to [0, 1] as ``0.0 if s < 0.0 else 1.0 if
        # s > 1.0 else s`` (np.clip keeps NaN and -0.0 as that does)
        clipped = scores.astype(np.float64).clip(0.0, 1.0)  # np.clip's own method
        return RankedIds(list(map(snap.docs.ids.__getitem__, rows.tolist())), clipped, unique=True)

    def similarity_by_ids(
        self, embedding: Sequence[float] | npt.ArrayLike, ids: Sequence[str]
    ) -> dict[str, float]:
        """Relevance scores (cosine clipped to [0, 1]) of the stored ``ids`` for ``embedding``.

        A chunk stored with model windows (entries ``<id>:w<n>``) scores its best window, as
        the dense search ranks it. Unknown ids are absent from the result.
        """
        found, best = self._similarities(embedding, ids)
        return dict(zip(found, best.tolist(), strict=True))

    def rank_ids(self, embedding: Sequence[float] | npt.ArrayLike, ids: Sequence[str]) -> RankedIds:
        """The stored ``ids`` ranked by :meth:`similarity_by_ids`, best first.

        Ties keep the order of ``ids``; unknown ids are left out.
        """
        found, best = self._similarities(embedding, ids)
        order = (-best).argsort(kind="stable")  # np.argsort's own method
        return RankedIds(list(map(found.__getitem__, order.tolist())), best[order])

    def _similarities(
        self, embedding: Sequence[float] | npt.ArrayLike, ids: Sequence[str]
    ) -> tuple[list[str], npt.NDArray[np.float64]]:
        """The stored ``ids`` (in input order) and their relevance, as ``similarity_by_ids``."""
        query = np.asarray(embedding, dtype=np.float32).reshape(-1)
        norm = math.sqrt(query.dot(query))  # the query / norm of np.linalg.norm, bit for bit
        unit = query / norm if norm > 0 else query
        with self._lock:
            found, rows = self._found_rows(ids)
            starts = None  # a row per id
            # some id has windows (none can while the store holds no first window)
            if self._first_windows and any(i + _FIRST_WINDOW in self._rows for i in found):
                rows, starts = self._rows_with_windows(found)  # each id's rows begin at starts
            if not rows:
                return [], np.zeros(0, dtype=np.float64)
            scores = self._buffer[np.asarray(rows, dtype=np.intp)] @ unit
        best = scores if starts is None else np.maximum.reduceat(scores, starts)
        wide = best.astype(np.float64)
        clipped: npt.NDArray[np.float64] = wide.clip(0.0, 1.0)  # np.clip's own method
        # as clip_unit: 0.0 where not finite; a sum of float32 values in float64 is finite
        # exactly when every value is (it cannot overflow), so one reduction checks them all
        if not math.isfinite(np.add.reduce(wide)):
            clipped[~np.isfinite(wide)] = 0.0
        return found, clipped

    def _rows_with_windows(self, ids: Sequence[str]) -> tuple[list[int], npt.NDArray[np.intp]]:
        """The rows of each stored id and of its windows, and where each id's rows begin."""
        get = self._rows.get
        rows: list[int] = []
        starts: list[int] = []
        for doc_id in ids:
            starts.append(len(rows))
            row, n = get(doc_id), 1
            while row is not None:
                rows.append(row)
                row = get(window_id(doc_id, n))
                n += 1
        return rows, np.asarray(starts, dtype=np.intp)

    def max_marginal_relevance_search(
        self,
        query: str,
        k: int = 4,
        fetch_k: int = 20,
        lambda_mult: float = 0.5,
        **kwargs: Any,
    ) -> list[Document]:
        vector = self.embedding.embed_query(query)
        return self.max_marginal_relevance_search_by_vector(
            vector, k, fetch_k, lambda_mult, **kwargs
        )

    async def amax_marginal_relevance_search(
        self,
        query: str,
        k: int = 4,
        fetch_k: int = 20,
        lambda_mult: float = 0.5,
        **kwargs: Any,
    ) -> list[Document]:
        vector = await self.embedding.aembed_query(query)
        return self.max_marginal_relevance_search_by_vector(
            vector, k, fetch_k, lambda_mult, **kwargs
        )

    def max_marginal_relevance_search_by_vector(
        self,
        embedding: list[float],
        k: int = 4,
        fetch_k: int = 20,
        lambda_mult: float = 0.5,
        *,
        filter: DocumentFilter | None = None,
        exact: bool = False,
        **kwargs: Any,
    ) -> list[Document]:
        _refuse(kwargs, "max_marginal_relevance_search")
        snap = self._snapshot
        rows, scores = top_rows(
            snap,
            embedding,
            max(check_k(k), check_k(fetch_k, "fetch_k")),
            filter,
            exact=exact,
            rescore_candidates=self.rescore_candidates,
        )
        chosen = mmr(snap.vectors[rows], np.asarray(scores, dtype=np.float32), k, lambda_mult)
        return [_copy_document(snap.docs, rows[i]) for i in chosen]

    # ------------------------------------------------------------------ construction, I/O
    @classmethod
    def from_texts(
        cls,
        texts: list[str],
        embedding: Embeddings,
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> MatrixVectorStore:
        """A new store holding ``texts``, built with the constructor's options (``kwargs``).

        ``search_mode``, ``quantize_min_rows`` and ``rescore_candidates`` reach the
        constructor, which checks them, as ``InMemoryVectorStore.from_texts`` does.

        Raises:
            ValueError: As the constructor, for a bad option (``search_mode="bogus"``).
            TypeError: For a keyword the constructor does not take.
        """
        store = cls(embedding, **kwargs)
        store.add_texts(texts, metadatas, ids=ids)
        return store

    def dump(self, path: str | Path, *, merge: bool = False) -> None:
        """Save to the directory ``path`` (created if needed), atomically.

        Writes ``vectors-<gen>.npy`` (float32, normalized), ``documents-<gen>.jsonl`` (one
        ``{"id", "page_content", "metadata"}`` object per line) and then replaces
        ``manifest.json`` naming that generation, so a process killed mid-dump leaves the
        previous save loadable. Older generations are removed afterwards. A trained
        quantization codebook is saved too (``codebook-<gen>.faiss``), so loading re-encodes
        the rows without training again.

        Metadata is saved as JSON: a tuple loads as a list and a non-string key as a string
        (as in the Redis and PostgreSQL stores); a value JSON cannot hold (a ``date``, a
        ``set``) stops the save with a ``TypeError`` naming the document, before any file of
        the new generation is left behind, and the previous save stays.

        The whole save holds the directory's exclusive lock (``_persist.directory_lock``):
        processes saving into one directory take turns, and ``load`` never sees half a save.

        Args:
            path: The directory.
            merge: When another process saved into ``path`` since this store was loaded from
                it (or created), save that save plus this store's own writes since then
                (upserts and deletions by id), and hold the merged rows here too; without
                it, this store's rows replace the save. Several processes ingesting
                corpora into one directory pass ``merge=True``, so none is lost. The ids
                this store deleted that the save no longer held are ``deleted_by_others``.
        """
        directory = Path(path)
        with directory_lock(directory, exclusive=True):
            self._deleted_by_others = frozenset()
            if merge and not self._cleared and self._saved_since(directory):
                self._merge_saved(directory)
            with self._lock:
                snap, codebook, dim = self._snapshot, self._codebook, self._dim
                written, cleared = self._written, self._cleared
                self._written, self._cleared = {}, False
            rows = None if snap.alive is None else np.flatnonzero(snap.alive)
            docs = snap.docs
            try:
                generation = _matrix_io.write(
                    directory,
                    snap.vectors,
                    rows,
                    (
                        (docs.ids[r], docs.text(r), docs.metadata(r))
                        for r in (range(snap.size) if rows is None else rows.tolist())
                    ),
                    dimension=dim,
                    codebook=None if codebook is None else _quantized.codebook_bytes(codebook),
                )
            except BaseException:
                with self._lock:  # not saved: still this store's own writes
                    self._written = {**written, **self._written}
                    self._cleared = self._cleared or cleared
                raise
            self._base = generation

    def _saved_since(self, directory: Path) -> bool:
        """Whether ``directory`` holds a save other than the one these rows came from."""
        try:
            saved = _matrix_io.current_generation(directory)
        except ValueError as error:  # a torn manifest: nothing to keep, the save replaces it
            logger.warning("MatrixVectorStore: %s; replacing the save.", error)
            return False
        return saved is not None and saved != self._base

    def _merge_saved(self, directory: Path) -> None:
        """Become the save in ``directory`` plus this store's writes since its base (lock held).

        Rows another process saved are adopted; rows this store upserted or deleted since
        its base win over the saved ones.
        """
        try:
            saved = type(self)._read(directory, self.embedding, search_mode="exact")
        except (OSError, ValueError) as error:  # unreadable: nothing to keep
            logger.warning("MatrixVectorStore: %s; replacing the save.", error)
            return
        with self._lock:
            if saved._dim is not None and self._dim is not None and saved._dim != self._dim:
                logger.warning(
                    "MatrixVectorStore: the save in %s holds %d-dimensional vectors, this "
                    "store %d-dimensional ones; replacing the save.",
                    directory,
                    saved._dim,
                    self._dim,
                )
                return
            deleted = [i for i, upserted in self._written.items() if not upserted]
            self._deleted_by_others = frozenset(i for i in deleted if i not in saved._rows)
            saved.delete(deleted)
            mine = [self._rows[i] for i, up in self._written.items() if up and i in self._rows]
            if mine:
                saved._dim = self._dim
                saved._append(self._buffer[mine], self._docs.take(mine), normalize=False)
            self._buffer, self._docs, self._alive = saved._buffer, saved._docs, saved._alive
            self._rows, self._size = saved._rows, saved._size
            self._first_windows = saved._first_windows
            self._dim = saved._dim if saved._dim is not None else self._dim
            self._quantized = None
            self._publish()

    @classmethod
    def load(
        cls,
        path: str | Path,
        embedding: Embeddings,
        *,
        search_mode: SearchMode = "auto",
        quantize_min_rows: int = 50_000,
        rescore_candidates: int = 1_000,
    ) -> MatrixVectorStore:
        """Load a store saved by ``dump`` (the keyword arguments are the constructor's).

        Holds the directory's shared lock while reading, so a save in progress in another
        process is never seen half-written.

        Raises:
            FileNotFoundError: If ``path`` holds no ``manifest.json``.
            ValueError: If the saved files are inconsistent (the message names them).
        """
        with directory_lock(Path(path), exclusive=False):
            return cls._read(
                Path(path),
                embedding,
                search_mode=search_mode,
                quantize_min_rows=quantize_min_rows,
                rescore_candidates=rescore_candidates,
            )

    @classmethod
    def _read(cls, directory: Path, embedding: Embeddings, **options: Any) -> MatrixVectorStore:
        """``load`` with the directory's lock held."""
        saved = _matrix_io.read(directory)
        store = cls(embedding, **options)
        codebook = _matrix_io.read_codebook(directory)
        if codebook is not None and store.search_mode != "exact" and _quantized.faiss_available():
            store._codebook = _quantized.from_codebook_bytes(codebook)
        if saved.dimension is not None:
            store._dim = saved.dimension
            store._buffer = np.zeros((0, saved.dimension), dtype=np.float32)
        if len(saved.columns):
            store._load_rows(saved)
        store._base = saved.vectors.name
        return store

    def _load_rows(self, saved: _matrix_io.Saved) -> None:
        """Fill an empty store from a save, reading the vectors straight into the matrix.

        Saved rows are already normalized, so they are kept bit for bit. A file that names
        an id twice keeps its last row, as sequential upserts would.
        """
        docs = saved.columns
        with self._lock:
            if self._dim is None:  # files written before the manifest had a dimension
                self._dim = _matrix_io.npy_width(saved.vectors)
            self._reserve(len(docs))
            _matrix_io.read_vectors(saved.vectors, self._buffer[: len(docs)])
            self._docs = docs
            self._rows = {doc_id: n for n, doc_id in enumerate(docs.ids)}
            self._first_windows = sum(i.endswith(_FIRST_WINDOW) for i in self._rows)
            self._size = len(docs)
            self._alive[: self._size] = True
            if len(self._rows) != self._size:  # an id saved twice: its earlier rows are dead
                self._alive[: self._size] = False
                self._alive[list(self._rows.values())] = True
            self._publish()


def _refuse(kwargs: Mapping[str, Any], search: str) -> None:
    """Refuse what a search does not take (``refuse_unknown_kwargs``): ``filter``, ``exact``."""
    refuse_unknown_kwargs(
        kwargs,
        f"MatrixVectorStore.{search}",
        "its searches take filter= (a callable taking a Document or a mapping of metadata "
        "values) and exact= only",
    )
