"""Section models of the configuration: rerankers, context model, fusion weights.

Private: import them from ``langchain_holodeck.config.models``, which re-exports them.
"""

from __future__ import annotations

from typing import Annotated, Literal, TypeAlias
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SecretStr,
    field_validator,
    model_validator,
)

from langchain_holodeck._defaults import DEFAULT_WEIGHTS
from langchain_holodeck._masked_url import MaskedUrlStr

MODEL_CONFIG = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)
"""Shared by every configuration model: unknown keys are errors, instances are immutable."""


def _not_a_boolean(kind: str) -> BeforeValidator:
    # pydantic's lax mode takes true as 1: `top_k: yes` (a boolean in YAML) read as top_k=1.
    # Not strict mode, which would refuse the "5" a ${VAR} substitutes as well.
    def check(value: object) -> object:
        if isinstance(value, bool):
            msg = f"must be {kind}, not a boolean (YAML reads yes/no, on/off, true/false as one)"
            raise ValueError(msg)
        return value

    return BeforeValidator(check)


Integer: TypeAlias = Annotated[int, _not_a_boolean("an integer")]
"""``int`` for configuration fields: a YAML boolean is an error, not 1 or 0."""

Number: TypeAlias = Annotated[float, _not_a_boolean("a number")]
"""``float`` for configuration fields: a YAML boolean is an error, not 1.0 or 0.0."""


def check_http_url(value: str | None) -> str | None:
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


class CohereRerankerConfig(BaseModel):
    """Cohere's hosted rerank API."""

    model_config = MODEL_CONFIG

    provider: Literal["cohere"]
    """Selects this reranker."""
    api_key: SecretStr = Field(json_schema_extra={"rule": "non-empty; write ${COHERE_API_KEY}"})
    """Cohere API key, from the environment (``${COHERE_API_KEY}``)."""
    model: str = Field(default="rerank-v3.5", min_length=1)
    """Cohere rerank model; any name is accepted, for future models."""
    base_url: MaskedUrlStr | None = Field(
        default=None, json_schema_extra={"rule": "http:// or https://"}
    )
    """Root URL of a Cohere-compatible gateway or proxy; unset: ``CO_API_URL`` from the
    environment (as Cohere's own client reads it), else Cohere's API."""
    timeout: Number = Field(default=30.0, gt=0, allow_inf_nan=False)
    """Seconds to wait for an answer before falling back to the un-reranked order."""

    _api_key_not_blank = field_validator("api_key")(_check_secret_not_blank)
    _base_url_is_http = field_validator("base_url")(check_http_url)


class VLLMRerankerConfig(BaseModel):
    """A reranker model served by vLLM (or any server speaking Cohere's rerank API)."""

    model_config = MODEL_CONFIG

    provider: Literal["vllm"]
    """Selects this reranker."""
    url: MaskedUrlStr = Field(json_schema_extra={"rule": "http:// or https://"})
    """Base URL of the server, e.g. ``http://localhost:8000``."""
    model: str = Field(min_length=1)
    """Model name the server serves, e.g. ``BAAI/bge-reranker-v2-m3``."""
    timeout: Number = Field(default=30.0, gt=0, allow_inf_nan=False)
    """Seconds to wait for an answer before falling back to the un-reranked order."""

    _url_is_http = field_validator("url")(check_http_url)


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
    temperature: Number = Field(default=0.0, ge=0, le=2)
    """Sampling temperature. Part of each cached context's key: another value makes the next
    ingest write every context again (one LLM call per chunk), each kept per value."""
    api_key: SecretStr | None = None
    """API key from the environment (``${ANTHROPIC_API_KEY}``); unset: the provider's default."""
    base_url: MaskedUrlStr | None = Field(
        default=None, json_schema_extra={"rule": "http:// or https://"}
    )
    """Base URL of an OpenAI-compatible server, for self-hosted models."""

    _base_url_is_http = field_validator("base_url")(check_http_url)
    _api_key_not_blank = field_validator("api_key")(_check_secret_not_blank)


class SearchWeights(BaseModel):
    """Weights of the dense, keyword and exact-match rankings in fusion (convex or RRF)."""

    model_config = MODEL_CONFIG

    semantic: Number = Field(default=DEFAULT_WEIGHTS[0], ge=0, allow_inf_nan=False)
    """Weight of the dense (embedding) ranking (0.7 / 0.3: best on the tuning sets)."""
    keyword: Number = Field(default=DEFAULT_WEIGHTS[1], ge=0, allow_inf_nan=False)
    """Weight of the keyword (BM25) ranking."""
    exact: Number = Field(default=DEFAULT_WEIGHTS[2], ge=0, allow_inf_nan=False)
    """Weight of the exact-match ranking (sections, quoted phrases, symbols, versions, codes)."""

    @model_validator(mode="after")
    def _not_all_zero(self) -> SearchWeights:
        if self.semantic == self.keyword == self.exact == 0:
            msg = "semantic, keyword and exact are all 0; give at least one a positive weight"
            raise ValueError(msg)
        return self
