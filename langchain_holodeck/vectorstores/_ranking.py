"""The ranking math of the in-memory stores: top-k, MMR, filters as row tests, argument checks.

Plain NumPy over normalized rows; ``MatrixVectorStore`` and the Redis store's MMR use it.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from langchain_core.documents import Document

from langchain_holodeck.vectorstores._columns import DocumentColumns

__all__ = [
    "DocumentFilter",
    "as_documents",
    "check_k",
    "check_lengths",
    "mmr",
    "normalize_rows",
    "refuse_unknown_kwargs",
    "row_predicate",
    "top_k_rows",
]

DocumentFilter = Callable[[Document], bool] | Mapping[str, Any]
"""A filter: a callable keeping the documents for which it returns ``True``, or a mapping
keeping those whose metadata has each of its ``key: value`` pairs (``metadata.get(key) ==
value``). A mapping is matched against the stored metadata directly; a callable is given a
``Document`` built for it, which costs a few microseconds per candidate."""


def normalize_rows(matrix: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """L2-normalize rows in place; zero rows stay zero (their cosine with anything is 0)."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    np.divide(matrix, norms, out=matrix, where=norms > 0)
    return matrix


def as_documents(
    texts: Iterable[str], metadatas: list[dict[str, Any]] | None, ids: list[str] | None
) -> list[Document]:
    """``add_texts`` arguments as Documents (ids and metadata matched by position)."""
    texts = list(texts)
    check_lengths(len(texts), metadatas=metadatas, ids=ids)
    metas = metadatas or [{} for _ in texts]
    id_list: Sequence[str | None] = ids or [None] * len(texts)
    return [
        Document(id=i, page_content=t, metadata=m)
        for t, m, i in zip(texts, metas, id_list, strict=True)
    ]


def check_k(k: Any, name: str = "k") -> int:
    """A search's ``k`` (or ``fetch_k``): an integer >= 0, 0 asking for nothing.

    Raises:
        ValueError: For a negative number, a bool, a float or a string, before any I/O (a
            store's own error would not name the parameter).
    """
    if not isinstance(k, bool):
        try:
            n = operator.index(k)
        except TypeError:
            n = -1
        if n >= 0:
            return n
    msg = f"{name} must be an integer >= 0, got {k!r}."
    raise ValueError(msg)


def refuse_unknown_kwargs(kwargs: Mapping[str, Any], search: str, takes: str) -> None:
    """Refuse keyword arguments a store's search does not take, rather than drop them.

    A misspelt ``filter`` (``filters=``) was dropped: the search ran unfiltered and said
    nothing, and so did a ``HybridRetriever`` or ``VectorStoreRetriever`` passing it on.

    Raises:
        TypeError: Naming the arguments, the search (``search``) and what it takes (``takes``).
    """
    if kwargs:
        names = ", ".join(map(repr, kwargs))
        msg = f"{search} got unexpected keyword argument(s) {names}; {takes}."
        raise TypeError(msg)


def check_lengths(
    n: int, *, metadatas: Sequence[Any] | None = None, ids: Sequence[Any] | None = None
) -> None:
    if metadatas is not None and len(metadatas) != n:
        msg = f"metadatas has {len(metadatas)} entries for {n} texts; pass one per text."
        raise ValueError(msg)
    if ids is not None and len(ids) != n:
        msg = f"ids has {len(ids)} entries for {n} documents; pass one id per document."
        raise ValueError(msg)


def document_predicate(doc_filter: DocumentFilter) -> Callable[[Document], bool]:
    """``doc_filter`` as a test of a ``Document`` (what ``row_predicate`` tests of a row).

    Raises:
        TypeError: If ``doc_filter`` is neither a callable nor a mapping.
    """
    if isinstance(doc_filter, Mapping):
        pairs = tuple(doc_filter.items())
        return lambda doc: all(doc.metadata.get(key) == value for key, value in pairs)
    if not callable(doc_filter):
        raise TypeError(_not_a_filter(doc_filter))
    return lambda doc: bool(doc_filter(doc))


def _not_a_filter(doc_filter: object) -> str:
    return (
        "filter must be a callable taking a Document or a mapping of metadata values, "
        f"got {type(doc_filter).__name__} {doc_filter!r}."
    )


def row_predicate(
    docs: DocumentColumns, doc_filter: DocumentFilter | None
) -> Callable[[int], bool] | None:
    """``doc_filter`` as a test of a row; a callable's answers are remembered for the query.

    Raises:
        TypeError: If ``doc_filter`` is neither a callable nor a mapping.
    """
    if doc_filter is None:
        return None
    if isinstance(doc_filter, Mapping):
        pairs = tuple(doc_filter.items())
        metadatas = docs.metadatas

        def matches(row: int) -> bool:
            meta = metadatas[row] or {}
            return all(meta.get(key) == value for key, value in pairs)

        return matches
    if not callable(doc_filter):
        raise TypeError(_not_a_filter(doc_filter))
    seen: dict[int, bool] = {}  # the pool grows in rounds: each row is judged once

    def accepted(row: int) -> bool:
        hit = seen.get(row)
        if hit is None:
            hit = seen[row] = bool(doc_filter(docs.filter_view(row)))
        return hit

    return accepted


def top_k_rows(scores: npt.NDArray[np.float32], k: int) -> npt.NDArray[np.intp]:
    """Indices of the ``k`` largest scores, best first (ties: lower row first)."""
    n = scores.shape[0]
    negated = -scores  # the methods np.argsort / np.argpartition call, without their wrappers
    if k >= n:
        return negated.argsort(kind="stable")
    part = negated.argpartition(k - 1)[:k]
    # argpartition picks any of the rows tied with the k-th score: take all that reach it
    # (ascending rows; one more pass, cheap next to the partition) and keep the lower ones
    reach = (negated <= negated[part].max()).nonzero()[0]
    if len(reach) > k:
        part = reach
    else:
        part.sort()
    return part[negated[part].argsort(kind="stable")[:k]]


def mmr(
    vectors: npt.NDArray[np.float32], similarity: npt.NDArray[np.float32], k: int, lam: float
) -> list[int]:
    """Maximal marginal relevance over normalized ``vectors`` (cosine = dot product)."""
    n = vectors.shape[0]
    if n == 0 or k <= 0:
        return []
    chosen = [0]  # candidates arrive best first
    redundancy = vectors @ vectors[0]
    while len(chosen) < min(k, n):
        score = lam * similarity - (1 - lam) * redundancy
        score[chosen] = -np.inf
        best = int(np.argmax(score))
        chosen.append(best)
        redundancy = np.maximum(redundancy, vectors @ vectors[best])
    return chosen
