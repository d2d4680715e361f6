"""The dense search's own arguments (``search_kwargs``), held to what the store's search takes.

``HybridRetriever`` passes ``search_kwargs`` on to the store's search (the id search, or the
engine's ``native_hybrid_search``) and sizes that search itself. Here: the ``VectorStoreRetriever``
keys it sets from them (``k``, ``fetch_k``, ``score_threshold``), the names and the ``filter``
the store's search takes (checked at construction, not at every query), and that ``filter`` as a
test of the documents the other legs find, where the store says how.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore

from langchain_holodeck.contracts import DocumentFilters, FilterCheck, dense_search_keywords

__all__ = [
    "check_search_kwargs",
    "document_filter",
    "refuse_sizes",
    "sizes_from_search_kwargs",
    "takes_query_vector",
]

_SIZES = {"k": "k", "fetch_k": "fetch_k", "score_threshold": "min_similarity_score"}
"""``VectorStoreRetriever``'s ``search_kwargs`` the retriever applies itself (each to the
field named), never passes to the store: ``score_threshold`` is ``min_similarity_score``."""


def sizes_from_search_kwargs(data: Any) -> Any:
    """``search_kwargs={"k": n}`` (the ``VectorStoreRetriever`` habit) sets ``k``.

    The legs size their searches themselves: a ``k`` or ``fetch_k`` left in
    ``search_kwargs`` would reach the store twice (a ``TypeError`` that silences the
    dense leg) or override the native request's size.
    """
    if not isinstance(data, Mapping) or not isinstance(data.get("search_kwargs"), Mapping):
        return data
    search_kwargs = dict(data["search_kwargs"])
    sizes = {key: search_kwargs.pop(key) for key in _SIZES if key in search_kwargs}
    if not sizes:
        return data
    data = {**data, "search_kwargs": search_kwargs}
    for key, value in sizes.items():
        name = _SIZES[key]
        if data.get(name) is not None and data[name] != value:
            msg = (
                f"{name}={data[name]!r} and search_kwargs={{{key!r}: {value!r}}} disagree; "
                f"pass {name} once (search_kwargs[{key!r}] sets {name} when it is not given)."
            )
            raise ValueError(msg)
        data[name] = value
    return data


def refuse_sizes(search_kwargs: Mapping[str, Any]) -> None:
    """Refuse a size key assigned to ``search_kwargs`` after construction.

    Raises:
        ValueError: when ``search_kwargs`` holds ``k``, ``fetch_k`` or ``score_threshold``
            (the validator did not see it), naming the field to set instead.
    """
    sizes = [key for key in _SIZES if key in search_kwargs]
    if sizes:  # assigned after construction: the validator did not see it
        name = _SIZES[sizes[0]]
        msg = (
            f"search_kwargs holds {', '.join(map(repr, sizes))}, which the retriever "
            f"sets itself; set retriever.{name}"
            f"{f' (or pass {name}= per call)' if name == 'k' else ''} instead."
        )
        raise ValueError(msg)


def check_search_kwargs(
    store: VectorStore, search_kwargs: Mapping[str, Any], *, native: bool
) -> None:
    """Refuse a ``search_kwargs`` key, or a ``filter``, the store's search does not take.

    A misspelt key (``"filters"``) made every query's dense search raise ``TypeError``
    (on ``native``, the engine's request: exact hits only), which the retriever served as
    an outage: keyword results only, unfiltered, a WARNING per query. Checked where the
    search names its arguments (the id search of ``MatrixVectorStore``, PostgreSQL and
    Redis; every store's ``native_hybrid_search``) or the store lists them
    (``search_keywords``: Qdrant, and ``NamespaceFilteredStore``, which answers with its
    wrapped store's); a search taking ``**kwargs`` passes everything on. A
    ``filter`` is held to the types the store takes (``FilterCheck``, as Redis's; a
    ``DocumentFilters`` store's own check): a mapping or a callable on Redis was written
    into the query as text, and matched nothing or failed at every query.
    """
    taken = _search_keywords(store, native=native)
    unknown = [key for key in search_kwargs if taken is not None and key not in taken]
    if unknown:
        msg = (
            f"search_kwargs {', '.join(map(repr, unknown))} is not an argument of "
            f"{type(store).__name__}'s search; it takes {', '.join(map(repr, taken or []))}."
        )
        raise ValueError(msg)
    doc_filter = search_kwargs.get("filter")
    if doc_filter is not None and isinstance(store, FilterCheck):
        store.check_filter(doc_filter)
    elif doc_filter is not None and isinstance(store, DocumentFilters):
        store.document_filter(doc_filter)  # its TypeError, as the searches raise it


def document_filter(
    store: VectorStore, search_kwargs: Mapping[str, Any]
) -> Callable[[Document], bool] | None:
    """``search_kwargs["filter"]`` as a test of every leg's documents, if the store says how.

    How: ``DocumentFilters``, or ``InMemoryVectorStore``'s callable. The dense leg is
    filtered by the store; keyword and exact hits come from indexes that do not know the
    filter, so a read document is held to it here. Elsewhere (a native engine filters both
    of its legs itself) ``None``.
    """
    doc_filter = search_kwargs.get("filter")
    if doc_filter is None:
        return None
    if isinstance(store, DocumentFilters):
        return store.document_filter(doc_filter)
    if isinstance(store, InMemoryVectorStore) and callable(doc_filter):
        return doc_filter  # type: ignore[no-any-return]  # Callable[[Document], bool]
    return None


_SET_BY_NATIVE = frozenset(
    {"query", "embedding", "k", "fetch_k", "weights", "rrf_k", "min_similarity_score", "fusion"}
)
"""The arguments of the store's ``native_hybrid_search`` the retriever sets itself: not
``search_kwargs``."""


def _search_keywords(store: VectorStore, *, native: bool) -> tuple[str, ...] | None:
    """The ``search_kwargs`` names the store's search takes; ``None`` when it does not say.

    The named arguments of ``native_hybrid_search`` (``native``), less those the retriever
    sets; otherwise the dense search's (``dense_search_keywords``: its id search's, or the
    names the store lists in ``search_keywords``, as ``NamespaceFilteredStore`` lists its
    wrapped store's).
    """
    if not native:
        return dense_search_keywords(store)
    search = getattr(store, "native_hybrid_search", None)
    if search is None:
        return None
    try:
        parameters = inspect.signature(search).parameters
    except (TypeError, ValueError):  # a builtin or an object without a signature
        return None
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return None
    return tuple(name for name in parameters if name not in _SET_BY_NATIVE)


def takes_query_vector(store: object) -> bool:
    """Whether ``store.native_hybrid_search`` takes the query vector (``embedding=``)."""
    try:
        parameters = inspect.signature(store.native_hybrid_search).parameters  # type: ignore[attr-defined]  # a NativeHybridSearch
    except (AttributeError, TypeError, ValueError):
        return False
    return "embedding" in parameters
