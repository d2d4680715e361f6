"""Retrievers: ``HybridRetriever`` (dense + keyword + exact, fused)."""

from __future__ import annotations

from langchain_holodeck.retrievers.hybrid import (
    EXACT_BOOST,
    HybridRetriever,
)

__all__ = [
    "EXACT_BOOST",
    "HybridRetriever",
]
