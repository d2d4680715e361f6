"""The hybrid retriever's selection: the fused order walked to the final ``k``, with scores.

After fusion (``_plan``), ``select`` walks the fused order: ``min_similarity_score`` drops the
hits whose dense relevance misses it (computed for keyword-only hits too), the survivors are
read from the store in batches until ``k`` remain (ids the store no longer has are skipped,
and the ``filter`` holds every leg's documents), and each gets its score metadata and, when the
query names a defined term, its ``definitions``. The chunks cross-reference expansion adds get
theirs from ``expanded_docs``. Both are generator cores (``_steps``): the reads and the
similarity lookups are steps a driver performs.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.documents import Document
from langchain_core.vectorstores import VectorStore

from langchain_holodeck._chunk import source_path, window_parent
from langchain_holodeck._redact import one_line
from langchain_holodeck._tracing import SpanLike
from langchain_holodeck.definitions import Definition, DefinitionIndex
from langchain_holodeck.retrievers._calls import read_call
from langchain_holodeck.retrievers._dense import DenseLeg, DenseResult
from langchain_holodeck.retrievers._expansion import Expansion
from langchain_holodeck.retrievers._plan import UNSCORED, Legs, Plan
from langchain_holodeck.retrievers._steps import Call, Core

__all__ = ["expanded_docs", "select"]

logger = logging.getLogger("langchain_holodeck.retrievers.hybrid")  # the retriever's

_OTHER_DEFINITIONS = 3
"""How many documents' definitions a result gets of a term its own document does not define
(``elsewhere``)."""


def select(
    query: str,
    k: int,
    plan: Plan,
    legs: Legs,
    read: Sequence[Document],
    parent: SpanLike,
    *,
    store: VectorStore,
    dense_leg: Callable[[], DenseLeg],
    threshold: float | None,
    owns_reads: bool,
    accept: Callable[[Document], bool] | None,
    definitions: Mapping[str, Any] | None,
    expanding: bool,
) -> Core[list[Document]]:
    """Walk the fused order: apply the threshold, read documents, stop at ``k``.

    ``read``: documents already read (not read again); ``parent``: the search's span;
    ``dense_leg``: the retriever's dense leg (asked only when a similarity is looked up);
    ``owns_reads``: whether the store's reads build new Documents (then scored in place);
    ``accept``: the ``filter`` as a test of a document, or ``None``; ``expanding``: expansion
    follows (each hit gets ``expansion_hops: 0``).
    """
    dense = legs.dense
    docs: dict[str, Document] = dict(dense.documents) if dense else {}
    docs.update({d.id: d for d in read if d.id})
    # the Documents this query read and owns (by identity): scored in place, not copied
    owned = {id(d) for d in read} if owns_reads else None
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
                    found = yield from _similarities(
                        query, unknown, scorer, docs, store=store, leg=dense_leg()
                    )
                    if found is None:  # relevance unknowable: served, not dropped
                        unchecked.update(unknown)
                    else:
                        similarity.update(found)
                batch = [
                    i
                    for i in batch
                    if i in plan.pinned or i in unchecked or similarity.get(i, -1.0) >= threshold
                ]
            queue.extend(batch)
            continue
        take = [queue.popleft() for _ in range(min(need, len(queue)))]
        missing = [i for i in take if i not in docs]
        if missing:
            outcome = (yield read_call(store, missing, parent))["read"]
            if isinstance(outcome, Exception):
                raise outcome
            docs.update({d.id: d for d in outcome if d.id})
            if owned is not None:
                owned.update(map(id, outcome))
            gone = [i for i in missing if i not in docs]
            if gone:
                logger.debug("HybridRetriever: %d hits are not in the store: %s", len(gone), gone)
        chosen += [i for i in take if i in docs and (accept is None or accept(docs[i]))]
    unscored = [i for i in chosen if i in plan.pinned and i not in similarity]
    if legs.native is not None and unscored and not dense_leg().needs_documents:
        # an exact hit the engine did not return: its cosine, looked up by id (no
        # threshold asked for it), so semantic_score is the cosine as on the fallback
        found = yield from _similarities(
            query, unscored, scorer, docs, store=store, leg=dense_leg(), checking=False
        )
        similarity.update(found or {})
    elif threshold is None:
        similarity = {}
    return _assemble(
        query, chosen, plan, docs, similarity, owned or set(), definitions, expanding=expanding
    )


def _similarities(
    query: str,
    ids: list[str],
    dense: DenseResult | None,
    docs: dict[str, Document],
    *,
    store: VectorStore,
    leg: DenseLeg,
    checking: bool = True,
) -> Core[dict[str, float] | None]:
    """Dense relevance of ``ids``; ``None`` when it cannot be computed.

    The query could not be embedded (the model is down: the dense leg failed the same way)
    or the stored vectors could not be read. The threshold then cannot tell relevant from
    not, and an outage is not "nothing relevant": the hits are served unchecked, with a
    WARNING, as the retriever serves the other legs when one fails. Not ``checking`` (only
    ``semantic_score`` asked for it), the hits keep ``semantic_score: None`` (DEBUG).
    """
    result = dense or DenseResult(hits=[], kind="relevance")
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
    query: str,
    chosen: Sequence[str],
    plan: Plan,
    docs: Mapping[str, Document],
    similarity: Mapping[str, float],
    owned: set[int],
    definitions: Mapping[str, Any] | None,
    *,
    expanding: bool,
) -> list[Document]:
    """The chosen documents with their scores.

    ``similarity`` fills a keyword-only hit's ``semantic_score`` (what the threshold
    computed). ``owned``: the identities of documents this query's reads built for it
    (``owns_reads``), which get their scores in place (the same Document a
    copy would be); any other is copied.
    """
    index = DefinitionIndex.from_mapping(definitions) if definitions else None
    terms = index.terms_in(query) if index is not None else []
    out: list[Document] = []
    for doc_id, extra in zip(chosen, plan.metas(chosen), strict=True):
        doc = docs[doc_id]
        if extra["semantic_score"] is None and doc_id in similarity:
            extra["semantic_score"] = similarity[doc_id]
        if index is not None and terms:
            extra["definitions"] = _definitions_for(index, terms, source_path(doc))
        if expanding:
            extra["expansion_hops"] = 0
        if id(doc) in owned:
            doc.metadata.update(extra)  # as {**metadata, **extra}: same keys, same order
            out.append(doc)
        else:
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


def expanded_docs(expanded: list[Expansion], fetched: Sequence[Document]) -> list[Document]:
    """The chunks expansion reached, read as ``fetched``, with their metadata (unscored)."""
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
