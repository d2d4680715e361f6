"""The hybrid retriever's fusion plan: the fused order and, for the few returned, their scores.

The legs are fused by the formulas of :mod:`langchain_holodeck.fusion` (weighted RRF or convex
score fusion), computed on arrays: every id a query's legs return gets one slot (``Universe``),
and each leg's scores and ranks become a ``Ranking`` over those slots once per query, which the
feedback's second fusion reads again. The fused scores are bit-identical to
``reciprocal_rank_fusion`` / ``convex_score_fusion`` (the same float64 operations, in the same
order) and ties keep the first appearance (list order, then position), as there. Ids are
materialized as the result reads them (``Order``), and score metadata only for the ids a result
returns (``Plan.meta``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import accumulate, filterfalse
from operator import itemgetter
from typing import Any, Literal, overload

import numpy as np
import numpy.typing as npt

from langchain_holodeck._chunk import window_parent
from langchain_holodeck.contracts import KeywordHit, NativeHit, RankedIds
from langchain_holodeck.exact import SECTION_SCORE
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
_KEYS: dict[str, tuple[str, str | None]] = {
    "semantic": ("semantic_rank", "semantic_score"),
    "keyword": ("keyword_rank", "keyword_score"),
    "exact": ("exact_rank", None),  # exact_match instead of a score
}
_NO_SLOTS: npt.NDArray[np.intp] = np.zeros(0, dtype=np.intp)
_NO_SCORES: npt.NDArray[np.float64] = np.zeros(0, dtype=np.float64)
_NO_SLOTS.flags.writeable = _NO_SCORES.flags.writeable = False  # shared by empty rankings
_UNSEEN = int(np.iinfo(np.intp).max)  # no list holds the slot (np.iinfo costs ~1 us a call)


class Universe:
    """Every id one query's rankings hold, each with a slot (in order of first sight).

    The rankings of both fusions (the first, and the feedback's) index their ids by slot, so
    a fusion adds arrays and no ranking looks an id up twice.
    """

    __slots__ = ("ids", "index", "legs_only")

    def __init__(self) -> None:
        self.ids: list[str] = []
        self.index: dict[str, int] = {}
        self.legs_only = -1
        """The size once the legs' rankings took their slots (-1 before): while it still is,
        slot order is the order in which the legs' lists (dense, keyword, exact) first show
        each id."""

    def __len__(self) -> int:
        return len(self.ids)

    def slots(self, ids: Sequence[str]) -> npt.NDArray[np.intp]:
        """The slots of ``ids`` (each once); new ids take the next free slots."""
        index = self.index
        if not index:
            index.update(zip(ids, range(len(ids)), strict=True))
            self.ids.extend(ids)
            return np.arange(len(ids), dtype=np.intp)
        if ids and ids[-1] in index and ids[0] in index:  # all known, likely (feedback)
            try:
                return np.fromiter(map(index.__getitem__, ids), np.intp, len(ids))
            except KeyError:
                pass
        new = list(filterfalse(index.__contains__, ids))
        if new:
            index.update(zip(new, range(len(self.ids), len(self.ids) + len(new)), strict=True))
            self.ids.extend(new)
        return np.fromiter(map(index.__getitem__, ids), np.intp, len(ids))


class Ranking:
    """One ranked list of ``(id, score)`` pairs at its first entries, as arrays.

    An id repeated in the list counts at its first (best) entry, whose 1-based position is
    its rank, as in the fusion functions.
    """

    __slots__ = ("_ranks", "_universe", "_where", "adds", "scores", "slots")

    def __init__(self, hits: Sequence[tuple[str, float]], universe: Universe) -> None:
        ids: Sequence[str] = ()
        values: Sequence[float] | npt.NDArray[np.float64] = ()
        ranks: npt.NDArray[np.intp] | None = None  # None: 1, 2, 3, ... (every id once)
        if not hits:  # an empty list (the exact leg, mostly): shared read-only arrays
            values = _NO_SCORES
        elif isinstance(hits, RankedIds) and (hits.unique or len(set(hits.ids)) == len(hits)):
            ids, values = hits.ids, hits.scores  # arrays already: no pair is read
        else:
            ids, values = zip(*hits, strict=True)
            if len(set(ids)) != len(ids):  # an id repeated: it counts at its first entry
                first: dict[str, int] = {}
                for n, doc_id in enumerate(ids):
                    first.setdefault(doc_id, n)
                ids, values = tuple(first), [values[n] for n in first.values()]
                ranks = np.fromiter(first.values(), dtype=np.intp, count=len(first)) + 1
        self.slots = universe.slots(ids) if ids else _NO_SLOTS
        """The ids' slots in ``universe``, best first."""
        self.scores = np.asarray(values, dtype=np.float64)
        """Their scores (at their first entries)."""
        self._ranks = ranks
        self._universe = universe
        self._where: npt.NDArray[np.intp] | None = None
        self.adds: dict[tuple[object, ...], npt.NDArray[np.float64]] = {}
        """What this list adds to each of its ids, per fusion and weight (both fusions of a
        query add the keyword list the same: computed once)."""

    def __len__(self) -> int:
        return len(self.slots)

    @property
    def ranks(self) -> npt.NDArray[np.intp]:
        """Their 1-based ranks in the list."""
        if self._ranks is None:
            return np.arange(1, len(self.slots) + 1, dtype=np.intp)
        return self._ranks

    def find(self, doc_id: str) -> tuple[int, float] | None:
        """``(rank, score)`` of ``doc_id``, or ``None`` when the list lacks it."""
        where = self._positions()
        slot = self._universe.index.get(doc_id, len(where))
        n = int(where[slot]) if slot < len(where) else -1  # a later slot: not in this list
        if n < 0:
            return None
        rank = n + 1 if self._ranks is None else int(self._ranks[n])
        return rank, float(self.scores[n])

    def find_slots(
        self, slots: list[int], at: npt.NDArray[np.intp]
    ) -> list[tuple[int, float] | None]:
        """``find`` of the ids in ``slots`` (``at``: the same, as an array), together."""
        where = self._positions()
        if max(slots) >= len(where):  # a slot taken after the first look-up: not in this list
            return [None if s >= len(where) else self.find(self._universe.ids[s]) for s in slots]
        n = where[at]
        scores = self.scores[n].tolist()  # n = -1 reads the last entry: dropped below
        if self._ranks is None:
            return [
                (pos + 1, score) if pos >= 0 else None
                for pos, score in zip(n.tolist(), scores, strict=True)
            ]
        ranks = self._ranks[n].tolist()
        return [
            (rank, score) if pos >= 0 else None
            for pos, rank, score in zip(n.tolist(), ranks, scores, strict=True)
        ]

    def _positions(self) -> npt.NDArray[np.intp]:
        """Each slot's position in the list (-1: absent), over the slots taken so far."""
        where = self._where
        if where is None:  # built on the first look-up: only results are looked up
            # one array, not a dict of every entry (a result looks up ten ids in 300-entry
            # lists)
            where = self._where = np.empty(len(self._universe), dtype=np.intp)
            where.fill(-1)
            where[self.slots] = np.arange(len(self.slots), dtype=np.intp)
        return where


@dataclass(frozen=True)
class Legs:
    """What each leg returned (``None``: the leg is off or failed)."""

    dense: DenseResult | None
    keyword: Sequence[tuple[str, float]] | None
    exact: list[KeywordHit] | None
    native: list[NativeHit] | None = None
    native_vector: Sequence[float] | None = None
    """The query vector the native request was sent with (``None``: the store embedded it)."""

    @cached_property
    def universe(self) -> Universe:
        """The slots of every id the legs (and the feedback) rank."""
        return Universe()

    @cached_property
    def rankings(self) -> tuple[Ranking, Ranking, Ranking]:
        """The dense (the query's own order), keyword and exact rankings, built once."""
        before = len(self.universe)
        built = (
            self.ranking(self.dense.hits if self.dense else []),
            self.ranking(self.keyword or []),
            self.ranking(self.exact or []),
        )
        if before == 0:  # their ids took the first slots, in the lists' order
            self.universe.legs_only = len(self.universe)
        return built

    def ranking(self, hits: Sequence[tuple[str, float]]) -> Ranking:
        """``hits`` as a ``Ranking`` over this query's ids."""
        return Ranking(hits, self.universe)


class Order(Sequence[str]):
    """Ids in fused order, built as they are read (a result reads the first few)."""

    __slots__ = ("_ids", "_slots")

    def __init__(self, ids: Sequence[str], slots: npt.NDArray[np.intp]) -> None:
        self._ids, self._slots = ids, slots

    def __len__(self) -> int:
        return len(self._slots)

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> list[str]: ...
    def __getitem__(self, i: int | slice) -> str | list[str]:
        if isinstance(i, slice):
            return list(map(self._ids.__getitem__, self._slots[i].tolist()))
        return self._ids[int(self._slots[i])]


@dataclass(frozen=True)
class Plan:
    """The fused order (pinned exact hits first) and each id's scores, built on demand."""

    order: Sequence[str]
    pinned: frozenset[str]
    meta: Callable[[str], dict[str, Any]]
    """The score metadata of one fused id (only the returned few are ever built)."""
    batch: Callable[[Sequence[str]], list[dict[str, Any]]] | None = None
    """``meta`` of several ids at once, when the plan computes them together."""

    def metas(self, ids: Sequence[str]) -> list[dict[str, Any]]:
        """``[meta(i) for i in ids]``: the score metadata of the returned ids."""
        if self.batch is None:
            return [self.meta(i) for i in ids]
        return self.batch(ids)


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
            fused_dense = legs.ranking(dense.oriented())
    fused_rankings = (fused_dense, rankings[1], rankings[2])
    answered = [w for w, r in zip(weights, fused_rankings, strict=True) if len(r) and w > 0]
    universe = legs.universe
    # the legs' own lists, every one that holds ids weighted, and no other id in the universe:
    # each id's first appearance follows its slot (the fused order needs no first-seen array)
    slot_order = (
        fused_dense is rankings[0]
        and universe.legs_only == len(universe)
        and len(answered) == sum(1 for r in fused_rankings if len(r))
    )
    if fusion == "convex":
        bound = 0.0 if dense is None or dense.kind == "relevance" else None
        bounds = (bound, 0.0, 0.0)
        slots, fused = _fuse(
            fused_rankings,
            weights,
            len(universe),
            rrf_k=None,
            lower_bounds=bounds,
            slot_order=slot_order,
        )
        best = sum(answered)
    else:
        slots, fused = _fuse(
            fused_rankings,
            weights,
            len(universe),
            rrf_k=rrf_k,
            lower_bounds=None,
            slot_order=slot_order,
            by_score=(False, False, True),  # the exact leg's demoted hits, as native_plan's
        )
        best = sum(answered) / (rrf_k + 1)
    placed = [(name, r) for name, r in zip(_LEGS, rankings, strict=True) if len(r)]

    def meta(doc_id: str) -> dict[str, Any]:
        return metas([doc_id])[0]

    def metas(ids: Sequence[str]) -> list[dict[str, Any]]:
        if not ids:
            return []
        slots = list(map(universe.index.__getitem__, ids))
        at = np.array(slots, dtype=np.intp)
        entries = [{"fused_score": scaled(f, best), **UNSCORED} for f in fused[at].tolist()]
        for name, ranking in placed:
            rank_key, score_key = _KEYS[name]
            for entry, found in zip(entries, ranking.find_slots(slots, at), strict=True):
                if found is None:
                    continue
                entry[rank_key] = found[0]
                if score_key is None:
                    entry["exact_match"] = True
                else:
                    entry[score_key] = found[1]
        return entries

    return _pinned_plan(
        universe.ids, slots, meta, legs.exact or [], exact_first=exact_first, batch=metas
    )


def _fuse(
    rankings: Sequence[Ranking],
    weights: Sequence[float],
    size: int,
    *,
    rrf_k: int | None = None,
    lower_bounds: Sequence[float | None] | None = None,
    slot_order: bool = False,
    by_score: Sequence[bool] = (),
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.float64]]:
    """The fused slots, best first, and every slot's fused score (RRF when ``rrf_k`` is set).

    ``size`` is the universe's. A ranking weighted 0 or empty adds no ids. The fused score of
    an id is the sum, in list order, of what each list adds for it, and ties go to the id
    seen first (list order, then position): what ``fusion``'s dict accumulation computes.
    ``slot_order``: the caller knows every slot is in a used list and slots follow first
    appearance (``Legs.rankings`` in a universe nothing else added to): ties go by slot.
    ``by_score``: the RRF rankings whose ids add their share scaled by score / best score
    (the exact leg: a hit below the best, another document's 4.2, counts that much less; at
    the best score, ``weight * 1.0`` is ``weight``: plain RRF, bit for bit).
    """
    used: list[tuple[Ranking, npt.NDArray[np.float64]]] = []
    for i, (ranking, weight) in enumerate(zip(rankings, weights, strict=True)):
        if weight == 0 or not len(ranking):
            continue
        if rrf_k is not None:
            scaled = i < len(by_score) and by_score[i]
            key: tuple[object, ...] = ("rrf", rrf_k, weight, scaled)
            adds = ranking.adds.get(key)
            if adds is None:
                top = float(ranking.scores.max()) if scaled else 0.0
                share = weight * (ranking.scores / top) if top > 0 else weight
                adds = ranking.adds[key] = share / (rrf_k + ranking.ranks)
        else:
            bound = lower_bounds[i] if lower_bounds is not None else None
            key = ("convex", bound, weight)
            adds = ranking.adds.get(key)
            if adds is None:
                adds = ranking.adds[key] = _convex_adds(ranking, float(weight), bound, i)
        used.append((ranking, adds))
    if not used:
        return np.zeros(0, dtype=np.intp), np.zeros(size, dtype=np.float64)
    if len(used) == 1:
        slots, adds = used[0][0].slots, used[0][1]
    else:
        slots = np.concatenate([r.slots for r, _ in used])
        adds = np.concatenate([a for _, a in used])
    # bincount adds the weights in input order, from 0.0: each id's sum in list order, as the
    # per-list fancy adds (each list holds an id once) and fusion's dict accumulation do
    fused: npt.NDArray[np.float64] = np.bincount(slots, weights=adds, minlength=size)  # type: ignore[assignment]  # with weights: float64
    # (array methods, not the np.* functions that wrap them: this runs twice per query)
    if slot_order:  # a stable sort by score keeps ties in slot (= first-seen) order
        return (-fused).argsort(kind="stable"), fused
    seen = np.empty(size, dtype=np.intp)  # where each id first appears
    seen.fill(_UNSEEN)
    ends = list(accumulate(len(r) for r, _ in used))
    for (ranking, _), end in zip(reversed(used), reversed(ends), strict=True):
        # last list first: an id's entry in an earlier list overwrites a later one's
        seen[ranking.slots] = np.arange(end - len(ranking), end)
    present = (seen != _UNSEEN).nonzero()[0]
    return present[np.lexsort((seen[present], -fused[present]))], fused


def _convex_adds(
    ranking: Ranking, weight: float, bound: float | None, i: int
) -> npt.NDArray[np.float64]:
    """What ``convex_score_fusion`` adds for each id of ``ranking`` (the list's ``i``-th)."""
    values = ranking.scores
    # ndarray.max/min are these reductions behind a Python wrapper
    top, least = float(np.maximum.reduce(values)), float(np.minimum.reduce(values))
    if not (math.isfinite(top) and math.isfinite(least)):  # NaN and infinities show here
        bad = int(np.flatnonzero(~np.isfinite(values))[0])
        doc_id = ranking._universe.ids[ranking.slots[bad]]
        msg = f"scored_lists[{i}] has a non-finite score for {doc_id!r}: {float(values[bad])!r}."
        raise ValueError(msg)
    low = least if bound is None else float(bound)
    span = top - low
    if span <= 0:
        return np.full(len(values), weight)
    # at the top (values - low) / span is span / span, exactly 1.0: the weight, as fusion's;
    # x - (+0.0) is x bit for bit (-0.0 too): the usual bound of 0 subtracts nothing
    shifted = values if low == 0.0 and math.copysign(1.0, low) > 0 else values - low
    between = weight * (shifted / span)
    if least <= low:  # some value at (or under) the bound: 0 there
        return np.where(values <= low, 0.0, between)
    return between


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
    """The engine's fused ranking (weight semantic + keyword) and the exact leg, by RRF.

    An exact hit adds its RRF share times its score over the exact leg's best
    (``_exact_weighted_rrf``), as the convex fusion of the fallback divides it.
    """
    ranking = [(window_parent(h.document.id), h.score) for h in native if h.document.id]
    pair = [weights[0] + weights[1], weights[2]]
    fused = _exact_weighted_rrf(ranking, exact, k=rrf_k, weights=pair)
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

    ids = list(scores)
    order = np.arange(len(ids), dtype=np.intp)
    return _pinned_plan(ids, order, meta, exact, exact_first=exact_first)


def _exact_weighted_rrf(
    ranking: Sequence[tuple[str, float]],
    exact: Sequence[KeywordHit],
    *,
    k: int,
    weights: Sequence[float],
) -> list[tuple[str, float]]:
    """``reciprocal_rank_fusion([ranking, exact])`` with each exact share scaled by its score.

    An exact hit adds ``weight * (score / best) / (k + rank)``, ``best`` the exact leg's
    highest score: a demoted hit (a sub-section, another document's copy of the section a
    query names, at ``DESCENDANT_SCORE``) adds a quarter of a pinned hit's share at its rank,
    not nearly all of it. At the best score ``score / best`` is exactly 1.0, so the share is
    ``weight / (k + rank)`` bit for bit, as RRF's. As there, ties keep the first appearance
    (list order, then position), an id repeated in a list counts at its first rank, and a
    list weighted 0 adds no ids.
    """
    best = max((h.score for h in exact), default=0.0)
    scores: dict[str, float] = {}  # insertion order = first appearance, the tie-breaker
    for hits, weight, top in ((ranking, weights[0], None), (exact, weights[1], best)):
        if weight == 0:
            continue
        seen: set[str] = set()
        for rank, (doc_id, score) in enumerate(hits, start=1):
            if doc_id in seen:
                continue
            seen.add(doc_id)
            share = weight if top is None or top <= 0 else weight * (score / top)
            scores[doc_id] = scores.get(doc_id, 0.0) + share / (k + rank)
    return sorted(scores.items(), key=itemgetter(1), reverse=True)  # stable, also reversed


def _pinned_plan(
    ids: Sequence[str],
    order: npt.NDArray[np.intp],
    meta: Callable[[str], dict[str, Any]],
    exact: Sequence[KeywordHit],
    *,
    exact_first: bool,
    batch: Callable[[Sequence[str]], list[dict[str, Any]]] | None = None,
) -> Plan:
    """The fused order (positions in ``ids``), section-level exact hits first if ``exact_first``."""
    pinned: frozenset[str] = frozenset()
    sections = {h.id for h in exact if h.score >= SECTION_SCORE}
    if sections:
        where = {ids[n]: n for n in order.tolist()}
        pinned = frozenset(sections & where.keys())
    boosted = pinned if exact_first else frozenset()
    if boosted:
        # order is best first: a stable partition keeps fused order within each group
        first = np.isin(order, [where[i] for i in boosted])
        order = np.concatenate([order[first], order[~first]])

    def meta_of(doc_id: str) -> dict[str, Any]:
        entry = meta(doc_id)
        if doc_id in boosted:
            entry["fused_score"] = EXACT_BOOST
        return entry

    def batch_of(wanted: Sequence[str]) -> list[dict[str, Any]]:
        entries = batch(wanted)  # type: ignore[misc]  # only used when batch is set
        for doc_id, entry in zip(wanted, entries, strict=True):
            if doc_id in boosted:
                entry["fused_score"] = EXACT_BOOST
        return entries

    return Plan(Order(ids, order), pinned, meta_of, batch_of if batch is not None else None)
