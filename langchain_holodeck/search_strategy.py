"""Search strategy: let the engine fuse dense + keyword in one request, or fuse in-process.

``native``: the store answers dense + keyword in one request and fuses them itself (Qdrant's
Query API with RRF, Redis ``FT.HYBRID`` or ``FT.AGGREGATE``); the exact leg (section ids,
quoted phrases) still fuses on top, in-process. ``fallback``: separate dense and keyword
legs, fused by weighted RRF in-process. ``auto`` picks ``native`` when the backend can fuse
(``BackendCapabilities.native_hybrid``; its store implements :class:`NativeHybridSearch`) and
the keyword index is not a separate engine. A store whose engine also fuses by convex
combination lists it in ``native_fusions`` (``("rrf", "convex")``) and takes ``fusion=``; the
others fuse by RRF whatever the retriever's ``fusion``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, NamedTuple, Protocol, runtime_checkable

from langchain_core.documents import Document

from langchain_holodeck.errors import ConfigError

__all__ = [
    "NativeHit",
    "NativeHybridSearch",
    "SearchStrategy",
    "choose_search_strategy",
    "supports_native_hybrid",
]

SearchStrategy = Literal["native", "fallback"]
"""The strategy in use: engine-side fusion (``native``) or in-process RRF (``fallback``)."""


class NativeHit(NamedTuple):
    """One result of a native hybrid search: the document, its fused score, its similarity."""

    document: Document
    """The chunk, ``id`` set, as the store keeps it."""
    score: float
    """The engine's fused score (higher is better; comparable within one query)."""
    similarity: float | None
    """Dense relevance in [0, 1] (cosine clipped), ``None`` when the engine did not say."""


@runtime_checkable
class NativeHybridSearch(Protocol):
    """A vector store that runs dense + keyword search and fuses them in one request."""

    def native_hybrid_search(
        self,
        query: str,
        *,
        k: int,
        fetch_k: int,
        weights: tuple[float, float] = (0.5, 0.5),
        rrf_k: int = 60,
        min_similarity_score: float | None = None,
        filter: Any = None,  # the store's own filter syntax, like search_kwargs
    ) -> list[NativeHit]:
        """The ``k`` best chunks of ``fetch_k`` candidates per leg, best first.

        ``weights`` are (dense, keyword); ``min_similarity_score`` drops every hit whose
        dense relevance is below it; ``filter`` is the store's own (a namespace filter).
        """
        ...

    async def anative_hybrid_search(
        self,
        query: str,
        *,
        k: int,
        fetch_k: int,
        weights: tuple[float, float] = (0.5, 0.5),
        rrf_k: int = 60,
        min_similarity_score: float | None = None,
        filter: Any = None,  # the store's own filter syntax
    ) -> list[NativeHit]:
        """Async twin of :meth:`native_hybrid_search`."""
        ...


def supports_native_hybrid(store: object) -> bool:
    """Whether ``store`` can fuse dense + keyword search in one request."""
    return isinstance(store, NativeHybridSearch)


def choose_search_strategy(
    requested: Literal["auto", "native", "fallback"],
    *,
    native_hybrid: bool,
    separate_keyword_engine: bool = False,
    weights: Sequence[float] = (0.5, 0.5),
    backend: str = "the vector store",
) -> SearchStrategy:
    """The strategy a search runs with, from what the backend can do.

    Args:
        requested: ``auto`` (native when possible), ``native`` (required) or ``fallback``.
        native_hybrid: The backend fuses dense and keyword search in one request
            (``BackendCapabilities.native_hybrid``, and its store implements
            :class:`NativeHybridSearch`).
        separate_keyword_engine: The configured keyword index is another engine than the store
            (OpenSearch next to Qdrant): ``auto`` then keeps the fallback, which uses it.
        weights: (semantic, keyword) weights; with either at 0 there is nothing to fuse, so
            ``auto`` keeps the fallback.
        backend: How the backend is named in the error message.

    Raises:
        ConfigError: When ``requested`` is unknown, or ``native`` is requested and the backend
            cannot fuse (the message names it).
    """
    if requested not in ("auto", "native", "fallback"):
        msg = f"search_strategy must be 'auto', 'native' or 'fallback', got {requested!r}."
        raise ConfigError(msg)
    if requested == "fallback":
        return "fallback"
    if requested == "native":
        if not native_hybrid:
            msg = (
                f"search_strategy 'native' needs a backend that fuses dense and keyword search "
                f"itself (Redis, Qdrant, Postgres), got {backend}; use 'auto' or 'fallback'."
            )
            raise ConfigError(msg)
        return "native"
    both_legs = len(weights) >= 2 and weights[0] > 0 and weights[1] > 0
    return "native" if native_hybrid and both_legs and not separate_keyword_engine else "fallback"
