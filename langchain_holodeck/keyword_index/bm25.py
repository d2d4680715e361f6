"""In-memory BM25: sparse score matrices and the incremental ``BM25KeywordIndex``.

Terms come from ``keyword_index.tokenizer.Tokenizer`` (re-exported here).
"""

from __future__ import annotations

import json
import logging
import math
import threading
import zipfile
from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from itertools import repeat
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np

from langchain_holodeck._chunk import (
    CHUNK_TYPE,
    CODE_CHUNK_TYPE,
    SYMBOLS,
    chunk_hashes,
    content_digest,
)
from langchain_holodeck._defaults import DEFAULT_PAIR_WEIGHT
from langchain_holodeck._persist import (
    atomic_write,
    atomic_write_bytes,
    directory_lock,
    generation_name,
    remove_other_generations,
    remove_stale_temporaries,
)
from langchain_holodeck.contracts import RankedIds
from langchain_holodeck.keyword_index._pairs import PAIR_DEPTH, pair_bonus, query_pairs
from langchain_holodeck.keyword_index._term_store import TermStore
from langchain_holodeck.keyword_index.base import KeywordHit, check_ids, check_k, scan_store
from langchain_holodeck.keyword_index.tokenizer import IdentifierPolicy, Tokenizer

if TYPE_CHECKING:
    from langchain_core.documents import Document
    from langchain_core.vectorstores import VectorStore

__all__ = ["BM25KeywordIndex", "Tokenizer"]

logger = logging.getLogger(__name__)

NAME_REPEATS = 2
"""Extra times a code chunk's defined names (``symbols``) are counted. Chosen on the code set's
dev split (``docs/quality.md``): 1 to 3 extra gave the same fused Pass@10 there, 2 the middle."""
_FORMAT = "holodeck-bm25/1"
_META_FILE = "bm25_index.json"
_TOKENS_FILE = "bm25_tokens.npz"


SCORE_ALL_BELOW = 12_288
"""Postings (all the query's columns together) up to which a ``maxscore`` search scores every
one instead of pruning: there MaxScore's bookkeeping costs more than the postings it skips.
On the synthetic corpus (5-word queries, k=300; median 500 postings at 10k chunks, 5,600 at
100k), at 100k chunks: 0.40 vs 0.57 ms under 4k postings, 0.66 vs 0.78 at 8-12k, even at
12-16k, MaxScore ahead past 16k (1.0 vs 0.88 ms at 16-24k)."""


@dataclass(frozen=True)
class _Matrix:
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


def _no_hits() -> RankedIds:
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


def _packed(token_arrays: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """``(flat, offsets)`` of a few documents' term arrays (a delta segment)."""
    offsets = np.zeros(len(token_arrays) + 1, dtype=np.int64)
    np.cumsum([len(a) for a in token_arrays], out=offsets[1:])
    flat = np.concatenate(token_arrays) if token_arrays else np.zeros(0, dtype=np.int32)
    return flat, offsets


def _lucene_idf(df: np.ndarray, n_docs: int) -> np.ndarray:
    return np.log1p((n_docs - df + 0.5) / (df + 0.5))


def _build_matrix(
    flat: np.ndarray,
    offsets: np.ndarray,
    n_terms: int,
    *,
    k1: float,
    b: float,
    stats: tuple[np.ndarray, int, float] | None = None,
    chunk_terms: int = _CHUNK_TERMS,
) -> tuple[_Matrix, np.ndarray, float]:
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
    return _Matrix(data, indices, indptr, n_rows, col_max), own_df, own_avgdl


@dataclass(frozen=True)
class _Snapshot:
    """An immutable searchable state: a main segment, a small delta segment, tombstones."""

    main_ids: list[str]
    main: _Matrix | None
    live: np.ndarray | None  # float32 0/1 per main row; None = all live
    delta_ids: list[str]
    delta: _Matrix | None


class BM25KeywordIndex:
    """In-memory BM25 keyword index over chunk Documents, updated incrementally.

    Indexes ``Document.page_content`` (the contextualized text when present) under
    ``Document.id``. The text itself is not kept: only each chunk's term ids, all chunks'
    in one flat 16-bit array (32-bit once the vocabulary passes 65,536 terms).

    Engines:
        ``"bm25s"`` (default): bm25s's eager sparse score-matrix layout and Lucene formula
        (``k1``/``b``), implemented here with numpy (the bm25s package itself supplies only the
        English stop words); a query sums a few matrix columns. ``"rank_bm25"``:
        ``rank_bm25.BM25Okapi`` (k1=1.5, b=0.75), rebuilt on the next search after any change.

    Top k (``bm25s``): with ``scoring="maxscore"`` a query does not score every posting of
    its terms: MaxScore pruning with per-term upper bounds reads the rare terms' columns
    whole and only probes the long columns of frequent terms for the surviving candidates
    (binary search). The top ``k`` is identical to scoring every posting
    (``scoring="exhaustive"``): same ids, same order, bit-identical scores.

    Incremental updates (``bm25s``): documents upserted after the last full build live in a
    small *delta* segment scored with the main segment's statistics (idf, average length),
    and replaced or deleted rows of the main segment are masked (tombstones) — as Lucene does
    with segments. The next search after a change rebuilds only the delta, unless the changes
    exceed ``max_delta_ratio`` of the corpus: then everything is rebuilt once (at 100k chunks
    of ~120 words a full build takes about a second; a delta of 1% a few milliseconds).
    Scores between two full builds are therefore close to, not bit-identical with, a fresh
    index's.

    Adjacent-term pairs (``pair_weight``): the best ``PAIR_DEPTH`` candidates (100) are
    re-scored, each gaining ``pair_weight`` times the BM25 of the query's pairs of consecutive
    terms it holds side by side (stop words dropped first; ``keyword_index/_pairs.py``). Code
    chunks (``chunk_type: code``) gain nothing: on the code dev split the pairs cost Pass@10,
    on prose they lift the fused ranking (``docs/quality.md``). ``pair_weight=0`` turns it off.

    Key init args:
        stopwords: ``"english"`` (bm25s's list), a collection of words, or ``None``.
        stemmer: A Snowball language for PyStemmer (``"english"``) or ``None``.
        scoring: ``"maxscore"`` (default) or ``"exhaustive"``; both give the same top k.
        pair_weight: The weight of a pair's BM25 beside its terms' (0.5); ``0``
            ranks by the terms alone.

    Instantiate:
        ```python
        index = BM25KeywordIndex()
        index.upsert(chunks)  # Documents with ids
        index.search("arch controls", k=5)  # -> [KeywordHit(id='…', score=3.1), ...]
        ```

    Persist:
        ```python
        index.save("store_dir")
        index = BM25KeywordIndex.load("store_dir")
        ```
    """

    in_process: ClassVar[bool] = True
    """Searches run in this process, holding the GIL (no I/O): callers need no thread."""

    def __init__(
        self,
        *,
        engine: Literal["bm25s", "rank_bm25"] = "bm25s",
        k1: float = 1.5,
        b: float = 0.75,
        stopwords: str | Collection[str] | None = "english",
        stemmer: str | None = "english",
        max_delta_ratio: float = 0.1,
        scoring: Literal["maxscore", "exhaustive"] = "maxscore",
        identifiers: IdentifierPolicy = "everywhere",
        pair_weight: float = DEFAULT_PAIR_WEIGHT,
    ) -> None:
        if identifiers not in ("code", "everywhere"):
            msg = f"identifiers must be 'code' or 'everywhere', got {identifiers!r}."
            raise ValueError(msg)
        if scoring not in ("maxscore", "exhaustive"):
            msg = f"scoring must be 'maxscore' or 'exhaustive', got {scoring!r}."
            raise ValueError(msg)
        if engine not in ("bm25s", "rank_bm25"):
            msg = f"engine must be 'bm25s' or 'rank_bm25', got {engine!r}."
            raise ValueError(msg)
        if not (math.isfinite(k1) and k1 >= 0):
            msg = f"k1 must be a finite number >= 0, got {k1!r}."
            raise ValueError(msg)
        if not (math.isfinite(pair_weight) and pair_weight >= 0):
            msg = f"pair_weight must be a finite number >= 0, got {pair_weight!r}."
            raise ValueError(msg)
        if not 0 <= b <= 1:
            msg = f"b must be between 0 and 1, got {b!r}."
            raise ValueError(msg)
        if not 0 <= max_delta_ratio <= 1:
            msg = f"max_delta_ratio must be between 0 and 1, got {max_delta_ratio!r}."
            raise ValueError(msg)
        if engine == "rank_bm25":
            _import_rank_bm25()
        self.engine = engine
        self.k1, self.b = k1, b
        self.max_delta_ratio = max_delta_ratio
        self.scoring = scoring
        """``"maxscore"`` (prune with per-term bounds) or ``"exhaustive"`` (score all)."""
        self.identifiers: IdentifierPolicy = identifiers
        """``"code"``: only code chunks' identifiers are split; ``"everywhere"``: all chunks'."""
        self.pair_weight = pair_weight
        """The weight of adjacent-term pairs (see the class docstring); ``0``: none."""
        self.tokenizer = Tokenizer(stopwords=stopwords, stemmer=stemmer)
        self._code: set[str] = set()  # ids of code chunks: they gain no pair bonus
        self.chunk_types_known = True
        """Whether the code chunks are known; ``False`` for a save made before they were
        recorded, where pairs lift code chunks too (the tool rebuilds such a save)."""
        self._tokens = TermStore()  # live documents: id -> term ids, in one flat array
        self._lock = threading.RLock()
        self._snapshot: _Snapshot | None = None
        self._stale = True  # _snapshot does not reflect _tokens
        self._main_ids: list[str] = []
        # after a full build the term store is compacted: slot i is main row i, and slots
        # made later (delta documents) are >= len(_main_ids)
        self._main: _Matrix | None = None
        self._main_stats: tuple[np.ndarray, int, float] | None = None
        self._tombstones: set[int] = set()
        self._delta: set[str] = set()  # ids upserted since the last full build
        self._okapi: Any = None
        self.full_builds = 0
        """How many times the whole index was rebuilt (observability, tests)."""
        self.origin: str | None = None
        """What the index was built from, as its owner names it (a store's identity); saved
        and loaded with the index, so a save made over another store can be told apart."""
        self._content_digest: str | None = None
        self._writes = 0  # changes of content so far
        self._saved_writes: int | None = None  # _writes when last saved or loaded
        self._score_all_below = SCORE_ALL_BELOW  # tests set 0 to exercise MaxScore

    def __len__(self) -> int:
        return len(self._tokens)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._tokens

    @property
    def unsaved(self) -> bool:
        """Whether the content changed since the index was last saved or loaded (or neither)."""
        return self._writes != self._saved_writes

    @property
    def content_digest(self) -> str | None:
        """``content_digest`` of the ``id -> content_hash`` pairs indexed, when known.

        Set by a rebuild from a store, and by an owner that checked the index against one;
        any other write makes it unknown (``None``). Saved and loaded with the index, so a
        save behind the store's texts (another process re-ingested a file, same ids) can be
        told apart.
        """
        return self._content_digest

    @content_digest.setter
    def content_digest(self, digest: str | None) -> None:
        with self._lock:
            if digest != self._content_digest:
                self._content_digest = digest
                self._writes += 1  # saved with the index

    @property
    def ids(self) -> frozenset[str]:
        """The ids of the indexed chunks (to check the index against a store)."""
        with self._lock:
            return frozenset(self._tokens.slots)

    # -- writes -------------------------------------------------------------------------
    def upsert(self, documents: Sequence[Document]) -> None:
        """Add or replace ``documents`` by ``Document.id``.

        Raises:
            ValueError: When a document has no id (nothing is indexed then).
        """
        ids = check_ids(documents, type(self).__name__)
        with self._lock:  # the tokenizer's vocabulary grows: one writer at a time
            encoded = [self._encode(doc) for doc in documents]
            self._note_code(documents)
            for old in self._tokens.put(ids, encoded):
                if old is not None and old < len(self._main_ids):
                    self._tombstones.add(old)
            self._delta.update(ids)
            self._stale = True
            self._writes += bool(ids)
            if ids:
                self._content_digest = None

    def add_documents(self, documents: Sequence[Document]) -> None:
        """Alias of :meth:`upsert`."""
        self.upsert(documents)

    def delete(self, ids: Iterable[str]) -> None:
        """Remove documents by id; unknown ids are ignored."""
        with self._lock:
            for doc_id in ids:
                old = self._tokens.pop(doc_id)
                if old is None:
                    continue
                self._code.discard(doc_id)
                if old < len(self._main_ids):
                    self._tombstones.add(old)
                self._delta.discard(doc_id)
                self._stale = True
                self._writes += 1
                self._content_digest = None

    def clear(self) -> None:
        """Remove every document."""
        with self._lock:
            self._tokens.clear()
            self._code.clear()
            self._reset_segments()
            self._writes += 1

    def rebuild_from_store(self, store: VectorStore, *, namespace: str | None = None) -> int:
        """Replace the index content with every chunk stored in ``store``; return the count."""
        return self.replace(list(scan_store(store, namespace)))

    def replace(self, documents: Sequence[Document]) -> int:
        """Replace the content with ``documents``; return the count (id-less ones left out).

        At once: a search sees the old content or the new, never a mix.
        """
        docs = [d for d in documents if d.id]
        with self._lock:  # the tokenizer's vocabulary grows: one writer at a time
            encoded = [self._encode(d) for d in docs]
            self._tokens.clear()
            self._code.clear()
            self.chunk_types_known = True
            self._note_code(docs)
            self._tokens.put([d.id for d in docs], encoded)  # type: ignore[misc]  # ids above
            self._reset_segments()
            self._writes += 1
            self._content_digest = content_digest(chunk_hashes(docs))
            return len(self._tokens)

    def _note_code(self, documents: Sequence[Document]) -> None:
        """Record which of ``documents`` are code chunks (under the lock)."""
        for doc in documents:
            if doc.metadata.get(CHUNK_TYPE) == CODE_CHUNK_TYPE:
                self._code.add(doc.id)  # type: ignore[arg-type]  # ids checked by the caller
            else:
                self._code.discard(doc.id)  # type: ignore[arg-type]

    def _encode(self, doc: Document) -> np.ndarray:
        """A chunk's term ids: identifiers split in code chunks, or everywhere (``identifiers``).

        A code chunk's defined names (``symbols``) count ``NAME_REPEATS`` more times: a name
        field weighted above the body, as BM25F weights a title.
        """
        code = doc.metadata.get(CHUNK_TYPE) == CODE_CHUNK_TYPE
        split = self.identifiers == "everywhere" or code
        text = doc.page_content
        names = doc.metadata.get(SYMBOLS) if code else None
        if names and isinstance(names, list):
            text += ("\n" + " ".join(map(str, names))) * NAME_REPEATS
        return self.tokenizer.encode(text, identifiers=split)

    def _reset_segments(self) -> None:
        self._main_ids, self._main, self._main_stats = [], None, None
        self._tombstones.clear()
        self._delta = set(self._tokens.slots)
        self._okapi = None
        self._stale = True

    # -- search -------------------------------------------------------------------------
    def search(self, query: str, k: int) -> list[KeywordHit]:
        """Return the ``k`` best chunks for ``query``, best first.

        Only chunks sharing at least one (non-stop-word) term with the query are returned;
        ``k`` is clamped to the corpus, and an empty index or query gives ``[]``.
        Ties are broken by index order, so equal inputs give equal outputs.

        Raises:
            ValueError: When ``k`` is not a positive integer.
        """
        ranked = self.search_ranked(query, k)
        # tuple.__new__ is what KeywordHit(id, score) runs, without a Python frame per hit
        hits = zip(ranked.ids, ranked.scores.tolist(), strict=True)
        return list(map(tuple.__new__, repeat(KeywordHit), hits))

    def search_ranked(self, query: str, k: int) -> RankedIds:
        """:meth:`search` as ``RankedIds`` (ids and one score array): no tuple per hit.

        Raises:
            ValueError: When ``k`` is not a positive integer.
        """
        check_k(k)
        query_terms = self.tokenizer.encode_query(query, plain=self.identifiers == "code")
        if not query_terms or not self._tokens:
            return _no_hits()
        pairs = self._query_pairs(query) if self.pair_weight > 0 else None
        wanted, k = k, max(k, PAIR_DEPTH) if pairs else k
        if self.engine == "rank_bm25":
            ranked = self._search_okapi(query_terms, k)
        else:
            ranked = self._search_matrix(query_terms, k)
        return self._with_pairs(ranked, pairs, wanted) if pairs else ranked

    def _query_pairs(self, query: str) -> Counter[tuple[int, int]]:
        tok = self.tokenizer
        pairs = query_pairs([tok.term_ids.get(t, -1) for t in tok.split_terms(query)])
        if self.identifiers == "code":  # prose chunks hold the plain reading: its pairs too
            pairs |= query_pairs([tok.term_ids.get(t, -1) for t in tok.plain_split_terms(query)])
        return pairs

    def _with_pairs(self, ranked: RankedIds, pairs: Counter[tuple[int, int]], k: int) -> RankedIds:
        """``ranked``'s best ``k`` once its first ``PAIR_DEPTH`` have their pair bonus (``_pairs``).

        Only those are re-scored, so a search ranks alike for any ``k``: the rest keep their
        scores, none above a re-scored one's (a bonus is never negative).
        """
        head = min(len(ranked.ids), PAIR_DEPTH)
        ids = ranked.ids[:head]
        with self._lock:  # the candidates' terms, read while no writer moves them
            found = list(map(self._tokens.slots.get, ids))
            if self._code:  # code chunks: no terms to pair
                found = [None if i in self._code else s for i, s in zip(ids, found, strict=True)]
            alive = [n for n, slot in enumerate(found) if slot is not None]
            if not alive:
                return RankedIds(ranked.ids[:k], ranked.scores[:k], unique=ranked.unique)
            whole = len(alive) == head  # the usual case: every candidate is prose and here
            slots = found if whole else [found[n] for n in alive]
            terms, lengths = self._tokens.gather(slots)  # type: ignore[arg-type]  # no None
            n_docs, avgdl = len(self._tokens), self._average_length()
        if not whole:  # code and vanished candidates: no terms
            lengths, every = np.zeros(head, dtype=np.int64), lengths
            lengths[alive] = every
        bonus = pair_bonus(terms, lengths, pairs, n_docs=n_docs, avgdl=avgdl, k1=self.k1, b=self.b)
        scores = ranked.scores[:head] + self.pair_weight * bonus
        order = (-scores).argsort(kind="stable")  # ties keep the terms' order
        return RankedIds(
            [ids[n] for n in order[:k].tolist()] + ranked.ids[head:k],
            np.concatenate([scores[order], ranked.scores[head:k]])[:k],
            unique=True,
        )

    def _average_length(self) -> float:
        """Terms per chunk on average, as the scores use it (the last full build's)."""
        if self._main_stats is not None:
            return self._main_stats[2]
        lengths = [len(terms) for _, terms in self._tokens.items()]  # rank_bm25: few chunks
        return max(sum(lengths) / max(len(lengths), 1), 1.0)

    def _search_matrix(self, query_terms: dict[int, int], k: int) -> RankedIds:
        snap = self._fresh_snapshot()
        segments: list[tuple[Sequence[str], np.ndarray | None]] = []
        parts: list[np.ndarray] = []
        for matrix, matrix_ids, live in (
            (snap.main, snap.main_ids, snap.live),
            (snap.delta, snap.delta_ids, None),
        ):
            if matrix is None:
                continue
            if self.scoring == "exhaustive":
                parts.append(matrix.scores(query_terms, live))
                segments.append((matrix_ids, None))
            else:  # a subsequence of the rows, in row order: ties still break by position
                rows, scores = matrix.top_candidates(
                    query_terms, live, k, score_all_below=self._score_all_below
                )
                parts.append(scores)
                segments.append((matrix_ids, rows))
        if not parts:
            return _no_hits()
        scores = np.concatenate(parts) if len(parts) > 1 else parts[0]
        return _top_k(segments, scores, k)

    def _fresh_snapshot(self) -> _Snapshot:
        snap = self._snapshot
        if snap is not None and not self._stale:
            return snap
        with self._lock:
            if self._snapshot is None or self._stale:
                self._snapshot = self._refresh()
                self._stale = False
            return self._snapshot

    def _refresh(self) -> _Snapshot:
        n_terms = len(self.tokenizer.terms)
        changes = len(self._delta) + len(self._tombstones)
        if self._main is None or changes > self.max_delta_ratio * max(len(self._tokens), 1):
            self._full_build(n_terms)
        live = None
        if self._tombstones:
            live = np.ones(len(self._main_ids), dtype=np.float32)
            live[list(self._tombstones)] = 0.0
        delta_ids = sorted(self._delta)
        delta = None
        if delta_ids:
            flat, offsets = _packed([self._tokens.terms(i) for i in delta_ids])
            delta, _, _ = _build_matrix(
                flat,
                offsets,
                n_terms,
                k1=self.k1,
                b=self.b,
                stats=self._main_stats,
            )
        return _Snapshot(self._main_ids, self._main, live, delta_ids, delta)

    def _full_build(self, n_terms: int) -> None:
        self._main = None  # the old matrix is dropped before the new one is built
        self._tokens.compact()  # slot i = row i from here on
        ids = list(self._tokens.slots)
        if ids:
            flat, offsets = self._tokens.packed()
            self._main, df, avgdl = _build_matrix(flat, offsets, n_terms, k1=self.k1, b=self.b)
            self._main_stats = (df, len(ids), avgdl)
        else:
            self._main, self._main_stats = None, None
        self._main_ids = ids
        self._tombstones = set()
        self._delta = set()
        self.full_builds += 1
        logger.debug("BM25KeywordIndex: full build of %d documents", len(ids))

    def _search_okapi(self, query_terms: dict[int, int], k: int) -> RankedIds:
        with self._lock:
            if self._okapi is None or self._stale:
                rank_bm25 = _import_rank_bm25()
                ids = list(self._tokens.slots)
                corpus = [terms.tolist() for _, terms in self._tokens.items()]
                self._okapi = (ids, rank_bm25.BM25Okapi(corpus, k1=self.k1, b=self.b))
                self._stale = False
                self.full_builds += 1
            ids, okapi = self._okapi
        query = [tid for tid, count in query_terms.items() for _ in range(count)]
        scores = np.asarray(okapi.get_scores(query), dtype=np.float64)
        matched = np.zeros(len(ids), dtype=bool)
        for tid in query_terms:  # rank_bm25 scores non-matching documents 0 (or below)
            matched |= np.fromiter((tid in f for f in okapi.doc_freqs), bool, count=len(ids))
        scores = np.where(matched, scores, -np.inf)
        return _top_k([(ids, None)], scores, k)

    # -- persistence --------------------------------------------------------------------
    def save(self, directory: str | Path) -> Path:
        """Write the index (term ids per chunk, vocabulary, settings, ``origin``) to ``directory``.

        Atomic: the token arrays go to a new ``bm25_tokens-<gen>.npz``, then
        ``bm25_index.json`` (which names it) is replaced; a process killed in between leaves
        the previous save loadable and consistent.

        Returns:
            The directory written to. Loading rebuilds the score matrix (about a second per
            100k chunks), so the files stay small and engine-independent; no pickle is used.
        """
        path = Path(directory)
        path.mkdir(parents=True, exist_ok=True)
        with self._lock:
            ids, flat, lengths = self._tokens.export()
            code = np.fromiter(
                (n for n, doc_id in enumerate(ids) if doc_id in self._code), dtype=np.int64
            )
            meta = {
                "format": _FORMAT,
                "engine": self.engine,
                "k1": self.k1,
                "b": self.b,
                "max_delta_ratio": self.max_delta_ratio,
                "scoring": self.scoring,
                "identifiers": self.identifiers,
                "pair_weight": self.pair_weight,
                "stopwords": self.tokenizer.stopwords_spec,
                "stemmer": self.tokenizer.stemmer_name,
                "terms": list(self.tokenizer.terms),
                "ids": ids,
                "origin": self.origin,
                "content_digest": self._content_digest,
            }
            writes = self._writes
        # the tokens go to a new generation file; the JSON names it and is replaced last, so a
        # kill in between leaves the previous save whole
        # (all under the directory's exclusive lock: processes saving here take turns)
        tokens_name = generation_name(_TOKENS_FILE.removesuffix(".npz"), ".npz")
        with directory_lock(path, exclusive=True):
            remove_stale_temporaries(path)
            atomic_write(
                path / tokens_name,
                lambda f: np.savez(f, tokens=flat, lengths=lengths, code=code),
            )
            meta["tokens_file"] = tokens_name
            atomic_write_bytes(path / _META_FILE, json.dumps(meta).encode("utf-8"))
            remove_other_generations(path, "bm25_tokens*.npz", keep={tokens_name})
        self._saved_writes = writes
        return path

    @classmethod
    def load(cls, directory: str | Path) -> BM25KeywordIndex:
        """Load an index written by :meth:`save`.

        Raises:
            FileNotFoundError: When ``directory`` holds no saved index.
            ValueError: When the files are not a saved ``BM25KeywordIndex``, or are damaged
                (a truncated token file or JSON: save the index again).
        """
        path = Path(directory)
        meta_file = path / _META_FILE
        with directory_lock(path, exclusive=False):  # never half of a save in progress
            if not meta_file.is_file():
                msg = f"no saved BM25KeywordIndex in {str(path)!r} ({_META_FILE} is missing)."
                raise FileNotFoundError(msg)
            try:
                meta = json.loads(meta_file.read_text(encoding="utf-8"))
            except ValueError as error:  # JSONDecodeError, UnicodeDecodeError: torn or edited
                msg = f"{str(meta_file)!r} is not valid JSON ({error}); save the index again."
                raise ValueError(msg) from error
            if not isinstance(meta, dict) or meta.get("format") != _FORMAT:
                msg = f"{str(meta_file)!r} is not a saved BM25KeywordIndex (format {_FORMAT!r})."
                raise ValueError(msg)
            tokens_file = path / meta.get("tokens_file", _TOKENS_FILE)
            try:
                with np.load(tokens_file, allow_pickle=False) as npz:
                    flat, lengths = npz["tokens"], npz["lengths"]
                    code = npz["code"] if "code" in npz.files else None  # saved before pairs
            except (zipfile.BadZipFile, EOFError, KeyError) as error:  # truncated or foreign
                msg = f"{str(tokens_file)!r} is damaged ({error}); save the index again."
                raise ValueError(msg) from error
        try:
            index = cls(
                engine=meta["engine"],
                k1=meta["k1"],
                b=meta["b"],
                stopwords=meta["stopwords"],
                stemmer=meta["stemmer"],
                max_delta_ratio=meta["max_delta_ratio"],
                scoring=meta.get("scoring", "maxscore"),
                identifiers=meta.get("identifiers", "everywhere"),  # saves before it split all
                pair_weight=meta.get("pair_weight", DEFAULT_PAIR_WEIGHT),
            )
        except (KeyError, TypeError, ValueError) as error:  # a setting missing or edited
            msg = f"{str(meta_file)!r} holds a damaged setting ({error!r}); save the index again."
            raise ValueError(msg) from error
        tok = index.tokenizer
        tok.terms = list(meta["terms"])
        tok.term_ids = {t: i for i, t in enumerate(tok.terms)}
        if int(np.sum(lengths)) != len(flat) or len(lengths) != len(meta["ids"]):
            msg = (
                f"{str(meta_file)!r} names {len(meta['ids'])} chunks but its token file holds "
                f"{len(lengths)} lengths and {len(flat)} tokens; save the index again."
            )
            raise ValueError(msg)
        index._tokens.load(meta["ids"], flat, lengths)
        ids = meta["ids"]
        if code is not None and not _row_numbers_below(code, len(ids)):
            msg = f"{str(tokens_file)!r} names code chunks it does not hold; save it again."
            raise ValueError(msg)
        index._code = set() if code is None else {ids[n] for n in code.tolist()}
        index.chunk_types_known = code is not None
        index._reset_segments()
        index.origin = meta.get("origin")
        digest = meta.get("content_digest")  # absent from saves before it was recorded
        index._content_digest = digest if isinstance(digest, str) else None
        index._saved_writes = index._writes
        return index


def _row_numbers_below(values: np.ndarray, bound: int) -> bool:
    """Whether ``values`` is a 1-D array of integers in ``[0, bound)`` (a save's row numbers)."""
    if values.ndim != 1 or values.dtype.kind not in "iu":
        return False
    return not len(values) or (int(values.min()) >= 0 and int(values.max()) < bound)


def _top_k(
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
        return _no_hits()
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


def _import_rank_bm25() -> Any:
    try:
        import rank_bm25
    except ImportError as e:
        msg = (
            "engine='rank_bm25' needs the rank-bm25 package: pip install rank-bm25 "
            "(or use the default engine='bm25s')."
        )
        raise ImportError(msg) from e
    return rank_bm25
