"""The dense leg of the hybrid retriever: ids and scores from any ``VectorStore``.

Three paths, chosen by what the store can do (never by its name):

- **id search** — the store has ``search_ids_by_vector(vector, k, **search_kwargs)`` and
  ``similarity_by_ids(vector, ids)`` (``MatrixVectorStore``, ``HolodeckRedisVectorStore``): the
  query is embedded once, the search returns ids and relevance scores in [0, 1] without
  building a ``Document``, and the similarity of any other chunk (a keyword-only hit) is one
  cheap lookup;
- **relevance scores** — any other store: ``similarity_search_with_relevance_scores``; the
  Documents it built anyway are kept, so they are not read a second time;
- **raw scores** — a store without relevance scores (``InMemoryVectorStore`` raises
  ``NotImplementedError``): ``similarity_search_with_score``, whose scores keep the store's
  own meaning; they are oriented (higher is better) for score fusion only.

On every path, a model window's hit (id ``<chunk id>:w<n>``, see ``_chunk``) counts for its
chunk: each chunk keeps its best-scoring entry, so its dense score is its best window's. When
the store's model keeps windows, or once the store has answered with windows, the leg asks it
for twice ``k`` entries, so ``k`` chunks remain after the merge.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from langchain_core.documents import Document
from langchain_core.vectorstores import VectorStore

from langchain_holodeck._chunk import is_window, window_parent
from langchain_holodeck._scores import clip_unit
from langchain_holodeck.contracts import (
    ArrayIdVectorSearch,
    IdVectorSearch,
    RankedIds,
    answers_with_arrays,
)
from langchain_holodeck.embeddings.windows import stored_windows

logger = logging.getLogger(__name__)

ScoreKind = Literal["relevance", "raw"]


@dataclass(frozen=True)
class DenseResult:
    """What the dense leg returned."""

    hits: Sequence[tuple[str, float]]
    """``(id, score)`` pairs, best first (``RankedIds`` from an array-answering store)."""
    kind: ScoreKind
    """``relevance``: scores in [0, 1]; ``raw``: the store's own score (see ``oriented``)."""
    vector: Sequence[float] | npt.NDArray[np.float32] | None = None
    """The query vector, when the leg embedded the query itself (a float32 array when the
    store answers with arrays)."""
    documents: Mapping[str, Document] = field(default_factory=dict)
    """Documents the store built anyway (not read again)."""
    ascending: bool = False
    """Raw scores that grow down the list: distances (lower is better)."""

    def oriented(self) -> list[tuple[str, float]]:
        """The hits with higher-is-better scores (raw distances negated), for score fusion."""
        if not self.ascending:
            return list(self.hits)
        return [(i, -s) for i, s in self.hits]


class DenseLeg:
    """Runs the dense search on ``store`` through the cheapest path it supports."""

    def __init__(self, store: VectorStore, search_kwargs: Mapping[str, Any]) -> None:
        self.store = store
        self.search_kwargs = dict(search_kwargs)
        self.path = "ids" if isinstance(store, IdVectorSearch) else "documents"
        self._arrays = (
            self.path == "ids"
            and isinstance(store, ArrayIdVectorSearch)
            and answers_with_arrays(store, ("search_ids_by_vector", "rank_ids_by_vector"))
        )
        self._no_relevance = False
        # a store whose model keeps windows holds them; any other learns it from its answers
        self._windows = stored_windows(store.embeddings) is not None

    def serves(self, search_kwargs: Mapping[str, Any]) -> bool:
        """Whether this leg searches with ``search_kwargs`` (values compared by ``==``).

        A value whose ``==`` gives no single answer (a numpy array) counts as changed.
        """
        try:
            return bool(self.search_kwargs == search_kwargs)
        except (TypeError, ValueError):
            return False

    def entries_for(self, k: int) -> int:
        """Entries to ask the store for, so ``k`` chunks remain once windows are merged."""
        return 2 * k if self._windows else k

    def _merged(self, result: DenseResult, k: int, entries: int) -> DenseResult:
        """``result`` (one hit per chunk) cut to ``k``; notes whether windows were merged."""
        if len(result.hits) < entries:
            self._windows = True
        if len(result.hits) <= k:  # nothing to cut: the result as it is
            return result
        return replace(result, hits=result.hits[:k])

    # -- search -------------------------------------------------------------------------
    def search(self, query: str, k: int) -> DenseResult:
        """The ``k`` nearest chunks to ``query``."""
        if self.path == "ids":
            vector = self._embeddings().embed_query(query)
            return self._by_vector(vector, k)
        fetch = self.entries_for(k)
        if not self._no_relevance:
            try:
                pairs = self.store.similarity_search_with_relevance_scores(
                    query, k=fetch, **self.search_kwargs
                )
                return self._merged(_from_documents(pairs, "relevance"), k, len(pairs))
            except NotImplementedError:
                self._note_no_relevance()
        pairs = self.store.similarity_search_with_score(query, k=fetch, **self.search_kwargs)
        return self._merged(_from_documents(pairs, "raw"), k, len(pairs))

    async def asearch(self, query: str, k: int) -> DenseResult:
        """Async twin of ``search`` (the store's async methods)."""
        if self.path == "ids":
            vector = await self._embeddings().aembed_query(query)
            if getattr(self.store, "in_process", False) is True:  # in memory: no I/O to wait on
                return self._by_vector(vector, k)
            return await asyncio.to_thread(self._by_vector, vector, k)  # a blocking client
        fetch = self.entries_for(k)
        if not self._no_relevance:
            try:
                pairs = await self.store.asimilarity_search_with_relevance_scores(
                    query, k=fetch, **self.search_kwargs
                )
                return self._merged(_from_documents(pairs, "relevance"), k, len(pairs))
            except NotImplementedError:
                self._note_no_relevance()
        pairs = await self.store.asimilarity_search_with_score(query, k=fetch, **self.search_kwargs)
        return self._merged(_from_documents(pairs, "raw"), k, len(pairs))

    def _by_vector(self, vector: list[float], k: int) -> DenseResult:
        entries = self.entries_for(k)
        if self._arrays:  # ids and one score array: no pair per hit
            arrays: ArrayIdVectorSearch = self.store  # type: ignore[assignment]  # checked
            query = np.asarray(vector, dtype=np.float32)  # converted once, a copy
            ranked = arrays.rank_ids_by_vector(query, entries, **self.search_kwargs)
            result = DenseResult(hits=_best_per_chunk(ranked), kind="relevance", vector=query)
            return self._merged(result, k, len(ranked))
        store: IdVectorSearch = self.store  # type: ignore[assignment]  # path == "ids" checked it
        hits = store.search_ids_by_vector(vector, entries, **self.search_kwargs)
        result = DenseResult(hits=_best_per_chunk(hits), kind="relevance", vector=list(vector))
        return self._merged(result, k, len(hits))

    def _note_no_relevance(self) -> None:
        self._no_relevance = True
        logger.info(
            "HybridRetriever: %s has no relevance scores; using similarity_search_with_score "
            "(raw scores).",
            type(self.store).__name__,
        )

    # -- similarity of chunks the dense leg did not return -----------------------------
    def similarities(
        self,
        result: DenseResult,
        query: str,
        ids: Sequence[str],
        documents: Mapping[str, Document],
    ) -> dict[str, float]:
        """Relevance in [0, 1] of ``ids`` for ``query`` (chunks the leg did not rank).

        The id-search path looks the stored vectors up (``documents`` unused; the query
        embedded here when the leg did not run or failed); any other
        store embeds the query and the texts of ``documents`` with ``store.embeddings`` (each
        model window, when the model keeps windows, keeping the best) and takes the cosine
        clipped to [0, 1]. Ids whose similarity cannot be computed (no document, no
        ``embeddings``) are absent.
        """
        if not ids:
            return {}
        embeddings = getattr(self.store, "embeddings", None)
        vector = result.vector
        if self.path == "ids":
            store: IdVectorSearch = self.store  # type: ignore[assignment]  # checked by path
            if vector is None:
                if embeddings is None:
                    return {}
                vector = embeddings.embed_query(query)
            return store.similarity_by_ids(vector, list(ids))
        known = [i for i in ids if i in documents]
        if embeddings is None or not known:
            return {}
        if vector is None:
            vector = embeddings.embed_query(query)
        texts = [documents[i].page_content for i in known]
        window_texts = stored_windows(embeddings)
        windows = window_texts(texts) if window_texts else [[t] for t in texts]
        owners = [i for i, pieces in zip(known, windows, strict=True) for _ in pieces]
        vectors = embeddings.embed_documents([t for pieces in windows for t in pieces])
        out: dict[str, float] = {}
        for doc_id, v in zip(owners, vectors, strict=True):  # a chunk: its best window
            out[doc_id] = max(out.get(doc_id, 0.0), _cosine01(vector, v))
        return out

    @property
    def needs_documents(self) -> bool:
        """Whether ``similarities`` needs the documents (it embeds their text)."""
        return self.path != "ids"

    def _embeddings(self) -> Any:
        embeddings = getattr(self.store, "embeddings", None)
        if embeddings is None:
            msg = (
                f"{type(self.store).__name__}.embeddings is None; the dense leg needs the "
                "store's embedding model."
            )
            raise ValueError(msg)
        return embeddings


def _best_per_chunk(hits: Sequence[tuple[str, float]]) -> Sequence[tuple[str, float]]:
    """Window hits counted for their chunk; each chunk once, at its first (best) entry."""
    if not hits:
        return []
    ranked = isinstance(hits, RankedIds)
    ids = hits.ids if ranked else [i for i, _ in hits]  # type: ignore[attr-defined]  # ranked
    unique = ranked and hits.unique  # type: ignore[attr-defined]  # RankedIds says it
    if ":w" not in "\n".join(ids) and (unique or len(set(ids)) == len(ids)):
        # no window, each id once: as it is (RankedIds kept whole: no pair per hit)
        return hits if ranked else [(i, float(s)) for i, s in hits]
    seen: set[str] = set()
    out: list[tuple[str, float]] = []
    for doc_id, score in hits:
        chunk = window_parent(doc_id)
        if chunk not in seen:
            seen.add(chunk)
            out.append((chunk, float(score)))
    return out


def _from_documents(pairs: Sequence[tuple[Document, float]], kind: ScoreKind) -> DenseResult:
    hits: list[tuple[str, float]] = []
    documents: dict[str, Document] = {}
    seen: set[str] = set()
    for doc, score in pairs:
        if not doc.id:
            continue
        chunk = window_parent(doc.id) if is_window(doc) else doc.id
        if chunk in seen:
            continue
        seen.add(chunk)
        if chunk == doc.id:  # a window's Document is not the chunk: the chunk is read later
            documents[chunk] = doc
        hits.append((chunk, float(score)))
    ascending = kind == "raw" and len(hits) > 1 and hits[0][1] < hits[-1][1]
    return DenseResult(hits=hits, kind=kind, documents=documents, ascending=ascending)


def _cosine01(a: Sequence[float] | npt.NDArray[np.float32], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return clip_unit(dot / norm) if norm > 0 else 0.0
