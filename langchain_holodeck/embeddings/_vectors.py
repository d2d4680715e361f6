"""Which vectors of a model's answer a cache or a store must not take, and why.

A model over HTTP may answer a glitch: a vector holding NaN (every search of a store holding
it then fails: its score is NaN) or one of another width (the batch holding it cannot be
written). Such a vector is refused before it is cached or stored, so the next run embeds its
text again instead of reading the glitch back from the cache forever.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["refused_vectors", "shared_width"]


def shared_width(widths: Sequence[int]) -> int | None:
    """The width more than half of ``widths`` have, or None (no majority, or no widths)."""
    if not widths:
        return None
    width, count = Counter(widths).most_common(1)[0]
    return width if 2 * count > len(widths) else None


def refused_vectors(
    vectors: Sequence[npt.ArrayLike], *, dimension: int | None = None, whose: str = "the others"
) -> dict[int, str]:
    """Index -> what is wrong, for each vector of ``vectors`` that must not be kept.

    Refused: a vector holding a NaN or an infinite number; a vector whose width is not
    ``dimension`` (when given: ``whose`` width, the store's or the other vectors'), else not
    the width more than half of ``vectors`` share (every vector, when no width has such a
    majority).
    """
    arrays = [np.asarray(v, dtype=np.float64).reshape(-1) for v in vectors]
    widths = [len(a) for a in arrays]
    width = dimension if dimension is not None else shared_width(widths)
    where = f"{whose} are"
    refused: dict[int, str] = {}
    for n, array in enumerate(arrays):
        if width is None:
            seen = ", ".join(str(w) for w in sorted(set(widths)))
            refused[n] = f"vectors of different widths ({seen}) and none shared by most"
        elif len(array) != width:
            refused[n] = f"a {len(array)}-dimensional vector where {where} {width}-dimensional"
        elif not np.isfinite(array).all():
            bad = array[~np.isfinite(array)][0]
            refused[n] = f"a vector holding a non-finite number ({bad})"
    return refused
