"""Defined terms and cross-references, extracted from chunk Documents (plain Python).

Everything here works from stored chunks (``original_content`` or ``page_content`` plus the
splitter's metadata), so the definition index and the reference graph can be rebuilt from
any store without a second copy to keep in sync.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.documents import Document

from langchain_holodeck._chunk import (
    CHUNK_INDEX,
    CHUNK_TYPE,
    CODE_CHUNK_TYPE,
    original_content,
    source_path,
)
from langchain_holodeck._section_refs import find_section_refs, normalize_section_ref
from langchain_holodeck._sections import parse_sections

__all__ = [
    "Definition",
    "DefinitionExtractor",
    "DefinitionIndex",
    "ResolvedReference",
    "find_definitions",
    "find_section_refs",
    "is_definitions_heading",
    "normalize_section_ref",
    "normalize_term",
    "resolve_cross_references",
]

logger = logging.getLogger(__name__)

_MAX_DEFINITION_CHARS = 500
_MAX_TERM_WORDS = 6

_DEFINITIONS_WORDS = re.compile(r"\b(?:definitions?|glossary|defined\s+terms)\b", re.I)
_INTERPRETATION = re.compile(r"interpretations?(?:\s+and\s+definitions?)?", re.I)
_HEADING_NUMBER = re.compile(
    r"^[\s#§]*(?:(?i:section|sec\.?|article|art\.|clause|part|chapter|title)\s+)?"
    r"(?:[0-9]+(?:\.[0-9]+)*[A-Za-z]?|[IVXLCDM]+(?![A-Za-z]))?(?:\([^)]*\))*[\s.:)—\u2013-]*"
)
_TERMS_ONLY = re.compile(r"(?:key\s+|defined\s+)?terms(?:\s+used)?", re.I)

_LEAD = r"^[ \t]*(?:[-*+•][ \t]+|\(\w{1,4}\)[ \t]*|\d{1,3}\.[ \t]+)?"
_VERB = (
    r"(?P<verb>(?i:shall\s+mean|means|shall\s+have\s+the\s+meaning|has\s+the\s+meaning"
    r"|shall\s+refer\s+to|refers\s+to|is\s+defined\s+as))\b"
)
_QUOTED = re.compile(
    r"(?:[\"“\u2018«]|\*\*)(?P<term>[^\"“”\u2018\u2019«»*\n]{1,80}?)(?:[\"”\u2019»]|\*\*),?"
    # a short qualifier ("of a Contributor", "for a work") and a parenthetical ("(or "Your")")
    r"(?:[ \t]+(?!(?i:shall|means|has|refers|is)\b)[\w'\u2019-]+){0,6}?[ \t]*"
    r"(?:\([^)\n]{0,80}\)[ \t]*)?"
    r"(?:\n[ \t]*)?"  # MPL: the term on one line, "means ..." on the next
    + _VERB
    + r"[ \t]*(?P<definition>[^\n]*)"
)
_NEW_ITEM = re.compile(
    r"^[ \t]*(?:[-*+•][ \t]|\(\w{1,4}\)|\d+(?:\.\d+)*\.?[ \t]|[\"“\u2018«]|\*\*)"
)
_CLAUSE_ITEM = re.compile(r"^[ \t]*\(\w{1,4}\)")
_DEFINED_AS = re.compile(
    r"(?:^|(?<=[.;:][ \t])|(?<=\)[ \t]))[ \t]*(?:(?i:the[ \t]+term|the|an?)[ \t]+)?"
    r"(?P<term>[A-Z][\w'\u2019-]*(?:[ \t]+[\w'\u2019-]+){0,4}?)[ \t]+(?:is|are|shall[ \t]+be)[ \t]+"
    r"defined[ \t]+as[ \t]+(?P<definition>[^\n]+)",
    re.M,
)
_PLAIN_MEANS = re.compile(
    _LEAD + r"(?P<term>[A-Za-z][\w'\u2019 -]{0,60}?)[ \t]+(?:shall[ \t]+mean|means)[ \t]+"
    r"(?P<definition>[^\n]+)",
    re.M,
)
_GLOSSARY = re.compile(
    _LEAD
    + r"(?:\*\*|__)?[\"“\u2018]?"
    + r"(?P<term>[^\s:*_\"“”\u2018\u2019|#][^:\n*_\"“”\u2018\u2019|]{0,59}?)[\"”\u2019]?"
    r"(?:\*\*|__)?[ \t]*(?::|[ \t][-\u2013—][ \t])[ \t]*(?P<definition>\S[^\n]*)",
    re.M,
)
_VERB_WORDS: tuple[str, ...] = ("mean", "refer", "defined")
"""A word that each form of ``_VERB`` and ``_DEFINED_AS`` holds (in any case)."""
_HEADING_WORDS: tuple[str, ...] = ("defin", "glossary", "terms", "interpretation")
"""A word that each title ``is_definitions_heading`` accepts holds (in any case)."""
_ANY_CASE = {words: re.compile("|".join(words), re.I) for words in (_VERB_WORDS, _HEADING_WORDS)}
"""The words as the patterns match them: ``re.I`` also folds a few non-ASCII letters (the
long s is an ``s``), which ``str.lower`` does not."""
_QUOTES = str.maketrans(
    {"“": '"', "”": '"', "„": '"', "«": '"', "»": '"', "\u2018": "'", "\u2019": "'"}
)


def normalize_term(term: str) -> str:
    """Normalize a defined term for lookup: quotes, markup, case and whitespace are ignored.

    ``'“Safety  Interlock”'`` -> ``'safety interlock'``.
    """
    text = unicodedata.normalize("NFKC", term).translate(_QUOTES)
    text = text.strip().strip("\"'*_`").strip()
    return " ".join(text.split()).casefold()


def is_definitions_heading(title: str) -> bool:
    """Whether a heading names a definitions section (Definitions, Glossary, Terms, ...)."""
    if _DEFINITIONS_WORDS.search(title):
        return True
    core = _HEADING_NUMBER.sub("", title, count=1).strip().rstrip(".:").strip()
    return bool(_TERMS_ONLY.fullmatch(core) or _INTERPRETATION.fullmatch(core))


def _clean_definition(text: str) -> str:
    text = " ".join(text.split())
    text = re.sub(r"(?:;|,)?\s*(?:and|or)?\s*$", "", text) if text.endswith(("and", "or")) else text
    text = text.rstrip(" ;,")
    if len(text) > _MAX_DEFINITION_CHARS:
        text = text[:_MAX_DEFINITION_CHARS].rsplit(" ", 1)[0] + " …"
    return text


def _paragraph(text: str, start: int) -> str:
    """The definition text from ``start``: the rest of its paragraph (continuation lines).

    It stops at a blank line or a line opening a new item (bullet, ``(a)``, number, quoted
    term). A definition that is empty or ends in ``:`` there ("means any of the following:")
    takes the ``(a)``/``(b)`` clauses that follow.
    """
    lines = text[start:].split("\n")
    out = [lines[0]]
    rest = lines[1:]
    while rest and rest[0].strip() and not _NEW_ITEM.match(rest[0]):
        out.append(rest.pop(0))
    joined = " ".join(line.strip() for line in out).strip()
    if joined and not joined.endswith(":"):
        return joined
    while rest and sum(map(len, out)) < _MAX_DEFINITION_CHARS:
        line = rest.pop(0)
        if not line.strip():
            continue
        if not _CLAUSE_ITEM.match(line) and not (out and out[-1].strip()):
            break
        if not _CLAUSE_ITEM.match(line) and _NEW_ITEM.match(line):
            break
        out.append(line)
    return " ".join(line.strip() for line in out).strip()


def find_definitions(text: str, *, in_definitions_section: bool = False) -> list[tuple[str, str]]:
    """Find ``(term, definition)`` pairs in ``text``, in order, one per normalized term.

    Everywhere: ``"X" means Y``, ``"X" shall mean Y``, ``"X" has the meaning ...`` (double,
    curly or ``**bold**`` quotes; up to six words such as ``of a Contributor`` or a
    parenthetical such as ``(or "Your")`` may stand between the term and the verb, and the
    verb may open the next line, as in MPL-2.0) and ``X is defined as Y`` at a sentence
    start. A quoted definition runs to the end of its paragraph; one that ends in ``:``
    takes the ``(a)``, ``(b)`` clauses that follow. Inside a
    definitions section also: ``X means Y``, ``X: Y`` and ``X - Y`` at the start of a line
    (after an optional bullet, ``(a)`` or ``1.``), for terms of at most six words.

    Args:
        text: The text to scan.
        in_definitions_section: Whether ``text`` lies in a definitions section.

    Returns:
        Terms as written (without quotes) with their definition text.
    """
    found: list[tuple[int, str, str]] = []
    quoted = list(_QUOTED.finditer(text))
    for number, match in enumerate(quoted):
        end = quoted[number + 1].start() if number + 1 < len(quoted) else len(text)
        definition = _paragraph(text[:end], match.start("definition"))
        if match["verb"].lower().replace(" ", "").endswith("meaning"):
            definition = f"{' '.join(match['verb'].split()[-3:])} {definition}"
        found.append((match.start(), match["term"], definition))
    if "defined" in text:  # the pattern's own literal: a scan of the rest finds nothing
        found.extend((m.start(), m["term"], m["definition"]) for m in _DEFINED_AS.finditer(text))
    if in_definitions_section:
        for pattern in (_PLAIN_MEANS, _GLOSSARY):
            found.extend((m.start(), m["term"], m["definition"]) for m in pattern.finditer(text))
    found.sort(key=lambda item: item[0])
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for _, raw_term, raw_definition in found:
        term = " ".join(raw_term.translate(_QUOTES).strip(" \"'*_").split())
        definition = _clean_definition(raw_definition)
        key = normalize_term(term)
        if not key or not definition or len(term.split()) > _MAX_TERM_WORDS or key in seen:
            continue
        seen.add(key)
        out.append((term, definition))
    return out


@dataclass(frozen=True)
class Definition:
    """A defined term and where it is defined."""

    term: str
    """The term as written in the document (quotes removed)."""
    definition: str
    """The definition text (one paragraph at most, whitespace collapsed)."""
    source_path: str
    """``metadata["source_path"]`` of the defining chunk (``""`` when absent)."""
    section_id: str
    """Section id of the defining section (``""`` when none)."""


_chunk_text = original_content
_source_of = source_path


class DefinitionIndex(Mapping[str, Definition]):
    """Defined terms by normalized term, with each document's own definition kept.

    As a mapping (the shape ``extract`` always returned) it gives one ``Definition`` per
    term: the first in its document, of the first document by ``source_path``. Two documents
    may define a term differently ("Operator" in a forklift manual and in a security
    policy): ``every`` gives each document's, ``in_document`` one document's.

    Invoke:
        ```python
        index = DefinitionExtractor().extract(chunks)
        index["operator"].source_path  # -> 'a_forklift_manual.md'
        [d.source_path for d in index.every("Operator")]  # -> ['a_forklift_manual.md', ...]
        index.in_document("operator", "security_policy.md").definition  # -> 'the employee ...'
        ```
    """

    def __init__(self, definitions: Iterable[Definition] = ()) -> None:
        """Index ``definitions``: for each term, the first given per ``source_path`` is kept.

        Terms are listed by the path of the first document defining them, then in the order
        given (the order that document defines them in, from ``extract``).
        """
        by_term: dict[str, dict[str, tuple[int, Definition]]] = {}
        for n, d in enumerate(definitions):
            by_term.setdefault(normalize_term(d.term), {}).setdefault(d.source_path, (n, d))
        firsts = {key: by_source[min(by_source)] for key, by_source in by_term.items()}
        # terms in the order of the first document, then in the order it defines them
        order = sorted(by_term, key=lambda key: (firsts[key][1].source_path, firsts[key][0]))
        self._by_term: dict[str, tuple[Definition, ...]] = {
            key: tuple(by_term[key][s][1] for s in sorted(by_term[key])) for key in order
        }

    @classmethod
    def from_mapping(cls, definitions: Mapping[str, Any]) -> DefinitionIndex:
        """An index of a ``{normalized term: Definition}`` mapping (one definition per term)."""
        if isinstance(definitions, DefinitionIndex):
            return definitions
        index = cls()
        index._by_term = {key: (d,) for key, d in definitions.items()}
        return index

    def replace(self, other: DefinitionIndex) -> None:
        """Hold ``other``'s definitions in place of these, in one step.

        A retriever given this index (``HybridRetriever(definitions=...)``) then serves
        them: a tool re-indexes its corpus this way, so a retriever taken from it before
        (kept in a chain) follows the corpus, as its keyword and exact indexes do.
        """
        self._by_term = other._by_term

    def __getitem__(self, key: str) -> Definition:
        return self._by_term[key][0]

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_term)

    def __len__(self) -> int:
        return len(self._by_term)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, DefinitionIndex):
            return self._by_term == other._by_term
        return super().__eq__(other)

    def __repr__(self) -> str:
        return f"DefinitionIndex({dict(self._by_term)!r})"

    def every(self, term: str) -> tuple[Definition, ...]:
        """Each document's definition of ``term`` (any spelling), by ``source_path``."""
        return self._by_term.get(normalize_term(term), ())

    def in_document(self, term: str, source_path: str) -> Definition | None:
        """The definition of ``term`` in the document ``source_path``; ``None`` if it has none."""
        return next((d for d in self.every(term) if d.source_path == source_path), None)

    def terms_in(self, text: str) -> list[str]:
        """The normalized terms ``text`` names, longest first (a query: ``what does X mean?``)."""
        words = normalize_term(text).replace("?", " ").replace(",", " ").split()
        found: list[str] = []
        for size in range(min(_MAX_TERM_WORDS, len(words)), 0, -1):
            for start in range(len(words) - size + 1):
                term = " ".join(words[start : start + size]).strip(".;:!\"'")
                if term in self._by_term and term not in found:
                    found.append(term)
        return found


class DefinitionExtractor:
    """Build the term -> ``Definition`` index from chunk Documents.

    Works on the structured splitter's chunks (using ``heading``/``parent_chain``/``section_id``
    metadata) and on plain chunks (headings are parsed from the chunk text). Each document
    (``source_path``) keeps its own definition of a term: the first in the document (by
    ``chunk_index``, else in the order given). The result does not depend on the order the
    store lists chunks in.

    Invoke:
        ```python
        index = DefinitionExtractor().extract(chunks)
        index["operator"].definition  # -> 'the crew member who starts a simulation.'
        ```
    """

    def extract(self, chunks: Iterable[Document]) -> DefinitionIndex:
        """Index every definition found in ``chunks`` by its normalized term.

        Args:
            chunks: Chunk Documents, e.g. from ``StructuredMarkdownSplitter`` or a store.

        Returns:
            A ``DefinitionIndex``: a ``{normalize_term(term): Definition}`` mapping (the
            first document's by ``source_path``) that also holds every document's own
            definition (``every``, ``in_document``).
        """
        found: list[tuple[tuple[int, int, int], Definition]] = []
        for position, chunk in enumerate(chunks):
            index = chunk.metadata.get(CHUNK_INDEX)
            order = index if isinstance(index, int) and not isinstance(index, bool) else position
            for term, definition, section_id in self._definitions_in(chunk):
                d = Definition(term, definition, _source_of(chunk), section_id)
                found.append(((order, position, len(found)), d))
        found.sort(key=lambda item: item[0])
        return DefinitionIndex(d for _, d in found)

    @staticmethod
    def _definitions_in(chunk: Document) -> list[tuple[str, str, str]]:
        text = _chunk_text(chunk)
        meta = chunk.metadata
        # A code chunk is no glossary: its heading lists the code it defines ("a … d (4
        # definitions)"), and "X: Y" lines there are annotations and dict items, not terms.
        glossary = meta.get(CHUNK_TYPE) != CODE_CHUNK_TYPE
        titles = [str(meta.get("heading", "")), *(str(t) for t in meta.get("parent_chain", []))]
        meta_in_defs = glossary and any(is_definitions_heading(t) for t in titles if t)
        if not meta_in_defs and not _may_define(text, glossary=glossary):
            return []  # no pattern can match: parsing and scanning would find nothing
        out: list[tuple[str, str, str]] = []
        sections = parse_sections(text) or []
        spans = [(s.start, s.end, (*s.parent_chain, s.title), s.section_id) for s in sections]
        if not spans or spans[0][0] > 0:
            spans.insert(0, (0, spans[0][0] if spans else len(text), (), ""))
        for start, end, section_titles, parsed_id in spans:
            in_defs = meta_in_defs or (
                glossary and any(is_definitions_heading(t) for t in section_titles if t)
            )
            section_id = str(meta["section_id"]) if "section_id" in meta else parsed_id
            for term, definition in find_definitions(
                text[start:end], in_definitions_section=in_defs
            ):
                out.append((term, definition, section_id))
        return out


def _may_define(text: str, *, glossary: bool) -> bool:
    """Whether ``text`` may hold a definition; ``False`` only where ``find_definitions`` finds none.

    Outside a definitions section each pattern needs a word of ``_VERB_WORDS``. A heading
    parsed from ``text`` is a substring of it, except where dropping a link's markup joins
    its parts (``# Defin[itions](d.md)``), so a glossary needs a word of ``_HEADING_WORDS``
    or a link.
    """
    lower = text.lower() if text.isascii() else None  # "in": far faster than a re.I search

    def holds(words: tuple[str, ...]) -> bool:
        if lower is None:
            return _ANY_CASE[words].search(text) is not None
        return any(word in lower for word in words)

    return holds(_VERB_WORDS) or (glossary and ("](" in text or holds(_HEADING_WORDS)))


@dataclass(frozen=True)
class ResolvedReference:
    """A cross-reference from a chunk: the section id it names and the chunk holding it."""

    section_id: str
    """Normalized id of the referenced section."""
    chunk_id: str | None
    """``Document.id`` of the first chunk of that section in the same file; ``None`` if absent."""

    @property
    def resolved(self) -> bool:
        """Whether the referenced section exists in the same document."""
        return self.chunk_id is not None


def resolve_cross_references(chunks: Sequence[Document]) -> dict[str, list[ResolvedReference]]:
    """Resolve each chunk's cross-references to chunk ids of the same file.

    References come from ``metadata["cross_references"]`` (the structured splitter's), else
    are parsed from the text with ``find_section_refs``. A reference resolves to the first
    chunk, in the given order, of the same ``source_path`` whose ``section_id`` equals it, else
    to the first chunk of a sub-section (``203`` -> ``203(a)``, ``4`` -> ``4.1``). Dangling
    references are kept with ``chunk_id=None``.

    Args:
        chunks: Chunk Documents with ``Document.id`` set (e.g. by sync), in document order.

    Returns:
        ``{chunk id: [ResolvedReference, ...]}`` for every chunk (empty lists included).

    Raises:
        ValueError: When a chunk has no ``id``.
    """
    by_source: dict[str, list[tuple[str, str]]] = {}
    for position, chunk in enumerate(chunks):
        if not chunk.id:
            msg = (
                f"resolve_cross_references needs Document.id; chunk {position} "
                f"(source_path={_source_of(chunk)!r}) has none. Set ids with stable_id() first."
            )
            raise ValueError(msg)
        section_id = str(chunk.metadata.get("section_id", ""))
        by_source.setdefault(_source_of(chunk), []).append((section_id, chunk.id))

    def target(source: str, ref: str) -> str | None:
        entries = by_source.get(source, [])
        exact = next((cid for sid, cid in entries if sid == ref), None)
        if exact is not None:
            return exact
        return next((cid for sid, cid in entries if sid.startswith((f"{ref}(", f"{ref}."))), None)

    out: dict[str, list[ResolvedReference]] = {}
    for chunk in chunks:
        refs = chunk.metadata.get("cross_references")
        if refs is None:
            current = str(chunk.metadata.get("section_id", ""))
            refs = find_section_refs(_chunk_text(chunk), current_id=current)
        source = _source_of(chunk)
        out[str(chunk.id)] = [ResolvedReference(str(r), target(source, str(r))) for r in refs]
    return out
