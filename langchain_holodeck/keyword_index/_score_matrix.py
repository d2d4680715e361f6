"""BM25 score matrices: bm25s's eager CSC layout, its build, MaxScore top k, and the top k's ids.

The numpy core of ``BM25KeywordIndex`` (``bm25.py``): a matrix holds each term's precomputed
scores per document; a search adds a few columns, or prunes with MaxScore.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from langchain_holodeck.contracts import RankedIds

__all__ = ["SCORE_ALL_BELOW", "ScoreMatrix", "build_matrix", "no_hits", "packed", "top_k"]


SCORE_ALL_BELOW = 12_288
"""Postings (all the query's columns together) up to which a ``maxscore`` search scores every
one instead of pruning: there MaxScore's bookkeeping costs more than the postings it skips.
On the synthetic corpus (5-word queries, k=300; median 500 postings at 10k chunks, 5,600 at
100k), at 100k chunks: 0.40 vs 0.57 ms under 4k postings, 0.66 vs 0.78 at 8-12k, even at
12-16k, MaxScore ahead past 16k (1.0 vs 0.88 ms at 16-24k)."""


@dataclass(frozen=True)
class ScoreMatrix:
    """A BM25 score matrix in bm25s's eager CSC layout: column = term, row = document.

    ``data[indptr[t]:indptr[t+1]]`` are the precomputed scores ``idf(t) * tfc(t, d)`` of
    term ``t`` in documents ``indices[indptr[t]:indptr[t+1]]`` (each row once per column).
    """

    data: np.ndarray
    indices: np.ndarray
    indptr: np.ndarray
    n_rows: int
    col_max: np.ndarray  # float32 per term: the largest score in its column (0 when empty)

    def scores(self, query: dict[int, int], live: np.ndarray | None) -> np.ndarray:
        out = np.zeros(self.n_rows, dtype=np.float32)
        n_terms = len(self.indptr) - 1
        for tid, count in query.items():
            if tid >= n_terms:
                continue
            start, end = self.indptr[tid], self.indptr[tid + 1]
            # rows are unique within a column: plain fancy-index add is exact (no add.at)
            out[self.indices[start:end]] += self.data[start:end] * count
        if live is not None:
            out *= live
        return out

    def top_candidates(
        self,
        query: dict[int, int],
        live: np.ndarray | None,
        k: int,
        *,
        score_all_below: int = SCORE_ALL_BELOW,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Rows (ascending) that include every row of the exhaustive top ``k``, exactly scored.

        When the query's columns hold at most ``score_all_below`` postings in all, every
        posting is scored (``_all_postings``: no pruning pays for itself on so few).
        Otherwise MaxScore over the term columns: columns are taken in descending order of their
        upper bound (``col_max * count``) and added whole into an accumulator until a lower
        bound of the k-th best score (the k-th best accumulated score among the rows of one
        column) exceeds the sum of the remaining columns' bounds: then no unseen row can
        reach the top ``k``. The remaining, long columns are only probed for the candidates
        (binary search in their sorted rows), and candidates whose accumulated score plus
        the remaining bounds fall below that k-th best are dropped. The few survivors are
        re-scored in the same order and precision as :meth:`scores`, so their scores are
        bit-identical to it.
        """
        n_terms = len(self.indptr) - 1
        indptr = self.indptr
        terms = [
            (tid, count)
            for tid, count in query.items()
            if tid < n_terms and indptr[tid + 1] > indptr[tid]
        ]
        if not terms:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        postings = sum(int(indptr[t + 1] - indptr[t]) for t, _ in terms)
        if postings <= score_all_below:
            return self._all_postings(terms, live)
        bounds = np.array([float(self.col_max[t]) * c for t, c in terms])
        order = np.argsort(-bounds, kind="stable")
        rest = np.concatenate([np.cumsum(bounds[order][::-1])[::-1], [0.0]])
        acc = np.zeros(self.n_rows, dtype=np.float32)
        touched: list[np.ndarray] = []
        theta, step = 0.0, 0
        while step < len(order):  # whole columns, until no unseen row can enter the top k
            tid, count = terms[order[step]]
            start, end = self.indptr[tid], self.indptr[tid + 1]
            col = self.indices[start:end]
            acc[col] += self.data[start:end] * count
            touched.append(col)
            step += 1
            # the rows of one column are distinct: their k-th best bounds the final k-th
            theta = max(theta, _kth(acc[col] if live is None else acc[col] * live[col], k))
            if theta * _SAFE > rest[step]:
                break
        n_touched = sum(len(c) for c in touched)
        if n_touched * 8 < self.n_rows:
            rows = _sorted_unique(np.concatenate(touched).astype(np.int64))
        else:
            rows = np.flatnonzero(acc)
        if live is not None:
            rows = rows[live[rows] > 0]
        partial = acc[rows].astype(np.float64)
        while True:  # probe the long columns for candidates only; prune on the way
            theta = max(theta, _kth(partial, k))
            keep = partial + rest[step] >= theta * _SAFE
            rows, partial = rows[keep], partial[keep]
            if step == len(order) or not len(rows):
                break
            tid, count = terms[order[step]]
            hit, pos = self._probe(tid, rows)
            partial[hit] += self.data[pos[hit]].astype(np.float64) * count
            step += 1
        return rows, self._exact(query, rows)

    def _all_postings(
        self, terms: list[tuple[int, int]], live: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Every live row of the query's (non-empty) columns, scored as :meth:`scores` does.

        The same float32 additions in the same (query) order, on a compact accumulator over
        the rows the columns hold instead of one over every row: bit-identical scores, at a
        cost that grows with the postings, not with the corpus.
        """
        indptr, indices, data = self.indptr, self.indices, self.data
        spans = [(int(indptr[t]), int(indptr[t + 1]), c) for t, c in terms]
        if len(spans) == 1:
            start, end, count = spans[0]
            rows = indices[start:end]  # one column: its rows, ascending and distinct
            out = np.zeros(len(rows), dtype=np.float32)
            out += data[start:end] * count
        else:
            postings = np.concatenate([indices[s:e] for s, e, _ in spans])
            # each posting's score times its term's count, in float32 as scores() multiplies
            counts = np.array([c for _, _, c in spans], dtype=np.float32)
            lengths = [e - s for s, e, _ in spans]
            values = np.concatenate([data[s:e] for s, e, _ in spans])
            values *= np.repeat(counts, lengths)
            rows = _sorted_unique(postings)
            out = np.zeros(len(rows), dtype=np.float32)
            # add.at adds one posting at a time, in query-term order: the float32 sums of
            # scores()'s column-by-column adds, bit for bit
            np.add.at(out, rows.searchsorted(postings), values)
        rows = rows.astype(np.int64)
        if live is not None:
            keep = live[rows] > 0
            rows, out = rows[keep], out[keep]
        return rows, out

    def _probe(self, tid: int, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Which ``rows`` occur in column ``tid`` and their positions in ``data``."""
        start, end = int(self.indptr[tid]), int(self.indptr[tid + 1])
        col = self.indices[start:end]
        pos = np.searchsorted(col, rows)
        pos_c = np.minimum(pos, max(end - start - 1, 0))
        hit = (pos < end - start) & (col[pos_c] == rows)
        return hit, pos_c + start

    def _exact(self, query: dict[int, int], rows: np.ndarray) -> np.ndarray:
        """Scores of ``rows`` computed as :meth:`scores` does (same order, float32)."""
        out = np.zeros(len(rows), dtype=np.float32)
        n_terms = len(self.indptr) - 1
        for tid, count in query.items():
            if tid >= n_terms or self.indptr[tid + 1] == self.indptr[tid]:
                continue
            hit, pos = self._probe(tid, rows)
            out[hit] += self.data[pos[hit]] * count
        return out


def no_hits() -> RankedIds:
    """An empty answer, a new one each time (a caller may extend what it is given)."""
    return RankedIds([], np.zeros(0, dtype=np.float64), unique=True)


_SAFE = 1 - 1e-4
"""Bounds are compared with this slack, far above float32 rounding: pruning stays exact."""


def _sorted_unique(values: np.ndarray) -> np.ndarray:
    """``np.unique(values)``, by a sort.

    NumPy 2's hashing ``unique`` costs about ten times more on the few thousand rows of one
    query.
    """
    ordered = values.copy()  # np.sort's own steps
    ordered.sort()
    if len(ordered) < 2:
        return ordered
    return ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))]


def _kth(values: np.ndarray, k: int) -> float:
    """The k-th largest value, or 0 when there are fewer than ``k``."""
    if len(values) < k:
        return 0.0
    return float(np.partition(values, len(values) - k)[len(values) - k])


_CHUNK_TERMS = 1 << 22
"""Terms sorted per step of a build: about 100 MB of temporaries, whatever the corpus size."""


def _row_chunks(offsets: np.ndarray, chunk_terms: int) -> list[tuple[int, int]]:
    """Consecutive row ranges of at most ``chunk_terms`` terms (at least one row each)."""
    n = len(offsets) - 1
    out = []
    r0 = 0
    while r0 < n:
        r1 = int(np.searchsorted(offsets, offsets[r0] + chunk_terms, side="right")) - 1
        r1 = min(n, max(r1, r0 + 1))
        out.append((r0, r1))
        r0 = r1
    return out


def _tf_pairs(
    flat: np.ndarray, offsets: np.ndarray, r0: int, r1: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(term, row - r0, tf) for every distinct (term, row) of rows ``r0 .. r1 - 1``.

    Sorted by term then row. Row ``r``'s terms are ``flat[offsets[r]:offsets[r + 1]]``.
    Built in place where numpy allows; each temporary is dropped as soon as the next exists.
    """
    n = r1 - r0
    if n <= 0 or offsets[r1] == offsets[r0]:
        empty = np.zeros(0, np.int32)
        return empty, empty, np.zeros(0, np.float32)
    lengths = np.diff(offsets[r0 : r1 + 1])
    keys = flat[offsets[r0] : offsets[r1]].astype(np.int64)
    keys *= n
    keys += np.repeat(np.arange(n, dtype=np.int64), lengths)
    keys.sort()  # in place: np.unique would sort a copy
    first = np.empty(len(keys), dtype=bool)
    first[:1] = True
    np.not_equal(keys[1:], keys[:-1], out=first[1:])
    total = len(keys)
    keys = keys[first]  # the distinct (term, row) keys
    starts = np.flatnonzero(first)
    del first
    tf = np.diff(starts, append=total).astype(np.float32)
    del starts
    terms = (keys // n).astype(np.int32)
    keys %= n
    rows = keys.astype(np.int32)
    del keys
    return terms, rows, tf


def packed(token_arrays: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """``(flat, offsets)`` of a few documents' term arrays (a delta segment)."""
    offsets = np.zeros(len(token_arrays) + 1, dtype=np.int64)
    np.cumsum([len(a) for a in token_arrays], out=offsets[1:])
    flat = np.concatenate(token_arrays) if token_arrays else np.zeros(0, dtype=np.int32)
    return flat, offsets


def _lucene_idf(df: np.ndarray, n_docs: int) -> np.ndarray:
    return np.log1p((n_docs - df + 0.5) / (df + 0.5))


def build_matrix(
    flat: np.ndarray,
    offsets: np.ndarray,
    n_terms: int,
    *,
    k1: float,
    b: float,
    stats: tuple[np.ndarray, int, float] | None = None,
    chunk_terms: int = _CHUNK_TERMS,
) -> tuple[ScoreMatrix, np.ndarray, float]:
    """Build a score matrix; ``stats`` = (df, n_docs, avgdl) of another segment to score with.

    Row ``r`` holds the terms ``flat[offsets[r]:offsets[r + 1]]``. Returns the matrix and
    the (df, avgdl) of these rows themselves. The formula is bm25s's ``method="lucene"``:
    ``idf = ln(1 + (N - df + .5)/(df + .5))``, ``tfc = tf / (tf + k1 (1 - b + b |d| / avgdl))``.

    Two passes over chunks of ``chunk_terms`` terms: the first counts each term's documents
    (the column sizes), the second scores each chunk's postings and writes them straight to
    their place in the columns. The temporaries are a chunk's, so a full build needs little
    more memory than the matrix itself; the result is the same as one pass over all rows.
    """
    n_rows = len(offsets) - 1
    lengths = np.diff(offsets).astype(np.float64)
    chunks = _row_chunks(offsets, chunk_terms)
    own_df = np.zeros(n_terms, dtype=np.int64)
    for r0, r1 in chunks:
        terms, _, _ = _tf_pairs(flat, offsets, r0, r1)
        own_df += np.bincount(terms, minlength=n_terms)
    own_avgdl = float(lengths.mean()) if len(lengths) else 0.0
    if stats is None:
        idf = _lucene_idf(own_df, n_rows)
        avgdl = own_avgdl
    else:
        df, n_docs, avgdl = stats
        full_df = np.zeros(n_terms, dtype=np.int64)
        full_df[: len(df)] = df
        unseen = full_df == 0
        full_df[unseen] = own_df[unseen]  # a term only the delta has: its own df
        # N >= every df keeps each idf positive (MaxScore's bounds need scores >= 0): a delta
        # larger than the main segment may hold a new term more often than main has docs
        idf = _lucene_idf(full_df, max(n_docs, n_rows, 1))
    avgdl = avgdl or 1.0
    idf32 = idf.astype(np.float32)
    lengths32 = lengths.astype(np.float32)
    del lengths
    indptr = np.zeros(n_terms + 1, dtype=np.int64)
    np.cumsum(own_df, out=indptr[1:])
    indices = np.empty(int(indptr[-1]), dtype=np.int32)
    data = np.empty(int(indptr[-1]), dtype=np.float32)
    cursor = indptr[:-1].copy()  # next free place in each column
    for r0, r1 in chunks:
        terms, rows, tf = _tf_pairs(flat, offsets, r0, r1)
        rows += r0
        # tfc = tf / (tf + k1 (1 - b + b |d| / avgdl)), computed in one float32 buffer
        tfc = lengths32[rows]
        tfc *= k1 * b / avgdl
        tfc += k1 * (1 - b)
        tfc += tf
        np.divide(tf, tfc, out=tfc)
        del tf
        scores = idf32[terms]
        scores *= tfc
        del tfc
        # the chunk's postings are sorted by term then row: each term's run goes, in order,
        # to the next free places of its column
        counts = np.bincount(terms, minlength=n_terms)
        run_start = np.cumsum(counts) - counts
        place = np.arange(len(terms), dtype=np.int64)
        place -= run_start[terms]
        place += cursor[terms]
        indices[place] = rows
        data[place] = scores
        cursor += counts
        del terms, rows, scores, place
    col_max = np.zeros(n_terms, dtype=np.float32)
    nonempty = np.flatnonzero(own_df)
    if len(nonempty):
        col_max[nonempty] = np.maximum.reduceat(data, indptr[nonempty])
    return ScoreMatrix(data, indices, indptr, n_rows, col_max), own_df, own_avgdl


def top_k(
    segments: Sequence[tuple[Sequence[str], np.ndarray | None]],
    scores: np.ndarray,
    k: int,
) -> RankedIds:
    """The ``k`` best positive scores, best first; ties by position.

    ``scores`` concatenates the segments' scores, one per position; a segment is its ids
    and the rows its positions stand for (``None``: position ``i`` is row ``i``). Only the
    returned positions are turned into ids.
    """
    # (array methods, not the np.* functions that wrap them: this runs on every query)
    candidates = (scores > 0).nonzero()[0]
    if len(candidates) == 0:
        return no_hits()
    if len(candidates) > 4 * k:  # many: keep those reaching the k-th best before sorting
        part = scores[candidates]
        kth = np.partition(part, len(part) - k)[len(part) - k]
        candidates = candidates[part >= kth]
    # candidates ascend: a stable sort by score breaks ties by position
    order = (-scores[candidates].astype(np.float64)).argsort(kind="stable")
    best = candidates[order[:k]]
    if len(segments) == 1:  # no delta segment: one pass, position i stands for row rows[i]
        only_ids, only_rows = segments[0]
        found = best if only_rows is None else only_rows[best]
        ids = list(map(only_ids.__getitem__, found.tolist()))
    else:
        ids = [""] * len(best)
        start = 0
        for segment_ids, rows in segments:
            size = len(segment_ids) if rows is None else len(rows)
            slots = np.flatnonzero((best >= start) & (best < start + size))
            local = best[slots] - start
            for slot, row in zip(
                slots.tolist(), (local if rows is None else rows[local]).tolist(), strict=True
            ):
                ids[slot] = segment_ids[row]
            start += size
    return RankedIds(ids, scores[best].astype(np.float64), unique=True)
