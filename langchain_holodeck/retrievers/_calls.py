"""The hybrid retriever's I/O, one traced ``Call`` each: the legs, the engine, reads, feedback.

``HybridRetriever`` decides which calls a query makes and how large each is; here is how
each runs: what it asks the index or the store (its blocking form, and its async form where
the index or store has one) and the span it runs in (``holodeck.keyword_search``,
``holodeck.exact_search``, ``holodeck.semantic_search``, ``holodeck.native_hybrid_search``,
``holodeck.read_documents``, ``holodeck.feedback``), each a child of the search's span. The
drivers of ``_steps`` run them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from langchain_core.documents import Document
from langchain_core.vectorstores import VectorStore

from langchain_holodeck._tracing import Attributes, SpanLike, span
from langchain_holodeck.contracts import RankedIds
from langchain_holodeck.exact import ExactMatchIndex
from langchain_holodeck.keyword_index.base import KeywordHit, KeywordIndex
from langchain_holodeck.retrievers._dense import DenseLeg, DenseResult
from langchain_holodeck.retrievers._feedback import feedback_ids, feedback_ranking
from langchain_holodeck.retrievers._steps import Call
from langchain_holodeck.search_strategy import NativeHit

__all__ = [
    "dense_call",
    "exact_call",
    "feedback_call",
    "keyword_call",
    "native_call",
    "read_call",
]


def keyword_call(
    keyword_index: KeywordIndex,
    ranked: Callable[[str, int], RankedIds] | None,
    query: str,
    fetch: int,
    attributes: Attributes,
    parent: SpanLike,
) -> Call:
    """The keyword leg: ``fetch`` hits; ``ranked``: the index's array search, if it has one."""

    def keyword() -> Sequence[KeywordHit] | RankedIds:
        with span("holodeck.keyword_search", attributes, parent=parent) as s:
            hits: Sequence[KeywordHit] | RankedIds
            if ranked is not None:  # ids and one score array: no KeywordHit per hit
                hits = ranked(query, fetch)
            else:
                hits = list(keyword_index.search(query, fetch))
            s.set_attribute("search.result_count", len(hits))
            return hits

    asearch = getattr(keyword_index, "asearch", None)

    async def akeyword() -> list[KeywordHit]:
        with span("holodeck.keyword_search", attributes, parent=parent) as s:
            hits = list(await asearch(query, fetch))  # type: ignore[misc]  # set when used
            s.set_attribute("search.result_count", len(hits))
            return hits

    return Call(
        keyword,
        akeyword if asearch is not None else None,
        in_process=getattr(keyword_index, "in_process", False) is True,
    )


def exact_call(
    exact_index: ExactMatchIndex, query: str, fetch: int, attributes: Attributes, parent: SpanLike
) -> Call:
    """The exact leg: sections the query names, chunks holding its quoted phrases."""

    def exact() -> list[KeywordHit]:
        with span("holodeck.exact_search", attributes, parent=parent) as s:
            hits = exact_index.search(query, fetch)
            s.set_attribute("search.result_count", len(hits))
            return hits

    return Call(exact, in_process=True)  # an in-memory index


def dense_call(
    leg: DenseLeg, query: str, fetch: int, attributes: Attributes, parent: SpanLike
) -> Call:
    """The dense leg: ``fetch`` ids and scores from the store (``search.dense_path`` traced)."""
    dense_attributes: Attributes = {**attributes, "search.dense_path": leg.path}

    def dense() -> DenseResult:
        with span("holodeck.semantic_search", dense_attributes, parent=parent) as s:
            result = leg.search(query, fetch)
            s.set_attribute("search.result_count", len(result.hits))
            return result

    async def adense() -> DenseResult:
        with span("holodeck.semantic_search", dense_attributes, parent=parent) as s:
            result = await leg.asearch(query, fetch)
            s.set_attribute("search.result_count", len(result.hits))
            return result

    return Call(dense, adense)


def native_call(
    store: Any,
    query: str,
    kwargs: dict[str, Any],
    embeddings: Any,
    attributes: Attributes,
    parent: SpanLike,
) -> Call:
    """The engine's one fused request, with ``kwargs``; answers its hits and the vector sent.

    ``embeddings``: the store's model, when its search takes the query vector (the query is
    then embedded here and sent as ``embedding=``), else ``None``.
    """

    def native() -> tuple[list[NativeHit], Sequence[float] | None]:
        with span("holodeck.native_hybrid_search", attributes, parent=parent) as s:
            vector = None if embeddings is None else embeddings.embed_query(query)
            sent = kwargs if vector is None else {**kwargs, "embedding": vector}
            hits = list(store.native_hybrid_search(query, **sent))
            s.set_attribute("search.result_count", len(hits))
            return hits, vector

    async def anative() -> tuple[list[NativeHit], Sequence[float] | None]:
        with span("holodeck.native_hybrid_search", attributes, parent=parent) as s:
            vector = None if embeddings is None else await embeddings.aembed_query(query)
            sent = kwargs if vector is None else {**kwargs, "embedding": vector}
            hits = list(await store.anative_hybrid_search(query, **sent))
            s.set_attribute("search.result_count", len(hits))
            return hits, vector

    return Call(native, anative)


def read_call(store: VectorStore, ids: Sequence[str], parent: SpanLike) -> dict[str, Call]:
    """The step reading ``ids`` from the store (``get_by_ids``), as ``"read"``."""
    wanted = list(ids)
    attributes: Attributes = {"search.read_count": len(wanted)}

    def read() -> list[Document]:
        with span("holodeck.read_documents", attributes, parent=parent):
            return store.get_by_ids(wanted)

    async def aread() -> list[Document]:
        with span("holodeck.read_documents", attributes, parent=parent):
            return await store.aget_by_ids(wanted)

    return {"read": Call(read, aread)}


def feedback_call(
    store: VectorStore,
    query: Sequence[float] | npt.NDArray[np.float32],
    top: Sequence[str],
    candidates: list[str],
    *,
    weight: float,
    arrays: bool,
    parent: SpanLike,
) -> dict[str, Call]:
    """The feedback step, as ``"feedback"``: ``candidates`` re-ranked for the moved vector.

    ``query``: the query vector; ``top``: the first fused ids, read for their types (the
    documents read are answered too, so they are not read again). Answers the ranking, or
    ``None`` when no chunk is fed back (the best chunk is code).
    """

    def rank() -> tuple[Sequence[tuple[str, float]] | None, list[Document]]:
        feedback = {"search.feedback_docs": len(top)}
        with span("holodeck.feedback", feedback, parent=parent) as current:
            # their types; kept, so not read again: often the whole result's read
            reading = {"search.read_count": len(top)}
            with span("holodeck.read_documents", reading, parent=current):
                read = store.get_by_ids(top)
            chosen = feedback_ids(top, read)  # none when the best chunk is code
            ranking = feedback_ranking(
                store,
                query,
                chosen,
                candidates,
                weight=weight,
                depth=len(candidates),
                arrays=arrays,
            )
            if isinstance(ranking, RankedIds) and not ranking.unique:
                # rank_ids answers each stored id of ``candidates`` once (a subset, best
                # first), and the candidates are distinct: so are its ids
                ranking = RankedIds(ranking.ids, ranking.scores, unique=True)
            return ranking, read

    return {"feedback": Call(rank, in_process=True)}  # in memory: no I/O
