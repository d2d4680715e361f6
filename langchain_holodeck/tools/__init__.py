"""Agent tools over a configured corpus: ``VectorStoreTool``, ``HierarchicalDocumentTool``."""

from __future__ import annotations

from langchain_holodeck.tools.document import (
    RERANK_TOP_N_WARNING,
    HierarchicalDocumentTool,
    SearchInput,
    VectorStoreTool,
    load_tools,
)
from langchain_holodeck.tools.formatting import (
    BREADCRUMB_SEPARATOR,
    format_results,
    result_header,
    result_score,
    section_breadcrumb,
    shown_text,
)

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
