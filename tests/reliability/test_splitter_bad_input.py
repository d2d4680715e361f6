"""Hostile inputs for the structure-aware splitter: it never crashes and never loses text.

"Loses no text" means: every chunk is ``text[a:b].strip()`` for spans that tile ``text``, so
walking the chunks through the text in order leaves only whitespace between them. A cut
table's later pieces add one thing before their span: the table's header row and separator
(``table_header``), which must be that table's own.
"""

from __future__ import annotations

import itertools
import re

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from langchain_core.documents import Document

from langchain_holodeck._sections import find_section_refs, normalize_section_ref
from langchain_holodeck.definitions import find_definitions
from langchain_holodeck.splitters import StructuredMarkdownSplitter, parse_sections

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

WORDS = st.sampled_from(
    [
        "the",
        "Operator",
        "shall",
        "must",
        "log",
        "program",
        "Section",
        "§",
        "203(a)",
        "Article",
        "5",
        "PART",
        "II",
        "(b)",
        "means",
        '"Term"',
        "é",
        "日本語",
        "🙂",
        "\u200b",
        "x" * 300,
        "|",
        "```",
        "~~~",
        "#",
        "-",
        "1.",
        "4.2",
        ":",
        "—",
        "\t",
        "\r",
    ]
)
PARAGRAPH = st.lists(WORDS, min_size=1, max_size=30).map(" ".join)
LINE = st.one_of(
    PARAGRAPH,
    st.integers(1, 6).flatmap(lambda n: PARAGRAPH.map(lambda p: "#" * n + " " + p)),
    st.sampled_from(
        [
            "```",
            "```python",
            "~~~",
            "| a | b |",
            "|---|---|",
            "| 1 | 2 |",
            "===",
            "---",
            "7. Additional Terms.",
            "Section 4.2 Scope",
            "§ 203",
            "Article 5",
            "PART II",
            "Chapter 3",
            "(a) The Operator shall log.",
            "(1) Keep it.",
            "(i) Deep.",
            "(A) Up.",
            "1. item",
            "2. item",
            "",
            "",
            "   ",
            "#" * 7 + " too deep",
            "- bullet",
        ]
    ),
)
MARKDOWN = st.lists(LINE, max_size=40).map("\n".join)
TEXT = st.one_of(MARKDOWN, st.text(max_size=400), st.text(alphabet="#(a)1. \n`|-=§", max_size=300))
CELL = st.one_of(WORDS, st.integers(0, 10**6).map(str), st.just(""))
TABLE = st.integers(1, 5).flatmap(
    lambda width: st.tuples(
        st.lists(CELL, min_size=width, max_size=width),
        st.lists(st.lists(CELL, min_size=width, max_size=width), max_size=40),
        st.sampled_from(["|---", "| --- ", "|:-:", "| :--- "]),
    ).map(
        lambda t: "\n".join(
            [
                "| " + " | ".join(t[0]) + " |",
                t[2] * width + "|",
                *("| " + " | ".join(row) + " |" for row in t[1]),
            ]
        )
    )
)
WITH_TABLES = st.lists(st.one_of(MARKDOWN, TABLE), min_size=1, max_size=4).map("\n\n".join)


def only_headings(gap: str) -> bool:
    """Whether ``gap`` holds nothing but headings standing alone (which the splitter drops)."""
    from langchain_holodeck.splitters import parse_sections

    sections = parse_sections(gap, max_level=6)
    return all(s.body_start > s.start and not gap[s.body_start : s.end].strip() for s in sections)


def span_text(doc: Document) -> str:
    """The chunk's span of the input: its text without a repeated table header."""
    header = doc.metadata.get("table_header")
    if header is None:
        return doc.page_content
    assert doc.page_content.startswith(header + "\n"), "table_header is not the chunk's head"
    return doc.page_content[len(header) + 1 :]


def assert_own_header(text: str, start: int, header: str) -> None:
    """``header`` is the first two lines of the run of ``|`` lines that ``start`` is in."""
    lines = text[:start].split("\n")
    assert lines[-1].strip() == "" or lines[-1].lstrip().startswith("|")
    above = reversed(lines[:-1])
    run = list(itertools.takewhile(lambda line: line.lstrip().startswith("|"), above))[::-1]
    assert len(run) >= 2, f"a repeated header outside a table: {header!r}"
    assert "\n".join(run).strip().startswith(header), f"not this table's header: {header!r}"


def assert_covers(text: str, docs: list[Document]) -> None:
    """Chunks in order, nothing lost but headings alone ("## Empty" then "## Next").

    Each chunk is placed by its ``start_index`` (not looked up in ``text``: a chunk ``# the``
    would also be found inside a dropped heading ``# the the`` before it).
    """
    pos = 0
    for doc in docs:
        chunk, start = span_text(doc), doc.metadata["start_index"]
        if "table_header" in doc.metadata:
            assert_own_header(text, start, doc.metadata["table_header"])
        assert chunk, "empty chunk"
        assert chunk == chunk.strip()
        assert start >= pos, f"chunk out of order: {chunk[:60]!r}"
        assert text[start : start + len(chunk)] == chunk, f"wrong start_index: {chunk[:60]!r}"
        assert only_headings(text[pos:start]), f"text lost before {chunk[:40]!r}"
        pos = start + len(chunk)
    assert only_headings(text[pos:])


@SETTINGS
@given(TEXT)
# the chunk "#" is also the start of the dropped heading "# the": place it by its start_index
@example(text="# the\n# " + "x" * 300 + " the\nthe")
def test_split_text_never_crashes_and_loses_nothing(text: str) -> None:
    splitter = StructuredMarkdownSplitter(max_chunk_tokens=40, add_start_index=True)
    docs = splitter.create_documents([text])
    assert splitter.split_text(text) == [d.page_content for d in docs]
    assert_covers(text, docs)


@SETTINGS
@given(TEXT, st.integers(min_value=1, max_value=6))
# a bare parent without a section id whose intro (":") joins a body-less child: once dropped
@example(text="# the\n:\n## the\n#\nthe", max_level=2)
# the chunk "# the" is also the start of the dropped heading "# the the": match the right one
@example(text="# the the\n# the\n" + "the " * 8 + "203(a) 203(a) (b) 4.2", max_level=1)
def test_chunk_spans_tile_the_text_at_every_level(text: str, max_level: int) -> None:
    splitter = StructuredMarkdownSplitter(
        max_chunk_tokens=25, max_level=max_level, add_start_index=True
    )
    docs = splitter.create_documents([text])
    assert_covers(text, docs)
    for doc in docs:
        assert doc.metadata["chunk_type"] in {"definition", "requirement", "content", "header"}
        assert all(isinstance(ref, str) for ref in doc.metadata["cross_references"])


@SETTINGS
@given(TEXT)
def test_chunks_respect_the_token_limit(text: str) -> None:
    splitter = StructuredMarkdownSplitter(max_chunk_tokens=30, add_start_index=True)
    for doc in splitter.create_documents([text]):
        assert splitter._length_function(doc.page_content) <= 30 or len(doc.page_content) == 1
        start = doc.metadata["start_index"]
        assert text[start : start + len(span_text(doc))] == span_text(doc)


@SETTINGS
@given(TEXT)
def test_sections_tile_the_text(text: str) -> None:
    sections = parse_sections(text)
    if not text.strip():
        assert sections == []
        return
    assert text[: sections[0].start].strip() == ""
    for before, after in itertools.pairwise(sections):
        assert before.end == after.start
        assert before.start < before.end
    assert sections[-1].end == len(text)
    for section in sections:
        assert section.start <= section.body_start <= section.end
        assert section.level >= 0


@SETTINGS
@given(TEXT)
def test_reference_and_definition_finders_never_crash(text: str) -> None:
    for ref in find_section_refs(text, current_id="203(a)"):
        assert ref
        assert not re.search(r"\s", ref)
    normalize_section_ref(text)
    for term, definition in find_definitions(text, in_definitions_section=True):
        assert term.strip()
        assert definition.strip()


def test_huge_single_line_is_split_under_the_limit() -> None:
    text = "word " * 5000 + "x" * 20000
    docs = StructuredMarkdownSplitter(max_chunk_tokens=200, add_start_index=True).create_documents(
        [text]
    )
    assert len(docs) > 10
    assert_covers(text, docs)


def test_deep_nesting_is_capped_by_max_level() -> None:
    text = "\n\n".join(f"{'#' * min(n, 6)} H{n}\n\nbody {n}" for n in range(1, 40))
    docs = StructuredMarkdownSplitter(max_level=3, add_start_index=True).create_documents([text])
    assert max(len(d.metadata["parent_chain"]) for d in docs) <= 2
    assert_covers(text, docs)


def test_unbalanced_fence_swallows_the_rest() -> None:
    text = "# A\n\ntext\n\n```\n# not a heading\n\n## neither\n"
    sections = parse_sections(text)
    assert [s.title for s in sections] == ["A"]


def test_headings_only_document() -> None:
    text = "# A\n## B\n### C\n"
    docs = StructuredMarkdownSplitter().create_documents([text])
    # bare parents join their first child: one chunk, a heading chain with no body
    assert [d.page_content for d in docs] == ["# A\n## B\n### C"]
    assert docs[0].metadata["chunk_type"] == "header"
    assert docs[0].metadata["parent_chain"] == ["A", "B"]
    assert docs[0].metadata["heading"] == "C"


@pytest.mark.parametrize("heading", ["# the the the", "# " + "x" * 300], ids=["short", "long"])
def test_a_last_bare_heading_joins_a_cut_tables_piece_only_within_its_limits(
    heading: str,
) -> None:
    """Hypothesis found it: the heading joined the piece measured without its repeated table
    header, so the piece went past max_table_chunk_tokens (62 of 60) or max_chunk_tokens."""
    table = (
        "| a | shall | the | b | 27 |\n|---|---|---|---|---|\n"
        + "| the | the |  | the | the |\n" * 4
    )
    splitter = StructuredMarkdownSplitter(max_chunk_tokens=80, max_table_chunk_tokens=60)
    docs = splitter.create_documents([f"{table}\n{heading}"])
    assert docs[-1].page_content.endswith(heading)  # nothing lost
    for doc in docs:
        size = splitter._length_function(doc.page_content)
        assert size <= (60 if "table_header" in doc.metadata else 80), doc.page_content


@SETTINGS
@given(
    WITH_TABLES,
    st.sampled_from([40, 80, 200]),
    st.sampled_from([None, 8, 30, 60, 160]),
)
def test_cut_tables_repeat_their_header_and_lose_nothing(
    text: str, limit: int, table_limit: int | None
) -> None:
    splitter = StructuredMarkdownSplitter(
        max_chunk_tokens=limit, max_table_chunk_tokens=table_limit, add_start_index=True
    )
    docs = splitter.create_documents([text])
    assert splitter.split_text(text) == [d.page_content for d in docs]
    assert_covers(text, docs)
    for doc in docs:
        size = splitter._length_function(doc.page_content)
        assert size <= limit or len(span_text(doc)) == 1, f"{size} tokens: {doc.page_content!r}"
        if "table_header" in doc.metadata:
            assert table_limit is not None
            header = doc.metadata["table_header"]
            one_row = "\n" not in span_text(doc).strip()  # a row longer than the room alone
            assert size <= min(limit, table_limit) or one_row, f"{size}: {doc.page_content!r}"
            assert splitter._length_function(header) * 2 <= min(limit, table_limit)
