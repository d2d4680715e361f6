"""Compact, append-only storage of ``MatrixVectorStore``'s documents: one column per field.

A ``Document`` object costs about 600 bytes of Python overhead on top of its text; at a million
chunks that is 600 MB. Here a row is three list slots instead: its id, its text and its
metadata. Texts of ``COMPRESS_MIN_CHARS`` or more characters are kept zlib-compressed (level 1:
about 8 µs per 1,200-character chunk to compress, 4 µs to read back; the benchmark's chunks
shrink to about 39%), shorter ones or ones that do not shrink as ``str``. Empty metadata is stored
as ``None`` (no dict per row). ``Document`` values are built only when read.

The columns are append-only between compactions, like the store's matrix: a published
snapshot reads rows ``< size`` while a writer appends behind it.
"""

from __future__ import annotations

import copy
import zlib
from collections.abc import Iterable, Sequence
from typing import Any

from langchain_core.documents import Document

_SCALARS = (str, int, float, bool, type(None))
COMPRESS_MIN_CHARS = 128
"""Texts shorter than this are stored as they are (zlib would not pay for its header)."""
_LEVEL = 1
_ERRORS = "surrogatepass"  # any ``str`` round-trips, lone surrogates included


def copy_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """Copy metadata so neither side can mutate the other (fast path for JSON-like values)."""
    out: dict[str, Any] = {}
    for key, value in metadata.items():
        if isinstance(value, _SCALARS):
            out[key] = value
        elif isinstance(value, list) and all(isinstance(v, _SCALARS) for v in value):
            out[key] = list(value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def pack_text(text: str) -> str | bytes:
    """The stored form of ``text``: zlib-compressed UTF-8 when that is smaller, else itself."""
    if len(text) < COMPRESS_MIN_CHARS:
        return text
    raw = text.encode("utf-8", _ERRORS)
    packed = zlib.compress(raw, _LEVEL)
    # a str of n ASCII characters takes about n bytes too: keep the smaller of the two
    return packed if len(packed) < 0.9 * len(raw) else text


def unpack_text(stored: str | bytes) -> str:
    """The text ``pack_text`` stored."""
    if isinstance(stored, str):
        return stored
    return zlib.decompress(stored).decode("utf-8", _ERRORS)


class DocumentColumns:
    """Ids, texts and metadata of the store's rows, in row order (append-only)."""

    __slots__ = ("ids", "metadatas", "texts")

    def __init__(
        self,
        ids: list[str] | None = None,
        texts: list[str | bytes] | None = None,
        metadatas: list[dict[str, Any] | None] | None = None,
    ) -> None:
        self.ids: list[str] = ids if ids is not None else []
        self.texts: list[str | bytes] = texts if texts is not None else []
        self.metadatas: list[dict[str, Any] | None] = metadatas if metadatas is not None else []

    def __len__(self) -> int:
        return len(self.ids)

    def extend(
        self, ids: Sequence[str], texts: Iterable[str], metadatas: Iterable[dict[str, Any]]
    ) -> None:
        """Append rows; ``metadatas`` must already be the store's own copies."""
        self.texts.extend(map(pack_text, texts))
        self.metadatas.extend(m or None for m in metadatas)
        self.ids.extend(ids)  # last: a row exists once its id does

    def extend_packed(
        self,
        ids: Sequence[str],
        texts: Sequence[str | bytes],
        metadatas: Sequence[dict[str, Any] | None],
    ) -> None:
        """Append rows already in stored form (from another ``DocumentColumns``)."""
        self.texts.extend(texts)
        self.metadatas.extend(metadatas)
        self.ids.extend(ids)

    def take(self, rows: Iterable[int]) -> DocumentColumns:
        """New columns holding ``rows`` (in that order): what a compaction keeps."""
        rows = list(rows)
        return DocumentColumns(
            [self.ids[r] for r in rows],
            [self.texts[r] for r in rows],
            [self.metadatas[r] for r in rows],
        )

    def text(self, row: int) -> str:
        return unpack_text(self.texts[row])

    def metadata(self, row: int) -> dict[str, Any]:
        """The stored metadata itself (not a copy): read it, never mutate it."""
        meta = self.metadatas[row]
        return {} if meta is None else meta

    def document(self, row: int) -> Document:
        """A new ``Document`` for ``row``, with its own copy of the metadata."""
        meta = self.metadatas[row]
        return Document(
            id=self.ids[row],
            page_content=unpack_text(self.texts[row]),
            metadata={} if meta is None else copy_metadata(meta),
        )

    def filter_view(self, row: int) -> Document:
        """A ``Document`` of ``row`` for a filter to read (its metadata a shallow copy)."""
        meta = self.metadatas[row]
        return Document(
            id=self.ids[row], page_content=unpack_text(self.texts[row]), metadata=meta or {}
        )
