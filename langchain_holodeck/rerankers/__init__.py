"""Rerankers: document compressors over Cohere's rerank API (Cohere, vLLM)."""

from __future__ import annotations

from langchain_holodeck.rerankers.cohere import (
    ApiVersion,
    CohereReranker,
    RerankRetriever,
    VLLMReranker,
    create_reranker,
)

__all__ = [
    "ApiVersion",
    "CohereReranker",
    "RerankRetriever",
    "VLLMReranker",
    "create_reranker",
]
