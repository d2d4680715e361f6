"""The agent-level sections of ``agent.yaml``: the chat ``model`` and retrieval ``tests``.

Private: import them from ``langchain_holodeck.config.models``, which re-exports them.
"""

from __future__ import annotations

from pydantic import BaseModel, Field, SecretStr, field_validator, model_validator

from langchain_holodeck._defaults import DEFAULT_CHAT_TIMEOUT, MAX_SECONDS
from langchain_holodeck._masked_url import MaskedUrlStr
from langchain_holodeck._search_query import check_search_query
from langchain_holodeck.config._sections import (
    MODEL_CONFIG,
    Integer,
    Number,
    _check_secret_not_blank,
    check_http_url,
)


class ChatModelConfig(BaseModel):
    """The agent's chat model (``model:``), run by ``holodeck-rag chat`` (``init_chat_model``)."""

    model_config = MODEL_CONFIG

    provider: str = Field(min_length=1)
    """Model provider as LangChain's ``init_chat_model`` names it: ``openai``, ``anthropic``..."""
    name: str = Field(min_length=1)
    """Model name, e.g. ``gpt-4o-mini``."""
    temperature: Number = Field(default=0.0, ge=0, le=2)
    """Sampling temperature."""
    api_key: SecretStr | None = None
    """API key from the environment (``${OPENAI_API_KEY}``); unset: the provider's default."""
    base_url: MaskedUrlStr | None = Field(
        default=None, json_schema_extra={"rule": "http:// or https://"}
    )
    """Base URL of an OpenAI-compatible server, for self-hosted models."""
    timeout: Number = Field(default=DEFAULT_CHAT_TIMEOUT, gt=0, le=MAX_SECONDS, allow_inf_nan=False)
    """Seconds one request to the model may take. A server that accepts and never answers
    fails the question (``error: ... Request timed out. (no answer from <url>)``) and the
    session goes on; the provider's client may retry the request first (openai's: twice). A
    server still sending is given up too: each call to the model (one per tool-calling round)
    waits at most the timeout for each of the client's tries, its pauses between them and 1 s
    (8.5 s at ``timeout: 2`` with openai's 2 retries), and each pause a rate-limited server asks
    for (HTTP 429 with ``Retry-After``, which openai's client waits for up to 120 s: 20.5 s
    after one ``Retry-After: 12``), then fails the question in one line."""
    max_tool_calls: Integer = Field(default=6, gt=0, le=50)
    """Most tool calls the agent may make for one question."""
    history_tokens: Integer = Field(default=32_000, ge=1_000, le=10_000_000)
    """Tokens of conversation sent to the model (estimated, 4 characters each). Past it, the
    tool results but the 3 latest are sent as ``[cleared]`` (the questions, answers and tool
    calls stay), so a long ``chat`` keeps fitting the model's context window: lower it for a
    model with a small one."""

    _base_url_is_http = field_validator("base_url")(check_http_url)
    _api_key_not_blank = field_validator("api_key")(_check_secret_not_blank)


class RetrievalTestCase(BaseModel):
    """A retrieval regression case (``tests:``): ``query`` must find ``source``/``section_id``.

    ``holodeck-rag test`` runs each case against ``tool`` (unset: every tool of the file) and
    passes it when one of the first ``k`` results comes from ``source`` (the file's path
    relative to the tool's source, or its trailing part) and, when given, has ``section_id``.
    """

    model_config = MODEL_CONFIG

    query: str = Field(min_length=1)
    """What a user would type: words, identifiers or section numbers (a query the tools refuse,
    whitespace or no letter or digit, is refused at load)."""
    source: str | None = Field(default=None, min_length=1)
    """The file that must be found, e.g. ``auth.md`` or ``guide/scheduling.txt``."""
    section_id: str | None = Field(default=None, min_length=1)
    """The section that must be found, e.g. ``203(a)(1)``."""
    k: Integer = Field(default=5, ge=1, le=100)
    """The expected result must be among the first ``k``."""
    tool: str | None = Field(default=None, min_length=1)
    """The tool to search; unset: every tool of the file."""

    @field_validator("query")
    @classmethod
    def _searchable(cls, query: str) -> str:
        # '?!' passed (any nearest chunk was taken for a hit) though search, chat and the tool
        # refuse it; '   ' loaded, then failed as 'no results'
        check_search_query(query)
        return query

    @model_validator(mode="after")
    def _expects_something(self) -> RetrievalTestCase:
        if self.source is None and self.section_id is None:
            msg = (
                f"the case for query {self.query!r} expects nothing; give source, section_id "
                "or both"
            )
            raise ValueError(msg)
        return self
