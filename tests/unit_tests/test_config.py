"""Configuration models, the YAML reader, ${VAR} substitution and database precedence."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Any

import pydantic
import pytest
import yaml

from langchain_holodeck.config import (
    AgentConfig,
    ChatModelConfig,
    CohereRerankerConfig,
    ContextModelConfig,
    HierarchicalDocumentToolConfig,
    InMemoryDatabaseConfig,
    InMemoryKeywordIndexConfig,
    OpenSearchKeywordIndexConfig,
    RedisDatabaseConfig,
    RedisKeywordIndexConfig,
    SearchWeights,
    VectorStoreToolConfig,
    VLLMRerankerConfig,
    chat_model_config,
    config_reference_markdown,
    load_agent_config,
    load_project_database_config,
    resolve_database_config,
)
from langchain_holodeck.errors import ConfigError

EXAMPLE = Path(__file__).parents[2] / "examples" / "agent.yaml"
FAKE_KEY = "sk-FAKE-do-not-leak-7f3a9c"
FAKE_PASSWORD = "pw-FAKE-do-not-leak-91b2"
ENV = {
    "REDIS_URL": "redis://localhost:6379",
    "COHERE_API_KEY": FAKE_KEY,
    "SECRET_REDIS": f"redis://:{FAKE_PASSWORD}@db.internal:6380/0",
    "EMPTY": "",
}


def write(tmp_path: Path, text: str, name: str = "agent.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def vectorstore(**overrides: Any) -> dict[str, Any]:
    tool = {"type": "vectorstore", "name": "kb", "description": "docs", "source": "docs/"}
    tool.update(overrides)
    return {key: value for key, value in tool.items() if value is not _DROP}


def hierarchical(**overrides: Any) -> dict[str, Any]:
    tool = {"type": "hierarchical_document", "name": "legal", "source": "./legal"}
    tool.update(overrides)
    return {key: value for key, value in tool.items() if value is not _DROP}


_DROP = object()


def load_tools(tmp_path: Path, *tools: dict[str, Any], **top: Any) -> AgentConfig:
    path = tmp_path / "agent.yaml"
    path.write_text(yaml.safe_dump({**top, "tools": list(tools)}), encoding="utf-8")
    return load_agent_config(path, environ=ENV)


# --- loading valid files -------------------------------------------------------------------


def test_minimal_vectorstore_gets_documented_defaults(tmp_path: Path) -> None:
    config = load_tools(tmp_path, vectorstore())
    (tool,) = config.tools
    assert isinstance(tool, VectorStoreToolConfig)
    assert (tool.top_k, tool.min_similarity_score, tool.database) == (5, None, None)
    assert (tool.rerank, tool.rerank_top_n, tool.reranker, tool.rerank_on) == (
        False,
        None,
        None,
        "original",
    )


def test_contract_minimal_tool_type_name_source_gets_a_description(tmp_path: Path) -> None:
    minimal = [
        {"type": "vectorstore", "name": "kb", "source": "docs/"},
        {"type": "hierarchical_document", "name": "legal", "source": "./legal"},
    ]
    vector, legal = load_tools(tmp_path, *minimal).tools
    assert vector.description == "Search the documents in docs/ by meaning."
    assert legal.description == (
        "Search the structured documents in ./legal by meaning, keyword or section number."
    )
    assert load_tools(tmp_path, vectorstore(description="mine")).tools[0].description == "mine"


def test_a_tool_given_another_source_is_described_by_it_unless_described_in_the_yaml(
    tmp_path: Path,
) -> None:
    """``ingest --config agent.yaml SOURCE`` gives the tool another source: its default
    description named the configured one still (found 2026-12-07)."""
    vector, legal = load_tools(
        tmp_path,
        {"type": "vectorstore", "name": "kb", "source": "nothere"},
        {"type": "hierarchical_document", "name": "legal", "source": "./legal"},
    ).tools
    moved = vector.with_source("docs")
    assert (moved.source, moved.description) == ("docs", "Search the documents in docs by meaning.")
    assert moved.base_dir == vector.base_dir == tmp_path  # the rest as it was
    assert legal.with_source("law").description == (
        "Search the structured documents in law by meaning, keyword or section number."
    )
    (mine,) = load_tools(tmp_path, vectorstore(description="Crew docs")).tools
    assert mine.with_source("docs").description == "Crew docs"


@pytest.mark.parametrize("key", ["timeout_seconds", "timeout"])
def test_keyword_index_timeout_seconds_and_its_alias(tmp_path: Path, key: str) -> None:
    keyword = {"provider": "opensearch", "endpoint": "http://h", key: 120}
    (tool,) = load_tools(tmp_path, hierarchical(keyword_index=keyword)).tools
    assert isinstance(tool, HierarchicalDocumentToolConfig)
    assert tool.keyword_index.timeout_seconds == tool.keyword_index.timeout == 120
    default = OpenSearchKeywordIndexConfig(provider="opensearch", endpoint="http://h")
    assert default.timeout_seconds == 10


def test_minimal_hierarchical_gets_documented_defaults(tmp_path: Path) -> None:
    (tool,) = load_tools(tmp_path, hierarchical()).tools
    assert isinstance(tool, HierarchicalDocumentToolConfig)
    assert tool.description  # has a default
    assert (tool.top_k, tool.max_chunk_tokens, tool.expand_hops, tool.expand_direction) == (
        10,
        800,
        0,
        "out",
    )
    assert (tool.context_max_tokens, tool.context_concurrency) == (100, 10)
    assert tool.max_table_chunk_tokens == 200
    assert tool.search_weights == SearchWeights(semantic=0.7, keyword=0.3, exact=0.2)
    assert tool.keyword_index.provider == "in-memory"


def test_relative_source_resolves_against_the_yaml_directory(tmp_path: Path) -> None:
    sub = tmp_path / "project"
    sub.mkdir()
    (tool,) = load_tools(sub, vectorstore(source="data/docs/")).tools
    assert tool.source == "data/docs/"  # kept as configured, for display
    assert tool.base_dir == sub.absolute()
    assert tool.resolved_source() == sub.absolute() / "data" / "docs"
    assert tool.resolved_source(tmp_path) == tmp_path / "data" / "docs"


def test_absolute_source_is_kept(tmp_path: Path) -> None:
    (tool,) = load_tools(tmp_path, vectorstore(source=str(tmp_path / "x"))).tools
    assert tool.resolved_source("/elsewhere") == tmp_path / "x"


def test_programmatic_config_resolves_against_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    tool = VectorStoreToolConfig(type="vectorstore", name="kb", description="d", source="docs")
    assert tool.base_dir is None
    assert tool.resolved_source() == tmp_path / "docs"


def test_example_agent_yaml_loads_with_every_tool_type() -> None:
    config = load_agent_config(EXAMPLE, environ=ENV)
    assert {type(tool) for tool in config.tools} == {
        VectorStoreToolConfig,
        HierarchicalDocumentToolConfig,
    }
    for tool in config.tools:
        assert tool.resolved_source().exists(), tool.source
    vector_tool, legal_tool = config.tools
    assert isinstance(vector_tool.reranker, VLLMRerankerConfig)
    assert isinstance(legal_tool.reranker, CohereRerankerConfig)
    assert legal_tool.reranker.api_key.get_secret_value() == FAKE_KEY
    assert vector_tool.database is not None
    assert vector_tool.database.masked_connection_string == "redis://localhost:6379"
    assert isinstance(legal_tool, HierarchicalDocumentToolConfig)
    assert legal_tool.context_model == ContextModelConfig(
        provider="anthropic", name="claude-3-haiku-20240307"
    )


def test_example_agent_yaml_needs_its_variables() -> None:
    with pytest.raises(ConfigError, match=r"agent\.yaml: tools\[0\]\.database.* REDIS_URL"):
        load_agent_config(EXAMPLE, environ={})


def test_free_form_top_level_keys_are_accepted(tmp_path: Path) -> None:
    config = load_tools(
        tmp_path,
        vectorstore(),
        name="agent",
        description="helps",
        model={"provider": "openai", "name": "gpt-4o"},
        instructions={"inline": "Be brief."},
    )
    assert config.name == "agent"
    assert config.model == {"provider": "openai", "name": "gpt-4o"}
    assert "gpt-4o" not in repr(config)  # free-form sections stay out of the repr


def test_configs_are_frozen(tmp_path: Path) -> None:
    (tool,) = load_tools(tmp_path, vectorstore()).tools
    with pytest.raises(pydantic.ValidationError, match="frozen"):
        tool.top_k = 7  # type: ignore[misc] # the point of the test


def test_yaml_anchor_shared_between_tools_is_allowed(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        tools:
          - {type: vectorstore, name: a, description: d, source: s,
             database: &db {provider: redis, connection_string: "${REDIS_URL}"}}
          - {type: vectorstore, name: b, description: d, source: s, database: *db}
        """,
    )
    config = load_agent_config(path, environ=ENV)
    assert config.tools[0].database == config.tools[1].database


# --- every validation rule: file, field path and value in the message ---------------------

REDIS_DB = {"provider": "redis", "connection_string": "${REDIS_URL}"}

RULES = [
    # (tool, field path, fragment that must follow the path)
    (vectorstore(name="bad name"), "tools[0].name", "got 'bad name'"),
    (vectorstore(name="x" * 65), "tools[0].name", "at most 64"),
    (vectorstore(name=_DROP), "tools[0].name", "required"),
    (vectorstore(description=""), "tools[0].description", "must not be empty, got ''"),
    (vectorstore(source=""), "tools[0].source", "must not be empty, got ''"),
    (vectorstore(top_k=0), "tools[0].top_k", "must be >= 1, got 0"),
    (vectorstore(top_k=500), "tools[0].top_k", "must be <= 100, got 500"),
    (vectorstore(top_k="many"), "tools[0].top_k", "must be an integer, got 'many'"),
    (vectorstore(min_similarity_score=1.5), "tools[0].min_similarity_score", "got 1.5"),
    (vectorstore(min_similarity_score=-0.1), "tools[0].min_similarity_score", "got -0.1"),
    (vectorstore(rerank="maybe"), "tools[0].rerank", "true or false, got 'maybe'"),
    (vectorstore(rerank_top_n=0), "tools[0].rerank_top_n", "got 0"),
    (vectorstore(rerank_top_n=1001), "tools[0].rerank_top_n", "must be <= 1000, got 1001"),
    (vectorstore(rerank_on="summary"), "tools[0].rerank_on", "got 'summary'"),
    (vectorstore(topk=3), "tools[0].topk", "unknown key; allowed keys: type, name"),
    (vectorstore(type="vectorstores"), "tools[0].type", "got 'vectorstores'"),
    (vectorstore(type=_DROP), "tools[0].type", "required, but missing (one of 'vectorstore'"),
    (
        vectorstore(rerank=True),
        "tools[0]",
        "reranker configuration required when rerank is enabled",
    ),
    (
        vectorstore(reranker={"provider": "jina", "api_key": "${COHERE_API_KEY}"}),
        "tools[0].reranker.provider",
        "must be one of 'cohere', 'vllm', got 'jina'",
    ),
    (
        vectorstore(reranker={"provider": "cohere"}),
        "tools[0].reranker.api_key",
        "required",
    ),
    (
        vectorstore(reranker={"provider": "cohere", "api_key": "${EMPTY}"}),
        "tools[0].reranker.api_key",
        "must not be empty",
    ),
    (
        vectorstore(reranker={"provider": "cohere", "api_key": "${COHERE_API_KEY}", "x": 1}),
        "tools[0].reranker.x",
        "unknown key; allowed keys: provider, api_key, model, base_url",
    ),
    (
        vectorstore(
            reranker={"provider": "cohere", "api_key": "${COHERE_API_KEY}", "base_url": "gw:80"}
        ),
        "tools[0].reranker.base_url",
        "http:// or https://",
    ),
    (
        vectorstore(reranker={"provider": "vllm", "url": "ftp://host", "model": "m"}),
        "tools[0].reranker.url",
        "http:// or https://",
    ),
    (
        vectorstore(reranker={"provider": "vllm", "url": "http://h", "model": ""}),
        "tools[0].reranker.model",
        "must not be empty, got ''",
    ),
    (
        vectorstore(reranker={"provider": "vllm", "url": "http://h"}),
        "tools[0].reranker.model",
        "required",
    ),
    (
        vectorstore(reranker={"provider": "vllm", "url": "http://h", "model": "m", "timeout": 0}),
        "tools[0].reranker.timeout",
        "must be > 0, got 0",
    ),
    (vectorstore(database={"provider": "mysql"}), "tools[0].database.provider", "got 'mysql'"),
    (
        vectorstore(database={"connection_string": "${REDIS_URL}"}),
        "tools[0].database.provider",
        "required",
    ),
    (
        vectorstore(database={"provider": "redis"}),
        "tools[0].database",
        "provider 'redis' needs connection_string",
    ),
    (
        vectorstore(database={"provider": "redis", "connection_string": "http://db:6379"}),
        "tools[0].database.connection_string",
        "must start with redis:// or rediss://, got 'http://db:6379'",
    ),
    (  # a misspelt model: refused when the file is read, not as a traceback when it is built
        vectorstore(embedding_model="text-embeding-3-small"),
        "tools[0].embedding_model",
        "or 'sentence-transformers/<name>' (unset: the local all-MiniLM-L6-v2), got "
        "'text-embeding-3-small'",
    ),
    (
        vectorstore(database={"provider": "redis", "connection_string": "redis://db:6379/prod"}),
        "tools[0].database.connection_string",
        "the path must be a database number such as /0 (Redis databases have no names; "
        "index_name keeps stores apart), got path '/prod'",
    ),
    (
        vectorstore(database={"provider": "in-memory", "connection_string": "${REDIS_URL}"}),
        "tools[0].database",
        "connection_string only applies to provider 'redis', got provider 'in-memory'",
    ),
    (
        vectorstore(database={"provider": "in-memory", "vector_algorithm": "HNSW"}),
        "tools[0].database",
        "vector_algorithm only applies to provider 'redis', got provider 'in-memory'",
    ),
    (
        vectorstore(database={**REDIS_DB, "vector_algorithm": "IVF"}),
        "tools[0].database.vector_algorithm",
        "must be 'HNSW' or 'FLAT', got 'IVF'",
    ),
    (
        vectorstore(database={**REDIS_DB, "distance_metric": "cosine"}),
        "tools[0].database.distance_metric",
        "got 'cosine'",
    ),
    (
        vectorstore(database={**REDIS_DB, "index_name": "my index"}),
        "tools[0].database.index_name",
        "got 'my index'",
    ),
    (
        vectorstore(database={**REDIS_DB, "fallback_to_memory": "sometimes"}),
        "tools[0].database.fallback_to_memory",
        "must be true or false, got 'sometimes'",
    ),
    (hierarchical(top_k=101), "tools[0].top_k", "must be <= 100, got 101"),
    (hierarchical(context_timeout=0), "tools[0].context_timeout", "must be > 0, got 0"),
    (  # .inf: every rerank failed (OverflowError: timestamp out of range), order kept
        vectorstore(
            reranker={"provider": "vllm", "url": "http://h", "model": "m", "timeout": float("inf")}
        ),
        "tools[0].reranker.timeout",
        "must be a finite number, got inf",
    ),
    (hierarchical(context_timeout=float("inf")), "tools[0].context_timeout", "got inf"),
    (  # .inf seconds is no TTL Redis can take
        vectorstore(database={**REDIS_DB, "embedding_cache_ttl_days": float("inf")}),
        "tools[0].database.embedding_cache_ttl_days",
        "must be a finite number, got inf",
    ),
    (  # .inf passed the config, then HybridRetriever refused it with a traceback
        hierarchical(search_weights={"semantic": float("inf")}),
        "tools[0].search_weights.semantic",
        "must be a finite number, got inf",
    ),
    (  # found 2026-12-07: loaded, with the default description blank ("Search the documents")
        hierarchical(source="   "),
        "tools[0].source",
        "must name a file or folder, not only spaces, got '   '",
    ),
    (hierarchical(context_timeout=-5), "tools[0].context_timeout", "must be > 0, got -5"),
    # found 2026-12-07: past a week, waits overflow the clock (OverflowError on every file or
    # request), and an address-space limit past 2**63 killed every conversion worker at start
    (hierarchical(max_convert_seconds=float("inf")), "tools[0].max_convert_seconds", "got inf"),
    (hierarchical(max_convert_seconds=1e12), "tools[0].max_convert_seconds", "must be <= 604800"),
    (
        hierarchical(max_convert_memory_bytes=2**63),
        "tools[0].max_convert_memory_bytes",
        f"must be <= {2**62}, got {2**63}",
    ),
    (  # pydantic's own words were "Unable to parse input string as an integer, exceeded ..."
        hierarchical(max_convert_memory_bytes=1e30),
        "tools[0].max_convert_memory_bytes",
        f"must be <= {2**62}, got 1e+30",
    ),
    (hierarchical(context_timeout=1e12), "tools[0].context_timeout", "must be <= 604800"),
    # found 2026-12-07: no upper bound; 1e12 days failed every Redis cache write (past its
    # clock), a million contexts in flight started a thread per chunk, past any rate limit,
    # and a cap past any model's own was refused by the API on every chunk
    (
        vectorstore(database={**REDIS_DB, "embedding_cache_ttl_days": 1e12}),
        "tools[0].database.embedding_cache_ttl_days",
        "must be <= 36500, got 1000000000000.0",
    ),
    (
        hierarchical(context_concurrency=1_000_000),
        "tools[0].context_concurrency",
        "must be <= 1024, got 1000000",
    ),
    (
        hierarchical(context_max_tokens=10**9),
        "tools[0].context_max_tokens",
        "must be <= 128000, got 1000000000",
    ),
    (hierarchical(context_max_tokens=1e30), "tools[0].context_max_tokens", "must be <= 128000"),
    (
        vectorstore(embedding_model="text-embedding-3-small", embedding_timeout=1e12),
        "tools[0].embedding_timeout",
        "must be <= 604800, got 1000000000000.0",
    ),
    (
        vectorstore(
            reranker={"provider": "vllm", "url": "http://h", "model": "m", "timeout": 1e12}
        ),
        "tools[0].reranker.timeout",
        "must be <= 604800, got 1000000000000.0",
    ),
    (
        vectorstore(database={"provider": "qdrant", "url": "http://h", "timeout": 1e12}),
        "tools[0].database.timeout",
        "must be <= 604800",
    ),
    (
        vectorstore(embedding_model="text-embedding-3-small", embedding_timeout=0),
        "tools[0].embedding_timeout",
        "must be > 0, got 0",
    ),
    (
        vectorstore(embedding_model="text-embedding-3-small", embedding_timeout=float("inf")),
        "tools[0].embedding_timeout",
        "must be a finite number, got inf",
    ),
    (  # the local model sends no request: a timeout for it would be a setting that does nothing
        hierarchical(embedding_timeout=30),
        "tools[0].embedding_timeout",
        "applies to an OpenAI embedding_model (each request to its API); the local default "
        "(embedding_model unset) runs in this process, with no requests to time out (remove "
        "embedding_timeout), got 30",
    ),
    (hierarchical(context_timeout="soon"), "tools[0].context_timeout", "got 'soon'"),
    (
        hierarchical(contextual_embeddings=True),
        "tools[0]",
        "contextual_embeddings is true but context_model is not set",
    ),
    (
        hierarchical(context_model={"provider": "anthropic"}),
        "tools[0].context_model.name",
        "required",
    ),
    (  # passed validation, then ingest ended in a traceback from the tool's wiring
        hierarchical(context_model={"provider": "ollama", "name": "llama3"}),
        "tools[0].context_model.provider",
        "must be 'openai' or 'anthropic', got 'ollama'",
    ),
    (
        hierarchical(context_model={"provider": "OpenAI", "name": "m"}),
        "tools[0].context_model.provider",
        "got 'OpenAI'",
    ),
    (  # was silently dropped: ChatAnthropic was built without it
        hierarchical(
            context_model={"provider": "anthropic", "name": "m", "base_url": "http://gw/v1"}
        ),
        "tools[0].context_model",
        "base_url is for provider openai (an OpenAI-compatible server), got provider "
        "'anthropic' with base_url 'http://gw/v1'",
    ),
    (
        hierarchical(context_model={"provider": "openai", "name": "m", "temperature": 3}),
        "tools[0].context_model.temperature",
        "must be <= 2, got 3",
    ),
    (
        hierarchical(context_model={"provider": "openai", "name": "m", "base_url": "localhost"}),
        "tools[0].context_model.base_url",
        "got 'localhost'",
    ),
    (hierarchical(context_max_tokens=0), "tools[0].context_max_tokens", "must be > 0, got 0"),
    (hierarchical(context_concurrency=-1), "tools[0].context_concurrency", "got -1"),
    (hierarchical(max_chunk_tokens=10), "tools[0].max_chunk_tokens", "must be >= 50, got 10"),
    (
        hierarchical(max_table_chunk_tokens=1),
        "tools[0].max_table_chunk_tokens",
        "must be >= 2, got 1",
    ),
    (hierarchical(expand_hops=4), "tools[0].expand_hops", "must be <= 3, got 4"),
    (hierarchical(expand_limit=0), "tools[0].expand_limit", "must be >= 1, got 0"),
    (hierarchical(expand_limit=101), "tools[0].expand_limit", "must be <= 100, got 101"),
    (hierarchical(expand_direction="up"), "tools[0].expand_direction", "got 'up'"),
    (
        hierarchical(search_weights={"semantic": -1}),
        "tools[0].search_weights.semantic",
        "must be >= 0, got -1",
    ),
    (
        hierarchical(search_weights={"semantic": 0, "keyword": 0, "exact": 0}),
        "tools[0].search_weights",
        "are all 0",
    ),
    (
        hierarchical(search_weights={"dense": 1}),
        "tools[0].search_weights.dense",
        "unknown key; allowed keys: semantic, keyword, exact",
    ),
    (
        hierarchical(keyword_index={"provider": "elastic"}),
        "tools[0].keyword_index.provider",
        "got 'elastic'",
    ),
    (
        hierarchical(keyword_index={"provider": "opensearch"}),
        "tools[0].keyword_index",
        "provider 'opensearch' needs endpoint",
    ),
    (
        hierarchical(keyword_index={"provider": "opensearch", "endpoint": "localhost:9200"}),
        "tools[0].keyword_index.endpoint",
        "got 'localhost:9200'",
    ),
    (
        hierarchical(keyword_index={"provider": "in-memory", "endpoint": "http://h:9200"}),
        "tools[0].keyword_index",
        "endpoint only applies to provider 'opensearch', got provider 'in-memory'",
    ),
    (
        hierarchical(
            keyword_index={"provider": "opensearch", "endpoint": "http://h", "username": "u"}
        ),
        "tools[0].keyword_index",
        "username and password go together",
    ),
    (
        hierarchical(
            keyword_index={
                "provider": "opensearch",
                "endpoint": "http://h",
                "username": "u",
                "password": "${COHERE_API_KEY}",
                "api_key": "${COHERE_API_KEY}",
            }
        ),
        "tools[0].keyword_index",
        "either api_key or username/password",
    ),
    (
        hierarchical(
            keyword_index={"provider": "opensearch", "endpoint": "http://h", "timeout": 0}
        ),
        "tools[0].keyword_index.timeout",
        "must be >= 1, got 0",
    ),
    (
        hierarchical(
            keyword_index={"provider": "opensearch", "endpoint": "http://h", "timeout_seconds": 121}
        ),
        "tools[0].keyword_index.timeout_seconds",
        "must be <= 120, got 121",
    ),
    (
        hierarchical(
            keyword_index={
                "provider": "opensearch",
                "endpoint": "http://h",
                "timeout": 5,
                "timeout_seconds": 5,
            }
        ),
        "tools[0].keyword_index",
        "timeout is an alias of timeout_seconds",
    ),
    (
        hierarchical(
            keyword_index={"provider": "opensearch", "endpoint": "http://h", "index_name": "Bad"}
        ),
        "tools[0].keyword_index.index_name",
        "got 'Bad'",
    ),
]


@pytest.mark.parametrize(("tool", "path", "fragment"), RULES)
def test_each_invalid_value_names_file_field_and_value(
    tmp_path: Path, tool: dict[str, Any], path: str, fragment: str
) -> None:
    pattern = re.escape(f"agent.yaml: {path}: ") + ".*" + re.escape(fragment)
    with pytest.raises(ConfigError, match=pattern):
        load_tools(tmp_path, tool)


def test_the_largest_ttl_concurrency_and_context_length_load(tmp_path: Path) -> None:
    """The bounds themselves are taken: a century of cache, 1024 requests, 128000 tokens."""
    config = load_tools(
        tmp_path,
        vectorstore(database={**REDIS_DB, "embedding_cache_ttl_days": 36_500}),
        hierarchical(context_concurrency=1024, context_max_tokens=128_000),
    )
    kb, legal = config.tools
    assert kb.database.embedding_cache_ttl_days == 36_500  # type: ignore[union-attr]  # redis
    assert (legal.context_concurrency, legal.context_max_tokens) == (1024, 128_000)  # type: ignore[union-attr]  # hierarchical


def test_second_tool_is_reported_with_its_index(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"agent\.yaml: tools\[1\]\.top_k: .*got 0\.$"):
        load_tools(tmp_path, vectorstore(), vectorstore(name="b", top_k=0))


def test_several_errors_are_one_line_each(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_tools(tmp_path, vectorstore(top_k=0, min_similarity_score=3))
    lines = str(info.value).splitlines()
    assert len(lines) == 2
    assert all(line.startswith(str(tmp_path / "agent.yaml")) for line in lines)


def test_a_number_for_a_section_id_says_to_quote_it(tmp_path: Path) -> None:
    """Found 2026-12-07: `section_id: 1.10` said only "got 1.1" (YAML's number, not the text)."""
    path = write(
        tmp_path,
        "tools: [{type: vectorstore, name: kb, source: d}]\n"
        "tests: [{query: x, section_id: 1.10}]\n",
    )
    with pytest.raises(ConfigError) as info:
        load_agent_config(path, environ={})
    assert str(info.value) == (
        f"{path}: tests[0].section_id: must be a string (write it in quotes: YAML reads an "
        "unquoted 1.10 as the number 1.1), got 1.1."
    )


def test_duplicate_tool_names_are_rejected(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"tools\[0\] and tools\[1\] are both named 'kb'"):
        load_tools(tmp_path, vectorstore(), hierarchical(name="kb"))


def test_two_tools_pinning_one_corpus_id_on_other_sources_are_rejected(tmp_path: Path) -> None:
    """Found 2026-12-07: accepted, then each tool's ingest deleted the other's chunks (one
    namespace, cleanup to its own source), run after run."""
    with pytest.raises(ConfigError) as info:
        load_tools(
            tmp_path,
            hierarchical(name="ta", source="a", corpus_id="shared"),
            hierarchical(name="tb", source="b", corpus_id="shared"),
        )
    assert str(info.value) == (
        f"{tmp_path / 'agent.yaml'}: tools[0] ('ta', source a) and tools[1] ('tb', source b) "
        "both pin corpus_id 'shared': a corpus is one source, so each ingest would delete the "
        "chunks of the other's files; give each its own corpus_id."
    )


def test_two_tools_pinning_one_corpus_id_on_one_source_load(tmp_path: Path) -> None:
    """One corpus searched by two tools (other top_k, other description): the same chunks."""
    agent = load_tools(
        tmp_path,
        hierarchical(name="ta", source="docs", corpus_id="shared"),
        hierarchical(name="tb", source=f"{tmp_path}/docs/", corpus_id="shared", top_k=3),
        hierarchical(name="tc", source="other", corpus_id="own"),
    )
    assert [tool.corpus_id for tool in agent.tools] == ["shared", "shared", "own"]


def _redis(url: str, **more: str) -> dict[str, str]:
    return {"provider": "redis", "connection_string": url, **more}


def _postgres(url: str, **more: str) -> dict[str, str]:
    return {"provider": "postgres", "connection_string": url, **more}


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (_redis("redis://cache"), _redis("redis://cache", index_name="team_b")),
        (_redis("redis://cache-a"), _redis("redis://cache-b", index_name="team_b")),
        (_postgres("postgresql://pg/a"), _postgres("postgresql://pg/a", table_name="team_b")),
        ({"provider": "qdrant", "path": "qa"}, {"provider": "qdrant", "path": "qb"}),
        ({"provider": "in-memory"}, {"provider": "in-memory"}),  # <store>/<tool name> each
        ({"provider": "qdrant", "location": ":memory:"}, {"provider": "in-memory"}),
    ],
)
def test_tools_pinning_one_corpus_id_in_two_stores_load(
    tmp_path: Path, first: dict[str, str], second: dict[str, str]
) -> None:
    """Found 2026-12-07: refused though two stores hold two namespaces that cannot clash (the
    check compared sources and chunk settings, never where the chunks are kept)."""
    agent = load_tools(
        tmp_path,
        hierarchical(name="ta", source="a", corpus_id="shared", database=first),
        vectorstore(name="tb", source="b", corpus_id="shared", database=second),
    )
    assert [tool.corpus_id for tool in agent.tools] == ["shared", "shared"]


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (_redis("redis://Cache:6379/0"), _redis("${REDIS_AT_CACHE}")),  # one server, spelt twice
        (_postgres("postgresql://pg:5432/a"), _postgres("postgresql://pg/a")),
        # found 2026-12-07 (a second probe): one database spelt two ways was taken for two
        # stores, and each tool's ingest deleted the other's chunks; the server is left out
        (
            _postgres("postgresql://postgres@pg:5432"),
            _postgres("postgresql://postgres@pg/postgres"),
        ),
        (_redis("redis://cache/1"), _redis("redis://cache?db=1")),
        (_redis("redis://localhost"), _redis("redis://127.0.0.1")),
        (_redis("redis://cache-a:6379"), _redis("redis://cache-b:6379")),  # one index name
        (_postgres("postgresql://pg/a"), _postgres("postgresql://pg/b")),  # one table name
        (
            {"provider": "qdrant", "url": "http://q-a:6333"},
            {"provider": "qdrant", "url": "http://q-b"},
        ),
        ({"provider": "qdrant", "path": "q"}, {"provider": "qdrant", "path": "./q/"}),
        (_redis("redis://cache"), None),  # unset: the project's database may be that one
        (None, None),
    ],
)
def test_tools_pinning_one_corpus_id_in_one_store_are_still_rejected(
    tmp_path: Path, first: dict[str, str] | None, second: dict[str, str] | None
) -> None:
    (tmp_path / "agent.yaml").write_text(
        yaml.safe_dump(
            {
                "tools": [
                    hierarchical(name="ta", source="a", corpus_id="shared", database=first),
                    vectorstore(name="tb", source="b", corpus_id="shared", database=second),
                ]
            }
        ),
        encoding="utf-8",
    )
    environ = {**ENV, "REDIS_AT_CACHE": "redis://:pw@cache/0"}
    with pytest.raises(ConfigError, match=r"both pin corpus_id 'shared': a corpus is one source"):
        load_agent_config(tmp_path / "agent.yaml", environ=environ)


@pytest.mark.parametrize(
    ("first", "second", "inner", "outer"),
    [
        ("pc", "pc:b", "pc:b", "pc"),
        ("kb:v2", "kb", "kb:v2", "kb"),  # either order
        ("kb", "kb:v2:x", "kb:v2:x", "kb"),
        ("kb", "kb:", "kb:", "kb"),
    ],
)
def test_tools_pinning_one_corpus_id_on_nesting_redis_indexes_are_one_store(
    tmp_path: Path, first: str, second: str, inner: str, outer: str
) -> None:
    """Found 2026-12-07 (late probe): 'pc' and 'pc:b' were two stores by store_key, so both
    tools loaded, but the index 'pc' (prefix 'pc:') covers every key of 'pc:b': each one's
    ingest deleted the other's chunks. Refused as for one index, renaming as the way out."""
    one = _redis("redis://cache", index_name=first)
    two = _redis("redis://cache", index_name=second)
    tools = [
        hierarchical(name="ta", source="a", corpus_id="shared", database=one),
        vectorstore(name="tb", source="b", corpus_id="shared", database=two),
    ]
    (tmp_path / "agent.yaml").write_text(yaml.safe_dump({"tools": tools}), encoding="utf-8")
    with pytest.raises(ConfigError) as refused:
        load_agent_config(tmp_path / "agent.yaml", environ=ENV)
    assert str(refused.value).endswith(
        "both pin corpus_id 'shared': a corpus is one source, so each ingest would delete the "
        f"chunks of the other's files; index_name {inner!r} is {outer!r} followed by ':', so "
        f"the index {outer!r} covers its keys on one server; rename one index_name so that "
        "neither is the other's followed by ':' (two stores then hold two corpora)."
    )


@pytest.mark.parametrize(
    ("first", "second"), [("kb:a", "kb:b"), ("kb", "kbx"), ("kb", "kb_v2"), ("kb:v2", "kb:v")]
)
def test_tools_pinning_one_corpus_id_on_redis_indexes_that_do_not_nest_load(
    tmp_path: Path, first: str, second: str
) -> None:
    agent = load_tools(
        tmp_path,
        hierarchical(
            name="ta", source="a", corpus_id="shared",
            database=_redis("redis://cache", index_name=first),
        ),
        vectorstore(
            name="tb", source="b", corpus_id="shared",
            database=_redis("redis://cache", index_name=second),
        ),
    )  # fmt: skip
    assert [tool.corpus_id for tool in agent.tools] == ["shared", "shared"]


def test_tools_in_two_stores_sharing_one_opensearch_index_are_rejected(tmp_path: Path) -> None:
    """Their keyword chunks would meet in one index and namespace: one store after all."""
    keywords = {"provider": "opensearch", "endpoint": "http://search:9200"}
    with pytest.raises(ConfigError, match=r"both pin corpus_id 'shared'"):
        load_tools(
            tmp_path,
            hierarchical(
                name="ta",
                source="a",
                corpus_id="shared",
                keyword_index=keywords,
                database=_redis("redis://cache-a"),
            ),
            hierarchical(
                name="tb",
                source="b",
                corpus_id="shared",
                keyword_index=keywords,
                database=_redis("redis://cache-b"),
            ),
        )


def test_two_tool_types_pinning_one_corpus_id_on_one_source_are_rejected(
    tmp_path: Path,
) -> None:
    """Found 2026-12-07: a vectorstore and a hierarchical_document tool on one source, one
    corpus_id, one store: each ingest deleted and re-embedded the other's chunks, forever."""
    with pytest.raises(ConfigError) as info:
        load_tools(
            tmp_path,
            vectorstore(name="flat", source="docs", corpus_id="team"),
            hierarchical(name="tree", source="./docs/", corpus_id="team"),
        )
    assert str(info.value) == (
        f"{tmp_path / 'agent.yaml'}: tools[0] ('flat', type 'vectorstore') and tools[1] "
        "('tree', type 'hierarchical_document') both pin corpus_id 'team': a corpus is one "
        "set of chunks, so each ingest would replace the chunks the other wrote; give each "
        "its own corpus_id, or the same type."
    )


_CONTEXTS = {"provider": "openai", "name": "gpt-4o-mini"}


@pytest.mark.parametrize(
    ("first", "second", "shown"),
    [
        (
            {"max_chunk_tokens": 60},
            {},
            "max_chunk_tokens 60) and tools[1] ('b', max_chunk_tokens 800)",
        ),
        (
            {"max_table_chunk_tokens": None},
            {},
            "max_table_chunk_tokens null) and tools[1] ('b', max_table_chunk_tokens 200)",
        ),
        ({"long_text": "first"}, {}, "long_text 'first') and tools[1] ('b', long_text 'fit')"),
        (
            {"embedding_model": "text-embedding-3-small"},
            {},
            "embedding_model 'text-embedding-3-small') and tools[1] ('b', embedding_model "
            "'sentence-transformers/all-MiniLM-L6-v2')",
        ),
        (
            {"contextual_embeddings": True, "context_model": _CONTEXTS},
            {},
            "contextual_embeddings true) and tools[1] ('b', contextual_embeddings false)",
        ),
        (
            {"contextual_embeddings": True, "context_model": _CONTEXTS},
            {"contextual_embeddings": True, "context_model": {**_CONTEXTS, "temperature": 0.5}},
            "context_model 'openai:gpt-4o-mini at temperature 0') and tools[1] ('b', "
            "context_model 'openai:gpt-4o-mini at temperature 0.5')",
        ),
        (
            {"contextual_embeddings": True, "context_model": _CONTEXTS},
            {
                "contextual_embeddings": True,
                "context_model": _CONTEXTS,
                "context_max_tokens": 50,
            },
            "context_max_tokens 100) and tools[1] ('b', context_max_tokens 50)",
        ),
    ],
)
def test_two_tools_pinning_one_corpus_id_chunking_it_otherwise_are_rejected(
    tmp_path: Path, first: dict[str, Any], second: dict[str, Any], shown: str
) -> None:
    """Found 2026-12-07 (max_chunk_tokens 60 and 800 on one store: each ingest re-split the
    corpus and replaced the other's chunks): any setting the chunks or vectors follow."""
    with pytest.raises(ConfigError) as info:
        load_tools(
            tmp_path,
            hierarchical(name="a", source="docs", corpus_id="team", **first),
            hierarchical(name="b", source="docs", corpus_id="team", **second),
        )
    assert f"tools[0] ('a', {shown} both pin corpus_id 'team'" in str(info.value)


def test_two_tools_pinning_one_corpus_id_searching_it_otherwise_load(tmp_path: Path) -> None:
    """What the chunks do not follow may differ: how the tools search, where the context
    model is served, the spelling of one embedding model, contexts' settings without them."""
    same_chunks = load_tools(
        tmp_path,
        hierarchical(name="a", source="docs", corpus_id="team", context_model=_CONTEXTS),
        hierarchical(
            name="b",
            source="docs",
            corpus_id="team",
            description="Search the team's docs by section number.",
            embedding_model="sentence-transformers/all-MiniLM-L6-v2",
            top_k=3,
            fetch_k=30,
            fusion="rrf",
            search_weights={"semantic": 1, "keyword": 0, "exact": 0},
            keyword_index={"provider": "in-memory", "pair_weight": 0},
            search_strategy="fallback",
            expand_hops=1,
            rerank=True,
            reranker={"provider": "cohere", "api_key": "${COHERE_API_KEY}"},
            max_convert_seconds=5,
            context_max_tokens=50,
        ),
    )
    contexts = load_tools(
        tmp_path,
        *(
            hierarchical(
                name=name,
                source="docs",
                corpus_id="team",
                embedding_model=model,
                contextual_embeddings=True,
                context_model={**_CONTEXTS, **served},
                context_timeout=timeout,
                context_concurrency=concurrency,
            )
            for name, model, served, timeout, concurrency in [
                ("a", "text-embedding-3-small", {}, 30, 10),
                ("b", "openai/text-embedding-3-small", {"base_url": "http://gw/v1"}, None, 2),
            ]
        ),
    )
    flat = load_tools(
        tmp_path,
        vectorstore(name="a", source="docs", corpus_id="team"),
        vectorstore(
            name="b", source="docs", corpus_id="team", top_k=20, rerank_on="contextualized"
        ),
    )
    for agent in (same_chunks, contexts, flat):
        assert [tool.name for tool in agent.tools] == ["a", "b"]


@pytest.mark.parametrize(
    ("tool", "model"),
    [(vectorstore, VectorStoreToolConfig), (hierarchical, HierarchicalDocumentToolConfig)],
)
def test_every_tool_field_is_a_chunk_setting_or_not(
    tmp_path: Path, tool: Any, model: type[VectorStoreToolConfig | HierarchicalDocumentToolConfig]
) -> None:
    """A new field must be classified: one the chunks or vectors follow belongs in
    chunk_settings (compared at load), else two tools pinning one corpus_id fight again."""
    (config,) = load_tools(tmp_path, tool()).tools
    compared, other = set(config.chunk_settings()), model._not_chunk_settings
    assert compared.isdisjoint(other)
    assert sorted(compared | other) == sorted(model.model_fields)


def test_an_empty_tools_list_is_rejected_naming_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "tools: []\n", name="empty.yaml")
    with pytest.raises(ConfigError) as info:
        load_agent_config(path, environ={})
    assert str(info.value).startswith(f"{path}: tools: must contain at least one tool")
    assert "\n" not in str(info.value)


def test_unknown_top_level_key_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"agent\.yaml: evaluations: unknown key; allowed keys"):
        load_tools(tmp_path, vectorstore(), evaluations=[])


def test_tools_must_be_a_list(tmp_path: Path) -> None:
    path = write(tmp_path, "tools: {type: vectorstore}\n")
    with pytest.raises(
        ConfigError, match=r"agent\.yaml: tools: must be a list, got a mapping with keys 'type'\."
    ):
        load_agent_config(path, environ=ENV)


def test_tools_key_is_required(tmp_path: Path) -> None:
    path = write(tmp_path, "name: agent\n")
    with pytest.raises(ConfigError, match=r"agent\.yaml: tools: required, but missing\."):
        load_agent_config(path, environ=ENV)


def test_rerank_message_is_exact_when_built_in_code() -> None:
    with pytest.raises(
        pydantic.ValidationError, match="reranker configuration required when rerank is enabled"
    ):
        VectorStoreToolConfig(
            type="vectorstore", name="kb", description="d", source="s", rerank=True
        )


# --- ${VAR} substitution --------------------------------------------------------------------


def test_env_variable_is_substituted(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        tools:
          - type: vectorstore
            name: kb
            description: "Docs of ${PRODUCT} v${VERSION}"
            source: ${DOCS_DIR}/docs
            top_k: ${TOP_K}
        """,
    )
    env = {"PRODUCT": "Holodeck", "VERSION": "2", "DOCS_DIR": "data", "TOP_K": "7"}
    (tool,) = load_agent_config(path, environ=env).tools
    assert tool.description == "Docs of Holodeck v2"
    assert tool.source == "data/docs"
    assert tool.top_k == 7


def test_unset_variable_names_variable_file_and_field(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        tools:
          - type: vectorstore
            name: kb
            description: d
            source: s
            database: {provider: redis, connection_string: "${MISSING_REDIS_URL}"}
        """,
    )
    with pytest.raises(
        ConfigError,
        match=r"agent\.yaml: tools\[0\]\.database\.connection_string: environment variable "
        r"MISSING_REDIS_URL is not set",
    ):
        load_agent_config(path, environ={})


def test_escaped_reference_stays_literal(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        tools:
          - {type: vectorstore, name: kb, source: s, description: "costs ${PRICE}, not $${PRICE}"}
        """,
    )
    (tool,) = load_agent_config(path, environ={"PRICE": "5"}).tools
    assert tool.description == "costs 5, not ${PRICE}"


def test_substitution_reaches_nested_lists(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        model: {fallbacks: [["${A}", {deep: "${B}"}]]}
        tools:
          - {type: vectorstore, name: kb, source: s, description: d}
        """,
    )
    config = load_agent_config(path, environ={"A": "one", "B": "two"})
    assert config.model == {"fallbacks": [["one", {"deep": "two"}]]}


def test_unset_variable_in_nested_list_names_its_index(tmp_path: Path) -> None:
    path = write(tmp_path, 'description: [ok, "${NOPE}"]\ntools: []\n')
    with pytest.raises(ConfigError, match=r"description\[1\]: environment variable NOPE"):
        load_agent_config(path, environ={})
    model = (
        'model: {fallbacks: [ok, "${NOPE}"]}\ntools: [{type: vectorstore, name: kb, source: s}]\n'
    )
    agent = load_agent_config(write(tmp_path, model), environ={})
    with pytest.raises(ConfigError, match=r"model\.fallbacks\[1\]: environment variable NOPE"):
        chat_model_config(agent, display=str(path), environ={})


README_MODEL = """\
model: {provider: openai, name: gpt-4o-mini, api_key: "${OPENAI_API_KEY}"}
tests:
  - {query: "how do I revoke a token?", source: auth.md, k: 3}
tools:
  - {type: hierarchical_document, name: docs, source: docs}
"""


def test_an_unset_model_key_is_an_error_only_where_the_model_runs(tmp_path: Path) -> None:
    """README's agent.yaml (model: plus tests:) without OPENAI_API_KEY: loading it stopped at
    model.api_key, so `holodeck-rag test` and `ingest --config`, which never call the model,
    could not run in a CI without the key. The file loads; chat_model_config raises the same
    one line, naming the file and the field."""
    path = write(tmp_path, README_MODEL)
    agent = load_agent_config(path, environ={})
    assert [tool.name for tool in agent.tools] == ["docs"]
    assert agent.tests[0].source == "auth.md"
    with pytest.raises(ConfigError) as raised:
        chat_model_config(agent, display=str(path), environ={})
    assert str(raised.value).startswith(
        f"{path}: model.api_key: environment variable OPENAI_API_KEY is not set; export it"
    )
    model = chat_model_config(agent, environ={"OPENAI_API_KEY": FAKE_KEY})
    assert model is not None
    assert model.api_key is not None
    assert model.api_key.get_secret_value() == FAKE_KEY
    keyed = load_agent_config(path, environ={"OPENAI_API_KEY": FAKE_KEY})  # resolved at load
    assert keyed.model == {"provider": "openai", "name": "gpt-4o-mini", "api_key": FAKE_KEY}
    assert chat_model_config(keyed, environ={}) == model


def test_substituted_yaml_syntax_stays_a_string(tmp_path: Path) -> None:
    path = write(
        tmp_path, 'tools:\n  - {type: vectorstore, name: kb, source: s, description: "${D}"}\n'
    )
    injected = "x\ntop_k: 99\n{rerank: true}"
    (tool,) = load_agent_config(path, environ={"D": injected}).tools
    assert tool.description == injected
    assert tool.top_k == 5


def test_keys_are_not_substituted(tmp_path: Path) -> None:
    path = write(
        tmp_path, 'model: {"${K}": v}\ntools: [{type: vectorstore, name: kb, source: s}]\n'
    )
    assert load_agent_config(path, environ={"K": "k"}).model == {"${K}": "v"}


def test_malformed_reference_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, 'description: "price ${unterminated"\ntools: []\n')
    with pytest.raises(
        ConfigError, match=r"agent\.yaml: description: malformed variable reference"
    ):
        load_agent_config(path, environ={})


def test_default_environ_is_os_environ(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOLODECK_TEST_DESCRIPTION", "from the environment")
    path = write(
        tmp_path,
        "tools:\n  - {type: vectorstore, name: kb, source: s, "
        'description: "${HOLODECK_TEST_DESCRIPTION}"}\n',
    )
    assert load_agent_config(path).tools[0].description == "from the environment"


def test_literal_api_key_is_rejected_without_showing_it(tmp_path: Path) -> None:
    tool = vectorstore(reranker={"provider": "cohere", "api_key": FAKE_KEY})
    with pytest.raises(ConfigError, match=r"tools\[0\]\.reranker\.api_key: secrets must come") as e:
        load_tools(tmp_path, tool)
    assert FAKE_KEY not in str(e.value)


LITERAL_PW = "literalpw123"


@pytest.mark.parametrize(
    ("text", "field"),
    [
        (
            "database: {provider: redis, connection_string: 'redis://:literalpw123@h:6379'}",
            "tools[0].database.connection_string",
        ),
        (
            "database: {provider: redis, connection_string: 'redis://h:6379/0?password=literalpw123'}",
            "tools[0].database.connection_string",
        ),
        (
            "database: {provider: postgres, connection_string: '${PG}', "
            "read_replicas: ['postgresql://u:literalpw123@r/db']}",
            "tools[0].database.read_replicas[0]",
        ),
        (
            "keyword_index: {provider: opensearch, endpoint: 'http://h:9200', username: u, "
            "password: literalpw123}",
            "tools[0].keyword_index.password",
        ),
    ],
)
def test_a_literal_secret_anywhere_in_a_tool_is_refused_naming_the_field(
    tmp_path: Path, text: str, field: str
) -> None:
    path = write(tmp_path, f"tools:\n  - {{type: vectorstore, name: kb, source: s, {text}}}\n")
    with pytest.raises(ConfigError) as e:
        load_agent_config(path, environ={"PG": "postgresql://h/db"})
    (line,) = str(e.value).splitlines()
    assert line.startswith(f"{path}: {field}: ")
    assert "${YOUR_VARIABLE}" in line
    assert LITERAL_PW not in line


def test_a_literal_api_key_under_model_is_refused(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        f"model: {{provider: openai, name: gpt-4o-mini, api_key: sk-{LITERAL_PW}}}\n"
        "tools:\n  - {type: vectorstore, name: kb, source: s}\n",
    )
    with pytest.raises(ConfigError, match=r"agent\.yaml: model\.api_key: secrets must come") as e:
        load_agent_config(path, environ={})
    assert LITERAL_PW not in str(e.value)


@pytest.mark.parametrize(
    "url",
    [
        "redis://localhost:6379",
        "redis://h:6379/0?db=2&protocol=3",
        "postgresql://postgres@127.0.0.1:5432/db",  # a user name, no password
        "redis://:${REDIS_PASSWORD}@h:6379",  # the password from the environment
        "redis://h:6379/0?password=${REDIS_PASSWORD}",
    ],
)
def test_a_url_without_a_literal_password_may_be_written_as_it_is(tmp_path: Path, url: str) -> None:
    provider = "postgres" if url.startswith("postgresql") else "redis"
    path = write(
        tmp_path,
        "tools:\n  - {type: vectorstore, name: kb, source: s, "
        f"database: {{provider: {provider}, connection_string: '{url}'}}}}\n",
    )
    (tool,) = load_agent_config(path, environ={"REDIS_PASSWORD": "from-env"}).tools
    assert tool.database is not None


def test_a_literal_secret_in_the_holodeck_config_vectorstore_is_refused(
    dirs: tuple[Path, Path],
) -> None:
    project, home = dirs
    path = holodeck_config(
        project,
        f"vectorstore: {{provider: qdrant, url: 'http://h:6333', api_key: {LITERAL_PW}}}\n",
    )
    with pytest.raises(ConfigError) as e:
        resolve_database_config(None, project_dir=project, home_dir=home, environ={})
    assert str(e.value).startswith(f"{path}: vectorstore.api_key: secrets must come from the")
    assert LITERAL_PW not in str(e.value)
    holodeck_config(
        home,
        f"vectorstore: {{provider: redis, connection_string: 'redis://:{LITERAL_PW}@h'}}\n",
    )
    (project / ".holodeck" / "config.yaml").unlink()
    with pytest.raises(ConfigError, match=r"vectorstore\.connection_string: a URL with a password"):
        resolve_database_config(None, project_dir=project, home_dir=home, environ={})


# --- file-level problems --------------------------------------------------------------------


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"nope\.yaml: file not found"):
        load_agent_config(tmp_path / "nope.yaml")


def test_directory_instead_of_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is a directory"):
        load_agent_config(tmp_path)


_NOT_A_BOOLEAN = "not a boolean (YAML reads yes/no, on/off, true/false as one)"


def _tool_error(tmp_path: Path, entry: str) -> tuple[Path, str]:
    """The agent.yaml of one tool with ``entry`` among its fields, and its ConfigError."""
    path = write(
        tmp_path, f"tools:\n  - {{type: hierarchical_document, name: kb, source: d, {entry}}}\n"
    )
    with pytest.raises(ConfigError) as error:
        load_agent_config(path, environ={})
    return path, str(error.value)


@pytest.mark.parametrize(
    ("entry", "field", "kind", "value"),
    [
        ("top_k: yes", "tools[0].top_k", "an integer", "true"),
        ("top_k: true", "tools[0].top_k", "an integer", "true"),
        ("expand_hops: on", "tools[0].expand_hops", "an integer", "true"),
        ("fetch_k: off", "tools[0].fetch_k", "an integer", "false"),
        ("rerank_top_n: no", "tools[0].rerank_top_n", "an integer", "false"),
        ("min_similarity_score: true", "tools[0].min_similarity_score", "a number", "true"),
        ("feedback_weight: yes", "tools[0].feedback_weight", "a number", "true"),
        ("context_timeout: on", "tools[0].context_timeout", "a number", "true"),
        ("search_weights: {semantic: no}", "tools[0].search_weights.semantic", "a number", "false"),
        (
            "database: {provider: qdrant, location: ':memory:', timeout: yes}",
            "tools[0].database.timeout",
            "a number",
            "true",
        ),
    ],
)
def test_a_yaml_boolean_for_a_number_is_an_error_naming_file_field_and_value(
    tmp_path: Path, entry: str, field: str, kind: str, value: str
) -> None:
    # pydantic's lax mode read `top_k: yes` as top_k=1, while `top_k: "five"` was refused
    path, error = _tool_error(tmp_path, entry)
    assert error == f"{path}: {field}: must be {kind}, {_NOT_A_BOOLEAN}, got {value}."


@pytest.mark.parametrize(
    ("entry", "field", "kind", "value"),
    [
        ('top_k: "5_0"', "tools[0].top_k", "an integer", "'5_0'"),
        ('min_similarity_score: "0_5"', "tools[0].min_similarity_score", "a number", "'0_5'"),
        # unquoted: YAML 1.1 read 5_0 as 50 before any check saw it (a later probe)
        ("top_k: 5_0", "tools[0].top_k", "an integer", "'5_0'"),
        ("search_weights: {keyword: 0_3}", "tools[0].search_weights.keyword", "a number", "'0_3'"),
    ],
)
def test_a_number_written_with_an_underscore_is_an_error(
    tmp_path: Path, entry: str, field: str, kind: str, value: str
) -> None:
    """Found 2026-12-07: pydantic's lax mode read the text "5_0" (a ${VAR}, a quoted value)
    as 50."""
    path, error = _tool_error(tmp_path, entry)
    assert error == f"{path}: {field}: must be {kind}, written without '_', got {value}."


def test_numbers_are_read_as_yaml_1_2_reads_them(tmp_path: Path) -> None:
    """Found 2026-12-07 (a probe): YAML 1.1 read ``top_k: 012`` as 10 (octal) and
    ``top_k: 1:00`` as 60 (base 60)."""
    line = "tools:\n  - {{type: hierarchical_document, name: kb, source: d, {}}}\n"
    path = write(tmp_path, line.format("top_k: 012, min_similarity_score: 1e-1"))
    tool = load_agent_config(path, environ={}).tools[0]
    assert (tool.top_k, tool.min_similarity_score) == (12, 0.1)
    path, error = _tool_error(tmp_path, "top_k: 1:00")
    assert error == f"{path}: tools[0].top_k: must be an integer, got '1:00'."


def test_embedding_timeout_is_read_for_an_openai_model_and_defaults_to_60_s(
    tmp_path: Path,
) -> None:
    openai = {"embedding_model": "text-embedding-3-small"}
    config = load_tools(
        tmp_path,
        vectorstore(**openai, embedding_timeout=30),
        hierarchical(**openai),
        tool_selection={**openai, "embedding_timeout": "5"},  # as a ${VAR} gives it
    )
    assert [t.embedding_timeout for t in config.tools] == [30.0, 60.0]
    assert config.tool_selection is not None
    assert config.tool_selection.embedding_timeout == 5.0
    with pytest.raises(ConfigError, match=r"tool_selection\.embedding_timeout: applies to an "):
        load_tools(tmp_path, vectorstore(), tool_selection={"embedding_timeout": 5})


def test_model_timeout_defaults_to_120_s_and_is_a_bounded_number(tmp_path: Path) -> None:
    def model(settings: str) -> ChatModelConfig | None:
        text = f"model: {{provider: openai, name: m{settings}}}\n"
        path = write(tmp_path, text + "tools: [{type: vectorstore, name: kb, source: d}]\n")
        return chat_model_config(load_agent_config(path), display="agent.yaml")

    assert model("") == ChatModelConfig(provider="openai", name="m", timeout=120.0)
    assert model(", timeout: 2.5") == ChatModelConfig(provider="openai", name="m", timeout=2.5)
    for bad, said in [("0", "> 0, got 0"), (".inf", "inf"), ("1e9", "<= 604800"), ("on", "")]:
        with pytest.raises(ConfigError, match=rf"^agent\.yaml: model\.timeout: .*{said}"):
            model(f", timeout: {bad}")


@pytest.mark.parametrize("weight", [".nan", ".inf", "-.inf"])
def test_a_non_finite_tool_selection_weight_is_an_error(tmp_path: Path, weight: str) -> None:
    """Found 2026-12-07: loaded, then chat died in fusion with a traceback."""
    path = write(
        tmp_path,
        "tools: [{type: vectorstore, name: kb, source: d}]\n"
        f"tool_selection: {{weights: [1, {weight}]}}\n",
    )
    shown = {".nan": "nan", ".inf": "inf", "-.inf": "-inf"}[weight]
    with pytest.raises(ConfigError) as info:
        load_agent_config(path, environ={})
    assert str(info.value) == (
        f"{path}: tool_selection.weights[1]: must be a finite number, got {shown}."
    )


def test_a_yaml_boolean_in_tool_selection_weights_is_an_error(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "tools: [{type: vectorstore, name: kb, source: d}]\ntool_selection: {weights: [on, 1]}\n",
    )
    with pytest.raises(ConfigError) as error:
        load_agent_config(path, environ={})
    assert str(error.value) == (
        f"{path}: tool_selection.weights[0]: must be a number, {_NOT_A_BOOLEAN}, got true."
    )


def test_numbers_written_as_yaml_numbers_or_variables_still_load(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        tools:
          - {type: hierarchical_document, name: kb, source: d, top_k: 7, fetch_k: "${FETCH_K}",
             min_similarity_score: 1, feedback_weight: 0, search_weights: {semantic: 2}}
        """,
    )
    (tool,) = load_agent_config(path, environ={"FETCH_K": "30"}).tools
    assert isinstance(tool, HierarchicalDocumentToolConfig)
    assert (tool.top_k, tool.fetch_k, tool.min_similarity_score) == (7, 30, 1.0)
    assert (tool.feedback_weight, tool.search_weights.semantic) == (0.0, 2.0)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "the file is empty; expected a mapping with a 'tools:' list."),
        ("# only a comment\n", "the file is empty; expected a mapping with a 'tools:' list."),
        ("- a\n- b\n", "must be a mapping (key: value lines), got a list"),
        ("just a string\n", "got a single value"),
        ("tools: []\n---\ntools: []\n", "expected a single document"),
    ],
)
def test_non_mapping_documents_are_rejected(tmp_path: Path, text: str, fragment: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(fragment)):
        load_agent_config(write(tmp_path, text), environ={})


@pytest.mark.parametrize(
    "flow",
    [
        "{provider: postgres, connection_string: ${POSTGRES_URL}, table_name: docs}",
        "{provider: qdrant, url: 'http://q', api_key: ${QDRANT_API_KEY}}",
    ],
)
def test_an_unquoted_variable_in_a_flow_mapping_says_to_quote_it(tmp_path: Path, flow: str) -> None:
    """Found 2026-12-07: docs/scaling.md showed the first, which YAML cannot parse (the `{` of
    ${...} starts a mapping); the error said only "expected ',' or '}', but got '{'"."""
    path = write(
        tmp_path, f"tools:\n  - {{type: vectorstore, name: kb, source: d, database: {flow}}}\n"
    )
    with pytest.raises(ConfigError) as info:
        load_agent_config(path, environ={})
    assert str(info.value).endswith(
        '(while parsing a flow mapping); inside {...} or [...] quote a ${VAR} value: "${VAR}".'
    )


def test_no_doc_shows_an_unquoted_variable_in_a_flow_mapping() -> None:
    """The flow mappings of README and docs/ (`{provider: ..., key: ${VAR}}`) parse as YAML."""
    root = Path(__file__).parents[2]
    unquoted = re.compile(r"\{[^{}`]*:\s+\$\{")  # inside {...}, a value starting ${
    found = [
        f"{doc.relative_to(root)}: {match.group(0)!r}"
        for doc in [root / "README.md", *sorted((root / "docs").glob("*.md"))]
        if doc.name != "reliability.md"  # it quotes the line as it was found
        for match in unquoted.finditer(doc.read_text(encoding="utf-8"))
    ]
    assert found == []


def test_yaml_syntax_error_reports_line_and_column(tmp_path: Path) -> None:
    path = write(tmp_path, "tools:\n  - type: vectorstore\n    name: [unclosed\n")
    with pytest.raises(ConfigError, match=r"agent\.yaml: line \d+, column \d+: could not parse"):
        load_agent_config(path, environ={})


def test_duplicate_key_is_rejected_with_both_lines(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "tools:\n  - type: vectorstore\n    top_k: 3\n    name: kb\n    top_k: 4\n",
    )
    with pytest.raises(ConfigError, match=r"tools\[0\]\.top_k: duplicate key \(lines 3 and 5\)"):
        load_agent_config(path, environ={})


def test_alias_bomb_is_rejected(tmp_path: Path) -> None:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 10)]
    path = write(tmp_path, "\n".join(lines) + "\ntools: []\n")
    with pytest.raises(ConfigError, match="alias bomb"):
        load_agent_config(path, environ={})


def test_a_long_file_without_aliases_is_no_alias_bomb(tmp_path: Path) -> None:
    """Found 2026-12-07: 1,500 tests: cases (82 KB, no alias) were refused as "a possible alias
    bomb": every value written counted against the alias budget."""
    lines = ["tools:", "  - {type: vectorstore, name: kb, source: docs}", "tests:"]
    for i in range(1500):
        lines += [f"  - query: what is alpha{i}", "    source: doc1.md", "    k: 5"]
    path = write(tmp_path, "\n".join(lines) + "\n")
    assert len(load_agent_config(path, environ={}).tests) == 1500


def test_what_aliases_add_is_counted_across_the_file(tmp_path: Path) -> None:
    """Aliases under the budget each, over it together: the budget is the file's, not a value's."""
    case = "{query: what is alpha, source: doc1.md, k: 5, tool: kb}"  # 9 values, 1 node more
    cases = ", ".join(["*c"] * 1100)  # 1,100 x 9 = 9,900 aliased: under 10,000
    path = write(
        tmp_path,
        f"tools: [{{type: vectorstore, name: kb, source: docs}}]\nx: &c {case}\ntests: [{cases}]\n",
    )
    with pytest.raises(ConfigError, match=r"x: unknown key"):  # loaded: then x is refused
        load_agent_config(path, environ={})
    path.write_text(path.read_text().replace("tests: [", "tests: [*c, " + cases + ", "))
    with pytest.raises(ConfigError, match=r"tests\[\d+\] \(line 2\): its YAML aliases add over"):
        load_agent_config(path, environ={})

    path = tmp_path / "agent.yaml"
    path.write_text("tools: []\n" + "#" * (1024 * 1024), encoding="utf-8")
    with pytest.raises(ConfigError, match="larger than 1048576 bytes"):
        load_agent_config(path, environ={})


def test_non_utf8_file_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "agent.yaml"
    path.write_bytes(b"tools: []\nname: \xff\xfe\n")
    with pytest.raises(ConfigError, match="not UTF-8"):
        load_agent_config(path, environ={})


# --- database precedence --------------------------------------------------------------------

PROJECT_DB = "redis://project-redis:6379"
HOME_DB = "redis://home-redis:6379"


def holodeck_config(base: Path, text: str) -> Path:
    (base / ".holodeck").mkdir(parents=True, exist_ok=True)
    path = base / ".holodeck" / "config.yaml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    return project, home


def with_database(database: dict[str, Any] | None) -> VectorStoreToolConfig:
    return VectorStoreToolConfig.model_validate(vectorstore(database=database))


def test_precedence_tool_database_wins(dirs: tuple[Path, Path]) -> None:
    project, home = dirs
    holodeck_config(project, f"vectorstore: {{provider: redis, connection_string: {PROJECT_DB}}}")
    holodeck_config(home, f"vectorstore: {{provider: redis, connection_string: {HOME_DB}}}")
    tool = with_database({"provider": "redis", "connection_string": "redis://tool:6379"})
    found = resolve_database_config(tool, project_dir=project, home_dir=home, environ={})
    assert found is not None
    assert found.masked_connection_string == "redis://tool:6379"


def test_precedence_project_config_before_home(dirs: tuple[Path, Path]) -> None:
    project, home = dirs
    holodeck_config(
        project,
        f"""
        llm: {{provider: openai, api_key: literal-not-ours}}
        vectorstore:
          provider: redis
          connection_string: {PROJECT_DB}
          index_name: project_index
        """,
    )
    holodeck_config(home, f"vectorstore: {{provider: redis, connection_string: {HOME_DB}}}")
    found = resolve_database_config(
        with_database(None), project_dir=project, home_dir=home, environ={}
    )
    assert found is not None
    assert (found.masked_connection_string, found.index_name) == (PROJECT_DB, "project_index")


def test_precedence_home_config_when_no_project_config(dirs: tuple[Path, Path]) -> None:
    project, home = dirs
    holodeck_config(project, "llm: {provider: openai}\n")  # no vectorstore section: falls through
    holodeck_config(home, "vectorstore: {provider: redis, connection_string: '${HOME_REDIS}'}")
    found = resolve_database_config(
        with_database(None), project_dir=project, home_dir=home, environ={"HOME_REDIS": HOME_DB}
    )
    assert found is not None
    assert found.masked_connection_string == HOME_DB


def test_precedence_nothing_configured_means_in_memory(dirs: tuple[Path, Path]) -> None:
    project, home = dirs
    assert resolve_database_config(with_database(None), project_dir=project, home_dir=home) is None
    assert resolve_database_config(None, project_dir=project, home_dir=home) is None


@pytest.mark.parametrize(
    ("tool", "field", "problem"),
    [
        (vectorstore(source="~nosuchuser9"), "source", "~nosuchuser9 names no user"),
        (
            vectorstore(database={"provider": "qdrant", "path": "~nosuchuser9/q"}),
            "database.path",
            "~nosuchuser9 names no user",
        ),
        (vectorstore(source="docs\0ld"), "source", "must not hold a NUL character"),
        (
            vectorstore(database={"provider": "qdrant", "path": "q\0"}),
            "database.path",
            "must not hold a NUL character",
        ),
    ],
)
def test_a_path_naming_no_user_or_holding_a_nul_is_refused_at_load(
    tmp_path: Path, tool: dict[str, Any], field: str, problem: str
) -> None:
    # ~docs (a / forgotten) raised RuntimeError from Path.expanduser, and a NUL ValueError
    # (embedded null byte), both in a traceback, only when the path was used
    with pytest.raises(ConfigError, match=r"^[^\n]*agent\.yaml: tools\[0\]\.") as caught:
        load_tools(tmp_path, tool)
    message = str(caught.value)
    assert f"tools[0].{field}: {problem}" in message
    assert message.count(", got ") == 1  # the value, once


def test_a_source_whose_name_is_not_utf8_is_kept_and_described_readably() -> None:
    tool = HierarchicalDocumentToolConfig(
        type="hierarchical_document", name="kb", source="caf\udce9"
    )
    assert tool.source == "caf\udce9"  # the path that opens (argv gives it so)
    assert "caf\\xe9" in tool.description  # spelt as the loader spells such file names


def test_a_mapping_or_list_given_for_another_kind_is_named_by_its_keys(tmp_path: Path) -> None:
    # a forgotten `- ` under tools: said "tools: must be a list." with no value
    path = write(tmp_path, "tools:\n  type: vectorstore\n  name: kb\n  source: docs\n")
    with pytest.raises(ConfigError) as caught:
        load_agent_config(path)
    assert str(caught.value).endswith(
        "agent.yaml: tools: must be a list, got a mapping with keys 'type', 'name', 'source'."
    )
    with pytest.raises(ConfigError, match=r"tools\[0\]\.name: must be a string, got a list of 2"):
        load_tools(tmp_path, vectorstore(name=["a", "b"]))


@pytest.mark.parametrize("text", ["", "# settings: none yet\n", "---\n", "\n\n"])
def test_an_empty_settings_file_sets_nothing_in_the_project_or_home(
    dirs: tuple[Path, Path], text: str
) -> None:
    # other programs own the rest of this file: one with nothing in it yet is no error
    project, home = dirs
    holodeck_config(project, text)
    holodeck_config(home, f"vectorstore: {{provider: redis, connection_string: {HOME_DB}}}")
    found = resolve_database_config(None, project_dir=project, home_dir=home, environ={})
    assert found is not None
    assert found.masked_connection_string == HOME_DB
    holodeck_config(home, text)
    assert resolve_database_config(None, project_dir=project, home_dir=home, environ={}) is None


@pytest.mark.parametrize(
    ("text", "kind"), [("- vectorstore\n", "a list"), ("vectorstore\n", "a single value")]
)
def test_a_settings_file_that_is_no_mapping_names_its_own_keys(
    dirs: tuple[Path, Path], text: str, kind: str
) -> None:
    project, home = dirs
    path = holodeck_config(home, text)
    with pytest.raises(ConfigError) as error:
        resolve_database_config(None, project_dir=project, home_dir=home, environ={})
    assert str(error.value) == (
        f"{path}: the document must be a mapping (key: value lines), got {kind}; expected a "
        "mapping of sections, such as 'vectorstore:'."
    )


@pytest.mark.parametrize(
    "key", ["vector_store", "vectorStore", "vectorstor", "database", "vectorstores", "stores"]
)
@pytest.mark.parametrize("where", ["project", "home"])
def test_a_misspelt_vectorstore_section_is_an_error_naming_the_file(
    dirs: tuple[Path, Path], key: str, where: str
) -> None:
    project, home = dirs
    path = holodeck_config(
        project if where == "project" else home,
        f"{key}: {{provider: redis, connection_string: {PROJECT_DB}}}\n",
    )
    with pytest.raises(ConfigError) as info:
        resolve_database_config(None, project_dir=project, home_dir=home, environ={})
    assert str(info.value) == (
        f"{path}: {key}: unknown key; allowed keys: vectorstore (rename {key} to vectorstore)."
    )


def test_other_programs_sections_of_the_holodeck_config_are_left_alone(
    dirs: tuple[Path, Path],
) -> None:
    project, home = dirs
    holodeck_config(
        project,
        """
        providers: {openai: {api_key: literal-not-ours}}
        vectorstores: {default: {provider: postgres, connection_string: postgresql://h/db}}
        deployment: {default_port: 8000}
        """,
    )
    assert resolve_database_config(None, project_dir=project, home_dir=home, environ={}) is None


def test_invalid_project_config_names_file_and_field(dirs: tuple[Path, Path]) -> None:
    project, home = dirs
    holodeck_config(project, "vectorstore: {provider: redis, connection_string: 'mysql://x'}")
    with pytest.raises(
        ConfigError,
        match=r"\.holodeck/config\.yaml: vectorstore\.connection_string: must start with redis://",
    ):
        resolve_database_config(None, project_dir=project, home_dir=home, environ={})


def test_project_config_unset_variable_is_an_error(dirs: tuple[Path, Path]) -> None:
    project, _ = dirs
    path = holodeck_config(project, "vectorstore: {provider: redis, connection_string: '${NOPE}'}")
    with pytest.raises(
        ConfigError, match=r"vectorstore\.connection_string: environment variable NOPE"
    ):
        load_project_database_config(path, environ={})


def test_project_config_other_sections_are_not_substituted(dirs: tuple[Path, Path]) -> None:
    project, _ = dirs
    path = holodeck_config(project, "other: ${UNSET_ELSEWHERE}\n")
    assert load_project_database_config(path, environ={}) is None


# --- secrets never leak ---------------------------------------------------------------------


def test_secrets_are_masked_in_repr_and_str(tmp_path: Path) -> None:
    config = load_tools(
        tmp_path,
        vectorstore(
            database={"provider": "redis", "connection_string": "${SECRET_REDIS}"},
            rerank=True,
            reranker={"provider": "cohere", "api_key": "${COHERE_API_KEY}"},
        ),
        model={"api_key": "${COHERE_API_KEY}"},
    )
    for text in (repr(config), str(config), repr(config.tools[0]), str(config.tools[0].database)):
        assert FAKE_KEY not in text
        assert FAKE_PASSWORD not in text
    database = config.tools[0].database
    assert database is not None
    assert database.masked_connection_string == "redis://:***@db.internal:6380/0"


def test_secrets_are_masked_in_validation_errors(tmp_path: Path) -> None:
    tool = vectorstore(
        top_k=0,
        database={"provider": "redis", "connection_string": "${SECRET_REDIS}", "index_name": "a b"},
        reranker={"provider": "cohere", "api_key": "${COHERE_API_KEY}", "model": ""},
    )
    with pytest.raises(ConfigError) as info:
        load_tools(tmp_path, tool, model={"api_key": "${COHERE_API_KEY}", "bad": 1}, extra=1)
    message = str(info.value)
    assert "tools[0].top_k" in message
    assert FAKE_KEY not in message
    assert FAKE_PASSWORD not in message
    assert info.value.__cause__ is None  # pydantic's text (with raw inputs) is not chained


def test_bad_connection_string_shows_masked_password(tmp_path: Path) -> None:
    tool = vectorstore(
        database={"provider": "redis", "connection_string": f"http://:{FAKE_PASSWORD}@h:6379"}
    )
    with pytest.raises(ConfigError, match=re.escape("got 'http://:***@h:6379'")) as info:
        load_tools(tmp_path, tool)
    assert FAKE_PASSWORD not in str(info.value)


def test_a_postgres_user_name_is_not_scrubbed_from_the_message(tmp_path: Path) -> None:
    """``postgresql://postgres@host``: a user name, no password; ``postgres`` stays readable."""
    path = tmp_path / "agent.yaml"
    tool = hierarchical(database={"provider": "postgres", "url": "${POSTGRES_URL}"})
    path.write_text(yaml.safe_dump({"tools": [tool]}), encoding="utf-8")
    environ = {"POSTGRES_URL": "postgresql://postgres@127.0.0.1:5590/postgres"}
    with pytest.raises(ConfigError) as info:
        load_agent_config(path, environ=environ)
    message = str(info.value)
    assert "provider 'postgres' needs connection_string" in message
    assert "postgresql://postgres@127.0.0.1:5433/postgres" in message
    assert "***" not in message


def test_a_redis_url_for_postgres_names_the_value_once(tmp_path: Path) -> None:
    database = {"provider": "postgres", "connection_string": "redis://127.0.0.1:6391"}
    with pytest.raises(ConfigError) as info:
        load_tools(tmp_path, vectorstore(database=database))
    message = str(info.value)
    assert message.endswith(
        "tools[0].database.connection_string: must start with postgresql://, "
        "got 'redis://127.0.0.1:6391'."
    )
    assert message.count("got") == 1
    replicas = {**database, "connection_string": "postgresql://h/d", "read_replicas": ["redis://r"]}
    with pytest.raises(
        ConfigError, match=r"read_replicas: must start with postgresql://, got 'redis://r'\.$"
    ):
        load_tools(tmp_path, vectorstore(database=replicas))


def test_empty_api_key_is_rejected_and_secret_fields_show_no_value(tmp_path: Path) -> None:
    tool = vectorstore(reranker={"provider": "cohere", "api_key": "${BLANK}"})
    path = tmp_path / "agent.yaml"
    path.write_text(yaml.safe_dump({"tools": [tool]}), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"tools\[0\]\.reranker\.api_key: must not be empty"):
        load_agent_config(path, environ={"BLANK": "  "})


def test_yaml_syntax_error_does_not_quote_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, f"tools:\n  - name: [{FAKE_KEY}\n  oops: : :\n")
    with pytest.raises(ConfigError) as info:
        load_agent_config(path, environ={})
    assert FAKE_KEY not in str(info.value)
    assert info.value.__cause__ is None


# --- reference ------------------------------------------------------------------------------


def test_config_reference_mentions_every_field() -> None:
    text = config_reference_markdown()
    models = [
        AgentConfig,
        VectorStoreToolConfig,
        HierarchicalDocumentToolConfig,
        InMemoryDatabaseConfig,
        RedisDatabaseConfig,
        CohereRerankerConfig,
        VLLMRerankerConfig,
        ContextModelConfig,
        SearchWeights,
        InMemoryKeywordIndexConfig,
        RedisKeywordIndexConfig,
        OpenSearchKeywordIndexConfig,
    ]
    for model in models:
        section = text.split(f"### {model.__name__}\n", 1)[1].split("\n### ", 1)[0]
        for name, field in model.model_fields.items():
            row = next(line for line in section.splitlines() if line.startswith(f"| `{name}` |"))
            assert field.description, f"{model.__name__}.{name} has no attribute docstring"
            assert field.description.split()[0] in row


def _config_model_named(name: str) -> type[pydantic.BaseModel]:
    """The config model a reference section names: exported, or a provider registered by
    another package or an earlier test (``test_backends``' toy), found among the subclasses."""
    import langchain_holodeck

    if name in langchain_holodeck.__all__:
        return getattr(langchain_holodeck, name)  # type: ignore[no-any-return]
    stack: list[type[pydantic.BaseModel]] = [pydantic.BaseModel]
    while stack:
        cls = stack.pop()
        if cls.__name__ == name:
            return cls
        stack.extend(cls.__subclasses__())
    msg = f"no config model named {name!r}"
    raise AssertionError(msg)


def test_every_default_in_the_reference_is_yaml_that_reads_back_as_the_default() -> None:
    text = config_reference_markdown()
    checked = 0
    for section in text.split("### ")[1:]:
        model = _config_model_named(section.split("\n", 1)[0].strip())
        for line in section.splitlines():
            cells = [cell.strip() for cell in line.split(" | ")]
            if not line.startswith("| `") or not cells[2].startswith("`"):
                continue
            name, shown = cells[0].strip("|` "), cells[2].strip("`")
            assert cells[1] != "any", f"{model.__name__}.{name}: a type a user can write"
            field = model.model_fields[name]
            if field.json_schema_extra and "default_text" in field.json_schema_extra:
                continue  # a default described in words
            default = field.get_default(call_default_factory=True)
            wanted = pydantic.TypeAdapter(type(default)).dump_python(default, mode="json")
            assert yaml.safe_load(shown) == wanted, f"{model.__name__}.{name}: {shown}"
            checked += 1
    assert checked > 50


def test_config_reference_shows_defaults_and_rules() -> None:
    text = config_reference_markdown()
    assert "| `top_k` | integer | `5` | 1..100 |" in text
    assert "| `top_k` | integer | `10` | 1..100 |" in text
    assert "required when rerank is true" in text
    assert "`HNSW` or `FLAT`" in text


def test_fetch_k_below_top_k_is_refused_and_the_reference_says_so(tmp_path: Path) -> None:
    # the reference said "at least 2 x top_k are fetched", as if a small fetch_k were raised
    with pytest.raises(ConfigError, match=re.escape("fetch_k (5) must be >= top_k (10)")):
        load_tools(tmp_path, hierarchical(fetch_k=5))
    section = config_reference_markdown().split("### HierarchicalDocumentToolConfig")[1]
    row = next(line for line in section.splitlines() if line.startswith("| `fetch_k` | "))
    assert "| 1..1000; >= top_k |" in row
    assert "a value below ``top_k`` is refused" in row
    assert "``max(fetch_k, 2 x k)``" in row


def test_example_agent_yaml_comments_every_option_of_its_tools() -> None:
    """Its first line promises 'every tool type ..., each option commented'."""
    text = EXAMPLE.read_text(encoding="utf-8")
    _, vector_block, legal_block = text.split("\n  - type: ")
    legal_block = legal_block.split("--- Tool selection")[0]
    blocks = [
        (VectorStoreToolConfig, vector_block),
        (RedisDatabaseConfig, vector_block),
        (VLLMRerankerConfig, vector_block),
        (HierarchicalDocumentToolConfig, legal_block),
        (ContextModelConfig, legal_block),
        (CohereRerankerConfig, legal_block),
        (OpenSearchKeywordIndexConfig, legal_block),
    ]
    missing = [
        f"{model.__name__}.{name}"
        for model, block in blocks
        for name in model.model_fields
        if name != "type" and not re.search(rf"\b{name}\b", block)
    ]
    assert missing == []


@pytest.mark.parametrize("url", ["redis://db:6379", "redis://db:6379/", "rediss://db:6380/2"])
def test_a_redis_url_with_a_numbered_database_or_none_is_accepted(url: str) -> None:
    config = RedisDatabaseConfig(provider="redis", connection_string=pydantic.SecretStr(url))
    assert config.masked_connection_string == url


def test_a_misspelt_tool_selection_model_names_its_field(tmp_path: Path) -> None:
    # chat built the selector from it and died in a ValueError traceback
    agent_yaml = tmp_path / "agent.yaml"
    agent_yaml.write_text(
        "tools: [{type: vectorstore, name: kb, source: docs}]\n"
        "tool_selection: {embedding_model: all-MiniLM}\n",
        encoding="utf-8",
    )
    with pytest.raises(
        ConfigError, match=r"tool_selection\.embedding_model: must be .*'all-MiniLM'"
    ):
        load_agent_config(agent_yaml)
    for good in ("openai/text-embedding-3-small", "sentence-transformers/all-MiniLM-L6-v2"):
        agent_yaml.write_text(
            "tools: [{type: vectorstore, name: kb, source: docs}]\n"
            f"tool_selection: {{embedding_model: {good}}}\n",
            encoding="utf-8",
        )
        assert load_agent_config(agent_yaml).tool_selection.embedding_model == good
