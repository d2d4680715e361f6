"""The tool's text contract: how results read for people and models (tools and CLI share it)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from langchain_core.documents import Document

from langchain_holodeck._chunk import (
    CODE_CHUNK_TYPE,
    FUSED_SCORE,
    RELEVANCE_SCORE,
    SEMANTIC_SCORE,
    original_content,
    source_path,
)

BREADCRUMB_SEPARATOR = " \u203a "


def shown_text(document: Document) -> str:
    """The text users and agents see: the original chunk, without any LLM context."""
    return original_content(document)


def result_score(document: Document, *, hybrid: bool = False) -> float | None:
    """The score a tool shows, in [0, 1]: the rerank score, else the fused or dense score.

    Hybrid results show ``fused_score``: the fused value divided by the best attainable one
    (a chunk ranked first by every leg that returned something scores 1.0; a pinned exact
    section hit scores 1.0). Dense results show ``semantic_score``: the cosine similarity
    clipped to [0, 1]. ``None`` for a chunk reached by cross-reference expansion, which has
    no score of its own. The raw per-leg scores stay in the metadata (``semantic_score``,
    ``keyword_score``) and in the CLI's ``--json``.
    """
    for key in (RELEVANCE_SCORE, FUSED_SCORE if hybrid else SEMANTIC_SCORE):
        value = document.metadata.get(key)
        if value is not None:
            return float(value)
    return None


def result_header(rank: int, document: Document, *, hybrid: bool = False) -> str:
    """``[1] Score: 0.89 | Source: docs/api.md`` (+ ``| Section: ...`` for hybrid results)."""
    meta = document.metadata
    source = source_path(meta, default="unknown")
    score = result_score(document, hybrid=hybrid)
    if score is not None:
        label = f"Score: {score:.2f}"
    else:
        hops = meta.get("expansion_hops") or 0
        label = f"Cross-reference ({hops} hop{'s' if hops != 1 else ''})" if hops else "Score: -"
    line = f"[{rank}] {label} | Source: {source}"
    breadcrumb = section_breadcrumb(document) if hybrid else ""
    return f"{line} | Section: {breadcrumb}" if breadcrumb else line


def format_results(
    documents: Sequence[Document],
    *,
    hybrid: bool = False,
    explain: Callable[[Document], str] | None = None,
    max_chars: int | None = None,
) -> str:
    """The tool contract's output: ``Found N result(s):`` then one numbered block per result.

    When the query names defined terms (the retriever's ``definitions`` metadata), a
    ``Defined terms:`` block follows the results, one line per term, from the first result
    whose document defines it:
    ``- "Derivative Works" (LICENSE.txt, section 1): any work, whether in Source ...``; a
    term only other documents define is quoted from each, marked ``not among the results``
    (``defined_terms_block``).

    Args:
        documents: Results, best first.
        hybrid: Show fused scores (in [0, 1], see ``result_score``) and the section breadcrumb.
        explain: Adds an indented ``explain:`` line under each header (the CLI's --explain).
        max_chars: Show at most this many characters of each text (``snippet``); ``None``: all.

    Raises:
        ValueError: If ``max_chars`` is not positive.
    """
    if max_chars is not None and max_chars <= 0:
        msg = f"max_chars must be a positive number of characters, got {max_chars}."
        raise ValueError(msg)
    blocks = [f"Found {len(documents)} result(s):"]
    for rank, doc in enumerate(documents, start=1):
        lines = [result_header(rank, doc, hybrid=hybrid)]
        if explain is not None:
            lines.append(f"    explain: {explain(doc)}")
        text = shown_text(doc)
        lines.append(text if max_chars is None else snippet(text, max_chars))
        blocks.append("\n".join(lines))
    terms = defined_terms_block(documents)
    if terms:
        blocks.append(terms)
    return "\n\n".join(blocks)


def snippet(text: str, max_chars: int) -> str:
    """``text`` cut to at most ``max_chars`` characters at a word boundary, ending in ``…``.

    A text that fits is returned unchanged; a cut one says how much was left out.
    """
    if len(text) <= max_chars:
        return text
    cut = text[:max_chars].rstrip()
    space = cut.rfind(" ")
    if space > max_chars // 2:
        cut = cut[:space].rstrip()
    return f"{cut}… [{len(text) - len(cut)} more characters]"


def defined_terms_block(documents: Sequence[Document]) -> str:
    """``Defined terms:`` and the definition of each term the query names; ``""`` when none.

    A term gets one line, the definition in the first result whose document defines it
    (its ``definitions`` entry with ``elsewhere`` false). A term no result's document
    defines gets a line per document that does, marked ``not among the results``: two
    documents may define a term differently, and the one quoted must not pass for the
    results' own.
    """
    first_at: dict[str, int] = {}  # the rank of each shown document's first result
    for rank, doc in enumerate(documents):
        first_at.setdefault(source_path(doc), rank)
    own: dict[str, tuple[int, str]] = {}
    other: dict[str, dict[str, str]] = {}
    terms: dict[str, None] = {}  # in the order met
    for rank, doc in enumerate(documents):
        for entry in doc.metadata.get("definitions") or []:
            term = str(entry.get("term", ""))
            source = str(entry.get("source_path") or "")
            if not term:
                continue
            terms.setdefault(term)
            at = first_at.get(source) if entry.get("elsewhere") else rank
            if at is not None:  # a shown document's (a cross-reference's may be marked)
                if term not in own or at < own[term][0]:
                    own[term] = (at, _term_line(term, entry, elsewhere=False))
            else:
                other.setdefault(term, {}).setdefault(
                    f"{source}\0{entry.get('section_id') or ''}",
                    _term_line(term, entry, elsewhere=True),
                )
    lines: list[str] = []
    for term in terms:
        lines.extend([own[term][1]] if term in own else other[term].values())
    return "\n".join(["Defined terms:", *lines]) if lines else ""


def _term_line(term: str, entry: Mapping[str, object], *, elsewhere: bool) -> str:
    """``- "Operator" (a.md, section 1): a person ...`` (``; not among the results`` added)."""
    where = [str(entry.get("source_path") or "")]
    if entry.get("section_id"):
        where.append(f"section {entry['section_id']}")
    place = ", ".join(w for w in where if w)
    if elsewhere:
        place = f"{place}; not among the results" if place else "not among the results"
    return f'- "{term}"' + (f" ({place})" if place else "") + f": {entry.get('definition', '')}"


def section_breadcrumb(document: Document) -> str:
    """``Title I > Section 201 > 201(a)`` (with a U+203A separator): parents, then the section.

    The section is named by its id when it has its own (``201(a)``), else by its heading
    (``Guide > Install > Form Data``; a code chunk's heading lists symbols: not shown).
    """
    meta = document.metadata
    parts = [str(p) for p in meta.get("parent_chain") or []]
    section_id = meta.get("section_id")
    heading = meta.get("heading")
    if section_id and (not parts or section_id not in parts[-1]):
        parts.append(str(section_id))
    elif heading and meta.get("chunk_type") != CODE_CHUNK_TYPE:
        parts.append(str(heading))
    return BREADCRUMB_SEPARATOR.join(parts)
