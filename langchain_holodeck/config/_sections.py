"""Section models of the configuration: database, rerankers, context model, fusion, keyword index.

Private: import them from ``langchain_holodeck.config.models``, which re-exports them.
"""

from __future__ import annotations

from typing import Annotated, Literal, TypeAlias
from urllib.parse import urlsplit

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    field_validator,
    model_validator,
)

from langchain_holodeck._redact import mask_url_password

MODEL_CONFIG = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)
"""Shared by every configuration model: unknown keys are errors, instances are immutable."""


def _check_http_url(value: str | None) -> str | None:
    if value is None:
        return None
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        msg = "must be an http:// or https:// URL with a host"
        raise ValueError(msg)
    return value


def _check_secret_not_blank(value: SecretStr | None) -> SecretStr | None:
    if value is not None and not value.get_secret_value().strip():
        msg = "must not be empty (is the environment variable it references empty?)"
        raise ValueError(msg)
    return value


class DatabaseConfig(BaseModel):
    """Where a tool's vectors live: Redis (through langchain-redis) or the in-memory store."""

    model_config = MODEL_CONFIG

    provider: Literal["redis", "in-memory"]
    """Vector store backend."""
    connection_string: SecretStr | None = Field(
        default=None, json_schema_extra={"rule": "redis:// or rediss://; required for redis"}
    )
    """Redis URL such as ``${REDIS_URL}``; a secret (it may embed a password)."""
    index_name: str = Field(default="holodeck_vectors", pattern=r"^[A-Za-z0-9_.:-]+$")
    """Name of the vector index (RediSearch index and key prefix)."""
    vector_algorithm: Literal["HNSW", "FLAT"] = "HNSW"
    """Vector index algorithm: approximate (HNSW) or exact (FLAT)."""
    distance_metric: Literal["COSINE", "L2", "IP"] = "COSINE"
    """Distance metric of the vector index; scores are reported as similarities in [0, 1]."""

    @field_validator("connection_string")
    @classmethod
    def _redis_scheme(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and not value.get_secret_value().startswith(("redis://", "rediss://")):
            msg = "must start with redis:// or rediss://"
            raise ValueError(msg)
        return value

    @model_validator(mode="after")
    def _connection_matches_provider(self) -> DatabaseConfig:
        if self.provider == "redis" and self.connection_string is None:
            msg = (
                "provider 'redis' needs connection_string "
                "(for example redis://localhost:6379 or ${REDIS_URL})"
            )
            raise ValueError(msg)
        if self.provider == "in-memory" and self.connection_string is not None:
            msg = "connection_string is only used with provider 'redis'; remove it for 'in-memory'"
            raise ValueError(msg)
        return self

    @property
    def masked_connection_string(self) -> str | None:
        """The connection string with its password replaced by ``***``: safe to log or show."""
        if self.connection_string is None:
            return None
        return mask_url_password(self.connection_string.get_secret_value())


class CohereRerankerConfig(BaseModel):
    """Cohere's hosted rerank API."""

    model_config = MODEL_CONFIG

    provider: Literal["cohere"]
    """Selects this reranker."""
    api_key: SecretStr = Field(json_schema_extra={"rule": "non-empty; write ${COHERE_API_KEY}"})
    """Cohere API key, from the environment (``${COHERE_API_KEY}``)."""
    model: str = Field(default="rerank-v3.5", min_length=1)
    """Cohere rerank model; any name is accepted, for future models."""

    _api_key_not_blank = field_validator("api_key")(_check_secret_not_blank)


class VLLMRerankerConfig(BaseModel):
    """A reranker model served by vLLM (or any server speaking Cohere's rerank API)."""

    model_config = MODEL_CONFIG

    provider: Literal["vllm"]
    """Selects this reranker."""
    url: str = Field(json_schema_extra={"rule": "http:// or https://"})
    """Base URL of the server, e.g. ``http://localhost:8000``."""
    model: str = Field(min_length=1)
    """Model name the server serves, e.g. ``BAAI/bge-reranker-v2-m3``."""
    timeout: float = Field(default=30.0, gt=0)
    """Seconds to wait for an answer before falling back to the un-reranked order."""

    _url_is_http = field_validator("url")(_check_http_url)


RerankerConfig: TypeAlias = Annotated[
    CohereRerankerConfig | VLLMRerankerConfig, Field(discriminator="provider")
]
"""A reranker, selected by its ``provider`` key."""


class ContextModelConfig(BaseModel):
    """The chat model that writes each chunk's context for contextual embeddings."""

    model_config = MODEL_CONFIG

    provider: str = Field(min_length=1)
    """Model provider as LangChain's ``init_chat_model`` names it: ``anthropic``, ``openai``..."""
    name: str = Field(min_length=1)
    """Model name, e.g. ``claude-3-haiku-20240307``."""
    temperature: float = Field(default=0.0, ge=0, le=2)
    """Sampling temperature."""
    api_key: SecretStr | None = None
    """API key from the environment (``${ANTHROPIC_API_KEY}``); unset: the provider's default."""
    base_url: str | None = Field(default=None, json_schema_extra={"rule": "http:// or https://"})
    """Base URL of an OpenAI-compatible server, for self-hosted models."""

    _base_url_is_http = field_validator("base_url")(_check_http_url)
    _api_key_not_blank = field_validator("api_key")(_check_secret_not_blank)


class SearchWeights(BaseModel):
    """Weights of the dense, keyword and exact-match rankings in reciprocal rank fusion."""

    model_config = MODEL_CONFIG

    semantic: float = Field(default=0.5, ge=0)
    """Weight of the dense (embedding) ranking."""
    keyword: float = Field(default=0.5, ge=0)
    """Weight of the keyword (BM25) ranking (equal to dense by default: best on SciFact)."""
    exact: float = Field(default=0.2, ge=0)
    """Weight of the exact-match ranking (section numbers, quoted phrases)."""

    @model_validator(mode="after")
    def _not_all_zero(self) -> SearchWeights:
        if self.semantic == self.keyword == self.exact == 0:
            msg = "semantic, keyword and exact are all 0; give at least one a positive weight"
            raise ValueError(msg)
        return self


class KeywordIndexConfig(BaseModel):
    """The keyword (BM25) index of a hierarchical document tool."""

    model_config = MODEL_CONFIG

    provider: Literal["in-memory", "redis", "opensearch"] = "in-memory"
    """``in-memory`` (bm25s), ``redis`` (full-text search on the vector index) or ``opensearch``."""
    endpoint: str | None = Field(
        default=None, json_schema_extra={"rule": "http(s) URL; required for opensearch"}
    )
    """OpenSearch URL, e.g. ``https://localhost:9200``."""
    index_name: str = Field(default="holodeck_keywords", pattern=r"^[a-z0-9_.-]+$")
    """OpenSearch index name (lowercase)."""
    username: str | None = None
    """OpenSearch basic-auth user (with ``password``)."""
    password: SecretStr | None = None
    """OpenSearch basic-auth password, from the environment (``${OPENSEARCH_PASSWORD}``)."""
    api_key: SecretStr | None = None
    """OpenSearch API key, from the environment; instead of username and password."""
    verify_certs: bool = True
    """Verify the server's TLS certificate."""
    timeout_seconds: float = Field(
        default=10.0, ge=1, le=120, validation_alias=AliasChoices("timeout_seconds", "timeout")
    )
    """Seconds per OpenSearch request (``timeout`` is accepted as an alias)."""

    _endpoint_is_http = field_validator("endpoint")(_check_http_url)

    @property
    def timeout(self) -> float:
        """``timeout_seconds``, under its older name."""
        return self.timeout_seconds

    @model_validator(mode="before")
    @classmethod
    def _one_timeout_name(cls, data: object) -> object:
        if isinstance(data, dict) and "timeout" in data and "timeout_seconds" in data:
            msg = "timeout is an alias of timeout_seconds; set only timeout_seconds"
            raise ValueError(msg)
        return data

    @model_validator(mode="after")
    def _opensearch_fields(self) -> KeywordIndexConfig:
        if self.provider == "opensearch":
            if self.endpoint is None:
                msg = "provider 'opensearch' needs endpoint (for example https://localhost:9200)"
                raise ValueError(msg)
            if (self.username is None) != (self.password is None):
                msg = "username and password go together; set both or neither"
                raise ValueError(msg)
            if self.api_key is not None and self.password is not None:
                msg = "set either api_key or username/password, not both"
                raise ValueError(msg)
            return self
        only_opensearch = sorted(self.model_fields_set - {"provider"})
        if only_opensearch:
            msg = (
                f"{', '.join(only_opensearch)} only apply to provider 'opensearch', "
                f"got provider {self.provider!r}"
            )
            raise ValueError(msg)
        return self
