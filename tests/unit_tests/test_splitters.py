from __future__ import annotations

import pytest
from langchain_core.documents import Document

from langchain_holodeck._tokens import count_tokens
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
