"""``CachedEmbeddings``: any ``Embeddings`` behind a content-addressed ``ByteStore`` cache."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings
from langchain_core.stores import ByteStore

from langchain_holodeck._embedding_settings import WINDOWED_MODES


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

    def cached(self, text: str) -> list[float] | None:
        """The cached vector of ``text``, or None when it is not cached (no model call)."""
        (data,) = self.store.mget([self.key(text)])
        return _decode_cached(data)

    def _split(self, texts: Sequence[str]) -> tuple[list[str], list[list[float] | None]]:
        keys = [self.key(t) for t in texts]
        cached = self.store.mget(keys)
        return keys, [_decode_cached(v) for v in cached]

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
        vectors = [_decode_cached(v) for v in cached]
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
        cached = _decode_cached(hit)
        if cached is not None:
            return cached
        data = np.asarray(self.underlying.embed_query(text), dtype=np.float32).tobytes()
        self.store.mset([(key, data)])
        return _decode(data)

    async def aembed_query(self, text: str) -> list[float]:
        if not self.cache_queries:
            return await self.underlying.aembed_query(text)
        key = self.key(text)
        (hit,) = await self.store.amget([key])
        cached = _decode_cached(hit)
        if cached is not None:
            return cached
        vector = await self.underlying.aembed_query(text)
        data = np.asarray(vector, dtype=np.float32).tobytes()
        await self.store.amset([(key, data)])
        return _decode(data)


def embedding_model_id(embeddings: Embeddings) -> str:
    """A stable identifier of an embeddings object: class name, model, and dimension setting.

    Sync stores it in metadata (``embedding_model``) to detect a model change.
    ``CachedEmbeddings`` reports its underlying model; a ``long_text`` mode other than
    ``mean`` (the default of earlier versions, so their ids still match) is part of the id.
    Under ``auto`` and ``best`` the document window size is too. Examples:
    ``OnnxEmbeddings:sentence-transformers/all-MiniLM-L6-v2:long_text=auto:window_tokens=128``
    (``...:int8`` when it computes in int8: other vectors, so another id),
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
    long_text = getattr(embeddings, "long_text", None)
    if isinstance(long_text, str) and long_text != "mean":
        parts.append(f"long_text={long_text}")
        window = getattr(embeddings, "window_tokens", None)
        windowed = long_text in WINDOWED_MODES
        if windowed and isinstance(window, int) and not isinstance(window, bool):
            parts.append(f"window_tokens={window}")
    if getattr(embeddings, "precision", None) == "int8":
        parts.append("int8")
    return ":".join(parts)


def _decode(data: bytes) -> list[float]:
    return np.frombuffer(data, dtype=np.float32).tolist()


def _decode_cached(data: bytes | None) -> list[float] | None:
    """A cached value's vector, or ``None`` (a miss) for a value no write of ours leaves.

    An empty value, one that is not whole float32s, or all zeros is what a power cut may
    leave of a write that skipped its fsync: it is embedded again.
    """
    if data is None or not data or len(data) % 4:
        return None
    vector = np.frombuffer(data, dtype=np.float32)
    if not vector.any():
        return None
    return vector.tolist()


def _unique_missing(texts: Sequence[str], vectors: Sequence[Any]) -> list[int]:
    """Indices of the first occurrence of each text without a cached vector."""
    seen: set[str] = set()
    out = []
    for n, (text, vector) in enumerate(zip(texts, vectors, strict=True)):
        if vector is None and text not in seen:
            seen.add(text)
            out.append(n)
    return out
