"""What a query names exactly, and what a chunk names, for ``ExactMatchIndex``.

A query names sections, quoted phrases, symbols, a defined term, versions, codes and a
document (``parse_exact_query``); a chunk's text holds codes, its headings versions and label
words, its file and title the document's names.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from langchain_holodeck._chunk import CHUNK_TYPE, CODE_CHUNK_TYPE
from langchain_holodeck._section_refs import section_references
from langchain_holodeck._sections import heading_label
from langchain_holodeck.definitions import normalize_term

_QUOTES = str.maketrans({"“": '"', "”": '"', "„": '"', "«": '"', "»": '"'})
_PHRASE = re.compile(r'"([^"]+)"')
_SPACE = re.compile(r"\s+")
_VERSION = re.compile(
    r"(?<![\w.])(?:[vV]?(?P<long>\d+(?:\.\d+){2,3})"
    r"|(?:[vV]|(?i:version|release)\s+)(?P<short>\d+\.\d+))(?![\w]|\.\d)"
)
"""A version: three or four dotted numbers (``2.3.1``, ``v10.0.0.1``), or two after a ``v``,
``Version`` or ``Release`` (``v2.3``, ``Version 8.1``: how Click, Flask and Jinja title their
changelog entries). Two bare numbers (``4.2``) are a section or a decimal, not a version."""
_BARE_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)+(?![\w]|\.\d)")
"""A dotted number (``4.2``): a section only of a document the query names."""
_NAME_WORD = re.compile(r"[a-z0-9]+")
_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_NOT_NAME_WORDS = frozenset(
    {
        *("a", "an", "and", "for", "in", "of", "on", "the", "to"),
        *("section", "sections", "sec", "article", "clause", "paragraph", "rule", "part"),
        *("chapter", "title", "schedule", "annex", "appendix"),
    }
)
"""Words that name no document: a file called ``section.md`` is not named by ``Section 4``."""
_CODE = re.compile(
    r"(?<![\w.-])"
    r"(?:(?=[\w-]*\d)(?=[\w-]*[A-Za-z])[A-Za-z0-9]+(?:[_-][A-Za-z0-9]+)*"
    r"|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)"
    r"(?![\w-]|\.\w)"
)
"""A code: a word of letters and digits (``E1042``, ``0x8007000E``, ``ORA-00942``,
``CVE-2021-44228``) or capitals joined by underscores (``ERR_CONN_RESET``)."""
_MAX_CODE_QUERY_WORDS = 4
"""A query of at most this many words is a code lookup (``error E1042``); in a longer question
a code is a word among others (``my 8GB laptop``, ``on win32``), left to the other legs."""

_IDENTIFIER = re.compile(
    r"`(?P<quoted>[^`\s]+)`"
    r"|(?<![\w.])(?P<name>[A-Za-z_]\w*(?:(?:\.|::)[A-Za-z_]\w*)*)(?P<call>\(\))?(?![\w(])"
)
_CAMEL = re.compile(r"[a-z0-9][A-Z]")
_TERM_QUERY = [
    re.compile(p, re.IGNORECASE)
    for p in (
        r"^\s*what\s+(?:does|do|did)\s+(?:the\s+(?:term|word|phrase)\s+)?(?P<term>.+?)\s+mean\b",
        r"^\s*what\s+is\s+meant\s+by\s+(?:the\s+(?:term|word|phrase)\s+)?(?P<term>.+?)\s*[?.!]*$",
        r"^\s*(?:what\s+is\s+|what's\s+)?(?:the\s+)?(?:meaning|definition)\s+of\s+"
        r"(?:the\s+(?:term|word|phrase)\s+)?(?P<term>.+?)\s*[?.!]*$",
        r"^\s*(?:please\s+)?define\s+(?:the\s+(?:term|word|phrase)\s+)?(?P<term>.+?)\s*[?.!]*$",
        r"^\s*(?:the\s+)?(?P<term>.+?)\s+(?:definition|meaning)\s*[?.!]*$",
        r"^\s*(?:what|who)\s+(?:is|are)\s+(?P<term>.+?)\s*[?.!]*$",
    )
]
_ARTICLE = re.compile(r"^(?:the|a|an)\s+", re.IGNORECASE)


@functools.lru_cache(maxsize=4096)
def name_words(text: str) -> frozenset[str]:
    """The words of a document's name or of a query that may name one, lowercased.

    ``employee-handbook``, ``EmployeeHandbook`` and ``Employee Handbook`` are all
    ``{employee, handbook}``; label words and small words (``the``, ``of``) are left out.
    """
    words = _NAME_WORD.findall(_CAMEL_BOUNDARY.sub(" ", text).lower())
    return frozenset(w for w in words if w not in _NOT_NAME_WORDS)


@functools.lru_cache(maxsize=4096)
def _stem_words(path: str) -> frozenset[str]:
    return name_words(PurePosixPath(path).stem)


def document_names(meta: Mapping[str, Any], path: str) -> tuple[frozenset[str], ...]:
    """The names a chunk gives its document: the file's stem, and on chunk 0 its title.

    The title is the first heading (the H1 above the first chunk), unless it is numbered;
    source code has none (its headings are the names it defines).
    """
    names = [_stem_words(path)]
    if meta.get("chunk_index") == 0 and meta.get(CHUNK_TYPE) != CODE_CHUNK_TYPE:
        chain = meta.get("parent_chain") or ()
        title = str(chain[0] if isinstance(chain, list | tuple) and chain else "") or str(
            meta.get("heading") or ""
        )
        if title and heading_label(title) is None and not title[:1].isdigit():
            names.append(name_words(title))
    return tuple(dict.fromkeys(n for n in names if n))


def heading_labels(meta: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """(section id, label word) of each heading of a chunk and above it that spells one."""
    chain = meta.get("parent_chain") or ()
    titles = [*(chain if isinstance(chain, list | tuple) else ()), meta.get("heading") or ""]
    labels = dict(label for label in map(heading_label, map(str, titles)) if label)
    return tuple(labels.items())


def norm_text(text: str) -> str:
    return _SPACE.sub(" ", text.translate(_QUOTES)).strip().lower()


@dataclass(frozen=True)
class ExactQuery:
    """What a query asks for exactly: sections, quoted phrases, symbols, a defined term."""

    section_ids: tuple[str, ...]
    phrases: tuple[str, ...]
    symbols: tuple[str, ...] = ()
    terms: tuple[str, ...] = ()
    versions: tuple[str, ...] = ()
    labels: tuple[tuple[str, str], ...] = ()
    """(section id, label word) of each mention (``("4", "article")``; ``""``: no label)."""
    words: frozenset[str] = frozenset()
    """The query's words outside its section references (``name_words``): a document's name."""
    numbers: tuple[tuple[str, str, str], ...] = ()
    """Dotted numbers with no keyword, each with the word before it and the word an ``of`` or
    ``in`` after it leads to (``("4.2", "handbook", "")``, ``("4.2", "does", "employee")``;
    ``""``: none; ``LISTED``: it follows another number, ``4.2 and 4.3``): sections of a
    document the query names, when at its name (``at_the_name``)."""
    codes: tuple[str, ...] = ()
    """Codes a code lookup names (``codes_in``: ``e1042``); none for a longer question."""

    def __bool__(self) -> bool:
        return bool(
            self.section_ids
            or self.phrases
            or self.symbols
            or self.terms
            or self.versions
            or self.numbers
            or self.codes
        )

    def labels_of(self, section_id: str) -> frozenset[str]:
        """The label words the query gave ``section_id`` (``""`` among them: one without)."""
        return frozenset(label for sid, label in self.labels if sid == section_id) or frozenset(
            {""}
        )


def heading_versions(meta: Mapping[str, Any]) -> tuple[str, ...]:
    """The versions a chunk's heading or the headings above it name (a changelog's entry)."""
    chain = meta.get("parent_chain") or ()
    headings = [*(chain if isinstance(chain, list | tuple) else ()), meta.get("heading") or ""]
    return versions_in(" ".join(map(str, headings)))


def versions_in(text: str) -> tuple[str, ...]:
    """The versions ``text`` names (``v2.3.1`` and ``2.3.1`` are both ``2.3.1``), in order.

    BM25's words drop one-character parts, so a version is found by this index: the keyword
    leg cannot tell ``v2.3.1`` from ``v2.3.0``.
    """
    found = (m["long"] or m["short"] for m in _VERSION.finditer(text))
    return tuple(dict.fromkeys(found))


def codes_in(text: str) -> tuple[str, ...]:
    """The codes ``text`` holds, lowercased, in order (``E1042``, ``ERR_CONN_RESET``).

    Two characters are too few to be a code (``v2``, ``H1``).
    """
    found = (m.lower() for m in _CODE.findall(text) if len(m) > 2)
    return tuple(dict.fromkeys(found))


def _query_codes(text: str) -> tuple[str, ...]:
    """The codes of a query that is little more than them (``E1042``, ``error E1042``).

    A dense model reads a code as noise: under convex fusion the best dense score counts 0.7
    and a keyword-only hit at most 0.3, so the chunk holding ``E1042`` ranked below chunks of
    no relation. In a question of more than four words a code is one word among others, often
    incidental (``my 8GB laptop``): a pin there put unrelated chunks first.
    """
    return codes_in(text) if len(text.split()) <= _MAX_CODE_QUERY_WORDS else ()


LISTED = "#"
"""The word before a number that follows another (``4.2, 4.3``, ``4.2 and 4.3``)."""
_TOKEN_BEFORE = re.compile(r"([\w.'\u2019-]+)[^\w.'\u2019-]*$")
_LIST_WORDS = frozenset({"and", "or", "&", "to"})
_OF_NAME = re.compile(r"\s*(?:of|in|from)\s+(?:the\s+)?([\w'\u2019.-]+)", re.IGNORECASE)


def _name_word(token: str, *, last: bool) -> str:
    """The last (or first) word of a token naming a document.

    Its possessive and file extension dropped, camelCase split: ``handbook's``,
    ``employee-handbook.md``, ``BillingManual``.
    """
    token = re.sub(r"['\u2019]s$", "", token)
    token = re.sub(r"(?<=\w)\.[A-Za-z]\w*$", "", token)
    words = _NAME_WORD.findall(_CAMEL_BOUNDARY.sub(" ", token).lower())
    return (words[-1] if last else words[0]) if words else ""


def _number_context(text: str, start: int, end: int) -> tuple[str, str]:
    """(the word before ``text[start:end]``, the word an ``of``/``in`` after it leads to)."""
    before = ""
    found = _TOKEN_BEFORE.search(text, 0, start)
    if found is not None:
        token = found[1]
        if token.lower() in _LIST_WORDS:
            ahead = _TOKEN_BEFORE.search(text, 0, found.start())
            token = LISTED if ahead is not None and _BARE_NUMBER.fullmatch(ahead[1]) else token
        before = LISTED if _BARE_NUMBER.fullmatch(token) or token == LISTED else token
        if before != LISTED:
            before = _name_word(before, last=True)
    after = _OF_NAME.match(text, end)
    return before, _name_word(after[1], last=False) if after is not None else ""


def at_the_name(numbers: Sequence[tuple[str, str, str]], name: frozenset[str]) -> list[str]:
    """The numbers standing at a document's name (``name``: its words).

    A number starting the query, after a word of the name, before ``of``/``in`` and the name,
    or listed after one of them (``employee handbook 4.2 and 4.3``); not a decimal elsewhere
    (``TLS 1.2``).
    """
    found: list[str] = []
    counted = False
    for number, before, after in numbers:
        counted = not before or before in name or after in name or (before == LISTED and counted)
        if counted:
            found.append(number)
    return found


def _query_symbols(text: str) -> tuple[str, ...]:
    """Identifiers the query names (``snake_case``, ``dotted.names``, ``camelCase``, ``f()``).

    Anything in backticks counts too; plain words do not (``swap`` is not, ```swap``` is).
    """
    found: list[str] = []
    for match in _IDENTIFIER.finditer(text):
        name = match["quoted"] or match["name"]
        name = name.removesuffix("()").replace("::", ".").strip(".")
        looks_like_code = bool(
            match["quoted"] or match["call"] or "_" in name or "." in name or _CAMEL.search(name)
        )
        if looks_like_code and name and name not in found:
            found.append(name)
    return tuple(found)


def _query_terms(text: str) -> tuple[str, ...]:
    """The term of a definition question (``what does X mean``, ``define X``, ``X definition``)."""
    for pattern in _TERM_QUERY:
        match = pattern.match(text)
        if match is None:
            continue
        term = normalize_term(match["term"].strip(" ?.!\"'"))
        bare = _ARTICLE.sub("", term)
        return tuple(dict.fromkeys(t for t in (term, bare) if t))
    return ()


def parse_exact_query(query: str) -> ExactQuery:
    """Find section references, quoted phrases, symbols, a defined term and codes in ``query``.

    ``"Section 203(a)(1)"``, ``"§ 4.2"``, ``"section 7"``, ``"Article 5"``, ``"sec. 4.2"``,
    ``"subsection (a)(1) of section 203"`` and a bare ``"203(a)(1)"`` (a number with sub-clause
    labels; not a bare ``"4.2"``, which may be any decimal) become normalized section ids
    (``203(a)(1)``, ``4.2``, ``7``, ``5``, ``4.2``, ``203(a)(1)``, ``203(a)(1)``) with
    ``definitions.find_section_refs(query, query=True)``; text between double quotes
    (straight or curly) becomes a phrase (lowercased, whitespace collapsed; phrases under 2
    characters are ignored).
    Identifiers (``parse_sections``, ``Shift.swap``, ``getUser``, ``run()``, ```swap```)
    become symbols. A definition question ("what does X mean", "what is meant by X",
    "meaning of X", "define X", "X definition", "what is X") gives the normalized term X
    (with and without a leading article). The codes (``E1042``, ``ORA-00942``, ``ERR_CONN_RESET``:
    ``codes_in``) of a query of at most four words become codes. Each reference keeps its label
    word (``labels``: ``("5", "article")``); the words outside the references (``words``) and
    the dotted numbers among them (``numbers``: ``4.2``) serve to find a document the query
    names.
    """
    text = query.translate(_QUOTES)
    phrases = tuple(
        dict.fromkeys(p for p in (norm_text(m) for m in _PHRASE.findall(text)) if len(p) >= 2)
    )
    refs = section_references(text, query=True)
    rest, end = [], 0
    for ref in refs:
        rest.append(text[end : ref.start])
        end = max(end, ref.end)
    rest.append(text[end:])
    section_ids = tuple(dict.fromkeys(ref.section_id for ref in refs))
    numbers = (
        (m[0], *_number_context(m.string, m.start(), m.end()))
        for m in _BARE_NUMBER.finditer(" ".join(rest))
        if m[0] not in section_ids
    )
    return ExactQuery(
        section_ids,
        phrases,
        _query_symbols(text),
        _query_terms(text),
        versions_in(text),
        labels=tuple(dict.fromkeys((ref.section_id, ref.label) for ref in refs)),
        words=name_words(" ".join(rest)),
        numbers=tuple(dict.fromkeys(numbers)),
        codes=_query_codes(text),
    )
