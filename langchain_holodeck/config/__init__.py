"""Configuration: pydantic models for ``agent.yaml`` and ``.holodeck/config.yaml``."""

from __future__ import annotations

from langchain_holodeck.config.models import (
    AgentConfig,
    ChatModelConfig,
    CohereRerankerConfig,
    ContextModelConfig,
    DatabaseConfig,
    HierarchicalDocumentToolConfig,
    KeywordIndexConfig,
    RerankerConfig,
    RetrievalTestCase,
    SearchWeights,
    ToolConfig,
    VectorStoreToolConfig,
    VLLMRerankerConfig,
    chat_model_config,
    config_reference_markdown,
    load_agent_config,
    load_project_database_config,
    resolve_database_config,
)

__all__ = [
    "AgentConfig",
    "ChatModelConfig",
    "CohereRerankerConfig",
    "ContextModelConfig",
    "DatabaseConfig",
    "HierarchicalDocumentToolConfig",
    "KeywordIndexConfig",
    "RerankerConfig",
    "RetrievalTestCase",
    "SearchWeights",
    "ToolConfig",
    "VLLMRerankerConfig",
    "VectorStoreToolConfig",
    "chat_model_config",
    "config_reference_markdown",
    "load_agent_config",
    "load_project_database_config",
    "resolve_database_config",
]
