"""nDCG@k and Recall@k (BEIR / trec_eval definitions), small enough to check by hand."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence


def ndcg_at_k(ranked: Sequence[str], relevant: Mapping[str, int], k: int) -> float:
    """Normalized DCG of ``ranked[:k]`` with graded ``relevant`` (gain = grade, log2 discount).

    DCG = sum over ranks i (from 1) of grade(d_i) / log2(i + 1); IDCG is the DCG of the ideal
    order. 0.0 when nothing is relevant.
    """
    dcg = sum(relevant.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted((g for g in relevant.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def recall_at_k(ranked: Sequence[str], relevant: Mapping[str, int], k: int) -> float:
    """Share of the relevant documents (grade > 0) found in ``ranked[:k]``."""
    wanted = {d for d, g in relevant.items() if g > 0}
    if not wanted:
        return 0.0
    return len(wanted.intersection(ranked[:k])) / len(wanted)


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0
