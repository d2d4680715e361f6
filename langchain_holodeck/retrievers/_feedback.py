"""Dense pseudo-relevance feedback: the query vector moved toward the first fused results.

After the legs are fused once, the query vector ``q`` (unit length) is moved toward the mean
of the stored vectors of the ``docs`` best fused chunks (Rocchio, 1971, with no negative
feedback)::

    q' = unit(q + weight * mean(v_1, ..., v_docs))

and the first ``FEEDBACK_DEPTH`` candidates of each leg (dense and keyword) get their relevance
for ``q'``; that ranking takes the dense leg's place in a second fusion. The first results carry
what the keyword leg knows into the dense leg, which then ranks the candidates closer to the
documents both legs agree on. Only those candidates are re-scored (no second search).

It needs a store that returns its vectors by id and scores ids by vector
(:class:`~langchain_holodeck.contracts.StoredVectors` and
:class:`~langchain_holodeck.contracts.IdVectorSearch`, e.g. ``MatrixVectorStore``); on any
other store it is skipped. It is also skipped when the best fused chunk is source code
(``NO_FEEDBACK_CHUNK_TYPES``), and code chunks are never fed back.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from operator import itemgetter

import numpy as np
from langchain_core.documents import Document

from langchain_holodeck._chunk import CHUNK_TYPE, CODE_CHUNK_TYPE
from langchain_holodeck.contracts import (
    ArrayIdVectorSearch,
    IdVectorSearch,
    StoredVectors,
    answers_with_arrays,
)

__all__ = [
    "FEEDBACK_DEPTH",
    "NO_FEEDBACK_CHUNK_TYPES",
    "feedback_arrays",
    "feedback_ids",
    "feedback_query",
    "feedback_ranking",
    "supports_feedback",
]

FEEDBACK_DEPTH = 50
"""Candidates re-scored per leg (at least ``k``). On SciFact train, nDCG@10 of ``invoke(k=10)``:
0.74576 at 100 and at 50, 0.74540 at 30 (``benchmarks/bench_feedback.py --depths``); 150 to 300
gave 0.7458-0.7462 (measured at ``k=100``, where 100 are re-scored whatever the depth below).
The cost is about proportional to it: 50 rather than 100 took the 10k-chunk synthetic query from
1.98 to 1.85 ms (``bench_hybrid_speed.py --paired``)."""

NO_FEEDBACK_CHUNK_TYPES: frozenset[str] = frozenset({CODE_CHUNK_TYPE})
"""``chunk_type`` values never fed back; a query whose best chunk is one gets no feedback.

Code: a query names one function, and feedback pulls the query toward its neighbours. On the
code set's dev split every setting tried lost nDCG@10 (0.549 without feedback; 0.534 to 0.546
with 1-3 chunks x 0.25-0.75, ``bench_code.py --split dev --feedback-grid``), while SciFact
train gained (0.7403 -> 0.7462 with the default 3 x 0.75)."""


def supports_feedback(store: object) -> bool:
    """Whether ``store`` hands back vectors by id and scores ids by vector."""
    return isinstance(store, StoredVectors) and isinstance(store, IdVectorSearch)


def feedback_arrays(store: object) -> bool:
    """Whether ``store`` answers the feedback with arrays (``ArrayIdVectorSearch``).

    Only when its twins are defined with the plain methods they stand for.
    """
    return isinstance(store, ArrayIdVectorSearch) and answers_with_arrays(
        store, ("similarity_by_ids", "rank_ids"), ("get_vectors", "vectors_by_ids")
    )


def feedback_query(
    query: Sequence[float] | np.ndarray,
    vectors: Sequence[Sequence[float]] | np.ndarray,
    *,
    weight: float,
) -> np.ndarray:
    """``unit(unit(query) + weight * mean(unit(v) for v in vectors))``, float32.

    ``vectors`` empty or ``weight`` 0 gives ``unit(query)``; a zero query stays zero.
    """
    # np.linalg.norm and ndarray.mean, spelled as the operations they run (the same float32
    # results, without their Python-level argument handling: this runs on every query); a
    # norm is math.sqrt of the float32 dot product: dividing a float32 array by it rounds it
    # to float32 first, which is exactly np.sqrt's float32 root (a double root rounded to
    # float32 is the correctly rounded float32 root)
    q = np.asarray(query, dtype=np.float32).reshape(-1)
    norm = math.sqrt(q.dot(q))
    if norm > 0:
        q = q / norm
    if len(vectors) and weight > 0:
        v = np.asarray(vectors, dtype=np.float32).reshape(len(vectors), -1)
        lengths = np.sqrt(np.add.reduce(v * v, axis=1, keepdims=True))
        centroid = np.add.reduce(v / np.where(lengths > 0, lengths, 1.0), axis=0)
        np.true_divide(centroid, np.intp(len(v)), out=centroid, casting="unsafe")
        q = (q + weight * centroid).astype(np.float32, copy=False)  # float32 already, mostly
    norm = math.sqrt(q.dot(q))
    return q / norm if norm > 0 else q


def feedback_ids(top: Sequence[str], documents: Sequence[Document]) -> list[str]:
    """The ids of ``top`` (the best fused chunks, read as ``documents``) to feed back.

    None when the first is missing or of a ``NO_FEEDBACK_CHUNK_TYPES`` type; otherwise, best
    first, the ones read whose type is not.
    """
    if not top:
        return []
    types = {d.id: d.metadata.get(CHUNK_TYPE) for d in documents if d.id}
    if top[0] not in types or types[top[0]] in NO_FEEDBACK_CHUNK_TYPES:
        return []
    return [i for i in top if i in types and types[i] not in NO_FEEDBACK_CHUNK_TYPES]


def feedback_ranking(
    store: object,
    query: Sequence[float] | np.ndarray,
    feedback_ids: Sequence[str],
    candidates: Sequence[str],
    *,
    weight: float,
    depth: int,
    arrays: bool | None = None,
) -> Sequence[tuple[str, float]] | None:
    """The ``candidates`` ranked by relevance to the feedback query, best ``depth`` first.

    ``None`` when the store holds none of ``feedback_ids`` (nothing to feed back). Ties keep
    the order of ``candidates``. A store answering with arrays (``ArrayIdVectorSearch``)
    gives ``RankedIds``: the same ids, order and scores. ``arrays``: ``feedback_arrays(store)``
    when the caller knows it already.
    """
    if arrays if arrays is not None else feedback_arrays(store):
        arrays_store: ArrayIdVectorSearch = store  # type: ignore[assignment]  # checked above
        found_ids, rows = arrays_store.vectors_by_ids(list(feedback_ids))
        if not found_ids:
            return None
        moved = feedback_query(query, rows, weight=weight)
        ranking = arrays_store.rank_ids(moved, list(candidates))
        return ranking if len(ranking) <= depth else ranking[:depth]
    vectors: StoredVectors = store  # type: ignore[assignment]  # supports_feedback checked it
    found = vectors.get_vectors(list(feedback_ids)) if feedback_ids else {}
    if not found:
        return None
    moved = feedback_query(query, [found[i] for i in feedback_ids if i in found], weight=weight)
    search: IdVectorSearch = store  # type: ignore[assignment]  # supports_feedback checked it
    scores = search.similarity_by_ids(moved, list(candidates))  # an array: no list round trip
    ranked = [(i, scores[i]) for i in candidates if i in scores]
    ranked.sort(key=itemgetter(1), reverse=True)  # stable: ties keep the candidates' order
    return ranked[:depth]
