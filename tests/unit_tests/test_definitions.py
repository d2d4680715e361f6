from __future__ import annotations

import pytest
from langchain_core.documents import Document

from langchain_holodeck.definitions import (
    Definition,
    DefinitionExtractor,
    DefinitionIndex,
    ResolvedReference,
    find_definitions,
    is_definitions_heading,
    normalize_term,
    resolve_cross_references,
)
from langchain_holodeck.splitters import (
    SourceCodeSplitter,
    StructuredMarkdownSplitter,
    default_text_splitter,
)


@pytest.fixture
def act(data_dir: object) -> Document:
    path = data_dir / "legal" / "holodeck_act.md"  # type: ignore[operator]  # Path fixture
    return Document(
        page_content=path.read_text(encoding="utf-8"),
        metadata={"source_path": "data/legal/holodeck_act.md"},
    )


def test_normalize_term_ignores_quotes_case_and_spaces() -> None:
    assert normalize_term("\u201cSafety   Interlock\u201d") == "safety interlock"
    assert normalize_term("'Operator'") == normalize_term("**OPERATOR**") == "operator"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('"Operator" means the crew member.', [("Operator", "the crew member.")]),
        ("\u201cLog\u201d shall mean a record; and", [("Log", "a record")]),
        ("\u2018Arch\u2019 means the exit.", [("Arch", "the exit.")]),
        (
            "(c) Program is defined as a set of instructions.",
            [("Program", "a set of instructions.")],
        ),
        (
            '"Deck" has the meaning given in Section 5.',
            [("Deck", "has the meaning given in Section 5.")],
        ),
    ],
)
def test_find_definitions_patterns(text: str, expected: list[tuple[str, str]]) -> None:
    assert find_definitions(text) == expected


def test_colon_and_dash_only_inside_definitions_sections() -> None:
    text = "Widget: a small thing.\n- **Gizmo** - a bigger thing.\nNote: this is long prose here."
    assert find_definitions(text) == []
    found = dict(find_definitions(text, in_definitions_section=True))
    assert found == {
        "Widget": "a small thing.",
        "Gizmo": "a bigger thing.",
        "Note": "this is long prose here.",
    }


def test_prose_means_is_not_a_definition_outside_definitions_sections() -> None:
    assert find_definitions("This means that the deck is closed.") == []


@pytest.mark.parametrize(
    ("title", "expected"),
    [
        ("Section 102. Definitions", True),
        ("Glossary", True),
        ("2. Terms", True),
        ("Interpretation", True),
        ("Defined Terms", True),
        ("7. Additional Terms.", False),
        ("Terms and Conditions", False),
        ("Records", False),
    ],
)
def test_is_definitions_heading(title: str, expected: bool) -> None:
    assert is_definitions_heading(title) is expected


def test_extractor_indexes_structured_chunks(act: Document) -> None:
    chunks = StructuredMarkdownSplitter().split_documents([act])
    index = DefinitionExtractor().extract(chunks)
    assert set(index) == {"operator", "safety interlock", "program"}
    assert index["operator"] == Definition(
        term="Operator",
        definition="the crew member who starts a simulation.",
        source_path="data/legal/holodeck_act.md",
        section_id="102(a)",
    )


def test_extractor_rebuilds_from_contextualized_chunks(act: Document) -> None:
    chunks = StructuredMarkdownSplitter().split_documents([act])
    stored = [
        c.model_copy(
            update={
                "page_content": f'Context: "Bogus" means nothing.\n\n{c.page_content}',
                "metadata": {**c.metadata, "original_content": c.page_content},
            }
        )
        for c in chunks
    ]
    assert set(DefinitionExtractor().extract(stored)) == {"operator", "safety interlock", "program"}


def test_extractor_works_on_plain_splitter_chunks() -> None:
    text = "# Guide\n\n## Glossary\n\nShift: an eight-hour duty period.\n\n## Rules\n\nBe kind."
    chunks = default_text_splitter(chunk_size=512).create_documents(
        [text], [{"source_path": "g.md"}]
    )
    index = DefinitionExtractor().extract(chunks)
    assert index["shift"].definition == "an eight-hour duty period."
    assert index["shift"].source_path == "g.md"


def test_first_definition_wins() -> None:
    chunks = [
        Document(page_content='"Deck" means the first.', metadata={"source_path": "a"}),
        Document(page_content='"deck" means the second.', metadata={"source_path": "b"}),
    ]
    assert DefinitionExtractor().extract(chunks)["deck"].source_path == "a"


def test_each_document_keeps_its_own_definition_in_any_store_order() -> None:
    # two documents define "Operator" differently: the index kept the first chunk the store
    # listed, so a search could quote the other document's definition for this one's
    forklift = Document(
        page_content="“Operator” means a person certified to drive a forklift truck.",
        metadata={"source_path": "forklift.md", "chunk_index": 0},
    )
    policy = Document(
        page_content="“Operator” means the employee on call.",
        metadata={"source_path": "policy.md", "chunk_index": 3},
    )
    index = DefinitionExtractor().extract([policy, forklift])
    assert index == DefinitionExtractor().extract([forklift, policy])
    assert index["operator"].source_path == "forklift.md"  # the first path, not store order
    assert [d.source_path for d in index.every("OPERATOR")] == ["forklift.md", "policy.md"]
    own = index.in_document("operator", "policy.md")
    assert own is not None
    assert own.definition == "the employee on call."
    assert index.in_document("operator", "rota.md") is None
    assert index.terms_in("what does Operator mean?") == ["operator"]


def test_a_documents_first_definition_is_by_chunk_index() -> None:
    def chunk(text: str, n: int) -> Document:
        return Document(page_content=text, metadata={"source_path": "a.md", "chunk_index": n})

    chunks = [chunk('"Deck" means the later one.', 5), chunk('"Deck" means the first one.', 1)]
    assert DefinitionExtractor().extract(chunks)["deck"].definition == "the first one."


def test_a_plain_mapping_is_an_index_of_one_definition_per_term() -> None:
    deck = Definition("Deck", "a room.", "a.md", "1")
    index = DefinitionIndex.from_mapping({"deck": deck})
    assert dict(index) == {"deck": deck}
    assert index.every("Deck") == (deck,)
    assert DefinitionIndex.from_mapping(index) is index


def test_resolve_cross_references_to_chunk_ids(act: Document) -> None:
    chunks = StructuredMarkdownSplitter().split_documents([act])
    for i, chunk in enumerate(chunks):
        chunk.id = f"c{i}"
    by_section = {c.metadata["section_id"]: c.id for c in reversed(chunks)}
    refs = resolve_cross_references(chunks)
    source = next(c for c in chunks if c.metadata["section_id"] == "202(b)")
    assert refs[source.id] == [ResolvedReference("201(a)", by_section["201(a)"])]
    assert all(r.resolved for rs in refs.values() for r in rs)


def test_dangling_and_prefix_references() -> None:
    a1 = {"source_path": "a", "section_id": "5(a)", "cross_references": []}
    a2 = {"source_path": "a", "section_id": "6", "cross_references": ["5", "9"]}
    chunks = [
        Document(id="1", page_content="x", metadata=a1),
        Document(id="2", page_content="x", metadata=a2),
        Document(id="3", page_content="See Section 5.", metadata={"source_path": "b"}),
    ]
    refs = resolve_cross_references(chunks)
    assert refs["2"] == [ResolvedReference("5", "1"), ResolvedReference("9", None)]
    assert not refs["2"][1].resolved
    assert refs["3"] == [ResolvedReference("5", None)]  # other file: not resolved across files


def test_resolve_needs_ids() -> None:
    with pytest.raises(ValueError, match="chunk 0 \\(source_path='a'\\) has none"):
        resolve_cross_references([Document(page_content="x", metadata={"source_path": "a"})])


def test_mpl_form_term_on_one_line_means_on_the_next() -> None:
    text = (
        '1.1. "Contributor"\n    means each individual or legal entity that creates,\n'
        "    contributes to, or owns Covered Software.\n\n"
        '1.11. "Patent Claims" of a Contributor\n    means any patent claim(s).\n\n'
        '1.14. "You" (or "Your")\n    means an individual.\n'
    )
    assert find_definitions(text) == [
        (
            "Contributor",
            "each individual or legal entity that creates, contributes to, or owns Covered "
            "Software.",
        ),
        ("Patent Claims", "any patent claim(s)."),
        ("You", "an individual."),
    ]


def test_definition_ending_in_a_colon_takes_its_clauses() -> None:
    text = (
        '1.10. "Modifications"\n    means any of the following:\n\n'
        "    (a) any file that results from a deletion; or\n\n"
        "    (b) any new file.\n\n1.11. Next\n"
    )
    [(term, definition)] = find_definitions(text)
    assert term == "Modifications"
    assert definition == (
        "any of the following: (a) any file that results from a deletion; or (b) any new file."
    )


def test_gpl_form_with_a_qualifier_and_two_definitions_in_one_paragraph() -> None:
    text = (
        "To \u201cmodify\u201d a work means to copy from or adapt all or part of the work.\n\n"
        "The \u201csource code\u201d for a work means the preferred form of the work\n"
        "for making modifications to it.  \u201cObject code\u201d means any non-source form.\n"
    )
    assert find_definitions(text) == [
        ("modify", "to copy from or adapt all or part of the work."),
        ("source code", "the preferred form of the work for making modifications to it."),
        ("Object code", "any non-source form."),
    ]


@pytest.mark.parametrize(
    ("title", "expected"),
    [
        ("17. Interpretation of Sections 15 and 16.", False),
        ("Interpretation", True),
        ("Definitions and Interpretation", True),
        ("1. Definitions.", True),
    ],
)
def test_interpretation_of_sections_is_not_a_definitions_heading(
    title: str, *, expected: bool
) -> None:
    assert is_definitions_heading(title) is expected


CODE = '''\
class Config:
    """Settings of the app."""

    key: str
    handler: Callable[[Request], Response]

    def get(self, name: str) -> str:
        return {"websocket": "wss", "stream": name}[name]

    def set(self, name: str, value: str) -> None:
        self.key = value


def build(app: App) -> Config:
    """Build the config.

    "Config" means the settings object this module builds.
    """
    return Config()
'''


def test_a_code_chunk_is_no_glossary() -> None:
    # The code splitter heads a chunk of four or more definitions "Config … build (4
    # definitions)"; that is no Definitions section, so "key: str" is no defined term.
    doc = Document(page_content=CODE, metadata={"file_type": "py", "source_path": "app.py"})
    chunks = SourceCodeSplitter(chunk_size=400).split_documents([doc])
    assert [c.metadata["heading"] for c in chunks] == ["Config … build (4 definitions)"]
    index = DefinitionExtractor().extract(chunks)
    assert {key: d.definition for key, d in index.items()} == {
        "config": "the settings object this module builds."
    }


@pytest.mark.parametrize(
    "text",
    [
        "# Defin[itions](d.md)\n\nWidget: a small thing.\n",  # the heading joined from a link
        "# GLOSSARY\n\nWidget: a small thing.\n",
        "## Term\u017f\n\nWidget: a small thing.\n",  # re.I reads the long s as an s
        '"Widget" MEANS a small thing.\n',
    ],
)
def test_definitions_are_found_in_any_case_and_through_links(text: str) -> None:
    chunk = Document(page_content=text, metadata={"source_path": "g.md"})
    assert DefinitionExtractor().extract([chunk])["widget"].definition == "a small thing."
