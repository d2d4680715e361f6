"""Adjacent-term pairs: a BM25 bonus for chunks holding two of the query's terms side by side.

A query's pairs are its consecutive terms (stop words dropped first, so ``risk of cancer``
pairs ``risk`` with ``cancer``; the order counts). The best ``PAIR_DEPTH`` candidates of the
terms' BM25 ranking are re-scored: each gains ``pair_weight`` times the BM25 of each pair it
holds, the pair's document frequency counted among those candidates. Counted there, it needs
no pair index (no memory that grows with the corpus, nothing saved): a pair rare in the corpus
is rare among the candidates, and one most candidates hold lifts them alike, leaving their
order. On SciFact train, with 300 candidates, the candidates' count ranked as the corpus-wide
one did (fused nDCG@10 0.7486 against 0.7489; ``docs/quality.md``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from itertools import pairwise

import numpy as np

PAIR_DEPTH = 100
"""The best candidates of the terms' ranking that are re-scored, whatever ``k``: on SciFact
train 100 ranked as 300 did (nDCG@10 0.7495 against 0.7486, Recall@100 0.958 against 0.962)
for a third of the work; 50 gave 0.7483."""


def query_pairs(term_ids: Sequence[int]) -> Counter[tuple[int, int]]:
    """The query's adjacent pairs of known terms (``-1``: unknown) and how often each occurs."""
    return Counter((a, b) for a, b in pairwise(term_ids) if a >= 0 and b >= 0)


def pair_bonus(
    terms: np.ndarray,
    lengths: np.ndarray,
    pairs: Counter[tuple[int, int]],
    *,
    n_docs: int,
    avgdl: float,
    k1: float,
    b: float,
) -> np.ndarray:
    """Each candidate's BM25 over ``pairs``; ``terms`` holds the candidates' terms back to back.

    ``lengths[i]`` is candidate ``i``'s number of terms (0 for one left out, such as a code
    chunk). A pair's idf is Lucene's, its document frequency the candidates holding it.
    """
    n = len(lengths)
    bonus = np.zeros(n, dtype=np.float64)
    if len(terms) < 2 or not pairs:
        return bonus
    before = terms[:-1]
    starts = np.zeros(len(before), dtype=bool)  # where a pair's first term stands
    for first in {first for first, _ in pairs}:  # one pass of the narrow ids per term
        starts |= before == first
    at = np.flatnonzero(starts)
    if not len(at):
        return bonus
    ends = np.cumsum(lengths)
    owner = np.searchsorted(ends, at, side="right")  # the candidate each position is in
    at, owner = at[at + 1 < ends[owner]], owner[at + 1 < ends[owner]]  # not its last term
    codes = (terms[at].astype(np.int64) << 32) | terms[at + 1]
    keys = {(first << 32) | second: count for (first, second), count in pairs.items()}
    held = np.zeros(len(codes), dtype=bool)
    for key in keys:  # a few keys: comparisons, not np.isin's sort and dtype checks
        held |= codes == key
    codes, owner = codes[held], owner[held]
    if not len(codes):
        return bonus
    norm = k1 * (1 - b + b * lengths / avgdl)
    for key in np.unique(codes).tolist():
        tf = np.bincount(owner[codes == key], minlength=n).astype(np.float64)
        df = int(np.count_nonzero(tf))
        idf = np.log(1 + (n_docs - df + 0.5) / (df + 0.5))
        bonus += keys[key] * idf * tf / (tf + norm)
    return bonus
