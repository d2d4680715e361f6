import langchain_holodeck

EXPECTED_ALL = {
    "tool_text",
    "find_tool_mentions",
    "ToolSelector",
    "ToolMatch",
    "build_tool_selector_middleware",
    "HybridToolSelectorMiddleware",
    "ToolSelectionConfig",
    "CODE_LANGUAGES",
    "AgentConfig",
    "ChatModelConfig",
    "BM25KeywordIndex",
    "Backend",
    "BackendCapabilities",
    "BackendUnavailableError",
    "CachedEmbeddings",
    "ChunkIndexedTextSplitter",
    "CohereReranker",
    "CohereRerankerConfig",
    "ConfigError",
    "ContextModelConfig",
    "ContextualChunkEnricher",
    "CostEstimate",
    "DEFAULT_EMBEDDING_MODEL",
    "DEFAULT_PROMPT",
    "DatabaseConfig",
    "Definition",
    "DefinitionExtractor",
    "DocumentLoadError",
    "DocumentSync",
    "EmbeddingError",
    "EmbeddingModelMismatchError",
    "EnrichmentResult",
    "EnrichmentStats",
    "ExactMatchIndex",
    "HierarchicalDocumentTool",
    "HierarchicalDocumentToolConfig",
    "HolodeckError",
    "HybridRetriever",
    "InMemoryDatabaseConfig",
    "InMemoryKeywordIndexConfig",
    "IndexNotBuiltError",
    "IngestProgress",
    "IngestionPipeline",
    "KeywordHit",
    "KeywordIndex",
    "KeywordIndexConfig",
    "KeywordIndexProvider",
    "LocalEmbeddings",
    "OnnxEmbeddings",
    "LocalFileByteStore",
    "MatrixVectorStore",
    "NamespaceFilteredStore",
    "NoSupportedFilesError",
    "OpenSearchKeywordIndex",
    "OpenSearchKeywordIndexConfig",
    "PostgresDatabaseConfig",
    "QdrantDatabaseConfig",
    "RedisByteStore",
    "RedisDatabaseConfig",
    "RedisKeywordIndex",
    "RedisKeywordIndexConfig",
    "RerankRetriever",
    "RerankerConfig",
    "RetrievalTestCase",
    "ResolvedReference",
    "SUPPORTED_FILE_TYPES",
    "SearchWeights",
    "Section",
    "SourceCodeSplitter",
    "SourceFile",
    "SourceLoader",
    "StructuredMarkdownSplitter",
    "Symbol",
    "SyncPlan",
    "SyncResult",
    "ToolConfig",
    "VLLMReranker",
    "VLLMRerankerConfig",
    "VectorStoreHandle",
    "VectorStoreTool",
    "VectorStoreToolConfig",
    "backend_for_store",
    "config_reference_markdown",
    "content_hash",
    "Corpus",
    "corpus_namespace",
    "create_reranker",
    "create_vector_store",
    "convex_score_fusion",
    "create_vector_store_with_status",
    "default_text_splitter",
    "embedding_model_id",
    "find_section_refs",
    "get_backend",
    "load_agent_config",
    "load_project_database_config",
    "load_tools",
    "normalize_section_ref",
    "normalize_term",
    "open_vector_store",
    "find_symbols",
    "parse_sections",
    "plan_sync",
    "reciprocal_rank_fusion",
    "register_backend",
    "register_keyword_index",
    "resolve_cross_references",
    "resolve_database_config",
    "resolve_embeddings",
    "scan_documents",
    "stable_id",
    "sync_documents",
}


def test_all_is_pinned() -> None:
    assert set(langchain_holodeck.__all__) == EXPECTED_ALL


def test_every_name_in_all_resolves_and_none_is_private() -> None:
    for name in langchain_holodeck.__all__:
        assert not name.startswith("_")
        assert getattr(langchain_holodeck, name) is not None


def test_importing_the_package_loads_no_heavy_optional_dependency() -> None:
    import subprocess
    import sys

    code = (
        "import sys, langchain_holodeck; "
        "print(','.join(m for m in ('torch', 'markitdown', 'sentence_transformers', 'redis', "
        "'cohere', 'opensearchpy', 'openai', 'langchain', 'langgraph') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
