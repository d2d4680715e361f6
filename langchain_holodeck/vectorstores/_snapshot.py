"""What one query of ``MatrixVectorStore`` sees, and how it ranks it.

A ``Snapshot`` is the immutable view a query takes at its start (the store's writers publish a
new one after every write); ``top_rows`` finds its best rows, from the quantized codes when the
snapshot has them and by the exact matrix-vector scan otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from langchain_holodeck.vectorstores import _quantized
from langchain_holodeck.vectorstores._columns import DocumentColumns
from langchain_holodeck.vectorstores._ranking import DocumentFilter, row_predicate, top_k_rows


@dataclass(frozen=True)
class Snapshot:
    """An immutable view of the store: what one query sees, whatever writers do meanwhile.

    ``vectors`` and ``docs`` are append-only between compactions (rows ``< size`` are
    never written again), and ``alive`` is replaced, not mutated, on every write.
    """

    vectors: npt.NDArray[np.float32]  # shape (size, dim): a view of the live buffer
    docs: DocumentColumns  # shared, append-only; only the first ``size`` rows are ours
    alive: npt.NDArray[np.bool_] | None  # None when no row is tombstoned
    size: int
    live: int
    quantized: _quantized.QuantizedIndex | None = None  # codes of rows < quantized.sealed


EMPTY = Snapshot(np.zeros((0, 0), dtype=np.float32), DocumentColumns(), None, 0, 0)


def top_rows(
    snap: Snapshot,
    embedding: Sequence[float] | npt.ArrayLike,
    k: int,
    doc_filter: DocumentFilter | None,
    *,
    exact: bool = False,
    rescore_candidates: int,
) -> tuple[list[int], list[float]]:
    """The ``k`` best live rows of ``snap`` for ``embedding`` and their cosines, best first.

    From the quantized codes when ``snap`` has them (and not ``exact``), re-scoring the best
    ``rescore_candidates`` exactly; else, or when they give too few, by the exact scan.
    """
    rows, scores = top_row_arrays(
        snap, embedding, k, doc_filter, exact=exact, rescore_candidates=rescore_candidates
    )
    return rows.tolist(), scores.tolist()


def top_row_arrays(
    snap: Snapshot,
    embedding: Sequence[float] | npt.ArrayLike,
    k: int,
    doc_filter: DocumentFilter | None,
    *,
    exact: bool = False,
    rescore_candidates: int,
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.float32]]:
    """:func:`top_rows` as arrays: the rows (intp) and their float32 cosines."""
    accept = row_predicate(snap.docs, doc_filter)  # a bad filter fails on any store
    if k <= 0 or snap.live == 0:
        return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.float32)
    query = np.asarray(embedding, dtype=np.float32).reshape(-1)
    if query.shape[0] != snap.vectors.shape[1]:
        msg = (
            f"query vector has dimension {query.shape[0]} but the store holds "
            f"dimension {snap.vectors.shape[1]}; use the embedding model of the store, "
            "or re-ingest with force_ingest=True to rebuild its vectors."
        )
        raise ValueError(msg)
    norm = math.sqrt(query.dot(query))  # the query / norm of np.linalg.norm, bit for bit
    unit = query / norm if norm > 0 else query
    if snap.quantized is not None and not exact:
        found = quantized_rows(snap, unit, k, accept, rescore_candidates=rescore_candidates)
        if found is not None:
            return np.asarray(found[0], dtype=np.intp), np.asarray(found[1], dtype=np.float32)
    scores = np.asarray(snap.vectors @ unit, dtype=np.float32)
    if snap.alive is not None:
        scores[~snap.alive] = -np.inf
    if accept is None:
        rows = top_k_rows(scores, min(k, snap.live))
        return rows, scores[rows]
    fetch = 4 * k
    while True:
        rows = top_k_rows(scores, min(fetch, snap.live))
        hits = []
        for r in rows.tolist():
            if accept(r):
                hits.append(r)
                if len(hits) == k:
                    break
        if len(hits) == k or fetch >= snap.live:
            chosen = np.asarray(hits, dtype=np.intp)
            return chosen, scores[chosen]
        fetch *= 4


def quantized_rows(
    snap: Snapshot,
    unit: npt.NDArray[np.float32],
    k: int,
    accept: Callable[[int], bool] | None,
    *,
    rescore_candidates: int,
) -> tuple[list[int], list[float]] | None:
    """Top rows from the codes, re-scored exactly; ``None``: use the exact scan instead.

    The exact scan is used when too few candidates survive deletions (or the filter)
    even after the candidate pool has grown to a quarter of the store.
    """
    index = snap.quantized
    if index is None:
        return None
    want = min(k, snap.live)
    tail = np.arange(index.sealed, snap.size, dtype=np.int64)
    if snap.alive is None:
        tail_scores = snap.vectors[index.sealed : snap.size] @ unit
    else:
        tail = tail[snap.alive[index.sealed : snap.size]]
        tail_scores = snap.vectors[tail] @ unit
    pool = max(rescore_candidates, 4 * k)
    while True:
        coded = _quantized.candidate_rows(index, unit, pool, snap.alive, min_per_segment=2 * k)
        rows = np.concatenate([coded, tail])
        scores = np.concatenate([snap.vectors[coded] @ unit, tail_scores]).astype(np.float32)
        if accept is None:
            if len(rows) < want:
                return None
            top = top_k_rows(scores, want)
            return rows[top].tolist(), scores[top].tolist()
        # enough candidates must pass for their best k to be as good as an unfiltered
        # top k: 20 per result (half the pool at most), else the pool grows
        needed = max(k, min(20 * k, pool // 2))
        hits = []
        for n in top_k_rows(scores, len(rows)).tolist():  # best first, until enough pass
            if accept(int(rows[n])):
                hits.append(n)
                if len(hits) == needed:
                    break
        if len(hits) >= needed:
            return rows[hits[:k]].tolist(), scores[hits[:k]].tolist()
        pool *= 8
        if pool * 4 > snap.size:
            return None
