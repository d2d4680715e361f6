"""The chunk metadata contract: accessors and the per-file record."""

from __future__ import annotations

from langchain_core.documents import Document

from langchain_holodeck._chunk import FileRecord, original_content, source_path


def test_source_path_prefers_source_path_then_source_then_default() -> None:
    assert source_path({"source_path": "a.md", "source": "b.md"}) == "a.md"
    assert source_path(Document(page_content="x", metadata={"source": "b.md"})) == "b.md"
    assert source_path({}, default="unknown") == "unknown"
    assert source_path({"source_path": ""}) == ""


def test_original_content_falls_back_to_page_content() -> None:
    enriched = Document(page_content="ctx\n\ntext", metadata={"original_content": "text"})
    assert original_content(enriched) == "text"
    assert original_content(Document(page_content="plain")) == "plain"


def test_file_record_compares_stat_and_settings_only() -> None:
    meta = {"mtime": 1.5, "size_bytes": 10, "chunk_count": 3, "pipeline": "p", "x": 1}
    record = FileRecord.of(meta)
    assert record == FileRecord.of({**meta, "embedding_model": "m", "context_missing": 2})
    assert record != FileRecord.of({**meta, "chunk_count": 4})
    assert record.is_current(mtime=1.5, size_bytes=10, pipeline="p", embedding_model=None)
    assert not record.is_current(mtime=1.5, size_bytes=11, pipeline="p", embedding_model=None)
    assert not record.is_current(mtime=1.5, size_bytes=10, pipeline="p", embedding_model="m")
    marked = FileRecord.of({**meta, "context_missing": 1})
    assert not marked.is_current(mtime=1.5, size_bytes=10, pipeline="p", embedding_model=None)
    assert FileRecord.of({}).chunk_count is None
