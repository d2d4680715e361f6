"""Hybrid retrieval over your own documents, for LangChain.

Load a folder (``SourceLoader``), split it along its structure (``StructuredMarkdownSplitter``),
optionally contextualize each chunk (``ContextualChunkEnricher``), sync it idempotently into any
vector store (``sync_documents``), and search it by meaning, keyword and section number
(``HybridRetriever``), reranked (``create_reranker``) and exposed to agents (``VectorStoreTool``,
``HierarchicalDocumentTool``), with the few tools that matter chosen per model call by the same
hybrid search (``ToolSelector``, ``HybridToolSelectorMiddleware``).
"""

from typing import TYPE_CHECKING

from langchain_holodeck._version import __version__ as __version__
from langchain_holodeck.backends import (
    Backend,
    BackendCapabilities,
    BackendUnavailableError,
    KeywordIndexProvider,
    NamespaceFilteredStore,
    backend_for_store,
    get_backend,
    open_vector_store,
    register_backend,
    register_keyword_index,
)
from langchain_holodeck.config import (
    AgentConfig,
    ChatModelConfig,
    CohereRerankerConfig,
    ContextModelConfig,
    DatabaseConfig,
    HierarchicalDocumentToolConfig,
    InMemoryDatabaseConfig,
    InMemoryKeywordIndexConfig,
    KeywordIndexConfig,
    OpenSearchKeywordIndexConfig,
    PostgresDatabaseConfig,
    QdrantDatabaseConfig,
    RedisDatabaseConfig,
    RedisKeywordIndexConfig,
    RerankerConfig,
    RetrievalTestCase,
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
from langchain_holodeck.contextual import (
    DEFAULT_PROMPT,
    ContextualChunkEnricher,
    CostEstimate,
    EnrichmentResult,
    EnrichmentStats,
)
from langchain_holodeck.corpus import corpus_namespace
from langchain_holodeck.definitions import (
    Definition,
    DefinitionExtractor,
    ResolvedReference,
    find_section_refs,
    normalize_section_ref,
    normalize_term,
    resolve_cross_references,
)
from langchain_holodeck.embeddings import (
    DEFAULT_EMBEDDING_MODEL,
    CachedEmbeddings,
    LocalEmbeddings,
    LocalFileByteStore,
    OnnxEmbeddings,
    RedisByteStore,
    embedding_model_id,
    resolve_embeddings,
)
from langchain_holodeck.errors import (
    ConfigError,
    DocumentLoadError,
    EmbeddingError,
    EmbeddingModelMismatchError,
    HolodeckError,
    IndexNotBuiltError,
    NoSupportedFilesError,
)
from langchain_holodeck.exact import ExactMatchIndex
from langchain_holodeck.fusion import convex_score_fusion, reciprocal_rank_fusion
from langchain_holodeck.ingestion import IngestionPipeline, IngestProgress
from langchain_holodeck.keyword_index import (
    BM25KeywordIndex,
    KeywordHit,
    KeywordIndex,
    OpenSearchKeywordIndex,
    RedisKeywordIndex,
)
from langchain_holodeck.loaders import SUPPORTED_FILE_TYPES, SourceFile, SourceLoader
from langchain_holodeck.rerankers import (
    CohereReranker,
    RerankRetriever,
    VLLMReranker,
    create_reranker,
)
from langchain_holodeck.retrievers import HybridRetriever
from langchain_holodeck.splitters import (
    CODE_LANGUAGES,
    ChunkIndexedTextSplitter,
    Section,
    SourceCodeSplitter,
    StructuredMarkdownSplitter,
    Symbol,
    default_text_splitter,
    find_symbols,
    parse_sections,
)
from langchain_holodeck.sync import (
    DocumentSync,
    SyncPlan,
    SyncResult,
    content_hash,
    plan_sync,
    stable_id,
    sync_documents,
)
from langchain_holodeck.tool_selection import ToolMatch, ToolSelector, find_tool_mentions, tool_text
from langchain_holodeck.tools import HierarchicalDocumentTool, VectorStoreTool, load_tools
from langchain_holodeck.vectorstores import (
    MatrixVectorStore,
    VectorStoreHandle,
    create_vector_store,
    create_vector_store_with_status,
    scan_documents,
)

if TYPE_CHECKING:
    from langchain_holodeck.middleware import (
        HybridToolSelectorMiddleware,
        build_tool_selector_middleware,
    )

__all__ = [
    "CODE_LANGUAGES",
    "DEFAULT_EMBEDDING_MODEL",
    "DEFAULT_PROMPT",
    "SUPPORTED_FILE_TYPES",
    "AgentConfig",
    "BM25KeywordIndex",
    "Backend",
    "BackendCapabilities",
    "BackendUnavailableError",
    "CachedEmbeddings",
    "ChatModelConfig",
    "ChunkIndexedTextSplitter",
    "CohereReranker",
    "CohereRerankerConfig",
    "ConfigError",
    "ContextModelConfig",
    "ContextualChunkEnricher",
    "CostEstimate",
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
    "HybridToolSelectorMiddleware",
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
    "LocalFileByteStore",
    "MatrixVectorStore",
    "NamespaceFilteredStore",
    "NoSupportedFilesError",
    "OnnxEmbeddings",
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
    "ResolvedReference",
    "RetrievalTestCase",
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
    "ToolMatch",
    "ToolSelectionConfig",
    "ToolSelector",
    "VLLMReranker",
    "VLLMRerankerConfig",
    "VectorStoreHandle",
    "VectorStoreTool",
    "VectorStoreToolConfig",
    "backend_for_store",
    "build_tool_selector_middleware",
    "config_reference_markdown",
    "content_hash",
    "convex_score_fusion",
    "corpus_namespace",
    "create_reranker",
    "create_vector_store",
    "create_vector_store_with_status",
    "default_text_splitter",
    "embedding_model_id",
    "find_section_refs",
    "find_symbols",
    "find_tool_mentions",
    "get_backend",
    "load_agent_config",
    "load_project_database_config",
    "load_tools",
    "normalize_section_ref",
    "normalize_term",
    "open_vector_store",
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
    "tool_text",
]


def __getattr__(name: str) -> object:
    # The middleware subclasses langchain's AgentMiddleware, and importing langchain.agents
    # loads langgraph (about a second): it is imported on first use, not with the package.
    if name in ("HybridToolSelectorMiddleware", "build_tool_selector_middleware"):
        from langchain_holodeck import middleware

        return getattr(middleware, name)
    msg = f"module 'langchain_holodeck' has no attribute {name!r}"
    raise AttributeError(msg)
