"""Model windows: cover a text longer than the embedding model reads, and pool the windows.

all-MiniLM-L6-v2 reads 256 word pieces (254 after ``[CLS]`` and ``[SEP]``) and silently drops
the rest; chunks are sized in tiktoken tokens (512 by default), so many are longer than that.
``token_windows`` cuts a token sequence into windows the model can read; ``combine_windows``
pools their vectors into the chunk's one vector (``"mean"``: every window counts), or keeps the
first (``"first"``: what truncation gave).
"""

from __future__ import annotations

from typing import Literal

import numpy as np

LongTextMode = Literal["mean", "first"]
"""How the vectors of a long text's windows become its vector."""
LONG_TEXT_MODES: tuple[LongTextMode, ...] = ("mean", "first")


def token_windows(n_tokens: int, *, size: int, overlap: int = 0) -> list[tuple[int, int]]:
    """``[start, end)`` ranges of at most ``size`` tokens that together cover ``n_tokens``.

    Consecutive windows share ``overlap`` tokens; the last window ends at ``n_tokens`` and is
    moved back to be full-size (so no window is a few leftover tokens). A text that fits is one
    window.

    Example:
        ```python
        token_windows(10, size=4, overlap=1)  # -> [(0, 4), (3, 7), (6, 10)]
        ```

    Raises:
        ValueError: If ``size`` is not positive, ``overlap`` is not in ``[0, size)``, or
            ``n_tokens`` is negative.
    """
    if size <= 0:
        msg = f"size must be positive, got {size}."
        raise ValueError(msg)
    if not 0 <= overlap < size:
        msg = f"overlap must be >= 0 and < size ({size}), got {overlap}."
        raise ValueError(msg)
    if n_tokens < 0:
        msg = f"n_tokens must be >= 0, got {n_tokens}."
        raise ValueError(msg)
    if n_tokens <= size:
        return [(0, n_tokens)]
    step = size - overlap
    windows = []
    start = 0
    while start + size < n_tokens:
        windows.append((start, start + size))
        start += step
    windows.append((n_tokens - size, n_tokens))
    return windows


def combine_windows(vectors: np.ndarray, mode: LongTextMode = "mean") -> np.ndarray:
    """Pool a text's window vectors (rows, L2-normalized) into one L2-normalized vector.

    ``"mean"`` averages the rows and renormalizes (the cosine of a query with the result is
    proportional to its mean cosine with the windows); ``"first"`` keeps row 0.

    Raises:
        ValueError: If ``mode`` is unknown or ``vectors`` has no rows.
    """
    if mode not in LONG_TEXT_MODES:
        msg = f"long_text must be 'mean' or 'first', got {mode!r}."
        raise ValueError(msg)
    matrix = np.asarray(vectors, dtype=np.float32)
    if matrix.ndim != 2 or matrix.shape[0] == 0:
        msg = f"vectors must be a non-empty 2-d array, got shape {matrix.shape}."
        raise ValueError(msg)
    pooled = matrix[0] if mode == "first" else matrix.mean(axis=0)
    norm = float(np.linalg.norm(pooled))
    return pooled / norm if norm > 0 else pooled
