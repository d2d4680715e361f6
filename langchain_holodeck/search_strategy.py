"""Search strategy: let the engine answer dense + keyword in one request, or fuse in-process.

``native``: the store answers dense + keyword in one request (or one pipelined round trip) and
fuses them as the retriever's ``fusion`` says: PostgreSQL in SQL; Redis and Qdrant by convex from
each leg's ids and scores, or by their own fusion under ``rrf`` (Qdrant's Query API with RRF,
Redis ``FT.HYBRID`` or ``FT.AGGREGATE``); the exact leg (section ids, quoted phrases) still
fuses on top, in-process. ``fallback``: separate dense and keyword legs, fused
in-process by the retriever's ``fusion`` (convex by default, or weighted RRF). ``auto`` picks
``native`` when the backend can fuse (``BackendCapabilities.native_hybrid``; its store
implements :class:`NativeHybridSearch`) and the keyword index is not a separate engine.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from langchain_holodeck.backends._registry import (
    get_keyword_index_provider,
    native_hybrid_providers,
)
from langchain_holodeck.contracts import NativeHit, NativeHybridSearch, supports_native_hybrid
from langchain_holodeck.errors import ConfigError

if TYPE_CHECKING:
    from langchain_core.vectorstores import VectorStore

    from langchain_holodeck.backends.base import Backend
    from langchain_holodeck.config.models import HierarchicalDocumentToolConfig

__all__ = [
    "NativeHit",
    "NativeHybridSearch",
    "SearchStrategy",
    "choose_search_strategy",
    "supports_native_hybrid",
    "tool_search_strategy",
]

SearchStrategy = Literal["native", "fallback"]
"""The strategy in use: engine-side fusion (``native``) or in-process fusion (``fallback``)."""


def choose_search_strategy(
    requested: Literal["auto", "native", "fallback"],
    *,
    native_hybrid: bool,
    separate_keyword_engine: bool = False,
    weights: Sequence[float] = (0.5, 0.5),
    backend: str = "the vector store",
    setting: str = "search_strategy",
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
        setting: How the setting is named in it (``agent.yaml: tools[0].search_strategy``).

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
                f"{setting} 'native' needs a backend that fuses dense and keyword search "
                f"itself ({_native_names()}), got {backend}; use 'auto' or 'fallback'."
            )
            raise ConfigError(msg)
        return "native"
    both_legs = len(weights) >= 2 and weights[0] > 0 and weights[1] > 0
    return "native" if native_hybrid and both_legs and not separate_keyword_engine else "fallback"


def tool_search_strategy(
    config: HierarchicalDocumentToolConfig,
    backend: Backend,
    *,
    store: VectorStore | None = None,
    backend_name: str | None = None,
) -> SearchStrategy:
    """The strategy a hierarchical tool searches with: the one builder of tools and the CLI.

    Args:
        config: The tool's configuration (``search_strategy``, ``search_weights``,
            ``keyword_index``).
        backend: The backend serving its store (its ``capabilities.native_hybrid``).
        store: The store (or namespace view) searched, when open: native needs it to
            implement :class:`NativeHybridSearch` too. ``None`` (the CLI's description before
            any store is opened) trusts the backend's flag.
        backend_name: How the backend is named in the error message (default its provider).

    Raises:
        ConfigError: When ``native`` is requested and the backend cannot fuse.
    """
    weights = config.search_weights
    native = backend.capabilities.native_hybrid and (store is None or supports_native_hybrid(store))
    return choose_search_strategy(
        config.search_strategy,
        native_hybrid=native,
        # a keyword engine of its own (OpenSearch next to Qdrant) is what fallback uses
        separate_keyword_engine=get_keyword_index_provider(config.keyword_index).separate_engine(
            backend
        ),
        weights=(weights.semantic, weights.keyword),
        backend=backend_name or str(backend.provider or type(backend).__name__),
        setting=config.located("search_strategy"),
    )


def _native_names() -> str:
    return ", ".join(native_hybrid_providers()) or "none is registered"
