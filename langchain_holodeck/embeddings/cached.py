"""``CachedEmbeddings``: any ``Embeddings`` behind a content-addressed ``ByteStore`` cache."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings
from langchain_core.stores import ByteStore

from langchain_holodeck._embedding_settings import WINDOWED_MODES
from langchain_holodeck._persist import os_error_text
from langchain_holodeck._redact import one_line
from langchain_holodeck.embeddings._vectors import refused_vectors, shared_width

logger = logging.getLogger(__name__)


class CachedEmbeddings(Embeddings):
    """Embeddings cached by content: a text embedded once is never sent to the model again.

    Key: ``sha256(model id + NUL + text)``, so a different model never reads another's
    vectors. Value: the float32 bytes of the vector. ``embed_documents`` reads every key
    in one ``mget``, embeds only the misses in one call, and writes them in one ``mset``.
    Every result — hit or miss — is the float32 vector, so cached and fresh runs agree
    bit for bit. Queries pass through uncached unless ``cache_queries=True``.

    A vector the model answers holding NaN or an infinite number, or of another width than
    the others (or than ``dimension``), is never cached: the call raises ``ValueError``
    naming it, after caching the rest, and the next call embeds its text again. Such a
    vector already in the cache (written by an earlier version) is a miss.

    A cache that cannot be written (a read-only or full disk, a server gone) costs the cache,
    never the vectors: they are returned all the same, with one WARNING per cache naming the
    error (``write_error`` keeps it), and the next call embeds those texts again.

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
        self.dimension: int | None = None
        """The width every vector must have, once known (the corpus sets the store's): a
        cached vector of another width is a miss and a fresh one is refused. ``None``: the
        width most vectors of a call share."""
        self.write_error: str | None = None
        """The first failed cache write (one line), or ``None``: the vectors were returned
        anyway, not cached."""

    def __repr__(self) -> str:
        return f"CachedEmbeddings({self.underlying!r}, model_id={self.model_id!r})"

    def key(self, text: str) -> str:
        """The cache key of ``text`` (hex sha256 of model id and text)."""
        return hashlib.sha256(f"{self.model_id}\0{text}".encode()).hexdigest()

    def cached(self, text: str) -> list[float] | None:
        """The cached vector of ``text``, or None when it is not cached (no model call)."""
        (data,) = self.store.mget([self.key(text)])
        return self._hits([data])[0]

    def _hits(self, values: Sequence[bytes | None]) -> list[list[float] | None]:
        """The cached vectors of ``values``; None for a miss.

        A vector no write of ours leaves is a miss too: torn, non-finite, or of another width
        than ``dimension`` (unknown: than most of the others).
        """
        vectors = [_decode_cached(v) for v in values]
        width = self.dimension
        if width is None:
            width = shared_width([len(v) for v in vectors if v is not None])
        return [v if v is not None and len(v) == width else None for v in vectors]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        keys = [self.key(t) for t in texts]
        vectors = self._hits(self.store.mget(keys))
        missing = _unique_missing(texts, vectors)
        if missing:
            fresh = self.underlying.embed_documents([texts[i] for i in missing])
            pairs, refused = self._fill(texts, keys, vectors, missing, fresh)
            try:
                self.store.mset(pairs)
            except Exception as error:  # the cache only: the vectors are computed
                self._not_cached(error, len(pairs))
            if refused:
                raise ValueError(refused)
        return [v for v in vectors if v is not None]

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        keys = [self.key(t) for t in texts]
        vectors = self._hits(await self.store.amget(keys))
        missing = _unique_missing(texts, vectors)
        if missing:
            fresh = await self.underlying.aembed_documents([texts[i] for i in missing])
            pairs, refused = self._fill(texts, keys, vectors, missing, fresh)
            try:
                await self.store.amset(pairs)
            except Exception as error:  # the cache only: the vectors are computed
                self._not_cached(error, len(pairs))
            if refused:
                raise ValueError(refused)
        return [v for v in vectors if v is not None]

    def _fill(
        self,
        texts: Sequence[str],
        keys: Sequence[str],
        vectors: list[list[float] | None],
        missing: Sequence[int],
        fresh: Sequence[Sequence[float]],
    ) -> tuple[list[tuple[str, bytes]], str]:
        """Put the fresh vectors in place: the cache writes and why some were refused.

        The refusal (empty when none) names the first refused vector; a refused vector is
        neither cached nor put in place, so the call must raise.
        """
        if len(fresh) != len(missing):
            msg = (
                f"{type(self.underlying).__name__} returned {len(fresh)} vectors for "
                f"{len(missing)} texts."
            )
            raise ValueError(msg)
        decoded = [np.asarray(vector, dtype=np.float32).reshape(-1) for vector in fresh]
        dimension, whose = self.dimension, "the store's"
        if dimension is None:  # the width most vectors of this call have, hits included
            widths = [len(v) for v in vectors if v is not None] + [len(v) for v in decoded]
            dimension, whose = shared_width(widths), "the others"
        refused = refused_vectors(decoded, dimension=dimension, whose=whose)
        by_text: dict[str, list[float]] = {}
        pairs = []
        for n, (i, vector) in enumerate(zip(missing, decoded, strict=True)):
            if n in refused:
                continue
            data = vector.tobytes()
            by_text[texts[i]] = _decode(data)
            pairs.append((keys[i], data))
        for n, text in enumerate(texts):
            if vectors[n] is None:
                vectors[n] = by_text.get(text)
        if not refused:
            return pairs, ""
        first = min(refused)
        msg = (
            f"{type(self.underlying).__name__} returned {len(refused)} unusable vector(s) "
            f"for {len(texts)} text(s), for text {missing[first]} {refused[first]}; not "
            "cached: the next call embeds it again."
        )
        return pairs, msg

    def embed_query(self, text: str) -> list[float]:
        if not self.cache_queries:
            return self.underlying.embed_query(text)
        key = self.key(text)
        (hit,) = self._hits(self.store.mget([key]))
        if hit is not None:
            return hit
        data = self._query_bytes(self.underlying.embed_query(text))
        try:
            self.store.mset([(key, data)])
        except Exception as error:  # the cache only: the vector is computed
            self._not_cached(error, 1)
        return _decode(data)

    async def aembed_query(self, text: str) -> list[float]:
        if not self.cache_queries:
            return await self.underlying.aembed_query(text)
        key = self.key(text)
        (hit,) = self._hits(await self.store.amget([key]))
        if hit is not None:
            return hit
        data = self._query_bytes(await self.underlying.aembed_query(text))
        try:
            await self.store.amset([(key, data)])
        except Exception as error:  # the cache only: the vector is computed
            self._not_cached(error, 1)
        return _decode(data)

    def _not_cached(self, error: Exception, count: int) -> None:
        """Say once per cache that its writes fail (later failures: DEBUG); keep the first."""
        reason = os_error_text(error) if isinstance(error, OSError) else one_line(error)
        if self.write_error is not None:
            logger.debug("embedding cache: %d vector(s) not cached: %s", count, reason)
            return
        self.write_error = reason
        logger.warning(
            "the embedding cache (%s) cannot be written (%s); the vectors computed are used "
            "but not cached, so the next run embeds those texts again.",
            _where(self.store),
            reason,
        )

    def _query_bytes(self, vector: Sequence[float]) -> bytes:
        """The float32 bytes of a query vector to cache; ``ValueError`` for an unusable one."""
        array = np.asarray(vector, dtype=np.float32)
        refused = refused_vectors([array], dimension=self.dimension, whose="the store's")
        if refused:
            msg = (
                f"{type(self.underlying).__name__} returned {refused[0]} for the query; "
                "it is not cached."
            )
            raise ValueError(msg)
        return array.tobytes()


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


def _where(store: ByteStore) -> str:
    """The cache as a person finds it: its directory, else its class."""
    root = getattr(store, "root", None)
    return str(root) if root is not None else type(store).__name__


def _decode(data: bytes) -> list[float]:
    return np.frombuffer(data, dtype=np.float32).tolist()


def _decode_cached(data: bytes | None) -> list[float] | None:
    """A cached value's vector, or ``None`` (a miss) for a value no write of ours leaves.

    An empty value, one that is not whole float32s, or all zeros is what a power cut may
    leave of a write that skipped its fsync; one holding NaN or an infinite number is a
    model's glitch an earlier version cached: either is embedded again.
    """
    if data is None or not data or len(data) % 4:
        return None
    vector = np.frombuffer(data, dtype=np.float32)
    if not vector.any() or not np.isfinite(vector).all():
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
