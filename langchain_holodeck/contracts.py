"""The contracts every store, keyword index and backend meets: the ground floor of the package.

Protocols, hit types and capability flags only; this module imports nothing of the package, so
anything may import it. Implementations (``vectorstores/``, ``keyword_index/``, ``backends/``)
import these contracts, never each other; policy (``search_strategy``, the retriever, the tools)
sits above and asks by these types, never by a store's name.

- :class:`KeywordIndex` / :class:`KeywordHit`: a sparse index over the same chunks and ids as
  the vector store.
- :class:`NativeHybridSearch` / :class:`NativeHit`: a store that fuses dense and keyword search
  in one request (``check_native_hybrid_args`` validates its arguments).
- :class:`IdVectorSearch`: a store that ranks by vector returning ids and relevance scores;
  ``dense_search_keywords`` says which keyword arguments a store's dense search takes.
- :class:`StoredVectors`: a store that hands back the vectors it holds, by id.
- :class:`RankedIds`, :class:`ArrayIdVectorSearch`, :class:`ArrayKeywordSearch`: the same
  searches answered as an id list and one score array (no tuple per hit), for in-memory stores
  and indexes whose callers fuse on arrays.
- :class:`CountingDelete`: a store whose delete says which ids it actually removed.
- :class:`PrunableCache`: an embedding cache that can drop the entries a corpus no longer uses.
- :class:`BackendCapabilities`: what a backend can do; the tools and sync choose by these flags.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, overload, runtime_checkable

from langchain_core.documents import Document

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    from langchain_core.vectorstores import VectorStore

__all__ = [
    "ArrayIdVectorSearch",
    "ArrayKeywordSearch",
    "BackendCapabilities",
    "CountedKeywordIndex",
    "CountingDelete",
    "DocumentFilters",
    "FilterCheck",
    "IdVectorSearch",
    "KeywordHit",
    "KeywordIndex",
    "NativeHit",
    "NativeHybridSearch",
    "PrunableCache",
    "RankedIds",
    "StoredVectors",
    "answers_with_arrays",
    "check_native_hybrid_args",
    "dense_search_keywords",
    "returns_new_documents",
    "supports_native_hybrid",
]


class KeywordHit(NamedTuple):
    """One keyword search result: a chunk id and its score (higher is better).

    A ``NamedTuple``, so it *is* the ``(id, score)`` pair that
    :func:`~langchain_holodeck.fusion.reciprocal_rank_fusion` takes, and it is immutable.
    """

    id: str
    """The chunk's ``Document.id`` (the same id as in the vector store)."""
    score: float
    """The engine's raw relevance score (BM25: unbounded, > 0); comparable within one query."""


@runtime_checkable
class KeywordIndex(Protocol):
    """A sparse (keyword) index over the same chunks, with the same ids, as the vector store.

    Every implementation indexes ``Document.page_content`` (the contextualized text when the
    contextual enricher ran) and matches chunks by ``Document.id``. An index whose search
    is CPU work in this process (no I/O) may set a class attribute ``in_process = True``:
    the retriever then runs it on the caller's thread instead of a pool thread.
    """

    def upsert(self, documents: Sequence[Document]) -> None:
        """Add or replace documents by ``Document.id``; id-less documents are rejected."""
        ...

    def delete(self, ids: Iterable[str]) -> None:
        """Remove documents by id; unknown ids are ignored."""
        ...

    def search(self, query: str, k: int) -> list[KeywordHit]:
        """Return at most ``k`` hits, best first; ``[]`` when nothing matches."""
        ...

    def rebuild_from_store(self, store: VectorStore, *, namespace: str | None = None) -> int:
        """Re-index every chunk stored in ``store`` (optionally one namespace); return the count."""
        ...


@runtime_checkable
class CountedKeywordIndex(KeywordIndex, Protocol):
    """A keyword index in another process (a server) that counts the chunks it holds.

    A sync that could not write to it (the server down) leaves it behind the store, and only
    the process that saw the failure knew; the next process compares this count with the
    store's chunks and rebuilds the index when they differ (``OpenSearchKeywordIndex``).
    """

    def count(self, *, namespace: str | None = None) -> int:
        """Chunks held of ``namespace`` (default: the index's own; ``None`` there: all)."""
        ...


class NativeHit(NamedTuple):
    """One result of a native hybrid search: the document, its fused score, its similarity."""

    document: Document
    """The chunk, ``id`` set, as the store keeps it."""
    score: float
    """The engine's fused score (higher is better; comparable within one query)."""
    similarity: float | None
    """Dense relevance in [0, 1] (cosine clipped), ``None`` when the engine did not say."""


@runtime_checkable
class NativeHybridSearch(Protocol):
    """A vector store that runs dense + keyword search and fuses them in one request."""

    def native_hybrid_search(
        self,
        query: str,
        *,
        k: int,
        fetch_k: int,
        weights: tuple[float, float] = (0.5, 0.5),
        rrf_k: int = 60,
        min_similarity_score: float | None = None,
        filter: Any = None,  # the store's own filter syntax, like search_kwargs
    ) -> list[NativeHit]:
        """The ``k`` best chunks of ``fetch_k`` candidates per leg, best first.

        ``weights`` are (dense, keyword); ``min_similarity_score`` drops every hit whose
        dense relevance is below it; ``filter`` is the store's own (a namespace filter).
        """
        ...

    async def anative_hybrid_search(
        self,
        query: str,
        *,
        k: int,
        fetch_k: int,
        weights: tuple[float, float] = (0.5, 0.5),
        rrf_k: int = 60,
        min_similarity_score: float | None = None,
        filter: Any = None,  # the store's own filter syntax
    ) -> list[NativeHit]:
        """Async twin of :meth:`native_hybrid_search`."""
        ...


def supports_native_hybrid(store: object) -> bool:
    """Whether ``store`` can fuse dense + keyword search in one request."""
    return isinstance(store, NativeHybridSearch)


def check_native_hybrid_args(*, k: int, fetch_k: int, weights: tuple[float, float]) -> None:
    """Validate the arguments every store's ``native_hybrid_search`` takes, before any I/O.

    Raises:
        ValueError: When ``k`` or ``fetch_k`` is not positive or is a bool, or ``weights``
            are not two non-negative numbers with at least one above 0.
    """
    if isinstance(k, bool) or isinstance(fetch_k, bool) or k < 1 or fetch_k < 1:  # True is 1
        msg = f"k and fetch_k must be positive integers, got k={k!r} and fetch_k={fetch_k!r}."
        raise ValueError(msg)
    if len(weights) != 2 or min(weights) < 0 or max(weights) <= 0:
        msg = f"weights must be (dense, keyword), both >= 0, one > 0; got {weights!r}."
        raise ValueError(msg)


def check_native_filter(filter: Any, keys: Collection[str], store: str) -> None:
    """Refuse a mapping ``filter`` with a key the store's native search does not apply.

    A key the engine's statement cannot filter on was ignored: chunks it excludes came back,
    and a retriever filtering the engine's rows afterwards returned fewer than asked.

    Raises:
        ValueError: Naming the keys, and the way that applies them (``fallback``).
    """
    if not isinstance(filter, Mapping):
        return
    other = [key for key in filter if key not in keys]
    if other:
        msg = (
            f"{store}'s native hybrid search filters by {', '.join(sorted(keys))} only; "
            f"filter key(s) {', '.join(map(repr, other))} would be ignored. Use "
            "search_strategy='fallback' to filter by them."
        )
        raise ValueError(msg)


@runtime_checkable
class IdVectorSearch(Protocol):
    """A store that ranks by vector returning ids and relevance scores in [0, 1].

    Its methods are blocking: the retriever's async path runs them in a worker thread,
    unless the store sets a class attribute ``in_process = True`` (searches are CPU work in
    this process, no I/O), as ``MatrixVectorStore`` does.
    """

    def search_ids_by_vector(
        self, embedding: Sequence[float], k: int, **kwargs: Any
    ) -> list[tuple[str, float]]:
        """The ``k`` nearest ids with relevance scores in [0, 1], best first."""
        ...

    def similarity_by_ids(
        self, embedding: Sequence[float] | npt.NDArray[np.float32], ids: Sequence[str]
    ) -> dict[str, float]:
        """Relevance scores in [0, 1] of ``ids``; unknown ids absent (``embedding``: any array)."""
        ...


def dense_search_keywords(store: object) -> tuple[str, ...] | None:
    """The keyword arguments ``store``'s dense search takes besides the query and ``k``.

    The named arguments of its id search (``search_ids_by_vector``, less ``embedding`` and
    ``k``), when that takes no ``**kwargs``; otherwise the names the store lists in its
    ``search_keywords`` (Qdrant's, whose search hands options on; a ``NamespaceFilteredStore``,
    its wrapped store's), ``filter`` first. ``None`` when the store does not say: its search
    takes ``**kwargs`` and nothing can be checked before a query.
    """
    search = getattr(store, "search_ids_by_vector", None)
    if search is not None:
        try:
            parameters = inspect.signature(search).parameters
        except (TypeError, ValueError):  # a builtin or an object without a signature
            return None
        if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
            return tuple(name for name in parameters if name not in {"embedding", "k"})
    declared = getattr(store, "search_keywords", None)
    if declared is None:
        return None
    return tuple(sorted(declared, key=lambda name: (name != "filter", name)))


@runtime_checkable
class StoredVectors(Protocol):
    """A store that returns the vectors it holds, by id (in memory: no model call)."""

    def get_vectors(self, ids: Sequence[str]) -> dict[str, list[float]]:
        """The stored vectors of ``ids``; unknown ids absent."""
        ...


class RankedIds(Sequence[tuple[str, float]]):
    """A ranking as an id list and a float64 score array, best first.

    A ``Sequence`` of ``(id, score)`` pairs (built when read), so it stands wherever a list of
    pairs does; callers that fuse on arrays read ``ids`` and ``scores`` and build no pair.
    ``unique`` says that no id repeats (set by the producer when it knows).
    """

    __slots__ = ("ids", "scores", "unique")

    def __init__(
        self, ids: list[str], scores: npt.NDArray[np.float64], *, unique: bool = False
    ) -> None:
        if len(ids) != len(scores):
            msg = f"RankedIds needs one score per id, got {len(ids)} ids and {len(scores)} scores."
            raise ValueError(msg)
        self.ids = ids
        self.scores = scores
        self.unique = unique

    def __len__(self) -> int:
        return len(self.ids)

    @overload
    def __getitem__(self, i: int) -> tuple[str, float]: ...
    @overload
    def __getitem__(self, i: slice) -> RankedIds: ...
    def __getitem__(self, i: int | slice) -> tuple[str, float] | RankedIds:
        if isinstance(i, slice):
            return RankedIds(self.ids[i], self.scores[i], unique=self.unique)
        return self.ids[i], float(self.scores[i])

    def __iter__(self) -> Iterator[tuple[str, float]]:
        return zip(self.ids, self.scores.tolist(), strict=True)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable arrays: not hashable, like a list

    def __repr__(self) -> str:
        return f"RankedIds({list(self)!r})"


@runtime_checkable
class ArrayIdVectorSearch(Protocol):
    """An ``IdVectorSearch`` store that also answers with ``RankedIds`` (in memory)."""

    def rank_ids_by_vector(
        self, embedding: npt.NDArray[np.float32], k: int, **kwargs: Any
    ) -> RankedIds:
        """``search_ids_by_vector`` as ``RankedIds``: the same ids, order and scores."""
        ...

    def rank_ids(self, embedding: npt.NDArray[np.float32], ids: Sequence[str]) -> RankedIds:
        """The stored ``ids`` by ``similarity_by_ids``, best first; ties keep ``ids``' order."""
        ...

    def vectors_by_ids(self, ids: Sequence[str]) -> tuple[list[str], npt.NDArray[np.float32]]:
        """``get_vectors`` as the ids found (in the order of ``ids``) and one row each."""
        ...


@runtime_checkable
class ArrayKeywordSearch(Protocol):
    """A keyword index that also answers with ``RankedIds`` (in memory)."""

    def search_ranked(self, query: str, k: int) -> RankedIds:
        """``search`` as ``RankedIds``: the same ids, order and scores, no ``KeywordHit``."""
        ...


def answers_with_arrays(obj: object, *pairs: tuple[str, str]) -> bool:
    """Whether each ``(method, array twin)`` of ``obj`` is defined by one and the same class.

    A subclass (or an instance attribute) that overrides ``search`` but inherits
    ``search_ranked`` would have its override bypassed by a caller of the twin: then the
    plain method must be called.
    """
    attributes = getattr(obj, "__dict__", {})
    for method, twin in pairs:
        if method in attributes or twin in attributes:
            return False
        mro = type(obj).__mro__
        owners = [next((c for c in mro if name in vars(c)), None) for name in (method, twin)]
        if owners[0] is None or owners[0] is not owners[1]:
            return False
    return True


def returns_new_documents(obj: object, *methods: str) -> bool:
    """Whether each of ``methods`` builds new ``Document`` objects on every call.

    The class that defines a method says so by listing it in its own ``new_documents``
    attribute: its callers own what it returns and may update it in place instead of copying
    it. A subclass (or an instance attribute) that overrides the method without listing it
    again is not trusted (it may return shared objects).
    """
    attributes = getattr(obj, "__dict__", {})
    for method in methods:
        if method in attributes:
            return False
        owner = next((c for c in type(obj).__mro__ if method in vars(c)), None)
        if owner is None or method not in vars(owner).get("new_documents", ()):
            return False
    return True


@runtime_checkable
class DocumentFilters(Protocol):
    """A store that can judge a read document by the ``filter`` its searches take.

    The dense search filters in the store; the keyword and exact legs find chunks elsewhere.
    With this, ``HybridRetriever`` holds every leg's results to ``search_kwargs["filter"]``
    (a filtered retriever returns only filtered documents), on stores whose filter it cannot
    evaluate itself only the dense leg's.
    """

    def document_filter(self, doc_filter: Any) -> Callable[[Document], bool]:
        """``doc_filter`` (as ``similarity_search(filter=...)`` takes it) as a test of a document.

        Raises:
            TypeError: If the store does not take such a filter.
        """
        ...


@runtime_checkable
class FilterCheck(Protocol):
    """A store that says, before any search, whether its searches can apply a ``filter``.

    For a store whose filter is evaluated by its server only (Redis: a RediSearch query), so
    not a ``DocumentFilters``: ``HybridRetriever`` asks it at construction, where a filter of
    another type was accepted, then failed (or matched nothing) at every query, served as an
    outage of the dense leg.
    """

    def check_filter(self, doc_filter: Any) -> None:
        """Return if the store's searches take ``doc_filter`` (``None`` included).

        Raises:
            TypeError: Naming the filter types the store takes, when they do not.
            ValueError: For a filter of such a type the store would not read as meant (on
                Redis, a filter string with an unescaped TAG value), showing the fix.
        """
        ...


@runtime_checkable
class CountingDelete(Protocol):
    """A store whose delete reports the ids it actually removed.

    ``VectorStore.delete`` returns ``Optional[bool]``, which cannot tell two processes that
    delete the same stale ids apart. A store that knows which ids existed (Redis: one ``DEL``
    per key; PostgreSQL: ``DELETE ... RETURNING``; the in-memory matrix: its rows) implements
    this, and sync counts only those ids in ``SyncResult.deleted``; of two processes that
    delete the same ids at once, each id is counted by exactly one.
    """

    def delete_existing(self, ids: Sequence[str]) -> list[str]:
        """Delete ``ids``; return those that existed (and so were removed), in input order."""
        ...


@runtime_checkable
class MergingSave(Protocol):
    """A store saved into a directory other processes save into, by merging with their saves.

    Each process deletes from its own copy and counts what it removed there
    (``CountingDelete``); two processes that loaded the same save before either saved it both
    remove the same stale ids from their copies. The save tells which of them the file no
    longer held: another process's save removed them first, and that process counts them.
    """

    @property
    def unsaved_deletions(self) -> frozenset[str]:
        """The ids deleted since the last save (or load), which the next save removes."""
        ...

    @property
    def deleted_by_others(self) -> frozenset[str]:
        """Of the ids the last save was to remove, those the file it replaced no longer held."""
        ...


@runtime_checkable
class PrunableCache(Protocol):
    """An embedding cache (a ``ByteStore``) that can drop the entries a corpus no longer uses.

    The cache in a directory (``LocalFileByteStore``) and in PostgreSQL (``PostgresByteStore``)
    implement it; Redis expires its entries instead.
    """

    def prune(self, keep: Collection[str], *, written_before: float) -> int:
        """Delete every entry not in ``keep`` and written before ``written_before``.

        ``written_before`` is a ``time.time()``; entries written since stay. Returns how many
        entries went.
        """
        ...


@dataclass(frozen=True)
class BackendCapabilities:
    """What a backend can do; the tools and sync choose their path by these flags."""

    filters_namespace: bool
    """Dense search filters by namespace in the store itself (else results are post-filtered)."""
    enumerates: bool
    """A namespace's documents can be listed: needed for stale-file cleanup and index rebuilds."""
    persistent: bool
    """The data outlives the process (a server, or the directory the tool saves into)."""
    native_hybrid: bool = False
    """The store fuses keyword and vector search in one query (``native_hybrid_search``): the
    ``auto`` search strategy is ``native`` on it."""
