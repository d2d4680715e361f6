"""Reciprocal rank fusion: a pure function over ranked lists of ``(id, score)`` pairs."""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["reciprocal_rank_fusion"]


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
        ValueError: When ``k`` is negative, or ``weights`` has the wrong length, a negative
            or non-finite entry, or no positive entry.
    """
    if k < 0:
        msg = f"k must be >= 0, got {k}."
        raise ValueError(msg)
    if weights is None:
        weights = [1.0] * len(ranked_lists)
    elif len(weights) != len(ranked_lists):
        msg = (
            f"weights has {len(weights)} entries but {len(ranked_lists)} rankings were given; "
            "pass one weight per ranking."
        )
        raise ValueError(msg)
    for i, w in enumerate(weights):
        if not math.isfinite(w) or w < 0:
            msg = f"weights[{i}] must be a finite number >= 0, got {w!r}."
            raise ValueError(msg)
    if ranked_lists and not any(w > 0 for w in weights):
        msg = f"at least one weight must be > 0, got {list(weights)!r}."
        raise ValueError(msg)

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
    order = {doc_id: i for i, doc_id in enumerate(scores)}
    return sorted(scores.items(), key=lambda item: (-item[1], order[item[0]]))
