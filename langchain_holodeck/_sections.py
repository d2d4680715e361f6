r"""Heading grammar: parse a document into sections.

Pure functions over strings; no LangChain. Public through ``langchain_holodeck.splitters``
(``parse_sections``, ``Section``). The references to sections (``normalize_section_ref``,
``find_section_refs``) are in ``_section_refs``, re-exported here.

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
deploy`` has none), and so is a number alone (``### 4.2``, ``## 4``, ``# 3.``: ``4.2``, ``4``,
``3``); a number of four digits is a year, not a section (``## 2024`` has none, as ``## 2024
Roadmap``). A heading without a number inherits the id of its nearest ancestor
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

from langchain_holodeck._section_refs import KEYWORD as _KW
from langchain_holodeck._section_refs import KIND_RANK as _KIND_RANK
from langchain_holodeck._section_refs import LABELS as _LABELS
from langchain_holodeck._section_refs import NUM as _NUM
from langchain_holodeck._section_refs import SUBCLAUSE_RANK as _SUBCLAUSE_RANK
from langchain_holodeck._section_refs import find_section_refs, normalize_section_ref
from langchain_holodeck._section_refs import kind_of as _kind_of
from langchain_holodeck._section_refs import label_kind as _label_kind
from langchain_holodeck._section_refs import label_word as _label_word
from langchain_holodeck._section_refs import labels_of as _labels_of
from langchain_holodeck._section_refs import make_id as _make_id
from langchain_holodeck._section_refs import split_id as _split_id

__all__ = [
    "Markup",
    "Section",
    "find_section_refs",
    "heading_label",
    "normalize_section_ref",
    "parse_sections",
]

Markup = Literal["markdown", "rst"]
"""The heading syntax ``parse_sections`` reads: Markdown (and plain text) or reStructuredText."""

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
_NUMBER_ONLY = re.compile(r"^(?P<num>\d{1,3}(?:\.\d{1,3})*)\.?$")
"""A heading that is a section number alone (``4.2``, ``4``, ``3.``): at most three digits a
part, as every section number, so a year (``2024``, a changelog's heading) is none."""
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
    match = _NUMBER_ONLY.match(title)  # ``### 4.2``: the number is the whole title
    return match["num"] if match else ""


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
