"""The hybrid retriever's fusion plan: the fused order and, for the few returned, their scores.

The legs are fused by the formulas of :mod:`langchain_holodeck.fusion` (weighted RRF or convex
score fusion), computed on arrays: each leg's ids, scores and ranks become a ``Ranking`` once
per query, which the feedback's second fusion reads again. The fused scores are bit-identical
to ``reciprocal_rank_fusion`` / ``convex_score_fusion`` (the same float64 operations, in the
same order) and ties keep the first appearance (list order, then position), as there. Score
metadata is built only for the ids a result returns (``Plan.meta``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from operator import itemgetter
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from langchain_holodeck._chunk import window_parent
from langchain_holodeck.contracts import KeywordHit, NativeHit
from langchain_holodeck.exact import SECTION_SCORE
from langchain_holodeck.fusion import reciprocal_rank_fusion
from langchain_holodeck.retrievers._dense import DenseResult

EXACT_BOOST = 1.0
"""The ``fused_score`` of a pinned exact hit: the top of the [0, 1] scale."""

UNSCORED: dict[str, Any] = {
    "semantic_score": None,
    "keyword_score": None,
    "exact_match": False,
    "semantic_rank": None,
    "keyword_rank": None,
    "exact_rank": None,
}
"""A result's per-leg score keys before any leg has placed it (after ``fused_score``)."""

_LEGS = ("semantic", "keyword", "exact")


class Ranking:
    """One ranked list of ``(id, score)`` pairs at its first entries, as arrays.

    An id repeated in the list counts at its first (best) entry, whose 1-based position is
    its rank, as in the fusion functions.
    """

    __slots__ = ("_position", "ids", "ranks", "scores")

    def __init__(self, hits: Sequence[tuple[str, float]]) -> None:
        ids: Sequence[str] = ()
        values: Sequence[float] = ()
        ranks: npt.NDArray[np.intp] = np.zeros(0, dtype=np.intp)
        if hits:
            ids, values = zip(*hits, strict=True)
            if len(set(ids)) == len(ids):  # the usual case: every id once
                ranks = np.arange(1, len(ids) + 1, dtype=np.intp)
            else:
                first: dict[str, int] = {}
                for n, doc_id in enumerate(ids):
                    first.setdefault(doc_id, n)
                ids, values = tuple(first), [values[n] for n in first.values()]
                ranks = np.fromiter(first.values(), dtype=np.intp, count=len(first)) + 1
        self.ids = ids
        """The ids, each once, best first."""
        self.scores = np.array(values, dtype=np.float64)
        """Their scores (at their first entries)."""
        self.ranks = ranks
        """Their 1-based ranks in the list."""
        self._position: dict[str, int] | None = None

    def __len__(self) -> int:
        return len(self.ids)

    def find(self, doc_id: str) -> tuple[int, float] | None:
        """``(rank, score)`` of ``doc_id``, or ``None`` when the list lacks it."""
        if self._position is None:  # built on the first look-up: only results are looked up
            self._position = dict(zip(self.ids, range(len(self.ids)), strict=True))
        n = self._position.get(doc_id)
        return None if n is None else (int(self.ranks[n]), float(self.scores[n]))


@dataclass(frozen=True)
class Legs:
    """What each leg returned (``None``: the leg is off or failed)."""

    dense: DenseResult | None
    keyword: list[KeywordHit] | None
    exact: list[KeywordHit] | None
    native: list[NativeHit] | None = None

    @cached_property
    def rankings(self) -> tuple[Ranking, Ranking, Ranking]:
        """The dense (the query's own order), keyword and exact rankings, built once."""
        return (
            Ranking(self.dense.hits if self.dense else []),
            Ranking(self.keyword or []),
            Ranking(self.exact or []),
        )


@dataclass(frozen=True)
class Plan:
    """The fused order (pinned exact hits first) and each id's scores, built on demand."""

    order: list[str]
    pinned: frozenset[str]
    meta: Callable[[str], dict[str, Any]]
    """The score metadata of one fused id (only the returned few are ever built)."""


def scaled(score: float, best: float) -> float:
    """``score`` as a share of ``best``, the highest score fusion could give (0 when none)."""
    return min(1.0, score / best) if best > 0 else 0.0


def fused_plan(
    legs: Legs,
    *,
    weights: Sequence[float],
    fusion: Literal["rrf", "convex"],
    rrf_k: int,
    exact_first: bool,
    dense_ranking: Ranking | None = None,
) -> Plan:
    """Fuse the dense, keyword and exact legs.

    ``dense_ranking`` (feedback) replaces the dense leg's order in the fusion only: the
    ``semantic_*`` metadata stays the query's own.
    """
    dense = legs.dense
    rankings = legs.rankings
    fused_dense = dense_ranking
    if fused_dense is None:
        fused_dense = rankings[0]
        if dense is not None and fusion == "convex" and dense.ascending:
            fused_dense = Ranking(dense.oriented())
    fused_rankings = (fused_dense, rankings[1], rankings[2])
    answered = [w for w, r in zip(weights, fused_rankings, strict=True) if len(r) and w > 0]
    if fusion == "convex":
        bound = 0.0 if dense is None or dense.kind == "relevance" else None
        order, score = _fuse(fused_rankings, weights, rrf_k=None, lower_bounds=(bound, 0.0, 0.0))
        best = sum(answered)
    else:
        order, score = _fuse(fused_rankings, weights, rrf_k=rrf_k, lower_bounds=None)
        best = sum(answered) / (rrf_k + 1)
    placed = [(name, r) for name, r in zip(_LEGS, rankings, strict=True) if len(r)]

    def meta(doc_id: str) -> dict[str, Any]:
        entry = {"fused_score": scaled(score(doc_id), best), **UNSCORED}
        for name, ranking in placed:
            found = ranking.find(doc_id)
            if found is None:
                continue
            entry[f"{name}_rank"] = found[0]
            if name == "exact":
                entry["exact_match"] = True
            else:
                entry[f"{name}_score"] = found[1]
        return entry

    return _pinned_plan(order, meta, legs.exact or [], exact_first=exact_first)


def _fuse(
    rankings: Sequence[Ranking],
    weights: Sequence[float],
    *,
    rrf_k: int | None,
    lower_bounds: Sequence[float | None] | None,
) -> tuple[list[str], Callable[[str], float]]:
    """The fused ids, best first, and each one's fused score (RRF when ``rrf_k`` is set).

    A ranking weighted 0 or empty adds no ids; the fused score of an id is the sum, in list
    order, of what each list adds for it (what ``fusion``'s dict accumulation computes).
    """
    index: dict[str, int] = {}  # each fused id's slot, in order of first appearance
    parts: list[tuple[npt.NDArray[np.intp] | None, npt.NDArray[np.float64]]] = []
    for i, (ranking, weight) in enumerate(zip(rankings, weights, strict=True)):
        if weight == 0 or not len(ranking):
            continue
        if rrf_k is not None:
            adds = weight / (rrf_k + ranking.ranks)
        else:
            bound = lower_bounds[i] if lower_bounds is not None else None
            adds = _convex_adds(ranking, float(weight), bound, i)
        if not index:  # the first list fills slots 0..n-1 in its own order
            index = dict(zip(ranking.ids, range(len(ranking)), strict=True))
            parts.append((None, adds))
            continue
        new = [doc_id for doc_id in ranking.ids if doc_id not in index]
        index.update(zip(new, range(len(index), len(index) + len(new)), strict=True))
        parts.append(
            (np.fromiter(map(index.__getitem__, ranking.ids), np.intp, len(ranking)), adds)
        )
    fused = np.zeros(len(index), dtype=np.float64)
    for slots, adds in parts:  # ids are unique within a ranking: a plain fancy add is exact
        if slots is None:
            fused[: len(adds)] += adds
        else:
            fused[slots] += adds
    ids = list(index)
    order = [ids[n] for n in np.argsort(-fused, kind="stable").tolist()]  # ties: first seen

    def score(doc_id: str) -> float:
        return float(fused[index[doc_id]])

    return order, score


def _convex_adds(
    ranking: Ranking, weight: float, bound: float | None, i: int
) -> npt.NDArray[np.float64]:
    """What ``convex_score_fusion`` adds for each id of ``ranking`` (the list's ``i``-th)."""
    values = ranking.scores
    finite = np.isfinite(values)
    if not finite.all():
        bad = int(np.flatnonzero(~finite)[0])
        msg = (
            f"scored_lists[{i}] has a non-finite score for {ranking.ids[bad]!r}: "
            f"{float(values[bad])!r}."
        )
        raise ValueError(msg)
    top = float(values.max())
    low = float(values.min()) if bound is None else float(bound)
    span = top - low
    if span <= 0:
        return np.full(len(values), weight)
    between = weight * ((values - low) / span)
    return np.where(values >= top, weight, np.where(values <= low, 0.0, between))


class FirstRanks:
    """Each id's 1-based rank and score at its first (best) entry in ``hits``."""

    def __init__(self, hits: Sequence[tuple[str, float]]) -> None:
        self._hits = hits
        ids = list(map(itemgetter(0), hits))
        # assigned last to first, so each id keeps the rank of its first entry
        self._ranks = dict(zip(reversed(ids), range(len(ids), 0, -1), strict=True))

    def __contains__(self, doc_id: str) -> bool:
        return doc_id in self._ranks

    def __getitem__(self, doc_id: str) -> tuple[int, float]:
        rank = self._ranks[doc_id]
        return rank, self._hits[rank - 1][1]


def native_plan(
    native: list[NativeHit],
    exact: list[KeywordHit],
    *,
    weights: Sequence[float],
    rrf_k: int,
    exact_first: bool,
) -> Plan:
    """The engine's fused ranking (weight semantic + keyword) and the exact leg, by RRF."""
    ranking = [(window_parent(h.document.id), h.score) for h in native if h.document.id]
    pair = [weights[0] + weights[1], weights[2]]
    fused = reciprocal_rank_fusion([ranking, exact], k=rrf_k, weights=pair)
    answered = [w for w, r in zip(pair, (ranking, exact), strict=True) if r and w > 0]
    best = sum(answered) / (rrf_k + 1)
    native_first = FirstRanks(ranking)
    similarity: dict[str, float] = {}
    for hit in native:
        if not hit.document.id:
            continue
        chunk = window_parent(hit.document.id)
        seen = similarity.get(chunk)
        if hit.similarity is not None and (seen is None or hit.similarity > seen):
            similarity[chunk] = hit.similarity  # a chunk's best window
    exact_ranks = FirstRanks(exact)
    scores = dict(fused)

    def meta(doc_id: str) -> dict[str, Any]:
        entry = {
            "fused_score": scaled(scores[doc_id], best),
            **UNSCORED,
            "native_rank": None,
            "native_score": None,
        }
        if doc_id in native_first:
            entry["native_rank"], entry["native_score"] = native_first[doc_id]
        if doc_id in similarity:
            entry["semantic_score"] = similarity[doc_id]
        if doc_id in exact_ranks:
            entry["exact_rank"], entry["exact_match"] = exact_ranks[doc_id][0], True
        return entry

    return _pinned_plan(list(scores), meta, exact, exact_first=exact_first)


def _pinned_plan(
    order: list[str],
    meta: Callable[[str], dict[str, Any]],
    exact: Sequence[KeywordHit],
    *,
    exact_first: bool,
) -> Plan:
    """The fused order, with section-level exact hits first when ``exact_first``."""
    pinned = frozenset(h.id for h in exact if h.score >= SECTION_SCORE)
    pinned = pinned & set(order) if pinned else pinned
    boosted = pinned if exact_first else frozenset()
    if boosted:
        # order is best first, so this stable sort keeps fused order within each group
        order = sorted(order, key=lambda doc_id: doc_id not in boosted)

    def meta_of(doc_id: str) -> dict[str, Any]:
        entry = meta(doc_id)
        if doc_id in boosted:
            entry["fused_score"] = EXACT_BOOST
        return entry

    return Plan(order, pinned, meta_of)
