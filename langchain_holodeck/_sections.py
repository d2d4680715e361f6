r"""Heading grammar: parse a document into sections, normalize and find section references.

Pure functions over strings; no LangChain. Public through ``langchain_holodeck.splitters``
(``parse_sections``, ``Section``) and ``langchain_holodeck.definitions``
(``normalize_section_ref``, ``find_section_refs``).

Recognized headings (never inside fenced code blocks, HTML comments or a YAML front matter):

* Markdown ATX headings (``# Title`` .. ``###### Title``) and setext headings (a one-line
  paragraph underlined with ``===`` or ``---``, at least three characters).
* Keyword headings on a line that opens a paragraph: ``Title I``, ``PART II``, ``Chapter 3``,
  ``Article 5``, ``Section 4.2 Scope``, ``Sec. 7``, ``§ 203``, ``Clause 9``, ``Schedule 2``,
  ``Annex A``, ``Appendix B``. The title after the number must look like a title: at most 15
  words, starting with a capital (or empty), no sentence break inside, not ending in ``,;:?!``.
  So ``Section 5 applies to ...`` is prose, not a heading.
* Bare numbered headings on a line that opens a paragraph: ``7. Additional Terms.`` (a single
  number needs the dot and a Title-Case or ALL-CAPS title of at most 10 words) and
  ``4.2 Scope`` / ``4.2. Scope`` (dotted numbers need only a capitalized title). The line
  directly below must not be another list item (``1. foo\\n2. bar`` is a tight list, not two
  headings). A loose list of short Title-Case items is the remaining ambiguity.
* Numbered clauses written as a sentence, as contracts number their paragraphs: a dotted
  number, or a section, clause or article keyword and its number (``Clause 7.2``), followed
  by a capitalized sentence (``7.2 Late payments bear interest at 4% per annum.``) is a
  section titled by its number, its body starting on its line. A single number with a
  sentence (``3. Remove the cover.``) stays a list item.
* Sub-clauses ``(a)``, ``(1)``, ``(i)``, ``(A)`` at the start of a line that opens a paragraph
  (or follows a line ending in ``.``, ``;`` or ``:``), only inside a section that has a
  section id. Each label kind (digit, lower letter, lower roman, upper letter, upper roman)
  takes the nesting level at which it first appears; ``(i)`` directly after ``(h)`` is a letter.

reStructuredText (``markup="rst"``) has its own title syntax instead of the Markdown one and of
the keyword and bare numbered headings: a one-line title at the start of a line, underlined
(and optionally overlined) with a repeated punctuation character (``=``, ``-``, ``~``, `````,
``^``, ...), the underline at least 3 characters long and as long as the title or 4. Levels
follow the order in which the adornment styles first appear, as in docutils. There are no code
fences (indented literal blocks cannot hold a title) and no ATX headings. The ``.. _label:``
targets directly above a title belong to its section, and so does the explicit markup that
starts the text (``.. currentmodule:: x``, ``:orphan:``). Sub-clauses are
recognized as in Markdown.

Section ids: the number of a Section/§/Article/Clause or bare numbered heading (``7``, ``4.2``,
``203``, ``12a``, Article V -> ``v``), plus sub-clause labels (``203(a)(1)``, case kept);
Title/Part/Chapter/Schedule/Annex/Appendix get a kind prefix (``title-i``, ``part-ii``,
``chapter-3``) because they are numbered separately. A Markdown or reStructuredText heading is
a heading by its syntax, so its single number needs no dot when a capitalized title follows
(``## 5 Terms and definitions`` is ``5``, as ISO standards number their clauses; ``## 5 ways to
deploy`` has none). A heading without a number inherits the id of its nearest ancestor
(``#### Notes`` under ``Section 5`` has id ``5``); text above the first heading has id ``""``.
The id drops the label word (``Article 5`` and ``Section 5`` are both ``5``); the exact index
keeps it (``heading_label``, ``section_references``) and holds an ``Article 5`` query to headings
that say Article or none.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "Markup",
    "Section",
    "SectionReference",
    "find_section_refs",
    "heading_label",
    "normalize_section_ref",
    "parse_sections",
    "section_references",
]

Markup = Literal["markdown", "rst"]
"""The heading syntax ``parse_sections`` reads: Markdown (and plain text) or reStructuredText."""

# --- shared pieces -------------------------------------------------------------------------

_PLAIN_KINDS = {
    "section": "section",
    "sections": "section",
    "sec": "section",
    "secs": "section",
    "§": "section",
    "§§": "section",
    "article": "article",
    "articles": "article",
    "art": "article",
    "arts": "article",
    "clause": "section",
    "clauses": "section",
    "subsection": "section",
    "subsections": "section",
    "sub-section": "section",
    "sub-sections": "section",
    "paragraph": "section",
    "paragraphs": "section",
    "sect": "section",
    "sects": "section",
}
_PREFIXED_KINDS = ("title", "part", "chapter", "schedule", "annex", "appendix")
_KIND_RANK = {
    "appendix": 1,
    "annex": 1,
    "schedule": 1,
    "title": 1,
    "part": 2,
    "chapter": 3,
    "article": 4,
    "section": 5,
}
_SUBCLAUSE_RANK = 100

_KW = (
    r"(?<![\w§])(?P<kw>(?i:(?:sub-?)?sections?|secs?\.?|sects?\.|paragraphs?|articles?|arts?\."
    r"|clauses?|title|part|chapter|schedule|annex|appendix)(?=[\s\d])|§§?)"
)
_NUMBER = r"\d+(?:\.\d+)*[A-Za-z]?|[IVXLCDM]+|[A-Z]|[ivxlcdm]+|[a-z]"
"""A section number: digits (``4.2``, ``12A``), a Roman numeral or a letter; lower-case
numerals and letters only where ``_number_ok`` takes them (``title ii``, ``appendix b``)."""
_NUM = r"(?P<num>" + _NUMBER + r")(?![\w.]\d)(?!\w)"
_LABELS = r"(?P<labels>(?:\s?\([A-Za-z0-9]{1,4}\))*)"
_KEYWORD_REF = re.compile(_KW + r"\s*" + _NUM + _LABELS)
_BARE_REF = re.compile(r"(?P<num>\d+(?:\.\d+)*[A-Za-z]?)" + _LABELS)
_LABEL = re.compile(r"\(([A-Za-z0-9]{1,4})\)")
_ROMAN_LOWER = re.compile(r"^(?=[ivx])x{0,3}(?:ix|iv|v?i{0,3})$")
_ROMAN_UPPER = re.compile(r"^(?=[IVX])X{0,3}(?:IX|IV|V?I{0,3})$")


_LABEL_WORDS = {
    **dict.fromkeys(("section", "sections", "sec", "secs", "sect", "sects", "§", "§§"), "section"),
    **dict.fromkeys(("subsection", "subsections", "sub-section", "sub-sections"), "section"),
    **dict.fromkeys(("article", "articles", "art", "arts"), "article"),
    **dict.fromkeys(("clause", "clauses"), "clause"),
    **dict.fromkeys(("paragraph", "paragraphs"), "paragraph"),
}
"""The label word a keyword spells (``§``, ``Sec.``, ``Sections`` are ``section``): a
reference and a heading with different ones name different things, though both ids are ``4``."""


def _kind_of(keyword: str) -> str:
    key = keyword.lower().rstrip(".")
    return _PLAIN_KINDS.get(key, key)


def _label_word(keyword: str) -> str:
    key = keyword.lower().rstrip(".")
    return _LABEL_WORDS.get(key, key)


def _labels_of(labels: str) -> list[str]:
    return _LABEL.findall(labels)


_LETTERED_KINDS = frozenset({"appendix", "annex"})


def _number_ok(kind: str, num: str) -> bool:
    """Whether a lower-case ``num`` (as a query is typed) numbers a ``kind``.

    Roman numerals for the kinds named with their number (``part iv``, ``title ii``), a
    single letter for appendices and annexes (``appendix b``): not ``schedule a meeting``,
    ``part did`` or ``section a``.
    """
    if not (num.isalpha() and num.islower()):
        return True
    if len(num) == 1 and kind in _LETTERED_KINDS:
        return True
    return kind in _PREFIXED_KINDS and _ROMAN_LOWER.match(num) is not None


def _make_id(kind: str, num: str, labels: list[str]) -> str | None:
    if not _number_ok(kind, num):
        return None
    if kind in _PREFIXED_KINDS:
        base = f"{kind}-{num.lower()}"
    elif num.isalpha() and not _ROMAN_UPPER.match(num) and len(num) > 1:
        return None
    else:
        base = num.lower()
    return base + "".join(f"({label})" for label in labels)


def normalize_section_ref(text: str) -> str | None:
    """Normalize a section reference to the section id ``parse_sections`` gives its target.

    ``"Article 5"`` -> ``"5"``, ``"§ 4.2"`` -> ``"4.2"``, ``"section 7"`` -> ``"7"``,
    ``"Section 203(a)(1)"`` / ``"203 (a) (1)"`` -> ``"203(a)(1)"``, ``"PART II"`` -> ``"part-ii"``,
    ``"Chapter 3"`` -> ``"chapter-3"``. Both the splitter (ids) and exact-match queries use it.

    Args:
        text: A reference such as ``"Sec. 12"`` or ``"§203(b)"``; surrounding whitespace and a
            trailing period are ignored.

    Returns:
        The normalized id, or ``None`` when ``text`` is not a single absolute reference
        (a relative ``"(b)"`` needs context: use ``find_section_refs(..., current_id=...)``).
    """
    candidate = text.strip().rstrip(".").strip()
    match = _KEYWORD_REF.fullmatch(candidate)
    if match:
        return _make_id(_kind_of(match["kw"]), match["num"], _labels_of(match["labels"]))
    match = _BARE_REF.fullmatch(candidate)
    if match:
        return _make_id("section", match["num"], _labels_of(match["labels"]))
    return None


def _label_kind(label: str, stack: list[tuple[str, str]]) -> str:
    """Kind of a sub-clause label given the open sub-clause levels (for ``(i)`` vs ``(h)``)."""
    if label.isdigit():
        return "digit"
    lower = label.islower()
    roman = _ROMAN_LOWER if lower else _ROMAN_UPPER
    letter_kind = "lower" if lower else "upper"
    if roman.match(label):
        last_letter = next((lab for kind, lab in reversed(stack) if kind == letter_kind), None)
        follows_letter = (
            len(label) == 1
            and last_letter is not None
            and len(last_letter) == 1
            and ord(label) == ord(last_letter) + 1
        )
        return letter_kind if follows_letter else f"roman-{letter_kind}"
    return letter_kind


def _split_id(section_id: str) -> tuple[str, list[str]]:
    base = section_id.split("(", 1)[0]
    return base, _labels_of(section_id[len(base) :])


# --- cross-references ----------------------------------------------------------------------

_REF_LIST = re.compile(
    _KW
    + r"\s*(?P<first>(?:"
    + _NUMBER
    + r")(?![\w.]\d)(?!\w)"
    + r"(?:\s?\([A-Za-z0-9]{1,4}\))*)"
    + r"(?P<more>(?:\s*(?:,|&|\band\b|\bor\b|\bto\b|\bthrough\b|\u2013|—|-)\s*"
    + r"(?:(?i:sections?|§)\s*)?"
    + r"\d+(?:\.\d+)*[A-Za-z]?(?!\w)(?:\s?\([A-Za-z0-9]{1,4}\))*)*)"
)
_MORE_ITEM = re.compile(r"\d+(?:\.\d+)*[A-Za-z]?(?!\w)(?:\s?\([A-Za-z0-9]{1,4}\))*")
_MORE_KEYWORD = re.compile(r"(?i:sections?|§)")
_RELATIVE_WORD = r"(?i:\b(?:sub)?(?:sections?|paragraphs?|clauses?)|\bitems?)"
_LABEL_RUN = r"(?:\([A-Za-z0-9]{1,4}\))+"
_OF = r"\s+(?i:of)\s+"
_RELATIVE = re.compile(
    _RELATIVE_WORD
    + r"\s*(?P<first>"
    + _LABEL_RUN
    + r")(?P<more>(?:\s*(?:,|\band\b|\bor\b)\s*"
    + _LABEL_RUN
    + r")*)(?P<within>(?:"
    + _OF
    + _RELATIVE_WORD
    + r"\s*"
    + _LABEL_RUN
    + r")*)(?:"
    + _OF
    + r"(?P<anchor>"
    + _KW
    + r"\s*"
    + _NUM
    + _LABELS
    + r"))?"
)
"""A relative reference (``subsection (b)``, ``paragraphs (1) and (2)``), with the sections it
is ``of`` when named: ``paragraph (2) of subsection (a) of section 12``."""
_LABEL_GROUP = re.compile(_LABEL_RUN)
_BARE_LABELLED = re.compile(
    r"(?<![\w.§(/-])(?P<num>\d+(?:\.\d+)*[A-Za-z]?)(?P<labels>(?:\s?\([A-Za-z0-9]{1,4}\))+)(?![\w(])"
)
"""A number with sub-clause labels and no keyword, ``203(a)(1)``: a reference in a query."""


def _resolve_relative(labels: list[str], current_id: str) -> str | None:
    if not current_id or not labels:
        return None
    base, current = _split_id(current_id)
    stack: list[tuple[str, str]] = []
    kinds = []
    for label in current:
        kind = _label_kind(label, stack)
        stack.append((kind, label))
        kinds.append(kind)
    first_kind = _label_kind(labels[0], stack)
    if first_kind not in kinds and first_kind.startswith("roman-"):
        plain = first_kind.removeprefix("roman-")
        first_kind = plain if plain in kinds else first_kind
    keep = kinds.index(first_kind) if first_kind in kinds else len(current)
    return base + "".join(f"({label})" for label in [*current[:keep], *labels])


def _relative_refs(match: re.Match[str], current_id: str) -> list[str]:
    """The ids a ``_RELATIVE`` match names, resolved against the section it is ``of``.

    That is the section named last, then each ``of`` inwards (``paragraph (2) of subsection
    (a) of section 12`` is ``12(a)(2)``); without one, ``current_id``.
    """
    anchor: str | None = current_id
    if match["anchor"]:
        anchor = _make_id(_kind_of(match["kw"]), match["num"], _labels_of(match["labels"]))
    for group in reversed(_LABEL_GROUP.findall(match["within"] or "")):
        anchor = _resolve_relative(_labels_of(group), anchor or "")
    groups = [match["first"], *_LABEL_GROUP.findall(match["more"] or "")]
    refs = (_resolve_relative(_labels_of(group), anchor or "") for group in groups)
    return [ref for ref in refs if ref]


@dataclass(frozen=True)
class SectionReference:
    """One mention of a section in a text: its id, the label word it used and where it is."""

    section_id: str
    """The normalized id (``"4.2"``, ``"203(a)(1)"``)."""
    label: str
    """The label word, one per spelling (``"section"`` for Section, Sec., §; ``"article"``,
    ``"clause"``, ``"paragraph"``, ``"part"``, ...); ``""`` when none (``203(a)(1)``)."""
    start: int
    """Offset of the mention (of the whole list, in ``Sections 3 and 4``)."""
    end: int
    """Offset after it."""


def find_section_refs(text: str, *, current_id: str = "", query: bool = False) -> list[str]:
    """Find the sections ``text`` refers to, as normalized ids, in order of first mention.

    Absolute references: ``see Section 5``, ``§4.2``, ``section 4``, ``Sections 3 and 4``,
    ``§§ 201-203`` (the ends of a range, not its inside), ``Article 5``, ``Part II``,
    ``Section 201(a)``. Relative ones (``subsection (b)``, ``paragraph (2)``, ``clause (i)``)
    resolve against ``current_id``: the label replaces the current label of the same kind
    (in ``203(a)``, ``subsection (b)`` is ``203(b)``) or is appended below it (in ``203``,
    ``paragraph (2)`` is ``203(2)``); without a ``current_id`` they are dropped. A relative
    reference ``of`` a named section resolves against that one instead, wherever it stands:
    ``subsection (a)(1) of section 203`` is ``203(a)(1)`` (only: not ``203`` too), and
    ``paragraph (2) of subsection (b)`` in ``203(a)`` is ``203(b)(2)``.

    Args:
        text: The text to scan.
        current_id: The section id of the text's own section; references to it are dropped.
        query: Whether ``text`` is a search query, where a number with sub-clause labels and
            no keyword (``203(a)(1)``, ``4.2(b)``) is a reference too: nobody types it for
            anything else, while a document's prose and formulas hold such strings. A bare
            number without labels (``4.2``) is never one: prose is full of decimals.

    Returns:
        Normalized section ids, deduplicated.
    """
    out: list[str] = []
    for ref in section_references(text, current_id=current_id, query=query):
        if ref.section_id not in out:
            out.append(ref.section_id)
    return out


def section_references(
    text: str, *, current_id: str = "", query: bool = False
) -> list[SectionReference]:
    """Every mention ``find_section_refs`` finds, in order, with its label word and place.

    A relative reference takes the label of the section it is ``of`` (``subsection (a) of
    section 203``: ``section``), else none, as a number with sub-clause labels alone.
    """
    found: list[SectionReference] = []
    anchors: set[int] = set()  # where a section named by a relative reference's ``of`` starts
    covered: list[tuple[int, int]] = []
    for match in _RELATIVE.finditer(text):
        label = _label_word(match["kw"]) if match["anchor"] else ""
        found.extend(
            SectionReference(ref, label, *match.span()) for ref in _relative_refs(match, current_id)
        )
        if match["anchor"]:
            anchors.add(match.start("anchor"))
        covered.append(match.span())
    for match in _REF_LIST.finditer(text):
        kind, label = _kind_of(match["kw"]), _label_word(match["kw"])
        items = [(label, match["first"])]
        more = match["more"] or ""
        for further in _MORE_ITEM.finditer(more):
            before = more[: further.start()]  # ``Article 3 and Section 4``: ``section``
            named = _MORE_KEYWORD.findall(before)
            items.append((_label_word(named[-1]) if named else label, further.group(0)))
        if match.start() in anchors:
            items = items[1:]  # ``section 203`` of ``subsection (a) of section 203``
        for item_label, item in items:
            num = re.match(_NUMBER, item)
            if num is None:  # pragma: no cover - the pattern guarantees a number
                continue
            ref = _make_id(kind, num.group(0), _labels_of(item[num.end() :]))
            if ref:
                found.append(SectionReference(ref, item_label, *match.span()))
        covered.append(match.span())
    for match in _BARE_LABELLED.finditer(text) if query else ():
        if any(start < match.end() and match.start() < end for start, end in covered):
            continue
        ref = _make_id("section", match["num"], _labels_of(match["labels"]))
        if ref:
            found.append(SectionReference(ref, "", *match.span()))
    found.sort(key=lambda item: item.start)
    return [ref for ref in found if ref.section_id != current_id]


@functools.lru_cache(maxsize=4096)  # the same titles head every chunk below them
def heading_label(title: str) -> tuple[str, str] | None:
    """The section id and label word a heading spells, or ``None`` when it spells none.

    ``"Section 4.2 Scope"`` -> ``("4.2", "section")``, ``"Article V"`` -> ``("v", "article")``;
    ``"4.2 Scope"`` and ``"Scope"`` -> ``None``.
    """
    match = _KEYWORD_HEADING.match(title)
    if match is None or (match["rest"] and match["rest"][0].isalnum()):
        return None
    section_id = _make_id(_kind_of(match["kw"]), match["num"], [])
    return (section_id, _label_word(match["kw"])) if section_id else None


# --- heading recognition ------------------------------------------------------------------


@dataclass(frozen=True)
class Section:
    """One heading and its own text (not its sub-sections), as offsets into the parsed text.

    Sections are returned in document order and tile the text: each ``end`` is the next
    ``start``, the last ``end`` is ``len(text)``. Only whitespace may precede the first section.
    """

    start: int
    """Offset of the heading line (0 for the preamble before the first heading)."""
    end: int
    """Offset where the next heading starts, or ``len(text)``."""
    body_start: int
    """Offset after the heading line(s); equals ``start`` for sub-clauses and the preamble."""
    level: int
    """Depth in the heading tree: 1 for top-level headings, 0 for the preamble.

    Not the ``#`` count: ``### A`` right under ``# B`` has level 2.
    """
    title: str
    """The heading text without markdown markers (``"Section 102. Definitions"``, ``"(a)"``)."""
    section_id: str
    """Normalized id (``"7"``, ``"4.2"``, ``"203(a)(1)"``, ``"part-ii"``); ``""`` when none."""
    parent_chain: tuple[str, ...] = ()
    """Titles of the enclosing headings, root first, excluding this one."""


@dataclass(frozen=True)
class _Candidate:
    rank: int
    title: str
    section_id: str
    body_start: int
    clause_labels: tuple[str, ...] = ()
    markdown_level: int = 0
    inline_body: int = 0
    """Offset in the heading line where a run-in body starts (``2. Grant. Subject to ...``)."""


@dataclass
class _Open:
    rank: int
    title: str
    section_id: str


_FENCE_OPEN = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_LINES = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")
"""Lines as Markdown ends them (``\n``, ``\r\n``, ``\r``): not at ``\u2028``, ``\x85`` or a
form feed, where ``str.splitlines`` would end one."""
_COMMENT_OPEN = re.compile(r"^ {0,3}<!--")
_FRONT_MATTER_LINE = re.compile(r"^(?:[\w.-]+[ \t]*:(?:[ \t].*)?|[ \t]+\S.*|-[ \t].*|#.*|[ \t]*)$")
"""A line of YAML front matter: ``key: value``, an indented or ``- `` item, a comment, blank."""
_ATX = re.compile(r"^ {0,3}(?P<hashes>#{1,6})(?:[ \t]+(?P<title>.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(?:={3,}|-{3,})[ \t]*$")
_ATTR = r"(?:[#.][\w:-]+|[\w-]+=(?:\"[^\"]*\"|'[^']*'|[^\s}]+))"
_ATTRIBUTES = re.compile(r"[ \t]*\{:?[ \t]*" + _ATTR + r"(?:[ \t]+" + _ATTR + r")*[ \t]*\}[ \t]*$")
"""A heading's trailing attribute list (MkDocs/Python-Markdown ``attr_list``, Pandoc):
``## Steps { #steps }``, ``{#id .class}``, ``{: #id }``. Not part of the title."""
_RST_ADORNMENT = re.compile(r"^([!-/:-@\[-`{-~])\1*[ \t]*$")
"""A reStructuredText title adornment: one ASCII punctuation character repeated."""
_RST_TARGET = re.compile(r"^\.\.[ \t]+_[^:`]+:[ \t]*$")
"""An internal hyperlink target, ``.. _label:``: it names the title below it."""
_RST_MARKUP = re.compile(r"^(?:\.\.[ \t]+(?:_[^:`]+:[ \t]*$|[\w:-]+::)|:[\w-]+:(?:\s|$))")
"""A line of explicit markup that introduces what follows: an internal target (``.. _label:``,
not an external ``.. _name: https://...``), a directive (``.. currentmodule:: x``) or a field
(``:orphan:``), at the start of a line."""
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)\s]*(?:\s+\"[^\"]*\")?\)")
"""An inline link or image, ``[text](url "title")``: its text stays in a heading's title."""
_KEYWORD_HEADING = re.compile(r"^ {0,3}" + _KW + r"\s*" + _NUM + _LABELS + r"(?P<rest>.*)$")
_BARE_HEADING = re.compile(
    r"^ {0,3}(?P<num>\d{1,3}(?:\.\d{1,3})*)(?P<dot>\.?)[ \t]+(?P<rest>\S.*)$"
)
_SUBCLAUSE = re.compile(r"^ {0,3}\((?P<label>\d{1,3}|[a-z]{1,4}|[A-Z]{1,4})\)(?=\s|$)")
_LIST_ITEM = re.compile(r"^\s*(?:\d{1,3}[.)]|[-*+•])\s")
_NOT_PARAGRAPH = re.compile(r"^\s*(?:[|>]|[-*+•]\s)")
_SEPARATOR = re.compile(r"^\s*[.:—\u2013-]*\s*")
_SENTENCE_BREAK = re.compile(r"[.!?]\s+\S")
_RUN_IN = re.compile(r"\.[ \t]+(?=[A-Z\"“(])")
_PLURAL_KEYWORDS = frozenset({"sections", "secs", "articles", "arts", "clauses", "§§"})
_SMALL_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "as",
        "at",
        "by",
        "for",
        "from",
        "in",
        "into",
        "nor",
        "not",
        "of",
        "on",
        "or",
        "over",
        "per",
        "than",
        "that",
        "the",
        "their",
        "these",
        "this",
        "those",
        "to",
        "under",
        "upon",
        "via",
        "with",
        "your",
    ]
)


def _title_ok(title: str, *, strict: bool) -> bool:
    core = title.strip().rstrip(".").strip()
    if not core:
        return True
    words = core.split()
    if len(core) > 100 or len(words) > (10 if strict else 15) or core[-1] in ",;:?!":
        return False
    if _SENTENCE_BREAK.search(core):
        return False
    first = words[0].lstrip("\"'“\u2018(")
    if first[:1].isalpha() and not first[0].isupper():
        return False
    if strict and not core.isupper():
        for word in words[1:]:
            bare = word.strip("()\"'“”\u2018\u2019,")
            if (
                len(bare) >= 4
                and bare[0].isalpha()
                and bare.lower() not in _SMALL_WORDS
                and not bare[0].isupper()
            ):
                return False
    return True


def _id_from_title(title: str) -> str:
    """The section id a heading's own text carries (``"Section 102. Definitions"`` -> ``102``)."""
    match = _KEYWORD_HEADING.match(title)
    if match and (not match["rest"] or not match["rest"][0].isalnum()):
        return _make_id(_kind_of(match["kw"]), match["num"], _labels_of(match["labels"])) or ""
    match = _BARE_HEADING.match(title + " ") if title else None
    if match and (
        match["dot"] or "." in match["num"] or _title_ok(match["rest"], strict=False)
    ):  # a heading already: a single number needs no dot before a capitalized title
        return match["num"]
    return ""


_BOX_EDGE = re.compile(r"^[ \t]*\*{10,}[ \t]*$")
_BOX_LINE = re.compile(r"^[ \t]*\*(?:[ \t](?P<inner>.*?))?[ \t]*\*[ \t]*$")


def _unboxed(raw: str) -> str:
    """A line without the frame of a comment box (``*  6. Disclaimer  *``; ``****`` is blank).

    MPL-2.0 boxes its sections 6 and 7 this way; their headings are headings all the same.
    """
    line = raw.rstrip()
    if len(line) < 20:
        return line
    if _BOX_EDGE.match(line):
        return ""
    boxed = _BOX_LINE.match(line)
    return (boxed["inner"] or "").strip() if boxed else line


def _run_in_title(rest: str) -> int:
    """Where the body starts in ``Grant of Copyright License. Subject to ...``; 0 if not so.

    The title before the first ``". "`` must be Title Case (at most 10 words, as for a bare
    numbered heading) and the body after it must start like a sentence.
    """
    match = _RUN_IN.search(rest)
    if match is None or not _title_ok(rest[: match.start()], strict=True):
        return 0
    return match.end()


def _plain_title(text: str) -> str:
    """A Markdown heading's title: no attribute list, a link or image as its text only.

    ``#### [asgi-csrf](https://github.com/simonw/asgi-csrf)`` is titled ``asgi-csrf``.
    """
    return _LINK.sub(r"\1", _ATTRIBUTES.sub("", text)).strip()


def _rst_adornment(line: str) -> str | None:
    """The character of a reStructuredText adornment line (``~~~~``), if ``line`` is one."""
    match = _RST_ADORNMENT.match(line)
    return match.group(1) if match and len(line.rstrip()) >= 3 else None


def _rst_title(lines: list[str], i: int) -> tuple[str, tuple[str, bool], int] | None:
    """The reStructuredText title starting at ``lines[i]``: title, style and lines it takes.

    The style is the adornment character and whether it is overlined too; a title is one line
    (starting the line, unless overlined) that its underline is as long as, or 4 characters.
    """
    line = lines[i].rstrip()
    over = _rst_adornment(line)
    if over is not None:  # overline, title, underline (the same character)
        if i + 2 >= len(lines):
            return None
        title = lines[i + 1].strip()
        if not title or _rst_adornment(title) or _rst_adornment(lines[i + 2].rstrip()) != over:
            return None
        return (title, (over, True), 3) if len(line) >= len(title) else None
    if i + 1 >= len(lines) or line[:1].isspace():
        return None
    under = lines[i + 1].rstrip()
    char = _rst_adornment(under)
    if char is None or not (len(under) >= 4 or len(under) >= len(line)):
        return None
    return line.strip(), (char, False), 2


def _rst_markup_above(lines: list[str], i: int) -> int:
    """First line of the explicit markup run (``.. _label:``) directly above line ``i``.

    Only blank lines and markup lines may lie between it and line ``i``: any markup when it
    starts the text (``.. currentmodule:: x``, ``:orphan:``), else only internal targets (a
    directive there, ``.. autofunction:: f``, is the text above's). It must follow a blank
    line or start the text (markup glued to a paragraph is that paragraph's). ``i`` when
    there is none.
    """
    j = i - 1
    while j >= 0 and (not lines[j].strip() or _RST_MARKUP.match(lines[j])):
        j -= 1
    if j >= 0:
        j = i - 1
        while j >= 0 and (not lines[j].strip() or _RST_TARGET.match(lines[j])):
            j -= 1
    k = j + 1
    if j >= 0:
        while k < i and lines[k].strip():
            k += 1
    while k < i and not lines[k].strip():
        k += 1
    return k


def _runs_on(rest: str, next_line: str | None) -> bool:
    """Whether the text after a clause's number is a sentence: the clause's body, not a title.

    ``7.2 Late payments bear interest at 4% per annum.``: contracts often write a clause as one
    numbered paragraph, its body on the number's line. The text starts with a capital (``2.5
    million users`` is prose), is not Title Case, and ends as a sentence does (``.``, ``;``,
    ``:``, ``,``, ``?``, ``!``), runs longer than a title, or goes on into the next line: one
    starting in lower case (``1.1 "Services" means the services described in Schedule 2, as``
    / ``amended from time to time``), or any after a word no title ends in (``2.1 This
    Agreement continues for an initial term of`` / ``36 months.``).
    """
    core = rest.strip()
    first = core.lstrip("\"'“\u2018(")
    if not first[:1].isupper() or _title_ok(core, strict=True):
        return False
    following = (next_line or "").strip()
    runs_on = following[:1].islower() or (
        bool(following) and core.split()[-1].lower() in _SMALL_WORDS
    )
    return core[-1] in ".;:,?!" or len(core.split()) > 15 or len(core) > 100 or runs_on


def _plain_heading(line: str, next_line: str | None) -> _Candidate | None:
    """A keyword or bare numbered heading on ``line`` (which opens a paragraph), if any.

    A plural keyword (``Sections 3.1, 3.2 and 3.4 are ...``) lists references: never a heading.
    A dotted number, or a section, clause or article keyword and its number, followed by a
    sentence (see ``_runs_on``) is a clause whose body starts on its line: its title is the
    number (``7.2``, ``Clause 7.2``), however long the line.
    """
    match = _KEYWORD_HEADING.match(line)
    if match:
        rest = match["rest"]
        if rest and (rest[0].isalnum() or rest.lstrip()[:1] in (",", ";")):
            return None
        kind = _kind_of(match["kw"])
        num = match["num"]
        if match["kw"].lower().rstrip(".") in _PLURAL_KEYWORDS:
            return None
        if kind == "section" and not num[0].isdigit():
            return None
        section_id = _make_id(kind, num, _labels_of(match["labels"]))
        if section_id is None:
            return None
        title_part = _SEPARATOR.sub("", rest, count=1)
        body = match.start("rest") + len(rest) - len(title_part)
        clause = kind in ("section", "article")  # not ``Title 17 U.S.C. protects ...``
        run_in = _inline_body(line, title_part, body, next_line, clause=clause, run_in_title=True)
        if run_in is None:
            return None
        rank = _KIND_RANK.get(kind, 5) + (num.count(".") if kind == "section" else 0)
        title = line[:run_in].strip() if run_in else line.strip()
        return _Candidate(rank, title, section_id, -1, inline_body=run_in)
    match = _BARE_HEADING.match(line)
    if match:
        num = match["num"]
        dotted = "." in num
        if not (match["dot"] or dotted):
            return None
        if next_line is not None and _LIST_ITEM.match(next_line):
            return None
        run_in = _inline_body(
            line,
            match["rest"],
            match.start("rest"),
            next_line,
            clause=dotted,  # ``3. Remove the cover.`` is a list item, ``3.1 Remove ...`` a clause
            run_in_title=bool(match["dot"]),
        )
        if run_in is None:
            return None
        title = line[:run_in].strip() if run_in else line.strip()
        return _Candidate(5 + num.count("."), title, num, -1, inline_body=run_in)
    return None


def _inline_body(
    line: str, rest: str, body: int, next_line: str | None, *, clause: bool, run_in_title: bool
) -> int | None:
    """Where the body starts in a numbered heading ``line``: 0 when it has none on the line.

    ``rest`` is the text after the number, starting at offset ``body`` of ``line``. A title
    (``4.2 Scope``; Title Case unless ``clause``) has no body; a run-in title (``2. Grant of
    License. Subject to ...``, when ``run_in_title``) has its body after its first sentence;
    when ``clause``, a sentence (``7.2 Late payments bear interest.``) is all body. ``None``
    when ``line`` is none of these.
    """
    sentence = clause and _runs_on(rest, next_line)
    if len(line) <= 120 and not sentence and _title_ok(rest, strict=not clause):
        return 0
    run_in = _run_in_title(rest) if run_in_title and len(line) <= 120 else 0
    if run_in:
        return body + run_in
    return body if sentence else None


def _front_matter_end(lines: list[str]) -> int:
    """The index of the line after the YAML front matter that opens ``lines``, else 0.

    A front matter is ``key: value`` lines (with blank, indented, ``- `` and comment lines)
    between ``---`` and ``---`` (or ``...``); without one, a first ``---`` stays Markdown.
    """
    if not lines or lines[0].rstrip() != "---":
        return 0
    for i, line in enumerate(lines[1:], start=1):
        if line.rstrip() in ("---", "..."):
            keyed = any(re.match(r"[\w.-]+[ \t]*:", row) for row in lines[1:i])
            return i + 1 if keyed else 0
        if not _FRONT_MATTER_LINE.match(line.rstrip("\r\n")):
            return 0
    return 0


def parse_sections(
    text: str, *, max_level: int = 6, subclauses: bool = True, markup: Markup = "markdown"
) -> list[Section]:
    """Parse ``text`` into its heading tree, flattened in document order.

    See the module docstring for the heading grammar and the id rules. Markdown headings
    deeper than ``max_level`` (``#`` count; setext headings are levels 1 and 2) stay part of
    their parent's text; numbered headings and sub-clauses are always recognized, however
    deep they nest (legislation often reaches ``Title > Chapter > Section > (b) > (2) > (A)``).

    Args:
        text: Markdown or plain text.
        max_level: Deepest markdown heading level recognized, 1 to 6.
        subclauses: Whether ``(a)``/``(1)`` sub-clauses are sections; with ``False`` they stay
            in their numbered section's text (fewer, larger chunks; ids stop at ``203``).
        markup: ``"rst"`` reads reStructuredText titles (see the module docstring) instead
            of the Markdown headings and the keyword and bare numbered headings.

    Returns:
        The sections, tiling ``text``; a preamble section (level 0, title ``""``) holds
        non-blank text before the first heading. ``[]`` for blank text.

    Raises:
        ValueError: When ``max_level`` is not between 1 and 6, or ``markup`` is neither
            ``"markdown"`` nor ``"rst"``.
    """
    if not 1 <= max_level <= 6:
        msg = f"max_level must be between 1 and 6, got {max_level}."
        raise ValueError(msg)
    if markup not in ("markdown", "rst"):
        msg = f"markup must be 'markdown' or 'rst', got {markup!r}."
        raise ValueError(msg)
    rst = markup == "rst"
    styles: list[tuple[str, bool]] = []  # rst adornment styles, in order of first appearance
    lines = _LINES.findall(text)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))

    heads: list[Section] = []
    stack: list[_Open] = []
    clause_base = ""
    clause_stack: list[tuple[str, str]] = []
    fence: tuple[str, int] | None = None
    prev_blank = True
    prev_heading = False
    prev_line = ""
    i = 0 if rst else _front_matter_end(lines)
    while i < len(lines):
        line = lines[i].rstrip() if rst else _unboxed(lines[i])
        start = offsets[i]
        head_start = start  # where the section starts: its heading, or markup above it (rst)
        if not rst and _COMMENT_OPEN.match(line) and "-->" not in line.split("<!--", 1)[1]:
            while i + 1 < len(lines) and "-->" not in lines[i + 1]:  # CommonMark HTML block 2
                i += 1
            prev_blank, prev_heading, prev_line, i = False, False, line, i + 2
            continue
        if fence is not None:
            closing = _FENCE_OPEN.match(line)
            if (
                closing
                and closing["fence"][0] == fence[0]
                and len(closing["fence"]) >= fence[1]
                and not closing["info"].strip()
            ):
                fence = None
            prev_blank, prev_heading, prev_line, i = False, False, line, i + 1
            continue
        opening = None if rst else _FENCE_OPEN.match(line)
        if opening and not (opening["fence"][0] == "`" and "`" in opening["info"]):
            fence = (opening["fence"][0], len(opening["fence"]))
            prev_blank, prev_heading, prev_line, i = False, False, line, i + 1
            continue
        if not line.strip():
            prev_blank, prev_heading, i = True, False, i + 1
            continue

        opens_paragraph = prev_blank or prev_heading
        next_line = _unboxed(lines[i + 1]) if i + 1 < len(lines) else None
        candidate: _Candidate | None = None
        consumed = 1
        atx = None if rst else _ATX.match(line)
        rst_title = _rst_title(lines, i) if rst and opens_paragraph else None
        if rst_title is not None:
            title, style, consumed = rst_title
            if style not in styles:
                styles.append(style)
            level = styles.index(style) + 1
            candidate = _Candidate(
                level, title, _id_from_title(title), offsets[i + consumed], markdown_level=level
            )
            head_start = offsets[_rst_markup_above(lines, i)]
        elif atx:
            title = _plain_title(atx["title"] or "")
            level = len(atx["hashes"])
            candidate = _Candidate(
                level, title, _id_from_title(title), offsets[i + 1], markdown_level=level
            )
        elif (
            not rst
            and opens_paragraph
            and next_line is not None
            and _SETEXT.match(next_line)
            and not _NOT_PARAGRAPH.match(line)
            and not _LIST_ITEM.match(line)
        ):
            title = _plain_title(line)
            level = 1 if next_line.lstrip().startswith("=") else 2
            candidate = _Candidate(
                level, title, _id_from_title(title), offsets[i + 2], markdown_level=level
            )
            consumed = 2
        elif not rst and opens_paragraph and (plain := _plain_heading(line, next_line)):
            body = start + plain.inline_body if plain.inline_body else offsets[i + 1]
            if not plain.inline_body and next_line is not None and _SETEXT.match(next_line):
                body, consumed = offsets[i + 2], 2  # "1. Definitions" underlined with "---"
            candidate = _Candidate(plain.rank, plain.title, plain.section_id, body)
        elif (
            subclauses
            and clause_base
            and (opens_paragraph or prev_line.rstrip().endswith((".", ";", ":")))
            and (clause := _SUBCLAUSE.match(line))
        ):
            label = clause["label"]
            kind = _label_kind(label, clause_stack)
            pos = next((j for j, (k, _) in enumerate(clause_stack) if k == kind), None)
            if pos is not None:
                del clause_stack[pos:]
            clause_stack.append((kind, label))
            base, _ = _split_id(clause_base)
            section_id = base + "".join(f"({lab})" for lab in (lab for _, lab in clause_stack))
            candidate = _Candidate(
                _SUBCLAUSE_RANK + len(clause_stack) - 1,
                f"({label})",
                section_id,
                start,
                clause_labels=(label,),
            )

        is_heading = False
        if candidate is not None and candidate.markdown_level <= max_level:
            while stack and stack[-1].rank >= candidate.rank:
                stack.pop()
            own_id = candidate.section_id or (stack[-1].section_id if stack else "")
            heads.append(
                Section(
                    start=head_start,
                    end=len(text),
                    body_start=candidate.body_start,
                    level=len(stack) + 1,
                    title=candidate.title,
                    section_id=own_id,
                    parent_chain=tuple(open_.title for open_ in stack),
                )
            )
            stack.append(_Open(candidate.rank, candidate.title, own_id))
            is_heading = candidate.body_start != start
            if not candidate.clause_labels:
                clause_base = own_id
                clause_stack = []
                for label in _split_id(own_id)[1]:
                    clause_stack.append((_label_kind(label, clause_stack), label))
        prev_blank = False
        prev_heading = is_heading
        prev_line = _unboxed(lines[i + consumed - 1])
        i += consumed

    sections: list[Section] = []
    first_start = heads[0].start if heads else len(text)
    if text[:first_start].strip():
        sections.append(Section(0, first_start, 0, 0, "", "", ()))
    for index, head in enumerate(heads):
        end = heads[index + 1].start if index + 1 < len(heads) else len(text)
        sections.append(
            Section(
                head.start,
                end,
                min(head.body_start, end),
                head.level,
                head.title,
                head.section_id,
                head.parent_chain,
            )
        )
    return sections
