"""Text splitters: the default token splitter and ``StructuredMarkdownSplitter``."""

from __future__ import annotations

from langchain_holodeck.splitters.structured import (
    ChunkIndexedTextSplitter,
    Section,
    StructuredMarkdownSplitter,
    default_text_splitter,
    parse_sections,
)

__all__ = [
    "ChunkIndexedTextSplitter",
    "Section",
    "StructuredMarkdownSplitter",
    "default_text_splitter",
    "parse_sections",
]
