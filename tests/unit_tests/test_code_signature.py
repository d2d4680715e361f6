"""Code chunks are found by their names too: the signature entry and the BM25 name field.

The splitter writes each code chunk's ``signature`` (its definitions' names in words and their
definition lines); sync stores it as one more dense entry of the chunk, after the model's own
windows; ``BM25KeywordIndex`` counts a code chunk's ``symbols`` ``NAME_REPEATS`` more times.
Prose chunks get neither.
"""

from __future__ import annotations

import pytest
from langchain_core.documents import Document

from langchain_holodeck import BM25KeywordIndex, HybridRetriever, MatrixVectorStore
from langchain_holodeck._chunk import window_id
from langchain_holodeck.keyword_index.bm25 import NAME_REPEATS
from langchain_holodeck.splitters.code import (
    SourceCodeSplitter,
    code_signature,
    find_symbols,
    name_words,
)
from langchain_holodeck.sync import stable_id, sync_documents
from langchain_holodeck.vectorstores import scan_documents
from tests.helpers import HashingEmbeddings, WindowedHashingEmbeddings

PYTHON = '''"""Shifts."""
import os


class Shift:
    """A shift."""

    def __init__(self, crew):
        self.crew = crew

    def swap_crews(self, other):
        self.crew, other.crew = other.crew, self.crew
'''


def _chunks(text: str = PYTHON, chunk_size: int = 40) -> list[Document]:
    doc = Document(page_content=text, metadata={"file_type": "py", "source_path": "shift.py"})
    return SourceCodeSplitter(chunk_size=chunk_size).split_documents([doc])


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("Shift.swap_crews", "shift swap crews"),
        ("HTTPServer.getUserName", "http server get user name"),
        ("__init__", "init"),
        ("Crew::swap", "crew swap"),
        ("run", "run"),
    ],
)
def test_name_words_splits_identifiers(name: str, words: str) -> None:
    assert name_words(name) == words


def test_code_signature_gives_each_definition_its_words_and_line() -> None:
    code = "class Shift:\n    def swap_slots(self, other):\n        pass\n"
    assert code_signature(code, find_symbols(code, "python")) == (
        "shift: class Shift:\nshift swap slots: def swap_slots(self, other):"
    )
    assert code_signature("x = 1", []) == ""


def test_the_splitter_writes_each_chunk_signature() -> None:
    chunks = _chunks()
    assert [c.metadata["signature"] for c in chunks] == [
        "",  # the module docstring and imports define nothing
        "shift: class Shift:\nshift init: def __init__(self, crew):",
        "shift swap crews: def swap_crews(self, other):",
    ]


def _entries(store: MatrixVectorStore) -> dict[str, Document]:
    return {str(d.id): d for d in scan_documents(store, windows=True)}


def test_sync_stores_the_signature_as_one_more_entry_of_the_chunk() -> None:
    store = MatrixVectorStore(HashingEmbeddings())
    prose = Document(
        page_content="Shifts rotate weekly.",
        metadata={"source_path": "notes.md", "signature": ""},
    )
    sync_documents([*_chunks(), prose], store, namespace="kb")
    entries = _entries(store)
    swap = stable_id("kb", "shift.py_chunk_2")
    entry = entries[window_id(swap, 1)]
    assert entry.page_content == "shift swap crews: def swap_crews(self, other):"
    assert entry.metadata["chunk_type"] == "window"
    assert entry.metadata["window_of"] == swap
    assert "signature" not in entry.metadata
    assert entries[swap].metadata["window_count"] == 1
    head, notes = stable_id("kb", "shift.py_chunk_0"), stable_id("kb", "notes.md_chunk_0")
    assert window_id(head, 1) not in entries  # defines nothing: no entry
    assert window_id(notes, 1) not in entries  # prose: no entry
    assert len(entries) == 4 + 2  # four chunks, two signatures


def test_the_signature_comes_after_the_model_windows() -> None:
    store = MatrixVectorStore(WindowedHashingEmbeddings(window_words=4))
    sync_documents(_chunks(chunk_size=200), store, namespace="kb")
    chunk = stable_id("kb", "shift.py_chunk_0")
    entries = _entries(store)
    count = entries[chunk].metadata["window_count"]
    assert count > 1
    last = entries[window_id(chunk, count)]
    assert last.page_content.startswith("shift: class Shift:\nshift init: def __init__")
    assert entries[window_id(chunk, count - 1)].page_content in PYTHON  # a model window


def test_a_signature_the_chunk_no_longer_has_is_deleted() -> None:
    store = MatrixVectorStore(HashingEmbeddings())
    sync_documents(_chunks(), store, namespace="kb")
    swap = stable_id("kb", "shift.py_chunk_2")
    assert window_id(swap, 1) in _entries(store)
    chunks = _chunks()
    body = "# swap crews\n        self.crew, other.crew = other.crew, self.crew"
    metadata = {**chunks[2].metadata, "symbols": [], "signature": ""}
    edited = chunks[2].model_copy(update={"page_content": body, "metadata": metadata})
    sync_documents([*chunks[:2], edited], store, namespace="kb")
    assert window_id(swap, 1) not in _entries(store)


def test_a_query_in_words_finds_the_function_by_its_signature() -> None:
    # the body shares no word with the query; the signature entry does
    code = "def rotate_crew(rota):\n    return rota[1:] + rota[:1]\n"
    other = "def tally(items):\n    return sum(x for x in items if x)\n"
    docs = [
        Document(page_content=text, metadata={"file_type": "py", "source_path": f"{name}.py"})
        for name, text in (("rotate", code), ("tally", other))
    ]
    store = MatrixVectorStore(HashingEmbeddings())
    sync_documents(SourceCodeSplitter().split_documents(docs), store, namespace="kb")
    retriever = HybridRetriever(vector_store=store, keyword_index=None, k=1)
    found = retriever.invoke("rotate crew")
    assert [d.metadata["source_path"] for d in found] == ["rotate.py"]
    assert found[0].page_content == code.strip()


def test_bm25_counts_a_code_chunk_names_more_and_leaves_prose_alone() -> None:
    text = "def rotate(rota):\n    return rota\n\nCrew lists rotate weekly, crew by crew.\n"
    code = {"chunk_type": "code", "symbols": ["Crew.rotate"]}
    docs = [
        Document(id="code", page_content=text, metadata=code),
        Document(id="prose", page_content=text, metadata={"symbols": ["Crew.rotate"]}),
        Document(id="plain", page_content=text),
    ]
    index = BM25KeywordIndex()
    index.upsert(docs)
    scores = {h.id: h.score for h in index.search("crew rotate", k=3)}
    assert scores["code"] > scores["prose"]
    assert scores["prose"] == scores["plain"]  # only code chunks have a name field
    alone = BM25KeywordIndex()
    alone.upsert([docs[0].model_copy(update={"metadata": {"chunk_type": "code"}}), docs[2]])
    scores = {h.id: h.score for h in alone.search("crew rotate", k=2)}
    assert scores["code"] == scores["plain"]  # no symbols, no boost
    assert NAME_REPEATS >= 1
