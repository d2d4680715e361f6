"""Section models of the configuration: rerankers, context model, fusion weights.

Private: import them from ``langchain_holodeck.config.models``, which re-exports them.
"""

from __future__ import annotations

import os
from typing import Annotated, Literal, TypeAlias
from urllib.parse import urlsplit

from pydantic import (
    AllowInfNan,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SecretStr,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    field_validator,
    model_validator,
)

from langchain_holodeck._defaults import DEFAULT_WEIGHTS, MAX_SECONDS
from langchain_holodeck._masked_url import MaskedUrlStr

MODEL_CONFIG = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)
"""Shared by every configuration model: unknown keys are errors, instances are immutable."""


def _not_a_boolean(kind: str) -> BeforeValidator:
    # pydantic's lax mode takes true as 1: `top_k: yes` (a boolean in YAML) read as top_k=1,
    # and the text "5_0" as 50. Not strict mode, which would refuse the "5" a ${VAR}
    # substitutes as well.
    def check(value: object) -> object:
        if isinstance(value, bool):
            msg = f"must be {kind}, not a boolean (YAML reads yes/no, on/off, true/false as one)"
            raise ValueError(msg)
        if isinstance(value, str) and "_" in value:
            msg = f"must be {kind}, written without '_'"
            raise ValueError(msg)
        return value

    return BeforeValidator(check)


Integer: TypeAlias = Annotated[int, _not_a_boolean("an integer")]
"""``int`` for configuration fields: a YAML boolean is an error, not 1 or 0."""

Number: TypeAlias = Annotated[float, _not_a_boolean("a number")]
"""``float`` for configuration fields: a YAML boolean is an error, not 1.0 or 0.0."""

FiniteNumber: TypeAlias = Annotated[Number, AllowInfNan(allow_inf_nan=False)]
"""``Number`` where no field of its own can say ``allow_inf_nan=False`` (a tuple's items):
``.nan`` and ``.inf`` are errors."""


def spelt(path: str) -> str:
    r"""``path`` with each byte that is not UTF-8 (a surrogate escape) spelt ``\xNN``.

    A folder named in Latin-1 (``caf\xe9``) reaches Python from argv or ``os.listdir`` as
    ``'caf\udce9'``: a path that opens, but a text no UTF-8 encoder (JSON, a tool
    description) takes. Shown and described, it is spelt as the loader spells such file names.
    """
    try:
        raw = path.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate no byte made (a JSON "\ud800")
        return path.encode("utf-8", "backslashreplace").decode("utf-8")
    return raw.decode("utf-8", "backslashreplace")


def check_path(path: str) -> str:
    r"""``path`` if a tool can resolve it, else ``ValueError`` naming the fix.

    Refused: spaces only (a blank ``source`` left the tool's default description blank), a NUL
    character (no file system takes one; a YAML ``"\0"`` escape, as in
    ``"C:\0ld"``, writes it) and ``~user`` naming no user of this machine (``~docs``: a ``/``
    forgotten after ``~``), which ``Path.expanduser`` raised on, in a traceback, only when the
    path was used.
    """
    if path and not path.strip():  # '' is the field's own "must not be empty"
        msg = f"must name a file or folder, not only spaces, got {spelt(path)!r}"
        raise ValueError(msg)
    if "\0" in path:
        msg = (
            f'must not hold a NUL character (\\0; in YAML a double-quoted "\\0" writes one), '
            f"got {spelt(path)!r}"
        )
        raise ValueError(msg)
    user = path[1:].partition("/")[0]
    if path.startswith("~") and user and os.path.expanduser(path) == path:
        msg = (
            f"~{spelt(user)} names no user of this machine; write '~/{spelt(user)}' for that "
            f"folder in the home directory, or './{spelt(path)}' for a folder named so, "
            f"got {spelt(path)!r}"
        )
        raise ValueError(msg)
    return path


def _path_value(value: object, handler: ValidatorFunctionWrapHandler) -> str:
    if isinstance(value, str) and spelt(value) != value:  # bytes that are not UTF-8
        handler(spelt(value))  # its other rules (not empty), on a text pydantic takes
        return check_path(value)
    return check_path(handler(value))


PathStr: TypeAlias = Annotated[str, WrapValidator(_path_value)]
"""``str`` for a path of the configuration (a tool's ``source``, a Qdrant ``path``): no NUL, no
``~user`` naming nobody; a name that is not UTF-8 (from argv, a folder listing) is kept."""


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
    timeout: Number = Field(default=30.0, gt=0, le=MAX_SECONDS, allow_inf_nan=False)
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
    timeout: Number = Field(default=30.0, gt=0, le=MAX_SECONDS, allow_inf_nan=False)
    """Seconds to wait for an answer before falling back to the un-reranked order."""

    _url_is_http = field_validator("url")(check_http_url)


RerankerConfig: TypeAlias = Annotated[
    CohereRerankerConfig | VLLMRerankerConfig, Field(discriminator="provider")
]
"""A reranker, selected by its ``provider`` key."""


class ContextModelConfig(BaseModel):
    """The chat model that writes each chunk's context for contextual embeddings."""

    model_config = MODEL_CONFIG

    provider: Literal["openai", "anthropic"]
    """``openai`` (or an OpenAI-compatible server, with ``base_url``) or ``anthropic``."""
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
    """Base URL of an OpenAI-compatible server, for self-hosted models (provider ``openai``)."""

    _base_url_is_http = field_validator("base_url")(check_http_url)
    _api_key_not_blank = field_validator("api_key")(_check_secret_not_blank)

    @model_validator(mode="after")
    def _base_url_is_openais(self) -> ContextModelConfig:
        if self.base_url is not None and self.provider != "openai":
            msg = (
                f"base_url is for provider openai (an OpenAI-compatible server), got provider "
                f"{self.provider!r} with base_url {self.base_url!r}; remove base_url, or use "
                "provider openai for a compatible server"
            )
            raise ValueError(msg)
        return self


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
