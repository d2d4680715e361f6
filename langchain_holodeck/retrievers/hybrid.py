"""HybridRetriever: dense + keyword + exact-match retrieval fused with weighted RRF."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import math
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import VectorStore
from pydantic import ConfigDict, Field, field_validator, model_validator

from langchain_holodeck._redact import one_line
from langchain_holodeck.exact import SECTION_SCORE, ExactMatchIndex
from langchain_holodeck.fusion import reciprocal_rank_fusion
from langchain_holodeck.keyword_index.base import KeywordHit, KeywordIndex
from langchain_holodeck.retrievers._expansion import Expansion, expand_references
from langchain_holodeck.search_strategy import NativeHit, SearchStrategy, supports_native_hybrid

__all__ = ["EXACT_BOOST", "HybridRetriever"]

EXACT_BOOST = 1.0
"""Added to the fused score of exact section hits: RRF sums stay far below it."""

logger = logging.getLogger(__name__)
T = TypeVar("T")

_POOL: ThreadPoolExecutor | None = None
_TERM_WORDS = 6  # longest defined term looked up in a query, in words


def _pool() -> ThreadPoolExecutor:
    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(max_workers=8, thread_name_prefix="holodeck-hybrid")
    return _POOL


@contextlib.contextmanager
def _span(name: str, **attributes: Any) -> Iterator[None]:
    """An OpenTelemetry span when ``opentelemetry-api`` is installed; nothing otherwise."""
    try:
        from opentelemetry import trace
    except ImportError:
        yield
        return
    with trace.get_tracer("langchain_holodeck").start_as_current_span(name) as span:
        for key, value in attributes.items():
            span.set_attribute(key, value)
        yield


@dataclass
class _Legs:
    """What each modality returned (``None``: the modality is off or failed)."""

    dense: list[tuple[Document, float]] | None = None
    native: list[NativeHit] | None = None
    keyword: list[KeywordHit] | None = None
    exact: list[KeywordHit] | None = None
    errors: dict[str, BaseException] = field(default_factory=dict)


@dataclass
class _Plan:
    """The fused order and each id's scores; documents are fetched afterwards."""

    order: list[str]
    meta: dict[str, dict[str, Any]]
    known: dict[str, Document]  # documents the dense leg already returned


class HybridRetriever(BaseRetriever):
    """Dense + keyword (BM25) + exact-match retrieval fused with weighted reciprocal rank fusion.

    The three legs run concurrently (a thread pool on ``invoke``, ``asyncio.gather`` on
    ``ainvoke``); each returns ``fetch_k`` candidates, fused with
    ``score(d) = sum_i w_i / (rrf_k + rank_i(d))``. Exact hits — chunks whose ``section_id`` is
    a section the query names ("Section 203(a)(1)", "§ 4.2") or that contain every quoted
    phrase — are placed first when ``exact_first``: their ``fused_score`` gets ``EXACT_BOOST``
    (1.0, above any RRF sum), so results stay in descending score; then the rest by
    fused score. The result is cut to ``k``. Keyword- and exact-only hits are read with
    ``vector_store.get_by_ids``; ids the store no longer has are skipped.

    Emits metadata (on copies; ``Document.id`` kept): ``fused_score``, ``semantic_score``
    (dense relevance in [0, 1]), ``keyword_score`` (raw BM25), ``exact_match`` (bool),
    ``semantic_rank`` / ``keyword_rank`` / ``exact_rank`` (1-based; ``None`` when the document
    is absent from that list), ``definitions`` (when the query names a defined term: a list of
    ``{"term", "definition", "source_path", "section_id"}``). With ``expand_hops > 0``, up to
    ``expand_limit`` chunks reached over ``cross_references`` follow the hits, with
    ``expansion_hops`` (0 for hits) and ``expanded_from`` (the id they were reached from).

    Degradation: a failing keyword or exact leg logs a WARNING and the retriever serves the
    other legs; a failing dense leg does the same when another leg answered (keyword-only
    results). Only when every enabled leg fails is the dense leg's error raised. A blank
    query returns ``[]``.

    Key init args:
        vector_store: Any ``VectorStore`` holding the chunks; must implement ``get_by_ids``.
        keyword_index: A ``KeywordIndex`` over the same ids, or ``None`` (dense only).
        exact_index: An ``ExactMatchIndex`` over the same ids, or ``None``.

    Instantiate:
        ```python
        retriever = HybridRetriever(
            vector_store=store, keyword_index=bm25, exact_index=exact, k=5
        )
        ```

    Invoke:
        ```python
        retriever.invoke("Section 203(a)(1)", k=2)  # -> [Document(...), Document(...)]
        ```
    """

    vector_store: VectorStore
    """The dense store; also the source of every returned Document."""
    keyword_index: KeywordIndex | None = None
    """Keyword index over the same chunk ids; ``None`` disables the keyword leg."""
    exact_index: ExactMatchIndex | None = None
    """Exact index (section ids, phrases); needed for exact hits and for expansion."""
    k: int = Field(default=10, ge=1, le=100)
    """Number of results (before expansion)."""
    fetch_k: int = Field(default=50, ge=1, le=1000)
    """Candidates each leg contributes to fusion (at least ``2 * k``: fusion needs depth)."""
    weights: tuple[float, float, float] = (0.5, 0.5, 0.2)
    """Fusion weights of the (semantic, keyword, exact) rankings; also accepts a mapping or
    an object with ``semantic``/``keyword``/``exact`` (such as ``config.SearchWeights``)."""
    rrf_k: int = Field(default=60, ge=0)
    """The RRF constant."""
    min_similarity_score: float | None = Field(default=None, ge=0, le=1)
    """Drop dense candidates whose relevance score is below this."""
    exact_first: bool = True
    """Place exact hits (section named, or every quoted phrase present) before the rest."""
    definitions: Mapping[str, Any] | None = None
    """``normalized term -> Definition`` (``DefinitionExtractor().extract(chunks)``)."""
    expand_hops: int = Field(default=0, ge=0, le=5)
    """Follow cross-references this many hops from the hits; 0 turns expansion off."""
    expand_direction: Literal["out", "in", "both"] = "out"
    """Follow references the hits make (out), references to them (in), or both."""
    expand_limit: int = Field(default=10, ge=1, le=100)
    """At most this many expanded chunks (the nearest) follow the hits."""
    search_kwargs: dict[str, Any] = Field(default_factory=dict)
    """Extra keyword arguments of the dense search (a store-specific ``filter``, ...)."""
    search_strategy: SearchStrategy = "fallback"
    """``native``: the store fuses dense + keyword in one request (``native_hybrid_search``),
    the exact leg fuses on top in-process; ``fallback``: separate legs, weighted RRF here."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    @field_validator("weights", mode="before")
    @classmethod
    def _weights_from_mapping(cls, value: Any) -> Any:
        if isinstance(value, Mapping):
            return (value.get("semantic", 0.0), value.get("keyword", 0.0), value.get("exact", 0.0))
        if all(hasattr(value, name) for name in ("semantic", "keyword", "exact")):
            return (value.semantic, value.keyword, value.exact)
        return value

    @field_validator("weights")
    @classmethod
    def _weights_valid(cls, value: tuple[float, float, float]) -> tuple[float, float, float]:
        if any(not math.isfinite(w) or w < 0 for w in value) or not any(w > 0 for w in value):
            msg = (
                "weights must be three finite numbers >= 0 (semantic, keyword, exact), at "
                f"least one > 0; got {value!r}."
            )
            raise ValueError(msg)
        return value

    @model_validator(mode="after")
    def _expansion_needs_exact_index(self) -> HybridRetriever:
        if self.expand_hops and self.exact_index is None:
            msg = (
                f"expand_hops={self.expand_hops} needs exact_index (it maps sections to "
                "chunks); pass an ExactMatchIndex or set expand_hops=0."
            )
            raise ValueError(msg)
        return self

    @model_validator(mode="after")
    def _native_needs_a_native_store(self) -> HybridRetriever:
        if self.search_strategy == "native" and not supports_native_hybrid(self.vector_store):
            msg = (
                "search_strategy='native' needs a vector store with native_hybrid_search "
                f"(Redis, Qdrant), got {type(self.vector_store).__name__}; use 'fallback'."
            )
            raise ValueError(msg)
        return self

    # -- the hooks ----------------------------------------------------------------------
    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        k: int | None = None,
    ) -> list[Document]:
        k = self._check_k(k)
        if not query.strip():
            return []
        fetch = max(self.fetch_k, 2 * k)
        with _span("holodeck.hybrid_search", **self._span_attributes(k, fetch)):
            legs = _Legs()
            futures: dict[str, Future[Any]] = {}
            for name, fn in self._side_legs(query, fetch).items():
                ctx = contextvars.copy_context()
                futures[name] = _pool().submit(ctx.run, fn)
            try:
                if self.search_strategy == "native":
                    legs.native = self._native(query, k, fetch)
                else:
                    legs.dense = self._dense(query, fetch)
            except Exception as e:
                legs.errors["semantic"] = e
            for name, fut in futures.items():
                try:
                    setattr(legs, name, fut.result())
                except Exception as e:
                    legs.errors[name] = e
            plan = self._plan(query, k, legs)
            docs = self._fetch(plan.order[: 2 * k], plan.known, self.vector_store.get_by_ids)
            result = self._assemble(query, k, plan, docs)
            expanded = self._expansion(result, k)
            if expanded:
                fetched = self.vector_store.get_by_ids([e.id for e in expanded])
                result += self._expanded_docs(expanded, fetched)
            return result

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        k: int | None = None,
    ) -> list[Document]:
        k = self._check_k(k)
        if not query.strip():
            return []
        fetch = max(self.fetch_k, 2 * k)
        with _span("holodeck.hybrid_search", **self._span_attributes(k, fetch)):
            native = self.search_strategy == "native"
            names = ["native" if native else "dense", *self._side_legs(query, fetch)]
            first = self._anative(query, k, fetch) if native else self._adense(query, fetch)
            coros: list[Awaitable[Any]] = [first]
            coros += [self._aside(name, query, fetch) for name in names[1:]]
            outcomes = await asyncio.gather(*coros, return_exceptions=True)
            legs = _Legs()
            for name, outcome in zip(names, outcomes, strict=True):
                if isinstance(outcome, BaseException):
                    if not isinstance(outcome, Exception):
                        raise outcome  # cancellation and friends propagate
                    legs.errors["semantic" if name in ("dense", "native") else name] = outcome
                else:
                    setattr(legs, name, outcome)
            plan = self._plan(query, k, legs)
            order = plan.order[: 2 * k]
            missing = [i for i in order if i not in plan.known]
            fetched = await self.vector_store.aget_by_ids(missing) if missing else []
            docs = self._fetch(order, plan.known, lambda _ids: fetched)
            result = self._assemble(query, k, plan, docs)
            expanded = self._expansion(result, k)
            if expanded:
                more = await self.vector_store.aget_by_ids([e.id for e in expanded])
                result += self._expanded_docs(expanded, more)
            return result

    # -- legs ---------------------------------------------------------------------------
    def _check_k(self, k: int | None) -> int:
        if k is None:
            return self.k
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 100:
            msg = f"k must be an integer between 1 and 100, got {k!r}."
            raise ValueError(msg)
        return k

    def _side_legs(self, query: str, fetch: int) -> dict[str, Callable[[], list[KeywordHit]]]:
        legs: dict[str, Callable[[], list[KeywordHit]]] = {}
        keyword_index, exact_index = self.keyword_index, self.exact_index
        native = self.search_strategy == "native"  # the store's own request has the keywords
        if keyword_index is not None and self.weights[1] > 0 and not native:

            def keyword() -> list[KeywordHit]:
                with _span("holodeck.keyword_search", fetch_k=fetch):
                    return list(keyword_index.search(query, fetch))

            legs["keyword"] = keyword
        if exact_index is not None and self.weights[2] > 0:

            def exact() -> list[KeywordHit]:
                return exact_index.search(query, fetch)

            legs["exact"] = exact
        return legs

    async def _aside(self, name: str, query: str, fetch: int) -> list[KeywordHit]:
        index = self.keyword_index if name == "keyword" else self.exact_index
        asearch = getattr(index, "asearch", None)
        if name == "keyword" and asearch is not None:
            with _span("holodeck.keyword_search", fetch_k=fetch):
                return list(await asearch(query, fetch))
        fn = self._side_legs(query, fetch)[name]
        ctx = contextvars.copy_context()
        return await asyncio.get_running_loop().run_in_executor(_pool(), ctx.run, fn)

    def _span_attributes(self, k: int, fetch: int) -> dict[str, Any]:
        return {"k": k, "fetch_k": fetch, "search.mode": self.search_strategy}

    def _native_kwargs(self, k: int, fetch: int) -> dict[str, Any]:
        return {
            "k": k,
            "fetch_k": fetch,
            "weights": (self.weights[0], self.weights[1]),
            "rrf_k": self.rrf_k,
            "min_similarity_score": self.min_similarity_score,
            **self.search_kwargs,
        }

    def _native(self, query: str, k: int, fetch: int) -> list[NativeHit]:
        with _span("holodeck.native_hybrid_search", fetch_k=fetch):
            return list(
                self.vector_store.native_hybrid_search(  # type: ignore[attr-defined]  # validated
                    query, **self._native_kwargs(k, fetch)
                )
            )

    async def _anative(self, query: str, k: int, fetch: int) -> list[NativeHit]:
        with _span("holodeck.native_hybrid_search", fetch_k=fetch):
            return list(
                await self.vector_store.anative_hybrid_search(  # type: ignore[attr-defined]  # validated
                    query, **self._native_kwargs(k, fetch)
                )
            )

    def _dense(self, query: str, fetch: int) -> list[tuple[Document, float]] | None:
        if self.weights[0] == 0:
            return None
        with _span("holodeck.semantic_search", fetch_k=fetch):
            return self.vector_store.similarity_search_with_relevance_scores(
                query, k=fetch, **self.search_kwargs
            )

    async def _adense(self, query: str, fetch: int) -> list[tuple[Document, float]] | None:
        if self.weights[0] == 0:
            return None
        with _span("holodeck.semantic_search", fetch_k=fetch):
            return await self.vector_store.asimilarity_search_with_relevance_scores(
                query, k=fetch, **self.search_kwargs
            )

    # -- fusion (pure) ------------------------------------------------------------------
    def _plan(self, query: str, k: int, legs: _Legs) -> _Plan:
        for name, error in legs.errors.items():
            logger.warning(
                "HybridRetriever: the %s search failed (%s); serving the other legs.",
                name,
                one_line(error),  # provider errors may echo keys or URLs with passwords
            )
        if "semantic" in legs.errors and legs.keyword is None and legs.exact is None:
            raise legs.errors["semantic"]
        if legs.native is not None:
            return self._native_plan(legs.native, legs.exact or [])
        dense = legs.dense or []
        if self.min_similarity_score is not None:
            dense = [(d, s) for d, s in dense if s >= self.min_similarity_score]
        known: dict[str, Document] = {}
        dense_hits: list[tuple[str, float]] = []
        for doc, score in dense:
            if doc.id:
                known.setdefault(doc.id, doc)
                dense_hits.append((doc.id, score))
        keyword = legs.keyword or []
        exact = legs.exact or []
        fused = reciprocal_rank_fusion(
            [dense_hits, keyword, exact], k=self.rrf_k, weights=list(self.weights)
        )
        meta: dict[str, dict[str, Any]] = {}
        for doc_id, score in fused:
            meta[doc_id] = {
                "fused_score": score,
                "semantic_score": None,
                "keyword_score": None,
                "exact_match": False,
                "semantic_rank": None,
                "keyword_rank": None,
                "exact_rank": None,
            }
        for name, hits in (("semantic", dense_hits), ("keyword", keyword), ("exact", exact)):
            for rank, (doc_id, score) in enumerate(hits, start=1):
                entry = meta.get(doc_id)
                if entry is None:  # a leg weighted 0 adds no candidates
                    continue
                if entry[f"{name}_rank"] is None:
                    entry[f"{name}_rank"] = rank
                    if name != "exact":
                        entry[f"{name}_score"] = float(score)
                if name == "exact":
                    entry["exact_match"] = True
        order = [doc_id for doc_id, _ in fused]
        if self.exact_first and exact:
            pinned = {h.id for h in exact if h.score >= SECTION_SCORE and h.id in meta}
            for doc_id in pinned:
                meta[doc_id]["fused_score"] += EXACT_BOOST
            # fused is sorted best first, so this stable sort keeps fused order within each group
            order.sort(key=lambda doc_id: doc_id not in pinned)
        return _Plan(order, meta, known)

    def _native_plan(self, native: list[NativeHit], exact: list[KeywordHit]) -> _Plan:
        """The engine's fused ranking (weight semantic + keyword) and the exact leg, by RRF."""
        known = {h.document.id: h.document for h in native if h.document.id}
        ranking = [(h.document.id, h.score) for h in native if h.document.id]
        weights = [self.weights[0] + self.weights[1], self.weights[2]]
        fused = reciprocal_rank_fusion([ranking, exact], k=self.rrf_k, weights=weights)
        meta: dict[str, dict[str, Any]] = {
            doc_id: {
                "fused_score": score,
                "semantic_score": None,
                "keyword_score": None,
                "exact_match": False,
                "semantic_rank": None,
                "keyword_rank": None,
                "exact_rank": None,
                "native_rank": None,
                "native_score": None,
            }
            for doc_id, score in fused
        }
        for rank, hit in enumerate(native, start=1):
            entry = meta.get(hit.document.id or "")
            if entry is not None and entry["native_rank"] is None:
                entry["native_rank"], entry["native_score"] = rank, hit.score
                entry["semantic_score"] = hit.similarity
        for rank, (doc_id, _) in enumerate(exact, start=1):
            entry = meta.get(doc_id)
            if entry is not None and entry["exact_rank"] is None:
                entry["exact_rank"], entry["exact_match"] = rank, True
        order = [doc_id for doc_id, _ in fused]
        if self.exact_first and exact:
            pinned = {h.id for h in exact if h.score >= SECTION_SCORE and h.id in meta}
            for doc_id in pinned:
                meta[doc_id]["fused_score"] += EXACT_BOOST
            order.sort(key=lambda doc_id: doc_id not in pinned)
        return _Plan(order, meta, known)

    def _fetch(
        self,
        order: Sequence[str],
        known: Mapping[str, Document],
        get_by_ids: Callable[[Sequence[str]], Sequence[Document]],
    ) -> dict[str, Document]:
        docs = {i: known[i] for i in order if i in known}
        missing = [i for i in order if i not in known]
        if missing:
            for doc in get_by_ids(missing):
                if doc.id:
                    docs[doc.id] = doc
            gone = [i for i in missing if i not in docs]
            if gone:
                logger.debug("HybridRetriever: %d hits are not in the store: %s", len(gone), gone)
        return docs

    def _assemble(
        self, query: str, k: int, plan: _Plan, docs: Mapping[str, Document]
    ) -> list[Document]:
        definitions = self._definitions_for(query)
        out: list[Document] = []
        for doc_id in plan.order:
            doc = docs.get(doc_id)
            if doc is None:
                continue
            extra: dict[str, Any] = dict(plan.meta[doc_id])
            if definitions:
                extra["definitions"] = definitions
            if self.expand_hops:
                extra["expansion_hops"] = 0
            out.append(doc.model_copy(update={"metadata": {**doc.metadata, **extra}}))
            if len(out) == k:
                break
        return out

    def _definitions_for(self, query: str) -> list[dict[str, str]]:
        if not self.definitions:
            return []
        from langchain_holodeck.definitions import normalize_term

        words = normalize_term(query).replace("?", " ").replace(",", " ").split()
        found: list[dict[str, str]] = []
        for size in range(min(_TERM_WORDS, len(words)), 0, -1):
            for start in range(len(words) - size + 1):
                term = " ".join(words[start : start + size]).strip(".;:!\"'")
                d = self.definitions.get(term)
                if d is not None and all(f["term"] != d.term for f in found):
                    found.append(
                        {
                            "term": d.term,
                            "definition": d.definition,
                            "source_path": d.source_path,
                            "section_id": d.section_id,
                        }
                    )
        return found

    def _expansion(self, result: list[Document], k: int) -> list[Expansion]:
        if not self.expand_hops or self.exact_index is None or not result:
            return []
        return expand_references(
            [d.id for d in result if d.id],
            self.exact_index,
            hops=self.expand_hops,
            direction=self.expand_direction,
            limit=self.expand_limit,
        )

    @staticmethod
    def _expanded_docs(expanded: list[Expansion], fetched: Sequence[Document]) -> list[Document]:
        by_id = {d.id: d for d in fetched if d.id}
        out: list[Document] = []
        for e in expanded:
            doc = by_id.get(e.id)
            if doc is None:
                continue
            extra = {
                "fused_score": None,
                "semantic_score": None,
                "keyword_score": None,
                "exact_match": False,
                "semantic_rank": None,
                "keyword_rank": None,
                "exact_rank": None,
                "expansion_hops": e.distance,
                "expanded_from": e.via,
            }
            out.append(doc.model_copy(update={"metadata": {**doc.metadata, **extra}}))
        return out
