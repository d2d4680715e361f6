"""Agent tools over a configured corpus: ``VectorStoreTool``, ``HierarchicalDocumentTool``."""

from __future__ import annotations

from langchain_holodeck.tools.document import RERANK_TOP_N_WARNING, SearchInput, VectorStoreTool
from langchain_holodeck.tools.formatting import (
    BREADCRUMB_SEPARATOR,
    format_results,
    result_header,
    result_score,
    section_breadcrumb,
    shown_text,
)
from langchain_holodeck.tools.hierarchical import HierarchicalDocumentTool
from langchain_holodeck.tools.loading import load_tools

__all__ = [
    "BREADCRUMB_SEPARATOR",
    "RERANK_TOP_N_WARNING",
    "HierarchicalDocumentTool",
    "SearchInput",
    "VectorStoreTool",
    "format_results",
    "load_tools",
    "result_header",
    "result_score",
    "section_breadcrumb",
    "shown_text",
]
