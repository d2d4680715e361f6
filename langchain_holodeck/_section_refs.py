r"""Section-reference grammar: normalize and find the sections a text refers to.

Pure functions over strings; no LangChain. Public through ``langchain_holodeck.definitions``
(``normalize_section_ref``, ``find_section_refs``); ``_sections`` (headings) builds on the
same pieces (label keywords, numbers, sub-clause labels, ids).

References: ``Section 203(a)(1)``, ``§ 4.2``, ``sec. 7``, ``Article 5``, ``Clause 9``,
``Part II``, ``Chapter 3``, lists and ranges (``Sections 3 and 4``, ``§§ 201-203``), relative
ones (``subsection (b)``, ``paragraph (2) of section 12``) and, in a query, a number with
sub-clause labels (``203(a)(1)``). Each becomes the id ``parse_sections`` gives its target:
the number of a Section/§/Article/Clause (``7``, ``4.2``, Article V -> ``v``), plus sub-clause
labels (``203(a)(1)``); Title/Part/Chapter/Schedule/Annex/Appendix get a kind prefix
(``title-i``, ``part-ii``, ``chapter-3``). The id drops the label word; ``section_references``
keeps it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "KEYWORD",
    "KIND_RANK",
    "LABELS",
    "NUM",
    "SUBCLAUSE_RANK",
    "SectionReference",
    "find_section_refs",
    "kind_of",
    "label_kind",
    "label_word",
    "labels_of",
    "make_id",
    "normalize_section_ref",
    "section_references",
    "split_id",
]

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
KIND_RANK = {
    "appendix": 1,
    "annex": 1,
    "schedule": 1,
    "title": 1,
    "part": 2,
    "chapter": 3,
    "article": 4,
    "section": 5,
}
SUBCLAUSE_RANK = 100

KEYWORD = (
    r"(?<![\w§])(?P<kw>(?i:(?:sub-?)?sections?|secs?\.?|sects?\.|paragraphs?|articles?|arts?\."
    r"|clauses?|title|part|chapter|schedule|annex|appendix)(?=[\s\d])|§§?)"
)
_NUMBER = r"\d+(?:\.\d+)*[A-Za-z]?|[IVXLCDM]+|[A-Z]|[ivxlcdm]+|[a-z]"
"""A section number: digits (``4.2``, ``12A``), a Roman numeral or a letter; lower-case
numerals and letters only where ``_number_ok`` takes them (``title ii``, ``appendix b``)."""
NUM = r"(?P<num>" + _NUMBER + r")(?![\w.]\d)(?!\w)"
LABELS = r"(?P<labels>(?:\s?\([A-Za-z0-9]{1,4}\))*)"
_KEYWORD_REF = re.compile(KEYWORD + r"\s*" + NUM + LABELS)
_BARE_REF = re.compile(r"(?P<num>\d+(?:\.\d+)*[A-Za-z]?)" + LABELS)
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


def kind_of(keyword: str) -> str:
    key = keyword.lower().rstrip(".")
    return _PLAIN_KINDS.get(key, key)


def label_word(keyword: str) -> str:
    key = keyword.lower().rstrip(".")
    return _LABEL_WORDS.get(key, key)


def labels_of(labels: str) -> list[str]:
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


def make_id(kind: str, num: str, labels: list[str]) -> str | None:
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
        return make_id(kind_of(match["kw"]), match["num"], labels_of(match["labels"]))
    match = _BARE_REF.fullmatch(candidate)
    if match:
        return make_id("section", match["num"], labels_of(match["labels"]))
    return None


def label_kind(label: str, stack: list[tuple[str, str]]) -> str:
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


def split_id(section_id: str) -> tuple[str, list[str]]:
    base = section_id.split("(", 1)[0]
    return base, labels_of(section_id[len(base) :])


# --- cross-references ----------------------------------------------------------------------

_REF_LIST = re.compile(
    KEYWORD
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
    + KEYWORD
    + r"\s*"
    + NUM
    + LABELS
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
    base, current = split_id(current_id)
    stack: list[tuple[str, str]] = []
    kinds = []
    for label in current:
        kind = label_kind(label, stack)
        stack.append((kind, label))
        kinds.append(kind)
    first_kind = label_kind(labels[0], stack)
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
        anchor = make_id(kind_of(match["kw"]), match["num"], labels_of(match["labels"]))
    for group in reversed(_LABEL_GROUP.findall(match["within"] or "")):
        anchor = _resolve_relative(labels_of(group), anchor or "")
    groups = [match["first"], *_LABEL_GROUP.findall(match["more"] or "")]
    refs = (_resolve_relative(labels_of(group), anchor or "") for group in groups)
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
        label = label_word(match["kw"]) if match["anchor"] else ""
        found.extend(
            SectionReference(ref, label, *match.span()) for ref in _relative_refs(match, current_id)
        )
        if match["anchor"]:
            anchors.add(match.start("anchor"))
        covered.append(match.span())
    for match in _REF_LIST.finditer(text):
        kind, label = kind_of(match["kw"]), label_word(match["kw"])
        items = [(label, match["first"])]
        more = match["more"] or ""
        for further in _MORE_ITEM.finditer(more):
            before = more[: further.start()]  # ``Article 3 and Section 4``: ``section``
            named = _MORE_KEYWORD.findall(before)
            items.append((label_word(named[-1]) if named else label, further.group(0)))
        if match.start() in anchors:
            items = items[1:]  # ``section 203`` of ``subsection (a) of section 203``
        for item_label, item in items:
            num = re.match(_NUMBER, item)
            if num is None:  # pragma: no cover - the pattern guarantees a number
                continue
            ref = make_id(kind, num.group(0), labels_of(item[num.end() :]))
            if ref:
                found.append(SectionReference(ref, item_label, *match.span()))
        covered.append(match.span())
    for match in _BARE_LABELLED.finditer(text) if query else ():
        if any(start < match.end() and match.start() < end for start, end in covered):
            continue
        ref = make_id("section", match["num"], labels_of(match["labels"]))
        if ref:
            found.append(SectionReference(ref, "", *match.span()))
    found.sort(key=lambda item: item.start)
    return [ref for ref in found if ref.section_id != current_id]
