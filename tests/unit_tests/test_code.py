"""Source code as input: loading, language-aware splitting, symbols, the exact leg."""

import re
from pathlib import Path

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding

from langchain_holodeck.exact import ExactMatchIndex, parse_exact_query
from langchain_holodeck.ingestion import IngestionPipeline, pipeline_fingerprint
from langchain_holodeck.loaders import SUPPORTED_FILE_TYPES, SourceLoader
from langchain_holodeck.splitters import default_text_splitter
from langchain_holodeck.splitters.code import SourceCodeSplitter, code_heading, find_symbols
from langchain_holodeck.splitters.structured import StructuredMarkdownSplitter
from langchain_holodeck.sync import stable_id
from langchain_holodeck.vectorstores import MatrixVectorStore

PYTHON = '''"""Shifts."""
import os


class Shift:
    """A shift."""

    def __init__(self, crew):
        self.crew = crew

    def swap(self, other):
        """Swap crews."""
        self.crew, other.crew = other.crew, self.crew


def parse_sections(text):
    return text.split("\\n\\n")
'''

GO = """package main

type Shift struct {
\tCrew string
}

func (s *Shift) Swap(o *Shift) {
\ts.Crew, o.Crew = o.Crew, s.Crew
}
"""


@pytest.mark.parametrize(
    "ext",
    ["py", "js", "ts", "go", "java", "rs", "c", "h", "cpp", "rb", "sh", "sql", "toml", "yaml"],
)
def test_code_extensions_are_supported(ext: str) -> None:
    assert ext in SUPPORTED_FILE_TYPES


def test_loader_reads_source_files_verbatim(tmp_path: Path) -> None:
    (tmp_path / "shift.py").write_text(PYTHON, encoding="utf-8")
    (tmp_path / "main.go").write_text(GO, encoding="utf-8")
    docs = SourceLoader(tmp_path).load()
    assert [d.metadata["file_type"] for d in docs] == ["go", "py"]
    assert docs[1].page_content == PYTHON


@pytest.mark.parametrize(
    ("text", "language", "expected"),
    [
        (PYTHON, "python", ["Shift", "Shift.__init__", "Shift.swap", "parse_sections"]),
        (GO, "go", ["Shift", "Shift.Swap"]),
        (
            "export class Api {\n  async getUser(id) {\n    return id;\n  }\n}\n"
            "const fetchAll = async () => 1;\nfunction main() {\n  if (x) {\n  }\n}\n",
            "js",
            ["Api", "Api.getUser", "fetchAll", "main"],
        ),
        (  # TypeScript arrow functions with a return type (and type parameters)
            "export const fire = async (s: Setting): Promise<string> => {\n  return s;\n};\n"
            "const pick = <T,>(xs: T[]): T | undefined => xs[0];\n"
            "let total: number = 0;\nconst ok = (x: number) => x > 0;\n",
            "ts",
            ["fire", "pick", "ok"],
        ),
        (
            "pub struct Shift {}\nimpl Shift {\n    pub fn swap(&mut self) {}\n}\n",
            "rust",
            ["Shift", "Shift", "Shift.swap"],
        ),
        (
            "public class Shift {\n    public void swap(Shift o) {\n        if (o != null) {\n"
            "        }\n    }\n}\n",
            "java",
            ["Shift", "Shift.swap"],
        ),
        ("CREATE TABLE IF NOT EXISTS crew (id int);\n", "sql", ["crew"]),
        ("[tool.ruff]\nline-length = 100\n", "toml", ["tool.ruff"]),
        ("deploy() {\n  echo hi\n}\n", "shell", ["deploy"]),
        ("prose", "unknown", []),
    ],
)
def test_find_symbols(text: str, language: str, expected: list[str]) -> None:
    assert [s.qualified_name for s in find_symbols(text, language)] == expected


def test_code_splitter_names_the_symbols_of_each_chunk() -> None:
    doc = Document(page_content=PYTHON, metadata={"file_type": "py", "source_path": "shift.py"})
    chunks = SourceCodeSplitter(chunk_size=40).split_documents([doc])
    assert [c.metadata["symbols"] for c in chunks] == [
        [],
        ["Shift", "Shift.__init__"],
        ["Shift.swap"],
        ["parse_sections"],
    ]
    assert chunks[2].page_content.startswith("def swap(self, other):")
    assert {c.metadata["chunk_type"] for c in chunks} == {"code"}
    assert [c.metadata["chunk_index"] for c in chunks] == [0, 1, 2, 3]
    assert all(c.metadata["language"] == "python" for c in chunks)


CLI = """import click


def helper():
    return 1


@click.command("shell", short_help="Run a shell.")
@click.option(
    "--banner",
    default="",
)
def shell_command(banner):
    \"\"\"Run an interactive Python shell in the context of the app.\"\"\"
    import code
    code.interact(banner=banner)


class Scaffold:
    \"\"\"Common behaviour of apps and blueprints.\"\"\"

    @setupmethod
    def before_request(self, f):
        \"\"\"Register a function to run before each request.

        The function is called without arguments.
        \"\"\"
        self.before_request_funcs.append(f)

        return f

    @property
    def name(self):
        \"\"\"The name of this scaffold.

        Set by the constructor.
        \"\"\"
        value = self.import_name

        return value
"""


def test_chunks_with_overlap_start_where_their_text_does() -> None:
    # the cursor advanced by len(chunk) - chunk_overlap, in characters, but the overlap is a
    # whole definition of chunk_overlap *tokens*: start_index was 23 characters off, and the
    # symbols, heading and signature those of the next chunk
    code = "\n".join(f"def f{n}(x):\n    '''doc {n}'''\n    return x + {n}\n" for n in range(12))
    splitter = SourceCodeSplitter(chunk_size=40, chunk_overlap=20, add_start_index=True)
    chunks = splitter.split_documents([Document(page_content=code, metadata={"file_type": "py"})])
    assert len(chunks) > 3
    for chunk in chunks:
        start = chunk.metadata["start_index"]
        assert code[start : start + len(chunk.page_content)] == chunk.page_content
        defined = re.findall(r"^def (\w+)", chunk.page_content, re.MULTILINE)
        assert chunk.metadata["symbols"] == defined
        assert chunk.metadata["heading"] == code_heading(defined, [])
        assert chunk.metadata["signature"].count("def ") == len(defined)


def test_chunks_of_code_repeated_word_for_word_start_after_their_overlap() -> None:
    definition = "def f(x):\n    return x\n"  # 9 tokens, one line apart: 4 in a chunk of 40
    code = "\n".join([definition] * 12)
    splitter = SourceCodeSplitter(chunk_size=40, chunk_overlap=20, add_start_index=True)
    chunks = splitter.split_documents([Document(page_content=code, metadata={"file_type": "py"})])
    step = 2 * (len(definition) + 1)  # 4 definitions, the last 2 of which the next one repeats
    assert [c.metadata["start_index"] for c in chunks] == [n * step for n in range(len(chunks))]


def test_python_chunks_keep_decorators_and_cut_at_four_space_methods() -> None:
    doc = Document(page_content=CLI, metadata={"file_type": "py", "source_path": "cli.py"})
    chunks = SourceCodeSplitter(chunk_size=60).split_documents([doc])
    texts = [c.page_content for c in chunks]
    # "\ndef " split a decorated function from its decorators (the command's name with them)
    assert any(t.startswith('@click.command("shell"') and "def shell_command" in t for t in texts)
    assert not any(t.rstrip().splitlines()[-1].lstrip().startswith("@") for t in texts)
    # LangChain cuts methods only at "\n\tdef ": 4-space methods were cut at blank lines,
    # inside their bodies and docstrings
    starts = [t.splitlines()[0].strip() for t in texts]
    assert starts == [
        "import click",
        '@click.command("shell", short_help="Run a shell.")',
        "class Scaffold:",
        "@setupmethod",
        "@property",
    ]
    assert [c.metadata["symbols"] for c in chunks][3:] == [
        ["Scaffold.before_request"],
        ["Scaffold.name"],
    ]
    # a store split before re-splits its (unchanged) files once
    before = "91f7156140bab0e2"  # the default pipeline's fingerprint before
    assert pipeline_fingerprint(default_text_splitter(), code_splitter=SourceCodeSplitter()) != (
        before
    )


def test_a_function_is_not_cut_at_its_nested_functions() -> None:
    # only a class is cut at its (indented) definitions: a function keeps a nested function
    # with the body around it, cut at blank lines as before
    code = (
        "def outer(values):\n    total = sum(values)\n    count = len(values)\n\n"
        "    mean = total / count\n    def spread(value):\n        return abs(value - mean)\n\n"
        "    return max(spread(v) for v in values)\n"
    )
    doc = Document(page_content=code, metadata={"file_type": "py"})
    chunks = SourceCodeSplitter(chunk_size=30).split_documents([doc])
    assert [c.page_content.splitlines()[0] for c in chunks] == [
        "def outer(values):",
        "mean = total / count",
        "return max(spread(v) for v in values)",
    ]


DOCUMENTED = {
    "go": "package nav\n\n"
    + "".join(
        f"// Plot{i} plots a course to sector {i}.\n// It never exceeds warp 9.9.\n"
        f"func Plot{i}(target string) error {{\n\tfmt.Println(target, {i})\n\treturn nil\n}}\n\n"
        for i in range(4)
    ),
    "java": "package ship;\n\nimport java.util.List;\n\n"
    + "".join(
        f"/**\n * Replicator model {i}.\n */\n@Deprecated\npublic class Replicator{i} {{\n"
        f'    private final String drink = "tea {i}";\n    private final int cups = {i};\n}}\n\n'
        for i in range(4)
    ),
    "sh": "#!/usr/bin/env bash\nset -eu\n\n"
    + "".join(f'# Deploy module {i}.\ndeploy_{i}() {{\n  echo "{i}"\n}}\n' for i in range(4)),
    "sql": "".join(
        f"-- Crew of deck {i}.\nCREATE TABLE crew_{i} (\n  id INTEGER PRIMARY KEY\n);\n"
        for i in range(4)
    ),
    "rs": "use std::fmt;\n\n"
    + "".join(
        f"/// Checks sector {i}.\n#[test]\nfn sector_{i}() {{\n"
        f"    assert_eq!({i} * 2, {2 * i});\n}}\n\n"
        for i in range(4)
    ),
    "c": "#include <stdio.h>\n\n"
    + "".join(
        f"/*\n  Compute value {i}.\n  Returns it doubled.\n */\nint value{i}(int x) {{\n"
        f"    return x * {i} * 2;\n}}\n\n"
        for i in range(4)
    ),
}


@pytest.mark.parametrize("file_type", sorted(DOCUMENTED))
def test_a_definition_keeps_the_comment_above_it(file_type: str) -> None:
    # LangChain's separators ("\nfunc ", "\npublic ", ...) cut between a definition and its
    # doc comment: the comment ended the chunk before, apart from the code it documents
    doc = Document(page_content=DOCUMENTED[file_type], metadata={"file_type": file_type})
    chunks = SourceCodeSplitter(chunk_size=48).split_documents([doc])
    assert len(chunks) > 1
    for chunk in chunks:
        last = chunk.page_content.rstrip().splitlines()[-1].lstrip()
        assert not last.startswith(("//", "/*", "*", "@", "#", "--", "Returns")), chunk.page_content
    defining = [c for c in chunks if c.metadata["symbols"]]
    assert all(c.page_content.startswith(("//", "/*", "#", "--")) for c in defining[1:])
    assert "\n".join(c.page_content for c in chunks).split() == DOCUMENTED[file_type].split()
    # a store split before re-splits its (unchanged) files once
    before = "8a9db40171f0c976"  # the default pipeline's fingerprint at revision 1
    fingerprint = pipeline_fingerprint(default_text_splitter(), code_splitter=SourceCodeSplitter())
    assert fingerprint != before


CLASSES = {  # (opening, a method's signature, closing)
    "java": ("public class Big {\n", "public int method#(int x) {", "}\n"),
    "ts": ("export class Big {\n", "async method#(x: number): Promise<number> {", "}\n"),
    "js": ("export class Big {\n", "method#(x) {", "}\n"),
    "cs": (
        "namespace Ship\n{\n    public class Big\n    {\n",
        "int Method#(int x)\n{",
        "    }\n}\n",
    ),
    "rs": ("impl Big {\n", "pub fn method_#(&self, x: i32) -> i32 {", "}\n"),
    "kt": ("class Big {\n", "fun method#(\n    x: Int,\n    y: Int,\n): Int {", "}\n"),
}
BODY = ["    let z = #;", "", "    items.forEach(function (k) {", "      z += k;", "    });", ""]


def _class_of(language: str, indent: str) -> str:
    opening, signature, closing = CLASSES[language]
    lines = []
    for i in range(12):
        method = [f"/** Method {i}. */", *signature.split("\n"), *BODY, "    return z;", "}"]
        lines += ["", *(f"{indent}{line}".rstrip().replace("#", str(i)) for line in method)]
    return opening + "\n".join(lines) + "\n" + closing


@pytest.mark.parametrize(
    ("file_type", "indent"),
    [
        ("java", "    "),
        ("ts", "  "),
        ("js", "  "),
        ("cs", "        "),
        ("rs", "    "),
        ("kt", "    "),  # parameters on lines of their own
    ],
)
def test_a_class_is_cut_at_its_methods_not_inside_them(file_type: str, indent: str) -> None:
    # LangChain's cuts are at column 0 only: a class longer than a chunk was cut at the blank
    # lines inside its methods' bodies ("for (int k = 0; ..." began a chunk)
    text = _class_of(file_type, indent)
    doc = Document(page_content=text, metadata={"file_type": file_type})
    for size in (80, 100, 150, 200):
        chunks = SourceCodeSplitter(chunk_size=size).split_documents([doc])
        assert len(chunks) > 2
        firsts = [c.page_content.lstrip().splitlines()[0] for c in chunks]
        assert all(f.startswith("/** Method") for f in firsts[1:]), (size, firsts)
        assert "\n".join(c.page_content for c in chunks).split() == text.split()


@pytest.mark.parametrize("file_type", ["ts", "js"])
def test_a_module_is_cut_at_its_exported_functions(file_type: str) -> None:
    # LangChain cuts JS/TS at "\nfunction ", "\nconst ", ... but not at "\nexport ": a module
    # of exported functions was cut at the blank lines inside their bodies
    text = "import { x } from './x';\n\n" + "".join(
        f"/** Handler {i}. */\nexport async function handler{i}(evt) {{\n"
        f"  const y = evt.level * {i};\n\n  for (let k = 0; k < {i}; k++) {{\n    y += k;\n  }}\n"
        "\n  return y;\n}\n\n"
        for i in range(12)
    )
    doc = Document(page_content=text, metadata={"file_type": file_type})
    for size in (80, 100, 150):
        chunks = SourceCodeSplitter(chunk_size=size).split_documents([doc])
        firsts = [c.page_content.splitlines()[0] for c in chunks]
        assert all(f.startswith("/** Handler") for f in firsts[1:]), (size, firsts)


def test_yaml_is_cut_between_the_entries_of_a_long_mapping() -> None:
    # only top-level keys were definition cuts: a long mapping was cut at any line, e.g.
    # between "notes: |" and the text of that block (chunk 2 began "Auxiliary system 22 ...")
    yaml_text = "ship:\n  name: Enterprise\nsystems:\n" + "".join(
        f"  system_{i}:\n    enabled: true\n    notes: |\n      System {i} draws from EPS.\n"
        for i in range(40)
    )
    doc = Document(page_content=yaml_text, metadata={"file_type": "yaml"})
    chunks = SourceCodeSplitter(chunk_size=100).split_documents([doc])
    assert len(chunks) > 3
    firsts = [c.page_content.splitlines()[0] for c in chunks]
    assert firsts[:2] == ["ship:", "systems:"]
    assert all(re.fullmatch(r"system_\d+:", line) for line in firsts[2:]), firsts
    assert not any(c.page_content.rstrip().endswith("|") for c in chunks)


def test_ingestion_splits_code_with_the_code_splitter(tmp_path: Path) -> None:
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "shift.py").write_text(PYTHON, encoding="utf-8")
    (tmp_path / "repo" / "notes.md").write_text("# Notes\n\nShifts rotate.\n", encoding="utf-8")
    store = MatrixVectorStore(DeterministicFakeEmbedding(size=8))
    pipeline = IngestionPipeline(
        store, namespace="kb", splitter=StructuredMarkdownSplitter(), base_dir=tmp_path / "repo"
    )
    pipeline.invoke(".")
    chunks = store.get_by_ids(
        [stable_id("kb", "repo/shift.py_chunk_0"), stable_id("kb", "repo/notes.md_chunk_0")]
    )
    by_source = {c.metadata["source_path"]: c for c in chunks}
    assert by_source["repo/shift.py"].metadata["chunk_type"] == "code"
    assert "Shift.swap" in by_source["repo/shift.py"].metadata["symbols"]
    assert by_source["repo/notes.md"].metadata["heading"] == "Notes"


@pytest.mark.parametrize(
    ("query", "symbols"),
    [
        ("where is parse_sections defined?", ("parse_sections",)),
        ("what does Shift.swap do", ("Shift.swap",)),
        ("call getUser() twice", ("getUser",)),
        ("how does `swap` work", ("swap",)),
        ("how do shifts swap crews", ()),
        ("Crew::swap in C++", ("Crew.swap",)),
    ],
)
def test_parse_exact_query_finds_symbols(query: str, symbols: tuple[str, ...]) -> None:
    assert parse_exact_query(query).symbols == symbols


def _indexed(chunks: list[Document]) -> tuple[ExactMatchIndex, list[Document]]:
    with_ids = [c.model_copy(update={"id": f"c{i}"}) for i, c in enumerate(chunks)]
    index = ExactMatchIndex()
    index.upsert(with_ids)
    return index, with_ids


def test_exact_leg_returns_the_chunk_defining_a_named_symbol() -> None:
    doc = Document(page_content=PYTHON, metadata={"file_type": "py", "source_path": "shift.py"})
    index, _ = _indexed(SourceCodeSplitter(chunk_size=40).split_documents([doc]))
    hits = index.search("where is parse_sections defined?", k=3)
    assert [h.id for h in hits] == ["c3"]
    assert index.search("Shift.swap", k=3)[0].id == "c2"
    assert index.search("`swap`", k=3)[0].id == "c2"
    assert index.search("Other.swap", k=3) == []
    index.delete(["c3"])
    assert index.search("parse_sections", k=3) == []


def test_a_bare_name_defined_everywhere_is_not_pinned() -> None:
    docs = [
        Document(
            page_content=f"class C{i}:\n    def run_it(self):\n        pass\n",
            metadata={"file_type": "py", "source_path": f"c{i}.py"},
        )
        for i in range(5)
    ]
    index, _ = _indexed(SourceCodeSplitter().split_documents(docs))
    assert {h.score for h in index.search("run_it", k=10)} == {0.5}
    assert [h.score for h in index.search("C3.run_it", k=10)] == [2.0]
