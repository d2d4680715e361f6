"""The chunk metadata contract, in one place: keys, accessors, and the per-file record.

Who writes what: the loader ``source``/``source_path``, ``mtime``, ``size_bytes``; sync
``namespace``, ``chunk_index``, ``chunk_key``, ``chunk_count``, ``content_hash``,
``embedding_model``, ``pipeline``; the contextual enricher ``context`` and
``original_content``; ingestion ``context_missing`` (on chunk 0); the retriever and rerankers
the score keys. Each file's chunk 0 carries its ``FileRecord``, which the mtime fast path and
sync both read.

Per-file fields are current on chunk 0 only: ``mtime``, ``size_bytes``, ``chunk_count``,
``pipeline`` and ``embedding_model`` (and ``context_missing``) describe the file as the last
sync that wrote chunk 0 saw it, and chunk 0 is rewritten whenever the file is. A later chunk
whose text and other metadata did not change is skipped, not rewritten (they are left out of
``content_hash``, ``VOLATILE_METADATA_KEYS``), so it keeps the values of the run that last
wrote it: after a section is appended, chunk 1 still reads the old ``mtime``, ``size_bytes``
and ``chunk_count``. Read a file's stats and chunk count from its chunk 0 (``FileRecord.of``);
a chunk's own fields (``source_path``, ``chunk_index``, ``content_hash``, ``window_count``,
the splitter's) are current on every chunk.

Model windows: when the embedding model reads less than a chunk (``long_text="best"``), the
chunk's own entry holds the vector of its first window, and sync writes each further window as
an entry of its own, id ``<chunk id>:w<n>`` (``window_id``), with ``window_of`` (the chunk's id),
``window`` (n, from 1) and ``chunk_type: "window"``; the chunk records ``window_count``. Only
the dense leg sees windows: it scores each chunk by its best window (``window_parent``), and
keyword indexes, scans and reads see chunks alone.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
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
CONTEXT_CACHE_PREFIX = "holodeck-context-"
"""Keys of cached LLM contexts (``ContextualChunkEnricher``), beside a corpus's embedding
keys (64 hex digits) in its cache: letters, digits and ``-``, as a file store takes them."""
ORIGINAL_CONTENT = "original_content"
WINDOW_OF = "window_of"
WINDOW = "window"
WINDOW_COUNT = "window_count"
WINDOW_CHUNK_TYPE = "window"
"""``chunk_type`` of a window entry (keyword indexes that share the store skip it)."""
CHUNK_TYPE = "chunk_type"
CODE_CHUNK_TYPE = "code"
"""``chunk_type`` of a source-code chunk (``SourceCodeSplitter``)."""
SYMBOLS = "symbols"
"""A code chunk's defined names, qualified (``Shift.swap``; ``SourceCodeSplitter``)."""
SIGNATURE = "signature"
"""A code chunk's definitions, each as its name in words and its definition line
(``SourceCodeSplitter``). Sync writes a non-empty signature as one more dense entry of the
chunk, a window entry after the model's own windows, so the dense leg scores the chunk by the
better of its body and its signature."""
CONTEXT_MISSING = "context_missing"
"""On a file's chunk 0: how many of its chunks the enricher left without context (absent when
none). A file so marked is re-read and re-enriched by the next ingest (a search that re-checks
the source leaves it: ``IngestionPipeline(retry_contexts=False)``)."""

FUSED_SCORE = "fused_score"
SEMANTIC_SCORE = "semantic_score"
KEYWORD_SCORE = "keyword_score"
RELEVANCE_SCORE = "relevance_score"

SYNC_METADATA_KEYS = frozenset(
    {NAMESPACE, CHUNK_KEY, CONTENT_HASH, EMBEDDING_MODEL, CHUNK_COUNT, PIPELINE, WINDOW_COUNT}
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


_WINDOW_ID = re.compile(r"^(?P<chunk>.+):w(?P<n>[1-9][0-9]*)$")


def chunk_hashes(documents: Iterable[Document]) -> dict[str, str]:
    """``id -> content_hash`` of chunks (``""`` for one without a hash; id-less ones left out)."""
    return {d.id: str(d.metadata.get(CONTENT_HASH) or "") for d in documents if d.id}


def content_digest(hashes: Mapping[str, str]) -> str:
    """One digest of ``id -> content_hash`` pairs, whatever their order.

    Two indexes of the same ids hold the same texts when their digests agree: a saved index
    is checked against a store this way without keeping a hash per chunk beside it.
    """
    total = 0
    for doc_id, digest in hashes.items():
        pair = hashlib.blake2b(f"{doc_id}\0{digest}".encode(), digest_size=8).digest()
        total = (total + int.from_bytes(pair, "big")) % (1 << 64)
    return f"{len(hashes)}:{total:016x}"


def window_id(chunk_id: str, n: int) -> str:
    """The id of window ``n`` (from 1) of the chunk ``chunk_id``: ``<chunk id>:w<n>``."""
    return f"{chunk_id}:w{n}"


def window_parent(doc_id: str) -> str:
    """The chunk a window id belongs to; any other id is returned as it is."""
    if ":w" not in doc_id:  # the common case, without the regex (hot: every dense hit)
        return doc_id
    match = _WINDOW_ID.match(doc_id)
    return match.group("chunk") if match else doc_id


def is_window(item: Document | Mapping[str, Any]) -> bool:
    """Whether a stored entry is a model window of a chunk rather than a chunk."""
    return bool(_meta(item).get(WINDOW_OF))


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
        retry_contexts: bool = True,
    ) -> bool:
        """Whether the file can be skipped: same stat, same settings, nothing left to redo.

        ``retry_contexts=False``: chunks left without context are not something to redo.
        """
        return (
            self.mtime == mtime
            and self.size_bytes == size_bytes
            and self.pipeline == pipeline
            and not (self.context_missing and retry_contexts)
            and (embedding_model is None or self.embedding_model == embedding_model)
        )
