"""Hybrid retrieval over your own documents, for LangChain.

Load a folder (``SourceLoader``), split it along its structure (``StructuredMarkdownSplitter``),
optionally contextualize each chunk (``ContextualChunkEnricher``), sync it idempotently into any
vector store (``sync_documents``), and search it by meaning, keyword and section number
(``HybridRetriever``), reranked (``create_reranker``) and exposed to agents (``VectorStoreTool``,
``HierarchicalDocumentTool``).
"""

from langchain_holodeck._version import __version__ as __version__
from langchain_holodeck.config import (
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
    EmbeddingModelMismatchError,
    HolodeckError,
    IndexNotBuiltError,
    NoSupportedFilesError,
)
from langchain_holodeck.exact import ExactMatchIndex
from langchain_holodeck.fusion import reciprocal_rank_fusion
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
    ChunkIndexedTextSplitter,
    Section,
    StructuredMarkdownSplitter,
    default_text_splitter,
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
from langchain_holodeck.tools import HierarchicalDocumentTool, VectorStoreTool, load_tools
from langchain_holodeck.vectorstores import (
    MatrixVectorStore,
    VectorStoreHandle,
    create_vector_store,
    create_vector_store_with_status,
    scan_documents,
)

__all__ = [
    "DEFAULT_EMBEDDING_MODEL",
    "DEFAULT_PROMPT",
    "SUPPORTED_FILE_TYPES",
    "AgentConfig",
    "BM25KeywordIndex",
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
    "EmbeddingModelMismatchError",
    "EnrichmentResult",
    "EnrichmentStats",
    "ExactMatchIndex",
    "HierarchicalDocumentTool",
    "HierarchicalDocumentToolConfig",
    "HolodeckError",
    "HybridRetriever",
    "IndexNotBuiltError",
    "IngestProgress",
    "IngestionPipeline",
    "KeywordHit",
    "KeywordIndex",
    "KeywordIndexConfig",
    "LocalEmbeddings",
    "LocalFileByteStore",
    "MatrixVectorStore",
    "NoSupportedFilesError",
    "OnnxEmbeddings",
    "OpenSearchKeywordIndex",
    "RedisByteStore",
    "RedisKeywordIndex",
    "RerankRetriever",
    "RerankerConfig",
    "ResolvedReference",
    "RetrievalTestCase",
    "SearchWeights",
    "Section",
    "SourceFile",
    "SourceLoader",
    "StructuredMarkdownSplitter",
    "SyncPlan",
    "SyncResult",
    "ToolConfig",
    "VLLMReranker",
    "VLLMRerankerConfig",
    "VectorStoreHandle",
    "VectorStoreTool",
    "VectorStoreToolConfig",
    "config_reference_markdown",
    "content_hash",
    "create_reranker",
    "create_vector_store",
    "create_vector_store_with_status",
    "default_text_splitter",
    "embedding_model_id",
    "find_section_refs",
    "load_agent_config",
    "load_project_database_config",
    "load_tools",
    "normalize_section_ref",
    "normalize_term",
    "parse_sections",
    "plan_sync",
    "reciprocal_rank_fusion",
    "resolve_cross_references",
    "resolve_database_config",
    "resolve_embeddings",
    "scan_documents",
    "stable_id",
    "sync_documents",
]
