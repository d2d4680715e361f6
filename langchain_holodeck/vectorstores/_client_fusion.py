"""Convex fusion of an engine's two legs, for engines that cannot fuse that way themselves.

Redis Stack 7.4 fuses linearly over raw BM25 (``FT.AGGREGATE``) and Qdrant by rank (RRF):
neither normalizes a leg's scores, so neither can rank as the retriever's convex fusion does.
Their stores fetch each leg's ``fetch_k`` ids and scores from the engine (no text), fuse them
here exactly as ``HybridRetriever`` does in-process and as PostgreSQL does in SQL
(``fusion.convex_score_fusion``, lower bounds 0), and read the text of the rows they return.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from langchain_core.documents import Document

from langchain_holodeck._chunk import window_parent
from langchain_holodeck.contracts import NativeHit
from langchain_holodeck.fusion import convex_score_fusion

__all__ = ["convex_chunks", "convex_hits"]


def convex_chunks(
    dense: Sequence[tuple[str, float]],
    keyword: Sequence[tuple[str, float]],
    weights: tuple[float, float],
) -> list[tuple[str, float]]:
    """Chunk ids by ``w_dense * s / best_s + w_keyword * b / best_b``, best first.

    ``dense``: entry ids (a chunk or one of its model windows, ``<chunk id>:w<n>``) and their
    relevance in [0, 1], best first, so a chunk scores its best entry. ``keyword``: chunk ids
    and raw BM25 scores, best first. A chunk absent from a leg adds 0 for it.
    """
    chunks = [(window_parent(doc_id), score) for doc_id, score in dense]
    return convex_score_fusion(
        [chunks, list(keyword)], weights=list(weights), lower_bounds=[0.0, 0.0]
    )


def convex_hits(
    dense: Sequence[tuple[str, float]],
    keyword: Sequence[tuple[str, float]],
    weights: tuple[float, float],
    *,
    k: int,
    min_similarity_score: float | None,
    similarities: Callable[[list[str]], Mapping[str, float]],
    read: Callable[[list[str]], list[Document]],
) -> list[NativeHit]:
    """The ``k`` best chunks of ``convex_chunks``, read, with their dense relevance.

    A chunk's similarity is its best entry's in ``dense``; a keyword-only chunk's is computed
    by ``similarities`` (from its stored vectors) only when ``min_similarity_score`` is set,
    which then drops every chunk below it (walking the fused order, ``4 k`` chunks at a time,
    until ``k`` remain), else it is ``None``. ``read`` gives the documents
    of ids (those deleted since the search are skipped).
    """
    fused = convex_chunks(dense, keyword, weights)
    similarity: dict[str, float] = {}
    for doc_id, score in dense:  # best first: a chunk's first entry is its best
        similarity.setdefault(window_parent(doc_id), score)
    top = fused[:k]
    if min_similarity_score is not None:  # walk the fused order: vectors read as needed
        top, step = [], max(4 * k, 20)
        for start in range(0, len(fused), step):
            batch = fused[start : start + step]
            similarity.update(similarities([i for i, _ in batch if i not in similarity]))
            top += [(i, s) for i, s in batch if similarity.get(i, -1.0) >= min_similarity_score]
            if len(top) >= k:
                break
        top = top[:k]
    docs = {d.id: d for d in read([doc_id for doc_id, _ in top])}
    return [
        NativeHit(docs[doc_id], score, similarity.get(doc_id))
        for doc_id, score in top
        if doc_id in docs
    ]
