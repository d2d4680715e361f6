"""The retriever's array fusion (``retrievers/_plan``) equals ``langchain_holodeck.fusion``.

Bit for bit: the same ids in the same order (ties by first appearance) and the same float
scores, on rankings with repeated ids, tied scores, empty lists and zero weights.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from langchain_holodeck.fusion import convex_score_fusion, reciprocal_rank_fusion
from langchain_holodeck.retrievers._plan import Ranking, Universe, _fuse


def _rankings(rng: random.Random) -> list[list[tuple[str, float]]]:
    pool = [f"d{i}" for i in range(rng.randint(1, 60))]
    out = []
    for _ in range(3):
        n = rng.choice([0, 1, 5, 40, 80])
        ids = [rng.choice(pool) for _ in range(n)]  # repeats: each counts at its first entry
        scores = sorted(
            (rng.choice([0.0, 0.25, 0.5, 1.0, rng.random() * 9]) for _ in ids), reverse=True
        )
        out.append(list(zip(ids, scores, strict=True)))
    return out


@pytest.mark.parametrize("seed", range(200))
def test_array_fusion_equals_the_reference_functions(seed: int) -> None:
    rng = random.Random(seed)
    lists = _rankings(rng)
    weights = [rng.choice([0.0, 0.2, 0.3, 0.7, 1.0]) for _ in lists]
    if not any(weights):
        weights[0] = 0.5
    universe = Universe()
    universe.slots([f"d{i}" for i in range(70, 60, -1)])  # ids no list holds, seen first
    rankings = [Ranking(hits, universe) for hits in lists]
    bounds = [rng.choice([None, 0.0]) for _ in lists]

    def fused(slots: np.ndarray, scores: np.ndarray) -> list[tuple[str, float]]:
        return [(universe.ids[s], float(scores[s])) for s in slots.tolist()]

    expected = convex_score_fusion(lists, weights=weights, lower_bounds=bounds)
    assert fused(*_fuse(rankings, weights, len(universe), lower_bounds=bounds)) == expected

    c = rng.choice([0, 1, 60])
    expected = reciprocal_rank_fusion(lists, k=c, weights=weights)
    assert fused(*_fuse(rankings, weights, len(universe), rrf_k=c)) == expected


def test_ranking_keeps_each_id_at_its_first_entry() -> None:
    universe = Universe()
    ranking = Ranking([("a", 3.0), ("b", 2.0), ("a", 1.0), ("c", 0.5)], universe)
    assert universe.ids == ["a", "b", "c"]
    assert ranking.find("a") == (1, 3.0)
    assert ranking.find("c") == (4, 0.5)  # its position in the list, repeats counted
    assert ranking.find("z") is None


def test_a_non_finite_score_is_named_as_by_convex_score_fusion() -> None:
    lists = [[("a", 1.0)], [("b", float("nan"))]]
    with pytest.raises(ValueError, match="non-finite") as expected:
        convex_score_fusion(lists, weights=[1.0, 1.0])
    universe = Universe()
    rankings = [Ranking(h, universe) for h in lists]
    with pytest.raises(ValueError, match="non-finite") as got:
        _fuse(rankings, [1.0, 1.0], len(universe))
    assert str(got.value) == str(expected.value)
