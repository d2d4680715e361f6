"""Fusion of rankings: reciprocal rank fusion and convex score fusion, pure functions.

Both take one ranked list of ``(id, score)`` pairs per retriever, best first, and return
``(id, fused_score)`` pairs, best first.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from operator import itemgetter
from typing import Literal

from langchain_holodeck._defaults import DEFAULT_FUSION

__all__ = ["DEFAULT_FUSION", "convex_score_fusion", "reciprocal_rank_fusion"]

Fusion = Literal["rrf", "convex"]
FUSION_NAMES: dict[str, str] = {
    "convex": "convex score fusion",
    "rrf": "reciprocal rank fusion",
}
"""How help texts, ``holodeck-rag tools`` and the docs name each ``fusion`` value."""


def reciprocal_rank_fusion(
    ranked_lists: Sequence[Sequence[tuple[str, float]]],
    *,
    k: int = 60,
    weights: Sequence[float] | None = None,
) -> list[tuple[str, float]]:
    """Fuse ranked lists with (weighted) reciprocal rank fusion.

    Each list holds ``(id, score)`` pairs, best first; only the order matters, the scores are
    ignored. The fused score of an id is::

        score(d) = sum_i  w_i / (k + rank_i(d))

    over the lists ``i`` that contain ``d``, with ranks counted from 1 (Cormack et al., 2009).
    An id repeated inside one list counts at its best (first) rank only.

    Args:
        ranked_lists: One ranking per retriever, best first.
        k: The RRF constant; larger values flatten the head of each ranking. Must be >= 0.
        weights: One non-negative weight per list; ``None`` weighs every list 1.0. A list
            weighted 0 is ignored (its ids are not added).

    Returns:
        ``(id, fused_score)`` pairs, best first. Ties are broken deterministically by first
        appearance (list order, then position), so equal inputs always give equal outputs.

    Raises:
        ValueError: When ``k`` is negative or a bool, or ``weights`` has the wrong length, a
            negative or non-finite entry, or no positive entry.
    """
    if isinstance(k, bool):  # an int in Python: True was the constant 1
        msg = f"k must be a number >= 0, not a bool, got {k!r}."
        raise ValueError(msg)
    if k < 0:
        msg = f"k must be >= 0, got {k}."
        raise ValueError(msg)
    weights = _check_weights(weights, len(ranked_lists))
    scores: dict[str, float] = {}  # insertion order = first appearance, the tie-breaker
    for ranking, weight in zip(ranked_lists, weights, strict=True):
        if weight == 0:
            continue  # a switched-off ranking contributes no ids at all
        seen: set[str] = set()
        for rank, (doc_id, _score) in enumerate(ranking, start=1):
            if doc_id in seen:
                continue
            seen.add(doc_id)
            scores[doc_id] = scores.get(doc_id, 0.0) + weight / (k + rank)
    return _best_first(scores)


def convex_score_fusion(
    scored_lists: Sequence[Sequence[tuple[str, float]]],
    *,
    weights: Sequence[float] | None = None,
    lower_bounds: Sequence[float | None] | None = None,
) -> list[tuple[str, float]]:
    """Fuse scored lists with a convex combination of normalized scores.

    Each list holds ``(id, score)`` pairs, higher scores better. Each list's scores are
    min-max normalized, then combined (Bruch et al., 2023, "An Analysis of Fusion Functions
    for Hybrid Retrieval")::

        norm_i(d)  = (s_i(d) - m_i) / (M_i - m_i)        clipped to [0, 1]
        score(d)   = sum_i  w_i * norm_i(d)

    where ``M_i`` is the best score of list ``i`` and ``m_i`` its lower bound: the
    theoretical minimum when ``lower_bounds[i]`` is given (their "TMM", e.g. 0 for BM25 and
    for relevance scores in [0, 1]), else the list's lowest score (plain min-max). A list
    that does not hold ``d`` adds 0 (the lowest normalized score). When ``M_i <= m_i`` every
    id of list ``i`` normalizes to 1. The weights are used as given: pass weights summing to
    1 for a convex combination whose scores lie in [0, 1]. An id repeated inside one list
    counts at its first (best) entry only.

    Args:
        scored_lists: One scored ranking per retriever.
        weights: One non-negative weight per list; ``None`` weighs every list 1.0. A list
            weighted 0 adds no ids.
        lower_bounds: One lower bound (or ``None``: the list's own minimum) per list.

    Returns:
        ``(id, fused_score)`` pairs, best first; ties broken by first appearance.

    Raises:
        ValueError: When ``weights`` or ``lower_bounds`` has the wrong length, or a weight is
            negative, non-finite, or none is positive; or a score or bound is not finite.
    """
    weights = _check_weights(weights, len(scored_lists))
    if lower_bounds is None:
        lower_bounds = [None] * len(scored_lists)
    elif len(lower_bounds) != len(scored_lists):
        msg = (
            f"lower_bounds has {len(lower_bounds)} entries but {len(scored_lists)} lists were "
            "given; pass one bound (or None) per list."
        )
        raise ValueError(msg)
    scores: dict[str, float] = {}
    for i, (ranking, weight, bound) in enumerate(
        zip(scored_lists, weights, lower_bounds, strict=True)
    ):
        if weight == 0 or not ranking:
            continue
        ids, values = _first_entries(ranking)
        if not all(map(math.isfinite, values)):
            doc_id, score = next(
                (d, v) for d, v in zip(ids, values, strict=True) if not math.isfinite(v)
            )
            msg = f"scored_lists[{i}] has a non-finite score for {doc_id!r}: {score!r}."
            raise ValueError(msg)
        if bound is not None and not math.isfinite(bound):
            msg = f"lower_bounds[{i}] must be finite or None, got {bound!r}."
            raise ValueError(msg)
        top = max(values)
        low = min(values) if bound is None else float(bound)
        span = top - low
        w = float(weight)  # what 0.0 + weight gives
        if span <= 0:
            adds = [w] * len(ids)
        else:
            adds = [
                w if score >= top else 0.0 if score <= low else w * ((score - low) / span)
                for score in values
            ]
        if not scores:  # the first list: 0.0 + add is add (adds are never -0.0), same order
            scores = dict(zip(ids, adds, strict=True))
            continue
        get = scores.get
        for doc_id, add in zip(ids, adds, strict=True):
            scores[doc_id] = get(doc_id, 0.0) + add
    return _best_first(scores)


def _first_entries(ranking: Sequence[tuple[str, float]]) -> tuple[Sequence[str], list[float]]:
    """The ids of ``ranking`` at their first entry, and those entries' scores as floats."""
    ids, scores = zip(*ranking, strict=True)
    if len(set(ids)) == len(ids):  # the usual case: every id once
        return ids, list(map(float, scores))
    first: dict[str, float] = {}
    for doc_id, score in ranking:
        if doc_id not in first:
            first[doc_id] = float(score)
    return list(first), list(first.values())


def _check_weights(weights: Sequence[float] | None, n: int) -> Sequence[float]:
    if weights is None:
        return [1.0] * n
    if len(weights) != n:
        msg = (
            f"weights has {len(weights)} entries but {n} rankings were given; "
            "pass one weight per ranking."
        )
        raise ValueError(msg)
    for i, w in enumerate(weights):
        if not math.isfinite(w) or w < 0:
            msg = f"weights[{i}] must be a finite number >= 0, got {w!r}."
            raise ValueError(msg)
    if n and not any(w > 0 for w in weights):
        msg = f"at least one weight must be > 0, got {list(weights)!r}."
        raise ValueError(msg)
    return weights


def _best_first(scores: dict[str, float]) -> list[tuple[str, float]]:
    """Sort by score, descending; ties keep insertion order (first appearance)."""
    return sorted(scores.items(), key=itemgetter(1), reverse=True)  # stable, also reversed
