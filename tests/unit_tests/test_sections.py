from __future__ import annotations

import pytest

from langchain_holodeck._sections import find_section_refs, normalize_section_ref
from langchain_holodeck.splitters import Section, parse_sections


def titles_ids(text: str) -> list[tuple[str, str]]:
    return [(s.title, s.section_id) for s in parse_sections(text)]


def test_atx_and_setext_headings_nest() -> None:
    text = "Intro\n=====\n\nbody\n\nDetails\n-------\n\n# Other\n\n## Sub\n"
    sections = parse_sections(text)
    assert [(s.title, s.level, s.parent_chain) for s in sections] == [
        ("Intro", 1, ()),
        ("Details", 2, ("Intro",)),
        ("Other", 1, ()),
        ("Sub", 2, ("Other",)),
    ]


def test_preamble_is_level_zero_without_id() -> None:
    sections = parse_sections("Some preface.\n\n# A\n")
    assert sections[0] == Section(0, 15, 0, 0, "", "", ())
    assert sections[1].title == "A"


def test_offsets_point_at_heading_and_body() -> None:
    text = "# A\nbody a\n## B\nbody b\n"
    a, b = parse_sections(text)
    assert text[a.start : a.body_start] == "# A\n"
    assert text[a.body_start : a.end] == "body a\n"
    assert text[b.start : b.end] == "## B\nbody b\n"


@pytest.mark.parametrize(
    ("line", "section_id"),
    [
        ("7. Additional Terms.", "7"),
        ("Section 4.2 Scope", "4.2"),
        ("SECTION 4.2. SCOPE", "4.2"),
        ("§ 203", "203"),
        ("§203. Records", "203"),
        ("Article 5", "5"),
        ("ARTICLE V — Duties", "v"),
        ("PART II", "part-ii"),
        ("Chapter 3: Operations", "chapter-3"),
        ("Title I", "title-i"),
        ("4.2.1 Scope and purpose", "4.2.1"),
        ("Sec. 12", "12"),
    ],
)
def test_plain_text_numbered_headings(line: str, section_id: str) -> None:
    sections = parse_sections(f"{line}\n\nThe body text follows here.\n")
    assert [(s.title, s.section_id) for s in sections] == [(line, section_id)]


@pytest.mark.parametrize(
    "text",
    [
        "1. open the file\n2. save it\n",  # tight list
        "1. Open\n2. Save\n",  # tight list with capitals
        "7. the operator may log this.\n\nmore\n",  # prose, lowercase
        "3. Make sure the deck is empty before starting\n\nmore\n",  # sentence case, single number
        "Section 5 applies to every operator.\n\nmore\n",  # prose starting with a keyword
        "The holodeck\nSection 4.2 Scope\n",  # not at a paragraph start
        "2024 was a good year.\n",
    ],
)
def test_prose_and_lists_are_not_headings(text: str) -> None:
    assert all(s.level == 0 for s in parse_sections(text))


def test_headings_inside_code_fences_are_ignored() -> None:
    text = "# Real\n\n```md\n# Fake\nSection 9 Fake\n```\n\n~~~\n## Fake too\n~~~\n\n## Also real\n"
    assert [s.title for s in parse_sections(text)] == ["Real", "Also real"]


def test_headings_inside_html_comments_and_front_matter_are_ignored() -> None:
    """Found 2026-12-07: a commented-out section was a section (its ``<!--`` and ``-->`` in
    two chunks), a front matter's blank line made ``key: value`` + ``---`` a setext heading,
    and ``\u2028`` ended a line, so ``# x`` after it was a heading."""
    commented = "# Real\n\ntext\n\n<!--\n# Commented Out\nold text\n-->\n\n## Also real\n"
    assert [s.title for s in parse_sections(commented)] == ["Real", "Also real"]
    one_line = "# Real\n\n<!-- # not a heading -->\n\n## Also real\n"
    assert [s.title for s in parse_sections(one_line)] == ["Real", "Also real"]
    front = "---\ntitle: Doc\n\ndescription: A long description\n---\n\n# Intro\n\nbody\n"
    sections = parse_sections(front)
    assert [(s.title, s.level) for s in sections] == [("", 0), ("Intro", 1)]
    assert front[: sections[1].start] == front[: front.index("# Intro")]
    # a leading rule above Markdown (no key: value lines) is no front matter
    ruled = "---\n\n# One\n\ntext\n\n---\n\n# Two\n"
    assert [s.title for s in parse_sections(ruled)] == ["", "One", "Two"]
    separated = "# Form\n\nsome text\u2028# not a heading\n\nmore\n"
    assert [s.title for s in parse_sections(separated)] == ["Form"]
    assert [s.title for s in parse_sections("# A\r\n\r\ntext\r# B\r")] == ["A", "B"]


def test_subclauses_nest_under_numbered_sections() -> None:
    text = (
        "§ 203. Records\n\n(a) Every simulation shall be logged.\n\n(1) The log records.\n\n"
        "(A) Start time.\n\n(i) In UTC.\n\n(2) Keep logs.\n\n(b) Another.\n"
    )
    assert [s.section_id for s in parse_sections(text)] == [
        "203", "203(a)", "203(a)(1)", "203(a)(1)(A)", "203(a)(1)(A)(i)", "203(a)(2)", "203(b)",
    ]  # fmt: skip
    sub = parse_sections(text)[4]
    assert sub.parent_chain == ("§ 203. Records", "(a)", "(1)", "(A)")
    assert sub.title == "(i)"


def test_letter_i_after_h_is_a_letter_not_roman() -> None:
    labels = "".join(f"({c}) Item {c}.\n\n" for c in "abcdefghij")
    ids = [s.section_id for s in parse_sections("Section 1 Lists\n\n" + labels)]
    assert ids[-2:] == ["1(i)", "1(j)"]


def test_subclauses_need_a_numbered_parent() -> None:
    text = "# Notes\n\n(a) a list item in prose.\n\n(b) another one.\n"
    assert [s.title for s in parse_sections(text)] == ["Notes"]


def test_subclauses_on_consecutive_lines() -> None:
    text = "Section 2 Rules\n(a) first rule;\n(b) second rule.\n"
    assert [s.section_id for s in parse_sections(text)] == ["2", "2(a)", "2(b)"]


def test_atx_heading_carries_its_number_and_children_inherit() -> None:
    text = "### Section 102. Definitions\n\n#### Notes\n\ntext\n"
    assert titles_ids(text) == [("Section 102. Definitions", "102"), ("Notes", "102")]


@pytest.mark.parametrize(
    ("text", "section_id"),
    [
        ("# 5 Terms and definitions", "5"),  # ISO style: no dot after a clause's number
        ("## 5 Termination", "5"),
        ("5 TERMINATION\n=============", "5"),  # setext
        ("## 5 ways to deploy", ""),  # a lowercase title: a count, not a clause number
        ("## 2024 Roadmap", ""),  # four digits: a year
        ("## 5", "5"),  # a number alone: the heading is its number
        ("### 4.2", "4.2"),
        ("# 3.", "3"),
        ("# 42", "42"),
        ("4.2\n---", "4.2"),  # setext
        ("## 2024", ""),  # four digits alone: a year (a changelog's heading), not a section
        ("## 4.2 {#payment}", "4.2"),  # an attribute list is not part of the title
    ],
)
def test_a_markdown_headings_single_number_needs_no_dot(text: str, section_id: str) -> None:
    sections = [s for s in parse_sections(f"{text}\n\nThe body.\n") if s.level]
    assert [s.section_id for s in sections] == [section_id]


def test_the_same_line_without_heading_syntax_still_needs_the_dot() -> None:
    assert all(s.level == 0 for s in parse_sections("5 Termination\n\nThe body.\n"))


def test_keyword_ranks_nest_title_part_chapter_section() -> None:
    text = "TITLE I\n\nPART 2 General\n\nChapter 3\n\nSection 4 Scope\n\n4.1 Detail\n\nChapter 4\n"
    levels = [(s.section_id, s.level) for s in parse_sections(text)]
    assert levels == [
        ("title-i", 1), ("part-2", 2), ("chapter-3", 3), ("4", 4), ("4.1", 5), ("chapter-4", 3),
    ]  # fmt: skip


def test_max_level_keeps_deeper_headings_in_the_parent() -> None:
    text = "# A\n## B\n### C\ntext\n"
    sections = parse_sections(text, max_level=2)
    assert [s.title for s in sections] == ["A", "B"]
    assert sections[-1].end == len(text)


def test_max_level_must_be_positive() -> None:
    with pytest.raises(ValueError, match="between 1 and 6, got 0"):
        parse_sections("# A", max_level=0)


def test_blank_text_has_no_sections() -> None:
    assert parse_sections("  \n\n ") == []


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        ("Article 5", "5"),
        ("§ 4.2", "4.2"),
        ("section 7", "7"),
        ("Section 203(a)(1)", "203(a)(1)"),
        ("Section 203 (a) (1)", "203(a)(1)"),
        ("§203(b).", "203(b)"),
        ("Sec. 12", "12"),
        ("PART II", "part-ii"),
        ("chapter 3", "chapter-3"),
        ("4.2", "4.2"),
        ("(b)", None),
        ("the holodeck", None),
        ("", None),
    ],
)
def test_normalize_section_ref(ref: str, expected: str | None) -> None:
    assert normalize_section_ref(ref) == expected


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        ("subsection 203(a)(1)", "203(a)(1)"),
        ("Subsection 203(a)", "203(a)"),
        ("sub-section 203(a)", "203(a)"),
        ("paragraph 203(a)(1)", "203(a)(1)"),
        ("Sect. 4.2", "4.2"),
        ("title ii", "title-ii"),
        ("part iv", "part-iv"),
        ("appendix b", "appendix-b"),
        ("annex a", "annex-a"),
        # lower case as English has it: not a reference
        ("schedule a", None),
        ("part did", None),
        ("section a", None),
        ("sect 4", None),
    ],
)
def test_references_as_queries_are_typed(ref: str, expected: str | None) -> None:
    """Spellings a user types that missed the section ('subsection 203(a)(1)', 'title ii')."""
    assert normalize_section_ref(ref) == expected


def test_lower_case_letters_number_only_appendices_and_annexes_in_text() -> None:
    text = "Please schedule a meeting on part i, then read appendix c and subsection 4(b)."
    assert find_section_refs(text) == ["part-i", "appendix-c", "4(b)"]


def test_normalize_matches_the_ids_parse_sections_gives() -> None:
    sections = parse_sections("### Section 102. Definitions\n\n(a) x.\n\n(1) y.\n")
    assert normalize_section_ref("Section 102(a)(1)") == sections[-1].section_id


def test_find_absolute_references() -> None:
    text = "See Section 5, §4.2 and section 4; Sections 3 and 4; §§ 201-203; Part II, Article 9."
    assert find_section_refs(text) == ["5", "4.2", "4", "3", "201", "203", "part-ii", "9"]


def test_find_relative_references_resolve_against_current_section() -> None:
    assert find_section_refs("under subsection (b)", current_id="203(a)") == ["203(b)"]
    assert find_section_refs("see subsection (a)", current_id="203(a)(2)") == ["203(a)"]
    assert find_section_refs("paragraph (2)", current_id="203(a)(1)") == ["203(a)(2)"]
    assert find_section_refs("paragraph (2)", current_id="203") == ["203(2)"]
    assert find_section_refs("subsection (b)") == []


def test_references_to_self_are_dropped() -> None:
    assert find_section_refs("as Section 5 says", current_id="5") == []


def test_plain_words_are_not_references() -> None:
    assert find_section_refs("This section describes the second part of the article.") == []


def test_subclauses_can_be_turned_off() -> None:
    text = "Section 2 Rules\n\n(a) first rule.\n\n(b) second rule.\n"
    assert [s.section_id for s in parse_sections(text, subclauses=False)] == ["2"]


def test_a_sentence_listing_sections_is_not_a_heading() -> None:
    text = (
        "2.7. Conditions\n\nSections 3.1, 3.2, 3.3, and 3.4 are conditions of the licenses"
        " granted\nin Section 2.1.\n\n3.1. Distribution of Source Form\n\n"
        "All distribution must be under this License.\n"
    )
    sections = parse_sections(text)
    assert [s.section_id for s in sections] == ["2.7", "3.1"]
    assert sections[1].title == "3.1. Distribution of Source Form"


def test_run_in_title_starts_a_section_with_its_body_on_the_same_line() -> None:
    text = (
        '   1. Definitions.\n\n      "License" shall mean this.\n\n'
        "   2. Grant of Copyright License. Subject to the terms and conditions of\n"
        "      this License, each Contributor grants You a license.\n\n"
        "   3. Remove the cover. Then wait.\n"
    )
    sections = parse_sections(text)
    assert [(s.section_id, s.title) for s in sections] == [
        ("1", "1. Definitions."),
        ("2", "2. Grant of Copyright License."),
    ]
    assert text[sections[1].body_start :].startswith("Subject to the terms")


def test_numbered_heading_underlined_like_setext_consumes_the_underline() -> None:
    text = '1. Definitions\n--------------\n\n1.1. "Contributor"\n    means a person.\n'
    sections = parse_sections(text)
    assert [s.section_id for s in sections] == ["1", "1.1"]
    assert not text[sections[0].body_start : sections[0].end].strip()


def test_headings_with_this_in_their_title() -> None:
    text = "14. Revised Versions of this License.\n\nThe Foundation may publish versions.\n"
    assert [s.section_id for s in parse_sections(text)] == ["14"]


def test_headings_inside_a_comment_box() -> None:
    text = (
        "5.3. End\n\nText.\n\n" + "*" * 40 + "\n*" + " " * 38 + "*\n"
        "*  6. Disclaimer of Warranty            *\n"
        "*  -------------------------            *\n"
        "*  Covered Software is provided as is.  *\n" + "*" * 40 + "\n"
    )
    sections = parse_sections(text)
    assert [s.section_id for s in sections] == ["5.3", "6"]
    assert sections[1].title == "6. Disclaimer of Warranty"


RST = """\
.. currentmodule:: app

Guide
=====

Intro text.

Install
-------

Run it.

Form Data
~~~~~~~~~

Send ``data=``::

    client.post("/", data={"a": "b"})

JSON Data
~~~~~~~~~~~~~~~~

Send ``json=``.

Options
```````

Even more.

.. _later:

Later
-----

1.  Testing.  You can test it.

=========
 Appendix
=========

Last.
"""


def test_rst_titles_of_every_adornment_nest_by_first_appearance() -> None:
    # the ``~`` and backtick underlines were read as Markdown code fences: every title after
    # the first of them was lost (its "fence" ran to the next such line, or to the end)
    sections = parse_sections(RST, markup="rst")
    assert [(s.title, s.level, s.parent_chain) for s in sections] == [
        ("Guide", 1, ()),
        ("Install", 2, ("Guide",)),
        ("Form Data", 3, ("Guide", "Install")),
        ("JSON Data", 3, ("Guide", "Install")),
        ("Options", 4, ("Guide", "Install", "JSON Data")),
        ("Later", 2, ("Guide",)),
        ("Appendix", 3, ("Guide", "Later")),  # overlined: a new style, so one level deeper
    ]


def test_rst_markup_above_a_title_belongs_to_its_section() -> None:
    sections = parse_sections(RST, markup="rst")
    # no preamble chunk of ``.. currentmodule:: app`` alone; a target goes with its title
    assert RST[sections[0].start :].startswith(".. currentmodule:: app\n\nGuide\n")
    later = next(s for s in sections if s.title == "Later")
    assert RST[later.start : later.body_start] == ".. _later:\n\nLater\n-----\n"
    assert RST[later.body_start : later.end].strip() == "1.  Testing.  You can test it."


@pytest.mark.parametrize(
    "text",
    [
        "Title\n~~~\n",  # underline shorter than the title and than 4 characters
        "   Indented\n   --------\n",  # a block quote, not a title
        "Para\ngraph\n-----\n",  # the underline does not end a one-line paragraph
        "Text\n\n.. code-block:: rst\n\n    Inside\n    ======\n",  # a literal block
    ],
)
def test_rst_lines_that_are_not_titles(text: str) -> None:
    assert all(s.title == "" for s in parse_sections(text, markup="rst"))


def test_markdown_is_the_default_and_rst_is_opt_in() -> None:
    # in Markdown, ``~~~`` after a line opens a fence (unclosed: the rest is code); in
    # reStructuredText it underlines a title, and ``# text`` is no heading
    text = "Form Data\n~~~~~~~~~\n\n# Real\n"
    assert [s.title for s in parse_sections(text)] == [""]
    assert [s.title for s in parse_sections(text, markup="rst")] == ["Form Data"]


def test_markup_must_be_markdown_or_rst() -> None:
    with pytest.raises(ValueError, match="got 'rest'"):
        parse_sections("x", markup="rest")  # type: ignore[arg-type]  # the error path


def test_rst_directives_above_a_title_mid_text_stay_with_the_text_above() -> None:
    # API pages list ``.. autofunction::`` lines under a title: they were taken by the next one
    text = (
        "Useful Functions\n----------------\n\n.. autofunction:: url_for\n\n"
        "Message Flashing\n----------------\n\n.. autofunction:: flash\n\n"
        ".. _json:\n\nJSON Support\n------------\n\nText.\n"
    )
    sections = parse_sections(text, markup="rst")
    assert [text[s.start : s.end].split("\n")[0] for s in sections] == [
        "Useful Functions",
        "Message Flashing",
        ".. _json:",
    ]
    assert ".. autofunction:: flash" in text[sections[1].start : sections[1].end]


def test_a_linked_heading_is_titled_by_its_link_text() -> None:
    # the title (heading, parent_chain, the results' "Section:") carried the whole URL
    text = "## Third party\n\n#### [asgi-csrf](https://github.com/simonw/asgi-csrf)\n\nx\n"
    text += '\n[Guide](guide.md "The guide")\n-----\n'
    sections = parse_sections(text)
    assert [(s.title, s.parent_chain) for s in sections] == [
        ("Third party", ()),
        ("asgi-csrf", ("Third party",)),
        ("Guide", ()),
    ]


MSA = (
    "MASTER SERVICES AGREEMENT\n\n1. DEFINITIONS\n\n"
    '1.1 "Services" means the hosting and support services described in Schedule 2, as\n'
    "amended from time to time by written agreement of the parties.\n\n"
    '1.2 "Fees" means the amounts payable by the Customer under clause 7.\n\n'
    "2. TERM\n\n"
    "2.1 This Agreement starts on the Effective Date and continues for an initial term of\n"
    "36 months.\n\n"
    "2.2 Either party may terminate this Agreement for convenience with 90 days' notice.\n\n"
    "7. PAYMENT\n\n7.1 The Customer shall pay the Fees within 30 days of the invoice date.\n"
    "7.2 Late payments bear interest at 4% per annum above the base rate of the central bank.\n"
)


def test_a_numbered_clause_written_as_a_sentence_has_its_body_on_its_line() -> None:
    """Found 2026-12-07: ``1.2 "Fees" means ... clause 7.`` was a heading with no body (and
    ``7.2 Late payments ...``, 16 words, no heading at all: 7.1's text)."""
    sections = parse_sections(MSA)
    assert [(s.section_id, s.title) for s in sections] == [
        ("", ""), ("1", "1. DEFINITIONS"), ("1.1", "1.1"), ("1.2", "1.2"), ("2", "2. TERM"),
        ("2.1", "2.1"), ("2.2", "2.2"), ("7", "7. PAYMENT"), ("7.1", "7.1"), ("7.2", "7.2"),
    ]  # fmt: skip
    bodies = {s.section_id: MSA[s.body_start : s.end].strip() for s in sections}
    assert bodies["1.1"].startswith('"Services" means the hosting')
    assert bodies["1.2"] == '"Fees" means the amounts payable by the Customer under clause 7.'
    assert bodies["2.1"].endswith("initial term of\n36 months.")
    assert bodies["7.2"].startswith("Late payments bear interest")
    assert sections[-1].parent_chain == ("7. PAYMENT",)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Clause 7.2 The Customer shall pay interest.\n", [("7.2", "Clause 7.2")]),
        ("4.2 Scope\n\nThe body.\n", [("4.2", "4.2 Scope")]),  # a title stays a title
        ("4.2 Scope of the work\n\nThe body.\n", [("4.2", "4.2 Scope of the work")]),
        ("2.1. Grants. Subject to the terms of\nthis License.\n", [("2.1", "2.1. Grants.")]),
        ("2.5 million people use it.\n", [("", "")]),  # a decimal in prose
        ("3. Remove the cover before you start.\n", [("", "")]),  # a list item
        ("Section 5 applies to every operator.\n", [("", "")]),
    ],
)
def test_sentences_after_a_number_and_titles_read_apart(
    text: str, expected: list[tuple[str, str]]
) -> None:
    assert titles_ids(text) == [(title, sid) for sid, title in expected]


def test_a_relative_reference_of_a_named_section_resolves_against_it() -> None:
    """Found 2026-12-07: the label resolved against the current section (``204(a)(1)``) and the
    named one was recorded alone (``203``)."""
    text = "as provided in subsection (a)(1) of section 203."
    assert find_section_refs(text, current_id="204") == ["203(a)(1)"]
    assert find_section_refs("as set out in paragraph (2) of section 12", current_id="30") == [
        "12(2)"
    ]
    assert find_section_refs("paragraph (2) of subsection (b)", current_id="203(a)") == [
        "203(b)(2)"
    ]
    text = "subsections (a) and (b) of section 203 and section 204"
    assert find_section_refs(text, current_id="1") == ["203(a)", "203(b)", "204"]
    assert find_section_refs("paragraph (2) of this section", current_id="5") == ["5(2)"]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("203(a)(1)", ["203(a)(1)"]),
        ("203 (a) (1)", ["203(a)(1)"]),
        ("what does 4.2(b) require?", ["4.2(b)"]),
        ("subsection (a)(1) of section 203", ["203(a)(1)"]),
        ("section 203(a) and 204(b)", ["203(a)", "204(b)"]),
        ("4.2", []),  # a bare decimal: a version, a price, a rating as often as a section
        ("python 3.12 install", []),
    ],
)
def test_a_query_names_a_section_by_its_number_and_labels_alone(
    query: str, expected: list[str]
) -> None:
    """Found 2026-12-07: ``203(a)(1)`` typed without ``section`` was no reference."""
    assert find_section_refs(query, query=True) == expected


def test_a_documents_number_with_labels_needs_its_keyword() -> None:
    assert find_section_refs("the cost is 3(a) + 2(b) per unit") == []
