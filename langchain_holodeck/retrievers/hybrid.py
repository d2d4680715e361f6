"""HybridRetriever: dense + keyword + exact-match retrieval, fused by weighted RRF or scores."""

from __future__ import annotations

import inspect
import logging
import math
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore
from pydantic import ConfigDict, Field, PrivateAttr, field_validator, model_validator

from langchain_holodeck._chunk import source_path, window_parent
from langchain_holodeck._defaults import (
    DEFAULT_FEEDBACK_DOCS,
    DEFAULT_FEEDBACK_WEIGHT,
    DEFAULT_FETCH_K,
    DEFAULT_FUSION,
    DEFAULT_WEIGHTS,
    MAX_K,
    check_call_k,
)
from langchain_holodeck._fields import Float, Int
from langchain_holodeck._redact import one_line
from langchain_holodeck._text_decoding import check_query_text
from langchain_holodeck._tracing import Attributes, SpanLike, span
from langchain_holodeck.backends._registry import native_hybrid_providers
from langchain_holodeck.contracts import (
    ArrayKeywordSearch,
    DocumentFilters,
    FilterCheck,
    RankedIds,
    answers_with_arrays,
    check_native_filter,
    returns_new_documents,
)
from langchain_holodeck.definitions import Definition, DefinitionIndex
from langchain_holodeck.exact import ExactMatchIndex
from langchain_holodeck.keyword_index.base import KeywordHit, KeywordIndex
from langchain_holodeck.retrievers._dense import DenseLeg, DenseResult
from langchain_holodeck.retrievers._expansion import Expansion, expand_references
from langchain_holodeck.retrievers._feedback import (
    FEEDBACK_DEPTH,
    feedback_arrays,
    feedback_ids,
    feedback_ranking,
    supports_feedback,
)
from langchain_holodeck.retrievers._plan import (
    EXACT_BOOST,
    UNSCORED,
    Legs,
    Plan,
    Ranking,
    fused_plan,
    native_plan,
)
from langchain_holodeck.retrievers._steps import Call, Core, Outcomes, adrive, drive
from langchain_holodeck.search_strategy import NativeHit, SearchStrategy, supports_native_hybrid

__all__ = [
    "DEFAULT_FETCH_K",
    "DEFAULT_FUSION",
    "DEFAULT_WEIGHTS",
    "EXACT_BOOST",
    "MAX_K",
    "HybridRetriever",
]

logger = logging.getLogger(__name__)

_SIZES = {"k": "k", "fetch_k": "fetch_k", "score_threshold": "min_similarity_score"}
"""``VectorStoreRetriever``'s ``search_kwargs`` the retriever applies itself (each to the
field named), never passes to the store: ``score_threshold`` is ``min_similarity_score``."""
_OTHER_DEFINITIONS = 3
"""How many documents' definitions a result gets of a term its own document does not define
(``elsewhere``)."""
_READS = ("get_by_ids", "aget_by_ids")  # the store reads the retriever makes


class HybridRetriever(BaseRetriever):
    """Dense + keyword (BM25) + exact-match retrieval, fused by weighted RRF or score fusion.

    The legs run concurrently (a thread pool on ``invoke``, ``asyncio.gather`` on
    ``ainvoke``), except in-memory indexes (``in_process``: BM25, exact), which run on the
    caller's thread, where a pool hand-off would only add latency; each returns ``fetch_k``
    candidates as ids and scores, and only the final ``k`` documents are read from the store
    (``get_by_ids``; a store
    without id search returns documents with its scores, which are kept instead). Fusion:

    - ``fusion="rrf"``: ``raw(d) = sum_i w_i / (rrf_k + rank_i(d))``;
    - ``fusion="convex"``: ``raw(d) = sum_i w_i * norm_i(d)``, each leg's scores min-max
      normalized with a theoretical lower bound of 0 (Bruch et al., 2023); see
      :func:`~langchain_holodeck.fusion.convex_score_fusion`.

    ``fused_score`` is ``raw(d)`` divided by the best attainable value, a chunk ranked first
    by every leg that returned something, so it lies in [0, 1] and 1.0 means "first
    everywhere". Exact hits — chunks whose ``section_id`` is a section the query names
    ("Section 203(a)(1)", "§ 4.2") or that contain every quoted phrase — are placed first
    when ``exact_first``, with ``fused_score`` ``EXACT_BOOST`` (1.0); then the rest by fused
    score. Ids the store no longer has are skipped.

    ``min_similarity_score`` applies to every hit: exact hits are kept; every other chunk
    must reach the threshold by its dense relevance (cosine clipped to [0, 1]), which is
    computed for keyword-only hits too (from the stored vector where the store allows it,
    else by embedding the chunk's text). The threshold removes results; it never reorders
    the others. When that relevance cannot be computed (the embedding model is down, so the
    dense leg failed too), the other legs' hits are served unchecked with a WARNING: an
    outage is not "nothing relevant". The chunks cross-reference expansion adds after the
    hits (``expand_hops``) are not measured: each is there because a kept hit cites it
    (``expanded_from``; the tool shows it as "Cross-reference (1 hop)"), and its
    ``semantic_score`` stays ``None``.

    Emits metadata (on copies; ``Document.id`` kept): ``fused_score`` (in [0, 1], above),
    ``semantic_score`` (dense relevance in [0, 1]; the store's raw score for a store without
    relevance scores; for a keyword-only hit, set only when a threshold computed it),
    ``keyword_score`` (raw BM25), ``exact_match`` (bool), ``semantic_rank`` /
    ``keyword_rank`` / ``exact_rank`` (1-based; ``None`` when the document is absent from that
    list), ``definitions`` (when the query names a defined term: a list of ``{"term",
    "definition", "source_path", "section_id", "elsewhere"}``: the definition in the result's
    own document, ``elsewhere`` false; when its document defines the term nowhere, those of
    up to three documents that do, ``elsewhere`` true). With ``expand_hops > 0``, up to
    ``expand_limit`` chunks reached over ``cross_references`` follow the hits, with
    ``expansion_hops`` (0 for hits) and ``expanded_from`` (the id they were reached from).

    Degradation: a failing keyword or exact leg logs a WARNING and the retriever serves the
    other legs; a failing dense leg does the same when another leg answered (keyword-only
    results). Only when every enabled leg fails is the dense leg's error raised. A blank
    query returns ``[]``; a query holding a byte that is not UTF-8 text (a lone surrogate,
    which no tokenizer takes) is refused with the tools' ``ValueError`` (``Search query is
    not UTF-8 text (byte 0xff at character 5); ...``), not searched without its dense leg.

    Tracing (with ``opentelemetry-api``): a ``holodeck.hybrid_search`` span with
    ``search.mode``, ``search.provider``, ``search.fusion``, ``search.top_k``,
    ``search.fetch_k`` and ``search.result_count``; a child span per leg
    (``holodeck.semantic_search``, ``holodeck.keyword_search``, ``holodeck.exact_search``, each
    with ``search.result_count``) and ``holodeck.read_documents``.

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
    k: Int = Field(default=10, ge=1, le=100)
    """Number of results (before expansion)."""
    fetch_k: Int = Field(default=DEFAULT_FETCH_K, ge=1, le=1000)
    """Candidates each leg contributes to fusion (at least ``2 * k``: fusion needs depth)."""
    weights: tuple[Float, Float, Float] = DEFAULT_WEIGHTS
    """Fusion weights of the (semantic, keyword, exact) rankings; also accepts a mapping or
    an object with ``semantic``/``keyword``/``exact`` (such as ``config.SearchWeights``)."""
    fusion: Literal["rrf", "convex"] = DEFAULT_FUSION
    """``rrf``: weighted reciprocal rank fusion; ``convex``: weighted sum of normalized scores."""
    rrf_k: Int = Field(default=60, ge=0)
    """The RRF constant."""
    feedback_docs: Int = Field(default=DEFAULT_FEEDBACK_DOCS, ge=0, le=50)
    """Dense pseudo-relevance feedback: after a first fusion, the query vector moves toward
    the mean vector of this many best fused chunks and the candidates are re-ranked by it for
    a second fusion (``retrievers/_feedback``); 0 turns it off. Used when the keyword leg
    answered too and the store returns stored vectors by id (``MatrixVectorStore``); not
    when the best chunk is source code (``chunk_type: code``), and code chunks are never fed
    back. The first ``max(FEEDBACK_DEPTH, k)`` candidates of each leg (50, or ``k`` above it)
    are re-ranked: the results of a ``k`` up to 50 begin every larger ``k``'s up to 50, but a
    ``k`` above 50 re-ranks more candidates (Recall@100 gains from them), so its results
    need not begin with those of ``k=50``."""
    feedback_weight: Float = Field(default=DEFAULT_FEEDBACK_WEIGHT, ge=0, le=10)
    """How far the query vector moves: ``unit(q + feedback_weight * mean(vectors))``."""
    min_similarity_score: Float | None = Field(default=None, ge=0, le=1)
    """Keep only hits whose dense relevance reaches this (exact hits are always kept; the
    chunks ``expand_hops`` adds follow the kept hits they are cited by, unmeasured)."""
    exact_first: bool = True
    """Place exact hits (section named, or every quoted phrase present) before the rest."""
    definitions: Mapping[str, Any] | None = None
    """``normalized term -> Definition``: a ``DefinitionIndex``
    (``DefinitionExtractor().extract(chunks)``), which holds each document's definition, or
    a plain mapping of one definition per term (kept as a ``DefinitionIndex``)."""
    expand_hops: Int = Field(default=0, ge=0, le=5)
    """Follow cross-references this many hops from the hits; 0 turns expansion off."""
    expand_direction: Literal["out", "in", "both"] = "out"
    """Follow references the hits make (out), references to them (in), or both."""
    expand_limit: Int = Field(default=10, ge=1, le=100)
    """At most this many expanded chunks (the nearest) follow the hits."""
    search_kwargs: dict[str, Any] = Field(default_factory=dict)
    """Extra keyword arguments of the dense search (a store-specific ``filter``, ...). As on
    ``VectorStoreRetriever``, ``{"k": n}`` (or ``"fetch_k"``, ``"score_threshold"``) sets the
    retriever's ``k`` (``fetch_k``, ``min_similarity_score``) when that is not given itself;
    given both, they must agree. A ``filter`` the store can evaluate on a document
    (``DocumentFilters``: ``MatrixVectorStore``'s mapping or callable;
    ``InMemoryVectorStore``'s callable) holds the keyword and exact hits and the chunks
    cross-reference expansion adds to it too (``PostgresVectorStore`` and the Qdrant store
    evaluate their mapping filters the same way); another store's filter holds its dense leg
    only (a native engine, both its legs). A key the store's search does not take, or a
    ``filter`` of a type it cannot apply (a mapping or a callable on Redis, which takes a
    ``FilterExpression`` or a filter string), is refused at construction, on every strategy."""
    provider: str | None = None
    """The backend's name for the ``search.provider`` span attribute; default: the store's
    class name."""
    search_strategy: SearchStrategy = "fallback"
    """``native``: the store runs dense + keyword search in one request and fuses them
    (``native_hybrid_search``: weights, ``rrf_k``, ``min_similarity_score``, ``search_kwargs``
    and ``fusion``, when the store lists it in ``native_fusions``, passed on) and the exact
    leg fuses on top here (the exact leg runs first: the engine fuses ``fetch_k`` candidates
    per leg and returns ``k`` rows plus one per exact hit, twice that when the store keeps
    model windows); ``fallback``: separate legs fused here.
    Also the ``search.mode`` span attribute."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    _dense_leg: DenseLeg | None = PrivateAttr(default=None)
    _store_facts: tuple[VectorStore, bool, bool, bool] | None = PrivateAttr(default=None)
    """The store last asked, and its answers (``_store``): whether it supports feedback,
    whether it answers the feedback with arrays, whether its reads build new Documents (a
    protocol check costs microseconds: once per store, not per query)."""
    _keyword_arrays: tuple[KeywordIndex, bool] | None = PrivateAttr(default=None)
    """The keyword index last asked whether it answers with arrays, and its answer."""

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

    @field_validator("definitions", mode="plain")
    @classmethod
    def _definition_index(cls, value: Any) -> DefinitionIndex | None:
        if value is None or isinstance(value, Mapping):
            return None if value is None else DefinitionIndex.from_mapping(value)
        msg = (
            f"definitions must be a mapping of normalized term to Definition, such as "
            f"DefinitionExtractor().extract(chunks), or None; got {type(value).__name__}."
        )
        raise TypeError(msg)

    @model_validator(mode="before")
    @classmethod
    def _sizes_from_search_kwargs(cls, data: Any) -> Any:
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
    def _search_kwargs_the_store_takes(self) -> HybridRetriever:
        """Refuse a ``search_kwargs`` key, or a ``filter``, the store's search does not take.

        A misspelt key (``"filters"``) made every query's dense search raise ``TypeError``
        (on ``native``, the engine's request: exact hits only), which the retriever served as
        an outage: keyword results only, unfiltered, a WARNING per query. Checked where the
        search names its arguments (the id search of ``MatrixVectorStore``, PostgreSQL and
        Redis; every store's ``native_hybrid_search``) or the store lists them
        (``search_keywords``: Qdrant); a search taking ``**kwargs`` passes everything on. A
        ``filter`` is held to the types the store takes (``FilterCheck``, as Redis's; a
        ``DocumentFilters`` store's own check): a mapping or a callable on Redis was written
        into the query as text, and matched nothing or failed at every query.
        """
        if not self.search_kwargs:
            return self
        store = self.vector_store
        native = self.search_strategy == "native"
        taken = _search_keywords(store, native=native)
        unknown = [key for key in self.search_kwargs if taken is not None and key not in taken]
        if unknown:
            msg = (
                f"search_kwargs {', '.join(map(repr, unknown))} is not an argument of "
                f"{type(store).__name__}'s search; it takes {', '.join(map(repr, taken or []))}."
            )
            raise ValueError(msg)
        doc_filter = self.search_kwargs.get("filter")
        if doc_filter is not None and isinstance(store, FilterCheck):
            store.check_filter(doc_filter)
        elif doc_filter is not None and isinstance(store, DocumentFilters):
            store.document_filter(doc_filter)  # its TypeError, as the searches raise it
        return self

    @model_validator(mode="after")
    def _native_needs_a_native_store(self) -> HybridRetriever:
        if self.search_strategy == "native" and not supports_native_hybrid(self.vector_store):
            msg = (
                "search_strategy='native' needs a vector store with native_hybrid_search "
                f"(the stores of {', '.join(native_hybrid_providers())}), got "
                f"{type(self.vector_store).__name__}; use 'fallback'."
            )
            raise ValueError(msg)
        keys = getattr(self.vector_store, "native_filter_keys", None)
        if self.search_strategy == "native" and keys is not None:
            # refused here, not at each query: the engine would ignore them
            check_native_filter(
                self.search_kwargs.get("filter"), keys, type(self.vector_store).__name__
            )
        return self

    # -- the hooks: one core, two drivers -----------------------------------------------
    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        k: int | None = None,
    ) -> list[Document]:
        return drive(self._retrieve(query, k))

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        k: int | None = None,
    ) -> list[Document]:
        return await adrive(self._retrieve(query, k))

    def _retrieve(self, query: str, k: int | None) -> Core[list[Document]]:
        """The retrieval, as a generator of I/O steps (see ``_steps``)."""
        if not isinstance(query, str):  # an LCEL chain handing on its whole input
            shown = repr(query)
            shown = shown if len(shown) <= 80 else shown[:77] + "..."
            msg = (
                f"the query must be a string, got {type(query).__name__} {shown}; in a chain, "
                "pick the question out first: itemgetter('question') | retriever."
            )
            raise TypeError(msg)
        k = self._check_k(k)
        if not query.strip():
            return []
        check_query_text(query)  # the tokenizer's TypeError cost the dense leg, unsaid
        fetch = max(self.fetch_k, 2 * k)
        if sum(1 for w in self._enabled_weights() if w > 0) == 1:
            fetch = 2 * k  # one leg: its own order is the result; 2k leaves room for gone ids
        attributes: Attributes = {
            "search.mode": self.search_strategy,
            "search.provider": self.provider or type(self.vector_store).__name__,
            "search.fusion": self.fusion,
            "search.top_k": k,
            "search.fetch_k": fetch,
        }
        with span("holodeck.hybrid_search", attributes) as current:
            calls = self._leg_calls(query, fetch, k, current)
            outcomes = (yield calls) if calls else {}
            if self.search_strategy == "native":
                outcomes |= yield {"native": self._native_call(query, k, fetch, outcomes, current)}
            legs = self._legs(query, outcomes)
            plan = self._plan(legs)
            feedback = self._feedback_call(legs, plan, k, current)
            read: list[Document] = []  # documents feedback read (not read again)
            if feedback is not None:
                outcome = (yield feedback)["feedback"]
                if isinstance(outcome, Exception):
                    logger.warning(
                        "HybridRetriever: pseudo-relevance feedback failed (%s); serving the "
                        "first fusion.",
                        one_line(outcome),
                    )
                else:
                    ranking, read = outcome
                    if ranking is not None:
                        plan = self._plan(legs, dense_ranking=legs.ranking(ranking))
            result = yield from self._select(query, k, plan, legs, read, current)
            expanded = self._expansion(result)
            if expanded:
                ids = [e.id for e in expanded]
                outcome = (yield self._read_call(ids, current))["read"]
                if isinstance(outcome, Exception):
                    raise outcome
                accept = self._document_filter()  # the filter holds expanded chunks too
                if accept is not None:
                    outcome = [d for d in outcome if accept(d)]
                result += self._expanded_docs(expanded, outcome)
            current.set_attribute("search.result_count", len(result))
            return result

    # -- legs ---------------------------------------------------------------------------
    def _check_k(self, k: int | None) -> int:
        return check_call_k(k, self.k)

    def _enabled_weights(self) -> tuple[float, float, float]:
        """The weights of the legs that run (a leg without its index is off).

        On ``native`` the store runs the keyword leg itself: it needs no keyword index here.
        """
        semantic, keyword, exact = self.weights
        native = self.search_strategy == "native"
        return (
            semantic,
            keyword if self.keyword_index is not None or native else 0.0,
            exact if self.exact_index is not None else 0.0,
        )

    def _private(self, name: str) -> Any:
        """A private attribute's value, read from ``__pydantic_private__``.

        ``self._name`` goes through pydantic's ``__getattr__`` (a failed lookup, then Python
        code: microseconds); these are read on every query. Writes still use ``self._name``.
        """
        private = self.__pydantic_private__
        return private.get(name) if private is not None else getattr(self, name)

    def _dense(self) -> DenseLeg:
        """The dense leg of the current store and ``search_kwargs``.

        Built again when either changed: ``model_copy(update=...)`` carries the cached leg
        over, and so does an assignment.
        """
        leg = self._private("_dense_leg")
        if leg is None or leg.store is not self.vector_store or not leg.serves(self.search_kwargs):
            sizes = [key for key in _SIZES if key in self.search_kwargs]
            if sizes:  # assigned after construction: the validator did not see it
                name = _SIZES[sizes[0]]
                msg = (
                    f"search_kwargs holds {', '.join(map(repr, sizes))}, which the retriever "
                    f"sets itself; set retriever.{name}"
                    f"{f' (or pass {name}= per call)' if name == 'k' else ''} instead."
                )
                raise ValueError(msg)
            leg = self._dense_leg = DenseLeg(self.vector_store, self.search_kwargs)
        return leg

    def _store(self) -> tuple[VectorStore, bool, bool, bool]:
        """The store and what it supports, checked once per store (``_store_facts``).

        Whether it supports feedback; whether it answers the feedback with arrays; whether its
        ``get_by_ids`` / ``aget_by_ids`` build new Documents (the retriever then owns what it
        read and sets its scores in place instead of copying each Document).
        """
        known = self._private("_store_facts")
        if known is None or known[0] is not self.vector_store:
            store = self.vector_store
            known = self._store_facts = (
                store,
                supports_feedback(store),
                feedback_arrays(store),
                returns_new_documents(store, *_READS),
            )
        return known

    def _ranked_search(self, index: KeywordIndex) -> Callable[[str, int], RankedIds] | None:
        """``index.search_ranked`` when it answers ``search`` with arrays (checked once)."""
        known = self._private("_keyword_arrays")
        if known is None or known[0] is not index:
            arrays = isinstance(index, ArrayKeywordSearch) and answers_with_arrays(
                index, ("search", "search_ranked")
            )
            known = self._keyword_arrays = (index, arrays)
        return index.search_ranked if known[1] else None  # type: ignore[attr-defined]  # checked

    def _leg_calls(self, query: str, fetch: int, k: int, parent: SpanLike) -> dict[str, Call]:
        """The enabled legs; the dense leg last (the sync driver runs it inline).

        On the native strategy only the exact leg: the native request, sized by what the
        exact leg found, follows it (``_native_call``). ``parent``: the search's span.
        """
        calls: dict[str, Call] = {}
        keyword_index, exact_index = self.keyword_index, self.exact_index
        attributes: Attributes = {"search.fetch_k": fetch}
        native = self.search_strategy == "native"  # the store's one request has both legs
        if keyword_index is not None and self.weights[1] > 0 and not native:
            ranked = self._ranked_search(keyword_index)

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

            calls["keyword"] = Call(
                keyword,
                akeyword if asearch is not None else None,
                in_process=getattr(keyword_index, "in_process", False) is True,
            )
        if exact_index is not None and self.weights[2] > 0:

            def exact() -> list[KeywordHit]:
                with span("holodeck.exact_search", attributes, parent=parent) as s:
                    hits = exact_index.search(query, fetch)
                    s.set_attribute("search.result_count", len(hits))
                    return hits

            calls["exact"] = Call(exact, in_process=True)  # an in-memory index
        if not native and self.weights[0] > 0:
            leg = self._dense()
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

            calls["semantic"] = Call(dense, adense)
        return calls

    def _legs(self, query: str, outcomes: Outcomes) -> Legs:
        errors = {name: o for name, o in outcomes.items() if isinstance(o, Exception)}
        # The exact index lives in this process: when it alone answered and found nothing, an
        # empty answer would hide a store that is down; what it found is still served.
        answered = [name for name in outcomes if name not in errors]
        if errors and all(name == "exact" and not outcomes[name] for name in answered):
            for name in ("native", "semantic"):
                if name in errors:
                    raise errors[name]
            raise next(iter(errors.values()))
        for name, error in errors.items():
            logger.warning(
                "HybridRetriever: the %s search failed (%s); serving the other legs.",
                name,
                one_line(error),  # provider errors may echo keys or URLs with passwords
            )
        ok = {name: o for name, o in outcomes.items() if name not in errors}
        native, vector = ok.get("native", (None, None))
        return Legs(ok.get("semantic"), ok.get("keyword"), ok.get("exact"), native, vector)

    def _native_call(
        self, query: str, k: int, fetch: int, outcomes: Outcomes, parent: SpanLike
    ) -> Call:
        """The engine's one fused request: ``fetch_k`` candidates, the rows the result uses.

        The engine fuses, so ranks below what the result takes change nothing: it returns
        ``k`` rows, plus one per exact hit (an exact hit may lift a chunk from below the
        engine's ``k``), doubled when the store keeps model windows (a chunk and its
        windows: a row each); with ``min_similarity_score`` the store keeps ``fetch_k`` rows
        to drop from. The candidates each leg contributes to the engine's fusion stay the
        retriever's ``fetch_k``, as on the fallback path: a shallower window would change
        what is fused (a chunk ranked 11th by both legs can win), not only what is returned.
        """
        store: Any = self.vector_store  # validated: it implements NativeHybridSearch
        exact = outcomes.get("exact")
        found = len(exact) if isinstance(exact, list) else 0
        rows = self._dense().entries_for(min(k + found, fetch))
        kwargs = {
            "k": rows,
            "fetch_k": max(rows, fetch),
            "weights": (self.weights[0], self.weights[1]),
            "rrf_k": self.rrf_k,
            "min_similarity_score": self.min_similarity_score,
            **self.search_kwargs,
        }
        if self.fusion in getattr(store, "native_fusions", ("rrf",)) and self.fusion != "rrf":
            kwargs["fusion"] = self.fusion  # the engine fuses as the tool's fusion says
        attributes: Attributes = {"search.fetch_k": fetch}
        # the query embedded here and sent, where the store takes it: the cosine of an exact
        # hit the engine did not return is then looked up by id, without embedding it again
        embeddings = getattr(store, "embeddings", None) if _takes_query_vector(store) else None

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

    def _read_call(self, ids: Sequence[str], parent: SpanLike) -> dict[str, Call]:
        store, wanted = self.vector_store, list(ids)
        attributes: Attributes = {"search.read_count": len(wanted)}

        def read() -> list[Document]:
            with span("holodeck.read_documents", attributes, parent=parent):
                return store.get_by_ids(wanted)

        async def aread() -> list[Document]:
            with span("holodeck.read_documents", attributes, parent=parent):
                return await store.aget_by_ids(wanted)

        return {"read": Call(read, aread)}

    def _feedback_call(
        self, legs: Legs, plan: Plan, k: int, parent: SpanLike
    ) -> dict[str, Call] | None:
        """The feedback step (``feedback_docs``), or ``None`` when it does not apply."""
        dense, store = legs.dense, self.vector_store
        if (
            not self.feedback_docs
            or legs.native is not None
            or dense is None
            or dense.vector is None
            or not legs.keyword
        ):
            return None
        _, supported, arrays, _ = self._store()
        if not supported:
            return None
        top = plan.order[: self.feedback_docs]
        depth = max(FEEDBACK_DEPTH, k)  # the first of each leg are re-scored
        first = _first_ids(dense.hits, depth) + _first_ids(legs.keyword, depth)
        candidates = list(dict.fromkeys(first))
        query, weight = dense.vector, self.feedback_weight

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

    # -- fusion (pure, in ``_plan``) ----------------------------------------------------
    def _plan(self, legs: Legs, *, dense_ranking: Ranking | None = None) -> Plan:
        """Fuse the legs; ``dense_ranking`` (feedback) replaces the dense order in the fusion."""
        if legs.native is not None:
            return native_plan(
                legs.native,
                list(legs.exact or []),
                weights=self.weights,
                rrf_k=self.rrf_k,
                exact_first=self.exact_first,
            )
        return fused_plan(
            legs,
            weights=self.weights,
            fusion=self.fusion,
            rrf_k=self.rrf_k,
            exact_first=self.exact_first,
            dense_ranking=dense_ranking,
        )

    # -- selection: threshold, then read the final k ------------------------------------
    def _select(
        self,
        query: str,
        k: int,
        plan: Plan,
        legs: Legs,
        read: Sequence[Document],
        parent: SpanLike,
    ) -> Core[list[Document]]:
        """Walk the fused order: apply the threshold, read documents, stop at ``k``.

        ``read``: documents already read (not read again); ``parent``: the search's span.
        """
        dense = legs.dense
        threshold = self.min_similarity_score
        docs: dict[str, Document] = dict(dense.documents) if dense else {}
        docs.update({d.id: d for d in read if d.id})
        # the Documents this query read and owns (by identity): scored in place, not copied
        owned = {id(d) for d in read} if self._store()[3] else None
        similarity: dict[str, float] = {}  # read only for the threshold
        unchecked: set[str] = set()  # hits whose similarity could not be computed
        if threshold is not None and dense is not None and dense.kind == "relevance":
            similarity = dict(dense.hits)
        # the query vector for a lookup by id: the dense leg's, or the one sent to the engine
        scorer = dense or DenseResult(hits=[], kind="relevance", vector=legs.native_vector)
        for hit in legs.native or []:  # the engine returned these documents already
            if not hit.document.id:
                continue
            chunk = window_parent(hit.document.id)
            if chunk == hit.document.id:  # a window's text is not its chunk: read later
                docs[chunk] = hit.document
            if hit.similarity is not None:
                similarity[chunk] = max(hit.similarity, similarity.get(chunk, 0.0))
        accept = self._document_filter()
        chosen: list[str] = []
        queue: deque[str] = deque()
        pos = 0
        while len(chosen) < k and (queue or pos < len(plan.order)):
            need = k - len(chosen)
            if len(queue) < need and pos < len(plan.order):
                size = need if threshold is None else 4 * need
                batch = plan.order[pos : pos + size]
                pos += len(batch)
                if threshold is not None:
                    # a pinned hit is kept whatever its cosine, which is computed all the same
                    # when no leg gave it (the engine drops rows under the threshold): its
                    # semantic_score is the chunk's cosine, as every other result's
                    unknown = [i for i in batch if i not in similarity]
                    if unknown:
                        found = yield from self._similarities(query, unknown, scorer, docs)
                        if found is None:  # relevance unknowable: served, not dropped
                            unchecked.update(unknown)
                        else:
                            similarity.update(found)
                    batch = [
                        i
                        for i in batch
                        if i in plan.pinned
                        or i in unchecked
                        or similarity.get(i, -1.0) >= threshold
                    ]
                queue.extend(batch)
                continue
            take = [queue.popleft() for _ in range(min(need, len(queue)))]
            missing = [i for i in take if i not in docs]
            if missing:
                outcome = (yield self._read_call(missing, parent))["read"]
                if isinstance(outcome, Exception):
                    raise outcome
                docs.update({d.id: d for d in outcome if d.id})
                if owned is not None:
                    owned.update(map(id, outcome))
                gone = [i for i in missing if i not in docs]
                if gone:
                    logger.debug(
                        "HybridRetriever: %d hits are not in the store: %s", len(gone), gone
                    )
            chosen += [i for i in take if i in docs and (accept is None or accept(docs[i]))]
        unscored = [i for i in chosen if i in plan.pinned and i not in similarity]
        if legs.native is not None and unscored and not self._dense().needs_documents:
            # an exact hit the engine did not return: its cosine, looked up by id (no
            # threshold asked for it), so semantic_score is the cosine as on the fallback
            found = yield from self._similarities(query, unscored, scorer, docs, checking=False)
            similarity.update(found or {})
        elif threshold is None:
            similarity = {}
        return self._assemble(query, chosen, plan, docs, similarity, owned or set())

    def _document_filter(self) -> Callable[[Document], bool] | None:
        """``search_kwargs["filter"]`` as a test of every leg's documents, if the store says how.

        How: ``DocumentFilters``, or ``InMemoryVectorStore``'s callable. The dense leg is
        filtered by the store; keyword and exact hits come from indexes that do not know the
        filter, so a read document is held to it here. Elsewhere (a native engine filters both
        of its legs itself) ``None``.
        """
        doc_filter = self.search_kwargs.get("filter")
        if doc_filter is None:
            return None
        store = self.vector_store
        if isinstance(store, DocumentFilters):
            return store.document_filter(doc_filter)
        if isinstance(store, InMemoryVectorStore) and callable(doc_filter):
            return doc_filter  # type: ignore[no-any-return]  # Callable[[Document], bool]
        return None

    def _similarities(
        self,
        query: str,
        ids: list[str],
        dense: DenseResult | None,
        docs: dict[str, Document],
        *,
        checking: bool = True,
    ) -> Core[dict[str, float] | None]:
        """Dense relevance of ``ids``; ``None`` when it cannot be computed.

        The query could not be embedded (the model is down: the dense leg failed the same way)
        or the stored vectors could not be read. The threshold then cannot tell relevant from
        not, and an outage is not "nothing relevant": the hits are served unchecked, with a
        WARNING, as the retriever serves the other legs when one fails. Not ``checking`` (only
        ``semantic_score`` asked for it), the hits keep ``semantic_score: None`` (DEBUG).
        """
        leg = self._dense()
        result = dense or DenseResult(hits=[], kind="relevance")
        store = self.vector_store
        missing = [i for i in ids if i not in docs] if leg.needs_documents else []

        def compute() -> tuple[dict[str, float], list[Document]]:
            read = store.get_by_ids(missing) if missing else []
            known = {**docs, **{d.id: d for d in read if d.id}}
            return leg.similarities(result, query, ids, known), read

        outcome = (yield {"similarity": Call(compute)})["similarity"]
        if isinstance(outcome, Exception):
            said = (
                "they are served without the min_similarity_score check"
                if checking
                else "their semantic_score stays None"
            )
            logger.log(
                logging.WARNING if checking else logging.DEBUG,
                "HybridRetriever: computing the similarity of %d keyword hits failed (%s); %s.",
                len(ids),
                one_line(outcome),
                said,
            )
            return None
        found, read = outcome
        docs.update({d.id: d for d in read if d.id})
        return dict(found)

    def _assemble(
        self,
        query: str,
        chosen: Sequence[str],
        plan: Plan,
        docs: Mapping[str, Document],
        similarity: Mapping[str, float],
        owned: set[int],
    ) -> list[Document]:
        """The chosen documents with their scores.

        ``similarity`` fills a keyword-only hit's ``semantic_score`` (what the threshold
        computed). ``owned``: the identities of documents this query's reads built for it
        (``_store``), which get their scores in place (the same Document a
        copy would be); any other is copied.
        """
        index = DefinitionIndex.from_mapping(self.definitions) if self.definitions else None
        terms = index.terms_in(query) if index is not None else []
        out: list[Document] = []
        for doc_id, extra in zip(chosen, plan.metas(chosen), strict=True):
            doc = docs[doc_id]
            if extra["semantic_score"] is None and doc_id in similarity:
                extra["semantic_score"] = similarity[doc_id]
            if index is not None and terms:
                extra["definitions"] = _definitions_for(index, terms, source_path(doc))
            if self.expand_hops:
                extra["expansion_hops"] = 0
            if id(doc) in owned:
                doc.metadata.update(extra)  # as {**metadata, **extra}: same keys, same order
                out.append(doc)
            else:
                out.append(doc.model_copy(update={"metadata": {**doc.metadata, **extra}}))
        return out

    # -- cross-reference expansion ------------------------------------------------------
    def _expansion(self, result: list[Document]) -> list[Expansion]:
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
                **UNSCORED,
                "expansion_hops": e.distance,
                "expanded_from": e.via,
            }
            out.append(doc.model_copy(update={"metadata": {**doc.metadata, **extra}}))
        return out


def _definitions_for(
    index: DefinitionIndex, terms: Sequence[str], source: str
) -> list[dict[str, Any]]:
    """The ``definitions`` metadata of a result from the document ``source``.

    Per term: the document's own definition (the first in it); else, ``elsewhere``, those of
    the first ``_OTHER_DEFINITIONS`` documents (by path) that define it. A definition from
    another document is never given as the result's: two documents may define a term
    differently.
    """

    def entry(d: Definition, *, elsewhere: bool) -> dict[str, Any]:
        return {
            "term": d.term,
            "definition": d.definition,
            "source_path": d.source_path,
            "section_id": d.section_id,
            "elsewhere": elsewhere,
        }

    out: list[dict[str, Any]] = []
    for term in terms:
        own = index.in_document(term, source)
        if own is not None:
            out.append(entry(own, elsewhere=False))
        else:
            out.extend(entry(d, elsewhere=True) for d in index.every(term)[:_OTHER_DEFINITIONS])
    return out


def _first_ids(hits: Sequence[tuple[str, float]], n: int) -> list[str]:
    """The ids of the first ``n`` hits (read off ``RankedIds`` without building pairs)."""
    if isinstance(hits, RankedIds):
        return hits.ids[:n]
    return [i for i, _ in hits[:n]]


_SET_HERE = {
    "fallback": frozenset({"embedding", "k"}),
    "native": frozenset(
        {"query", "embedding", "k", "fetch_k", "weights", "rrf_k", "min_similarity_score"}
        | {"fusion"}
    ),
}
"""The arguments of the store's search (the id search; ``native_hybrid_search``) the retriever
sets itself: not ``search_kwargs``."""


def _search_keywords(store: VectorStore, *, native: bool) -> list[str] | None:
    """The ``search_kwargs`` names the store's search takes; ``None`` when it does not say.

    The named arguments of ``native_hybrid_search`` (``native``) or of the id search
    (``search_ids_by_vector``), less those the retriever sets; for a search taking
    ``**kwargs`` (or without an id search) the store's ``search_keywords``, if it lists them.
    """
    search = getattr(store, "native_hybrid_search" if native else "search_ids_by_vector", None)
    if search is not None:
        try:
            parameters = inspect.signature(search).parameters
        except (TypeError, ValueError):  # a builtin or an object without a signature
            return None
        if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
            own = _SET_HERE["native" if native else "fallback"]
            return [name for name in parameters if name not in own]
    declared = None if native else getattr(store, "search_keywords", None)
    return None if declared is None else sorted(declared, key=lambda name: (name != "filter", name))


def _takes_query_vector(store: object) -> bool:
    """Whether ``store.native_hybrid_search`` takes the query vector (``embedding=``)."""
    try:
        parameters = inspect.signature(store.native_hybrid_search).parameters  # type: ignore[attr-defined]  # a NativeHybridSearch
    except (AttributeError, TypeError, ValueError):
        return False
    return "embedding" in parameters
