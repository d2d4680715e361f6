"""Scores: the one clip to [0, 1] every relevance score goes through."""

from __future__ import annotations

import math


def clip_unit(score: float) -> float:
    """``score`` clipped to [0, 1]: a relevance (a cosine below 0 is 0; NaN or infinite is 0)."""
    return min(1.0, max(0.0, score)) if math.isfinite(score) else 0.0
