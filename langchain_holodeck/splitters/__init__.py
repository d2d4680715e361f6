"""Text splitters: the default token splitter, ``StructuredMarkdownSplitter``, source code."""

from __future__ import annotations

from langchain_holodeck.splitters.code import (
    CODE_LANGUAGES,
    SourceCodeSplitter,
    Symbol,
    find_symbols,
)
from langchain_holodeck.splitters.structured import (
    ChunkIndexedTextSplitter,
    Section,
    StructuredMarkdownSplitter,
    default_text_splitter,
    parse_sections,
)

__all__ = [
    "CODE_LANGUAGES",
    "ChunkIndexedTextSplitter",
    "Section",
    "SourceCodeSplitter",
    "StructuredMarkdownSplitter",
    "Symbol",
    "default_text_splitter",
    "find_symbols",
    "parse_sections",
]
