"""The chunk metadata contract, in one place: keys, accessors, and the per-file record.

Who writes what: the loader ``source``/``source_path``, ``mtime``, ``size_bytes``; sync
``namespace``, ``chunk_index``, ``chunk_key``, ``chunk_count``, ``content_hash``,
``embedding_model``, ``pipeline``; the contextual enricher ``context`` and
``original_content``; ingestion ``context_missing`` (on chunk 0); the retriever and rerankers
the score keys. Each file's chunk 0 carries its ``FileRecord``, which the mtime fast path and
sync both read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from langchain_core.documents import Document

SOURCE = "source"
SOURCE_PATH = "source_path"
MTIME = "mtime"
SIZE_BYTES = "size_bytes"
NAMESPACE = "namespace"
CHUNK_INDEX = "chunk_index"
CHUNK_KEY = "chunk_key"
CHUNK_COUNT = "chunk_count"
CONTENT_HASH = "content_hash"
EMBEDDING_MODEL = "embedding_model"
PIPELINE = "pipeline"
CONTEXT = "context"
ORIGINAL_CONTENT = "original_content"
CONTEXT_MISSING = "context_missing"
"""On a file's chunk 0: how many of its chunks the enricher left without context (absent when
none). A file so marked is re-read and re-enriched by the next run."""

FUSED_SCORE = "fused_score"
SEMANTIC_SCORE = "semantic_score"
KEYWORD_SCORE = "keyword_score"
RELEVANCE_SCORE = "relevance_score"
SCORE_KEYS = (FUSED_SCORE, SEMANTIC_SCORE, KEYWORD_SCORE, RELEVANCE_SCORE)
"""The score keys results carry (``None`` where a leg did not return the chunk)."""

SYNC_METADATA_KEYS = frozenset(
    {NAMESPACE, CHUNK_KEY, CONTENT_HASH, EMBEDDING_MODEL, CHUNK_COUNT, PIPELINE}
)
"""Metadata keys that sync writes itself."""
VOLATILE_METADATA_KEYS = frozenset({MTIME, SIZE_BYTES}) | SYNC_METADATA_KEYS
"""Metadata keys left out of ``content_hash``: file stats and sync bookkeeping."""


def _meta(item: Document | Mapping[str, Any]) -> Mapping[str, Any]:
    return item.metadata if isinstance(item, Document) else item


def source_path(item: Document | Mapping[str, Any], default: str = "") -> str:
    """The chunk's stable relative path: ``source_path``, else ``source``, else ``default``."""
    meta = _meta(item)
    value = meta.get(SOURCE_PATH) or meta.get(SOURCE)
    return str(value) if value else default


def original_content(document: Document) -> str:
    """The chunk as written: ``original_content`` when an enricher prefixed a context."""
    return str(document.metadata.get(ORIGINAL_CONTENT, document.page_content))


@dataclass(frozen=True)
class FileRecord:
    """The per-file record on each file's chunk 0: what the mtime fast path trusts.

    Two records are equal when the file's stat, chunk count and split settings are; the
    embedding model and the context-missing mark are read, not compared.
    """

    mtime: float | None = None
    size_bytes: int | None = None
    chunk_count: int | None = None
    pipeline: str | None = None
    embedding_model: str | None = field(default=None, compare=False)
    context_missing: int = field(default=0, compare=False)

    @classmethod
    def of(cls, item: Document | Mapping[str, Any]) -> FileRecord:
        """The record a chunk 0 (or its metadata) carries; missing fields are ``None``."""
        meta = _meta(item)
        count = meta.get(CHUNK_COUNT)
        return cls(
            mtime=meta.get(MTIME),
            size_bytes=meta.get(SIZE_BYTES),
            chunk_count=int(count) if count is not None else None,
            pipeline=meta.get(PIPELINE),
            embedding_model=meta.get(EMBEDDING_MODEL),
            context_missing=int(meta.get(CONTEXT_MISSING) or 0),
        )

    def is_current(
        self,
        *,
        mtime: float,
        size_bytes: int,
        pipeline: str,
        embedding_model: str | None,
    ) -> bool:
        """Whether the file can be skipped: same stat, same settings, nothing left to redo."""
        return (
            self.mtime == mtime
            and self.size_bytes == size_bytes
            and self.pipeline == pipeline
            and not self.context_missing
            and (embedding_model is None or self.embedding_model == embedding_model)
        )
