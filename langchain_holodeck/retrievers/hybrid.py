"""HybridRetriever: dense + keyword + exact-match retrieval, fused by weighted RRF or scores.

The retriever decides: which legs run and how deep, what a failing leg means, when feedback
applies. Beside it: each step's traced I/O (``_calls``), the fusion (``_plan``), the walk to the
final ``k`` (``_selection``) and what the store's search takes (``_search_kwargs``).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import VectorStore
from pydantic import ConfigDict, Field, PrivateAttr, field_validator, model_validator

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
from langchain_holodeck._redact import clipped, one_line
from langchain_holodeck._text_decoding import check_query_text
from langchain_holodeck._tracing import Attributes, SpanLike, span
from langchain_holodeck.backends._registry import native_hybrid_providers
from langchain_holodeck.contracts import (
    ArrayKeywordSearch,
    RankedIds,
    answers_with_arrays,
    check_native_filter,
    returns_new_documents,
)
from langchain_holodeck.definitions import DefinitionIndex
from langchain_holodeck.exact import ExactMatchIndex
from langchain_holodeck.keyword_index.base import KeywordIndex
from langchain_holodeck.retrievers._calls import (
    dense_call,
    exact_call,
    feedback_call,
    keyword_call,
    native_call,
    read_call,
)
from langchain_holodeck.retrievers._dense import DenseLeg
from langchain_holodeck.retrievers._expansion import Expansion, expand_references
from langchain_holodeck.retrievers._feedback import (
    FEEDBACK_DEPTH,
    feedback_arrays,
    supports_feedback,
)
from langchain_holodeck.retrievers._plan import (
    EXACT_BOOST,
    Legs,
    Plan,
    Ranking,
    fused_plan,
    native_plan,
)
from langchain_holodeck.retrievers._search_kwargs import (
    check_search_kwargs,
    document_filter,
    refuse_sizes,
    sizes_from_search_kwargs,
    takes_query_vector,
)
from langchain_holodeck.retrievers._selection import expanded_docs, select
from langchain_holodeck.retrievers._steps import Call, Core, Outcomes, adrive, drive
from langchain_holodeck.search_strategy import SearchStrategy, supports_native_hybrid

__all__ = [
    "DEFAULT_FETCH_K",
    "DEFAULT_FUSION",
    "DEFAULT_WEIGHTS",
    "EXACT_BOOST",
    "MAX_K",
    "HybridRetriever",
]

logger = logging.getLogger(__name__)

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
    ``FilterExpression`` or a filter string), is refused at construction, on every strategy,
    and through a ``NamespaceFilteredStore`` as on the store under it. In a Redis filter
    string a TAG value is escaped (``@source_path:{docs\\/a\\.md}``, or ``Tag(...) == v``):
    an unescaped ``-``, ``/``, ``.``, ... is refused, showing the escaped form."""
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
        """``search_kwargs={"k": n}`` sets ``k`` (see ``_search_kwargs``)."""
        return sizes_from_search_kwargs(data)

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
        """Refuse a ``search_kwargs`` key, or a ``filter``, the store's search does not take."""
        if not self.search_kwargs:
            return self
        native = self.search_strategy == "native"
        check_search_kwargs(self.vector_store, self.search_kwargs, native=native)
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
            shown = clipped(shown)
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
            result = yield from select(
                query,
                k,
                plan,
                legs,
                read,
                current,
                store=self.vector_store,
                dense_leg=self._dense,
                threshold=self.min_similarity_score,
                owns_reads=self._store()[3],
                accept=document_filter(self.vector_store, self.search_kwargs),
                definitions=self.definitions,
                expanding=bool(self.expand_hops),
            )
            expanded = self._expansion(result)
            if expanded:
                ids = [e.id for e in expanded]
                outcome = (yield read_call(self.vector_store, ids, current))["read"]
                if isinstance(outcome, Exception):
                    raise outcome
                # the filter holds expanded chunks too
                accept = document_filter(self.vector_store, self.search_kwargs)
                if accept is not None:
                    outcome = [d for d in outcome if accept(d)]
                result += expanded_docs(expanded, outcome)
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
            refuse_sizes(self.search_kwargs)
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
            calls["keyword"] = keyword_call(keyword_index, ranked, query, fetch, attributes, parent)
        if exact_index is not None and self.weights[2] > 0:
            calls["exact"] = exact_call(exact_index, query, fetch, attributes, parent)
        if not native and self.weights[0] > 0:
            calls["semantic"] = dense_call(self._dense(), query, fetch, attributes, parent)
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
        embeddings = getattr(store, "embeddings", None) if takes_query_vector(store) else None
        return native_call(store, query, kwargs, embeddings, attributes, parent)

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
        return feedback_call(
            store,
            dense.vector,
            top,
            candidates,
            weight=self.feedback_weight,
            arrays=arrays,
            parent=parent,
        )

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


def _first_ids(hits: Sequence[tuple[str, float]], n: int) -> list[str]:
    """The ids of the first ``n`` hits (read off ``RankedIds`` without building pairs)."""
    if isinstance(hits, RankedIds):
        return hits.ids[:n]
    return [i for i, _ in hits[:n]]
