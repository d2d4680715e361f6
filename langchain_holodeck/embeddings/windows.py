"""Model windows: cover a text longer than the embedding model reads, and pool the windows.

all-MiniLM-L6-v2 reads 256 word pieces (254 after ``[CLS]`` and ``[SEP]``) and silently drops
the rest; chunks are sized in tiktoken tokens (512 by default), so many are longer than that.
``token_windows`` cuts a token sequence into windows the model can read. How a long text's
windows become vectors is the model's ``long_text`` mode:

- ``"fit"`` (the tools' default, ``DEFAULT_LONG_TEXT``): a document that fits the model
  (``max_tokens``, 256 word pieces for all-MiniLM-L6-v2) is embedded whole, and when it is
  longer than one window of ``window_tokens`` (128) sync also stores its windows of 128 as
  entries of their own (``<chunk id>:w<n>``), so the dense leg scores it by its best entry: the
  whole text or a passage. A longer document is embedded as its first window of 128 and sync
  stores its further windows; its first 256 are not embedded (that entry let long texts crowd
  the top). Chunks of the ``WHOLE_CHUNK_TYPES`` (code) get no windows: one vector, the whole
  chunk when it fits, else its first 128. Chosen on SciFact's train split and the code set's
  dev split (``benchmarks/bench_quality.py``, ``bench_code.py``): nDCG@10 0.7456 against
  ``auto``'s 0.7439 on train, the same Pass@10 on code dev (0.762), 15% fewer word pieces on a
  docs folder.
- ``"auto"`` (the tools' default before ``"fit"``, and ``OnnxEmbeddings``' own, so that in
  another vector store a long text is its first ``max_tokens``): a document that fits is
  embedded whole, one vector; a longer one is embedded as its first ``max_tokens`` and sync
  also stores its windows of ``window_tokens`` as entries of their own. Code chunks get no
  windows (one vector, the first ``max_tokens``).
- ``"best"``: a document's vector is its first window of ``window_tokens``, and sync stores
  each further window as an entry of its own, whatever the document's length (the default
  before ``"auto"``).
- ``"mean"``: ``combine_windows`` averages the windows into one vector (every window counts).
- ``"first"``: the first window only (what truncation gave).

A query is one vector in every mode: the mean of its windows (``"first"``: its first window),
at most ``MAX_QUERY_WINDOWS`` of them, so a pasted 100k-character query costs a few forward
passes, not hundreds (the keyword leg caps a query at 64 terms likewise).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

import numpy as np
from langchain_core.embeddings import Embeddings

from langchain_holodeck._chunk import CODE_CHUNK_TYPE
from langchain_holodeck._embedding_settings import LONG_TEXT_MODES as LONG_TEXT_MODES
from langchain_holodeck._embedding_settings import WINDOWED_MODES as WINDOWED_MODES
from langchain_holodeck._embedding_settings import LongTextMode as LongTextMode
from langchain_holodeck._text_decoding import undecoded_byte
from langchain_holodeck.embeddings.cached import CachedEmbeddings

MAX_QUERY_WINDOWS = 4
"""Windows of a query that are embedded (and averaged): 4 of 256 word pieces, ~700 words."""


def check_long_text(mode: object) -> LongTextMode:
    """``mode`` if it is a ``long_text`` mode.

    Raises:
        ValueError: Naming the bad value and the modes there are.
    """
    if mode not in LONG_TEXT_MODES:
        msg = f"long_text must be 'fit', 'auto', 'best', 'mean' or 'first', got {mode!r}."
        raise ValueError(msg)
    return mode  # type: ignore[return-value]  # checked against LONG_TEXT_MODES


def check_texts(texts: Sequence[object], *, name: str = "texts") -> None:
    """Refuse a text the tokenizer cannot take, naming its index: the tokenizer's error names none.

    Raises:
        TypeError: ``texts[1] must be a str, got NoneType None.``; or ``texts`` is one str.
        ValueError: When a text holds a byte that is not UTF-8 text (``check_text``).
    """
    if isinstance(texts, str):
        msg = f"{name} must be a list of str, got a str ({texts[:40]!r}): put it in a list."
        raise TypeError(msg)
    for n, text in enumerate(texts):
        check_text(text, name=f"{name}[{n}]")


def check_text(text: object, *, name: str = "text") -> None:
    """Refuse ``text`` unless it is a ``str`` of characters UTF-8 encodes.

    Raises:
        TypeError: ``text must be a str, got NoneType None.``
        ValueError: For a lone surrogate (a byte that was not UTF-8, kept by
            ``surrogateescape``): ``texts[1] holds a character that is not text (byte 0xff
            at character 5): ...``, where the tokenizer raised ``TypeError: TextEncodeInput
            must be Union[...]``, naming neither the text nor the character.
    """
    if not isinstance(text, str):
        shown = repr(text)
        shown = shown if len(shown) <= 60 else f"{shown[:57]}..."
        msg = f"{name} must be a str, got {type(text).__name__} {shown}."
        raise TypeError(msg)
    where = undecoded_byte(text)
    if where is not None:
        msg = (
            f"{name} holds a character that is not text ({where}): a byte that was not "
            "UTF-8, or half of a UTF-16 pair, which no tokenizer takes; decode the bytes "
            "first, or drop that character."
        )
        raise ValueError(msg)


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


def window_substrings(
    text: str, offsets: Sequence[tuple[int, int]], *, size: int, overlap: int
) -> list[str]:
    """``text`` cut into windows of ``size`` tokens, given each token's ``(start, end)`` offsets.

    Each window is the substring from its first token's start to its last token's end (the
    text itself when it fits one window); consecutive windows share ``overlap`` tokens.
    """
    spans = token_windows(len(offsets), size=size, overlap=overlap)
    if len(spans) == 1:
        return [text]
    return [text[offsets[s][0] : offsets[e - 1][1]] for s, e in spans]


def document_texts(
    text: str,
    offsets: Sequence[tuple[int, int]],
    *,
    mode: LongTextMode,
    whole: int,
    window: int,
    overlap: int,
) -> list[str]:
    """What a document is stored as: its own entry's text, then its further windows' texts.

    Sizes are in tokens without special tokens: ``whole`` is what the model reads, ``window``
    the size of a document window. Under ``"fit"`` a text of at most ``window`` tokens is
    itself alone, one of at most ``whole`` tokens is itself followed by its windows of
    ``window`` tokens, and a longer one is its windows of ``window`` tokens (the first being
    its own entry). Under ``"auto"`` a text of at most ``whole`` tokens is itself alone; a
    longer one is itself (embedded as its first ``whole`` tokens) followed by all its windows
    of ``window`` tokens. Under ``"best"`` it is its windows of ``window`` tokens (the first
    being its own entry); under ``"mean"``/``"first"`` its windows of ``whole`` tokens.

    Example:
        ```python
        offsets = [(0, 1), (2, 3), (4, 5), (6, 7), (8, 9)]  # "a b c d e": five tokens
        document_texts("a b c d e", offsets, mode="auto", whole=4, window=2, overlap=0)
        # -> ["a b c d e", "a b", "c d", "d e"]
        document_texts("a b c d e", offsets, mode="fit", whole=4, window=2, overlap=0)
        # -> ["a b", "c d", "d e"]  (longer than whole: its windows, the first its own entry)
        document_texts("a b c", offsets[:3], mode="fit", whole=4, window=2, overlap=0)
        # -> ["a b c", "a b", "b c"]  (fits whole: itself, then its windows)
        ```
    """
    if mode == "fit":
        if len(offsets) <= window:
            return [text]
        windows = window_substrings(text, offsets, size=window, overlap=overlap)
        return [text, *windows] if len(offsets) <= whole else windows
    if mode == "auto":
        if len(offsets) <= whole:
            return [text]
        if window >= whole:  # windows as large as the model's: the first one is the text's
            return window_substrings(text, offsets, size=whole, overlap=overlap)
        return [text, *window_substrings(text, offsets, size=window, overlap=overlap)]
    size = window if mode == "best" else whole
    return window_substrings(text, offsets, size=size, overlap=overlap)


def combine_windows(vectors: np.ndarray, mode: LongTextMode = "mean") -> np.ndarray:
    """Pool a text's window vectors (rows, L2-normalized) into one L2-normalized vector.

    ``"mean"`` averages the rows and renormalizes (the cosine of a query with the result is
    proportional to its mean cosine with the windows); ``"first"``, ``"best"``, ``"fit"`` and
    ``"auto"`` keep row 0 (under the last three sync stores the other windows as entries of
    their own).

    Raises:
        ValueError: If ``mode`` is unknown or ``vectors`` has no rows.
    """
    check_long_text(mode)
    matrix = np.asarray(vectors, dtype=np.float32)
    if matrix.ndim != 2 or matrix.shape[0] == 0:
        msg = f"vectors must be a non-empty 2-d array, got shape {matrix.shape}."
        raise ValueError(msg)
    pooled = matrix.mean(axis=0) if mode == "mean" else matrix[0]
    norm = float(np.linalg.norm(pooled))
    return pooled / norm if norm > 0 else pooled


WindowTexts = Callable[[list[str]], list[list[str]]]
"""A model's ``window_texts``: each text cut into the windows the model reads whole."""


@runtime_checkable
class WindowedEmbeddings(Protocol):
    """A model that reads long texts in windows (``OnnxEmbeddings``, ``LocalEmbeddings``).

    Under ``long_text="fit"``/``"auto"``/``"best"`` its windows are stored as entries of their
    own (model windows, ids ``<chunk id>:w<n>``): the one contract sync, the dense leg and the
    stores ask, never by probing attributes.
    """

    long_text: str
    """How a text longer than one window is embedded: ``fit``, ``auto``, ``best``, ``mean``,
    ``first``."""

    def window_texts(self, texts: list[str]) -> list[list[str]]:
        """Each text cut into the windows the model reads whole, as substrings of the text."""
        ...


def stored_windows(embeddings: Embeddings | None) -> WindowTexts | None:
    """The model's ``window_texts`` when it keeps long texts as separate windows, else ``None``.

    That is a :class:`WindowedEmbeddings` in a ``WINDOWED_MODES`` mode, also
    behind ``CachedEmbeddings``; sync then writes each chunk's further windows as entries of
    their own. Any other model (its own window is the whole text, or unknown) has none.
    """
    model = embeddings.underlying if isinstance(embeddings, CachedEmbeddings) else embeddings
    if not isinstance(model, WindowedEmbeddings) or model.long_text not in WINDOWED_MODES:
        return None
    return model.window_texts


WHOLE_CHUNK_TYPES: frozenset[str] = frozenset({CODE_CHUNK_TYPE})
"""``chunk_type`` values that ``long_text="fit"``/``"auto"`` keep as one vector (no windows).

Code: on the code set's dev split one vector of a function's first 256 word pieces found more
functions than windows of 128 did (Pass@10 0.743 vs 0.731, ``bench_code.py --split dev``);
under ``"fit"`` a function longer than 256 is its first 128, as many found (0.762 both)."""


def windowless_chunk_types(embeddings: Embeddings | None) -> frozenset[str]:
    """The ``chunk_type`` values whose chunks sync stores without windows for this model."""
    model = embeddings.underlying if isinstance(embeddings, CachedEmbeddings) else embeddings
    if isinstance(model, WindowedEmbeddings) and model.long_text in ("fit", "auto"):
        return WHOLE_CHUNK_TYPES
    return frozenset()
