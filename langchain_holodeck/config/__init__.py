"""Configuration: pydantic models for ``agent.yaml`` and ``.holodeck/config.yaml``."""

from __future__ import annotations

from langchain_holodeck.config.models import (
    AgentConfig,
    CohereRerankerConfig,
    ContextModelConfig,
    DatabaseConfig,
    HierarchicalDocumentToolConfig,
    KeywordIndexConfig,
    RerankerConfig,
    SearchWeights,
    ToolConfig,
    ToolSelectionConfig,
    VectorStoreToolConfig,
    VLLMRerankerConfig,
    config_reference_markdown,
    load_agent_config,
    load_project_database_config,
    resolve_database_config,
)

__all__ = [
    "AgentConfig",
    "CohereRerankerConfig",
    "ContextModelConfig",
    "DatabaseConfig",
    "HierarchicalDocumentToolConfig",
    "KeywordIndexConfig",
    "RerankerConfig",
    "SearchWeights",
    "ToolConfig",
    "ToolSelectionConfig",
    "VLLMRerankerConfig",
    "VectorStoreToolConfig",
    "config_reference_markdown",
    "load_agent_config",
    "load_project_database_config",
    "resolve_database_config",
]
