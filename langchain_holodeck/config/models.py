"""Configuration: pydantic models for ``agent.yaml`` tools and the only YAML reader.

``load_agent_config(path)`` reads an agent file; ``resolve_database_config`` applies the database
precedence (tool → project ``.holodeck/config.yaml`` → user ``~/.holodeck/config.yaml`` →
in-memory). Every model forbids unknown keys and is frozen. Errors are ``ConfigError`` s naming
the file, the field path and the bad value, with secrets masked.
"""

from __future__ import annotations

import difflib
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, ClassVar, Literal, TypeAlias, TypeVar

from pydantic import (
    BaseModel,
    Field,
    JsonValue,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from langchain_holodeck._conversion import (
    DEFAULT_MAX_CONVERT_MEMORY_BYTES,
    DEFAULT_MAX_CONVERT_SECONDS,
    MAX_CONVERT_MEMORY_BYTES,
)
from langchain_holodeck._defaults import (
    DEFAULT_CONTEXT_TIMEOUT,
    DEFAULT_EMBEDDING_TIMEOUT,
    DEFAULT_FEEDBACK_DOCS,
    DEFAULT_FEEDBACK_WEIGHT,
    DEFAULT_FETCH_K,
    DEFAULT_FUSION,
    DEFAULT_TABLE_CHUNK_TOKENS,
    MAX_CONCURRENCY,
    MAX_CONTEXT_TOKENS,
    MAX_SECONDS,
)
from langchain_holodeck._embedding_settings import (
    DEFAULT_LONG_TEXT,
    UNSET_LONG_TEXTS,
    LongTextMode,
    check_model_name,
    long_text_without_windows,
    model_in_use,
    openai_model,
    timeout_without_an_api,
)
from langchain_holodeck.config._agent import ChatModelConfig, RetrievalTestCase
from langchain_holodeck.config._backends import (
    DatabaseConfig,
    DatabaseProviderConfig,
    InMemoryDatabaseConfig,
    InMemoryKeywordIndexConfig,
    KeywordIndexConfig,
    KeywordIndexProviderConfig,
    OpenSearchKeywordIndexConfig,
    PostgresDatabaseConfig,
    QdrantDatabaseConfig,
    RedisDatabaseConfig,
    RedisKeywordIndexConfig,
    default_keyword_index,
    default_keyword_provider,
    provider_configs,
    rebuild_on_new_provider,
)
from langchain_holodeck.config._errors import (
    collect_secrets,
    format_validation_error,
    secret_variable_values,
)
from langchain_holodeck.config._reference import render_models_markdown
from langchain_holodeck.config._sections import (
    MODEL_CONFIG,
    CohereRerankerConfig,
    ContextModelConfig,
    FiniteNumber,
    Integer,
    Number,
    PathStr,
    RerankerConfig,
    SearchWeights,
    VLLMRerankerConfig,
)
from langchain_holodeck.config._sections import check_path as check_path  # for SOURCE (cli)
from langchain_holodeck.config._sections import spelt as spelt  # a path, shown (cli)
from langchain_holodeck.config._yaml import (
    JSONish,
    read_yaml_mapping,
    reject_literal_secrets,
    remember_configured_secrets,
    substitute_env,
)
from langchain_holodeck.errors import ConfigError

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = [
    "AgentConfig",
    "ChatModelConfig",
    "CohereRerankerConfig",
    "ContextModelConfig",
    "DatabaseConfig",
    "DatabaseProviderConfig",
    "HierarchicalDocumentToolConfig",
    "InMemoryDatabaseConfig",
    "InMemoryKeywordIndexConfig",
    "KeywordIndexConfig",
    "KeywordIndexProviderConfig",
    "OpenSearchKeywordIndexConfig",
    "PostgresDatabaseConfig",
    "QdrantDatabaseConfig",
    "RedisDatabaseConfig",
    "RedisKeywordIndexConfig",
    "RerankerConfig",
    "RetrievalTestCase",
    "SearchWeights",
    "ToolConfig",
    "ToolSelectionConfig",
    "VLLMRerankerConfig",
    "VectorStoreToolConfig",
    "chat_model_config",
    "config_reference_markdown",
    "load_agent_config",
    "load_project_database_config",
    "resolve_database_config",
]

logger = logging.getLogger(__name__)
_M = TypeVar("_M", bound=BaseModel)


def check_api_timeout(timeout: float, info: ValidationInfo) -> float:
    """An ``embedding_timeout`` other than the default: only for a model behind an API.

    The default passes with any model, so a ``model_dump()`` validates again.
    """
    if "embedding_model" not in info.data or timeout == DEFAULT_EMBEDDING_TIMEOUT:
        return timeout  # a refused model has its own error
    model = info.data["embedding_model"]  # validated before: declared above
    if openai_model(model) is None:
        raise ValueError(timeout_without_an_api(model))
    return timeout


class _SearchToolConfig(BaseModel):
    """Fields shared by the search tools."""

    model_config = MODEL_CONFIG

    type: str
    """Selects the tool kind."""
    name: str = Field(max_length=64, pattern=r"^[A-Za-z0-9_]+$")
    """Tool name the model calls: letters, digits and underscores."""
    description: str = Field(
        default="",  # filled from source before validation (_describe_source_by_default)
        min_length=1,
        json_schema_extra={"default_text": "`Search the documents in <source> ...`"},
    )
    """What the tool searches; the model reads it to decide when to call the tool."""
    source: PathStr = Field(min_length=1)
    """File or directory to index; a leading ``~`` is the home directory (as in a shell), and
    relative paths resolve against the agent.yaml's directory."""
    embedding_model: str | None = Field(default=None, min_length=1)
    """An OpenAI model name or ``sentence-transformers/<name>``; unset: the local MiniLM."""
    long_text: LongTextMode = Field(
        default=DEFAULT_LONG_TEXT, json_schema_extra={"rule": "fit or auto with an OpenAI model"}
    )
    """How the local model embeds a chunk: ``fit`` (whole when it fits the model's 256 word
    pieces; a prose chunk longer than 128 also gets its windows of 128, each its own vector,
    and one longer than 256 is only its windows), ``auto`` (the default before: windows only
    past 256), ``best``, ``mean``, or ``first`` (truncate: one vector per chunk, faster ingest,
    a little lower quality; see docs/embeddings.md)."""
    embedding_timeout: Number = Field(
        default=DEFAULT_EMBEDDING_TIMEOUT,
        gt=0,
        le=MAX_SECONDS,
        allow_inf_nan=False,
        json_schema_extra={"rule": "with an OpenAI model"},
    )
    """Seconds one request to the embeddings API of an OpenAI ``embedding_model`` may take.
    An ingest tries a timed-out batch once more, then sends no batch after it (each counted
    failed, the next ingest embeds them); a search does not retry its query (a hybrid tool
    serves keyword hits). See docs/embeddings.md."""
    database: DatabaseConfig | None = None
    """Vector store; unset: project, then user ``.holodeck/config.yaml``, then in-memory."""
    corpus_id: str | None = Field(
        default=None, min_length=1, max_length=128, pattern=r"^[A-Za-z0-9_.:-]+$"
    )
    """Pins the corpus identity; unset: derived from the resolved source path and the name.
    Tools of one file pinning the same one in one store (``database`` unset counts as any)
    must read the same source and chunk and embed it alike (one corpus: the same ``type``,
    ``embedding_model``, ``long_text`` and, for ``hierarchical_document``, chunk sizes and
    contexts); they may differ in how they search. In two stores they are two corpora: on
    Redis, PostgreSQL, a Qdrant server or OpenSearch two stores are two ``index_name``s
    (``table_name``s, collections), whatever the servers (one server has many spellings),
    except two Redis ``index_name``s, one the other's followed by ``:`` (``kb``, ``kb:v2``):
    one store, as the first index covers the other's keys."""
    top_k: Integer = Field(default=5, ge=1, le=100)
    """Maximum number of results."""
    min_similarity_score: Number | None = Field(default=None, ge=0, le=1)
    """Keep only results whose dense similarity (cosine, clipped to [0, 1]) reaches this;
    exact section and quoted-phrase hits are always kept, keyword hits are measured too
    (served unmeasured, with a WARNING, while the embedding model is down); chunks
    ``expand_hops`` adds are not: a kept hit cites each."""
    rerank: bool = False
    """Rerank the candidates with ``reranker`` before keeping ``top_k``."""
    rerank_top_n: Integer | None = Field(default=None, ge=1, le=1000)
    """Candidates fetched for reranking (never fewer than the ``k`` a call asks for); unset:
    ``top_k`` x 3."""
    reranker: RerankerConfig | None = Field(
        default=None, json_schema_extra={"rule": "required when rerank is true"}
    )
    """Reranker settings (``provider: cohere`` or ``provider: vllm``)."""
    rerank_on: Literal["original", "contextualized"] = "original"
    """Text the reranker reads: the chunk as written, or with its generated context."""
    max_convert_seconds: Number = Field(
        default=DEFAULT_MAX_CONVERT_SECONDS, gt=0, le=MAX_SECONDS, allow_inf_nan=False
    )
    """Seconds one PDF, Office, HTML or CSV file may take to convert (in a child process);
    past it the conversion is stopped and the file skipped with one warning."""
    max_convert_memory_bytes: Integer = Field(
        default=DEFAULT_MAX_CONVERT_MEMORY_BYTES, gt=0, le=MAX_CONVERT_MEMORY_BYTES
    )
    """Address space of that child process (where the OS limits it); a conversion needing
    more fails and the file is skipped with one warning."""

    _base_dir: Path | None = PrivateAttr(default=None)
    _where: str | None = PrivateAttr(default=None)  # "agent.yaml: tools[0]", set by AgentConfig

    _default_description: ClassVar[str] = "Search the documents in {source} by meaning."

    _not_chunk_settings: ClassVar[frozenset[str]] = frozenset(
        {
            "name",
            "description",
            "embedding_timeout",
            "database",
            "corpus_id",
            "top_k",
            "min_similarity_score",
            "rerank",
            "rerank_top_n",
            "reranker",
            "rerank_on",
            "max_convert_seconds",
            "max_convert_memory_bytes",
        }
    )
    """The fields ``chunk_settings`` leaves out: they change how the corpus is searched, where
    it is kept, or how long a file may take to read (one that fails keeps its chunks), not the
    chunks and vectors an ingest writes. A new field goes here or into ``chunk_settings`` (a
    test holds every field to one of the two)."""

    @model_validator(mode="before")
    @classmethod
    def _describe_source_by_default(cls, data: object) -> object:
        # the contract's minimal tool is type, name and source: describe what it searches
        if isinstance(data, Mapping) and "description" not in data:
            source = data.get("source")
            if isinstance(source, str) and source.strip():
                described = cls._default_description.format(source=spelt(source))
                return {**data, "description": described}
        return data

    @model_validator(mode="after")
    def _reranker_when_rerank(self) -> _SearchToolConfig:
        if self.rerank and self.reranker is None:
            msg = "reranker configuration required when rerank is enabled"
            raise ValueError(msg)
        return self

    _model_name = field_validator("embedding_model")(check_model_name)

    @field_validator("long_text")
    @classmethod
    def _long_text_on_a_local_model(
        cls, long_text: LongTextMode, info: ValidationInfo
    ) -> LongTextMode:
        model = info.data.get("embedding_model")  # validated before: declared above
        if long_text not in UNSET_LONG_TEXTS and openai_model(model) is not None:
            raise ValueError(long_text_without_windows(str(model)))
        return long_text

    _api_timeout = field_validator("embedding_timeout")(check_api_timeout)

    @model_validator(mode="after")
    def _remember_base_dir(self, info: ValidationInfo) -> _SearchToolConfig:
        # load_agent_config passes the file's directory as validation context.
        if info.context and isinstance(info.context.get("base_dir"), Path):
            self._base_dir = info.context["base_dir"]
        return self

    @property
    def base_dir(self) -> Path | None:
        """Directory a relative ``source`` resolves against: the agent.yaml's, once loaded."""
        return self._base_dir

    def located(self, field: str) -> str:
        """``field`` as a later error names it: ``agent.yaml: tools[0].field``, else ``field``.

        The file and the tool's place are known once loaded with ``load_agent_config``.
        """
        return field if self._where is None else f"{self._where}.{field}"

    def with_source(self, source: str) -> Self:
        """A copy reading ``source``; a description left to its default names that source.

        The default description (``Search the documents in docs by meaning.``) is what MCP
        clients and agents read to pick the tool: a copy given another source (``ingest
        --config agent.yaml SOURCE``) named the configured one still. A description written
        in the agent.yaml is kept as written.
        """
        update = {"source": source}
        if self.description == self._default_description.format(source=spelt(self.source)):
            update["description"] = self._default_description.format(source=spelt(source))
        return self.model_copy(update=update)

    def chunk_settings(self) -> dict[str, object]:
        """What decides the chunks and vectors an ingest writes in the corpus, as it acts.

        The resolved ``source`` (however spelt), the ``type`` (its splitter), the model the
        ``embedding_model`` names (``openai/<name>`` as ``<name>``, unset as the local
        default) and its ``long_text`` (``None`` for an OpenAI model, which has no windows):
        what ``pipeline_fingerprint`` and the model id stored with each chunk are made of.
        Tools pinning one ``corpus_id`` must agree on every one (``AgentConfig``), else each
        ingest replaces the chunks the other wrote. In the order a difference is reported.
        """
        openai = openai_model(self.embedding_model)
        return {
            "source": os.path.normpath(self.resolved_source()),
            "type": self.type,
            "embedding_model": model_in_use(self.embedding_model),
            "long_text": None if openai is not None else self.long_text,
        }

    def resolved_source(self, base_dir: str | os.PathLike[str] | None = None) -> Path:
        """The absolute path of ``source``; ``source`` itself stays as configured, for display.

        Args:
            base_dir: Directory relative sources resolve against; default: the agent.yaml's
                directory when loaded with ``load_agent_config``, else the working directory.
        """
        path = Path(self.source).expanduser()
        if path.is_absolute():
            return path
        base = Path(base_dir) if base_dir is not None else self._base_dir or Path.cwd()
        return (base / path).absolute()


class VectorStoreToolConfig(_SearchToolConfig):
    """Semantic search over a folder of documents (``type: vectorstore``)."""

    type: Literal["vectorstore"]
    """Selects this tool."""


class HierarchicalDocumentToolConfig(_SearchToolConfig):
    """Hybrid (dense + keyword + exact) search over structured documents."""

    type: Literal["hierarchical_document"]
    """Selects this tool."""
    _default_description: ClassVar[str] = (
        "Search the structured documents in {source} by meaning, keyword or section number."
    )
    description: str = Field(
        default="",  # filled from source before validation (_describe_source_by_default)
        min_length=1,
        json_schema_extra={"default_text": "`Search the structured documents in <source> ...`"},
    )
    """What the tool searches; the model reads it to decide when to call the tool."""
    top_k: Integer = Field(default=10, ge=1, le=100)
    """Maximum number of results."""
    contextual_embeddings: bool = False
    """Prefix each chunk with LLM-written context before embedding and keyword indexing.

    Contexts are cached beside the corpus's embeddings (kept across runs and forced ingests);
    another context model (its ``name`` or ``temperature``; not its ``base_url`` or key) or
    ``context_max_tokens`` makes the next ingest write new ones."""
    context_model: ContextModelConfig | None = Field(
        default=None, json_schema_extra={"rule": "required when contextual_embeddings is true"}
    )
    """The chat model writing the contexts."""
    context_max_tokens: Integer = Field(default=100, gt=0, le=MAX_CONTEXT_TOKENS)
    """Longest context the model may write per chunk (the bound: the largest answer any chat
    model writes); a change makes the next ingest write every context again (one LLM call
    per chunk)."""
    context_concurrency: Integer = Field(default=10, gt=0, le=MAX_CONCURRENCY)
    """Context requests in flight at once."""
    context_timeout: Number | None = Field(
        default=DEFAULT_CONTEXT_TIMEOUT, gt=0, le=MAX_SECONDS, allow_inf_nan=False
    )
    """Seconds one context request may take; a slower one leaves its chunk without context
    (one WARNING) and the ingest goes on; ``null``: no limit."""
    max_chunk_tokens: Integer = Field(default=800, ge=50)
    """Largest chunk, in tokens, of the structure-aware splitter."""
    max_table_chunk_tokens: Integer | None = Field(default=DEFAULT_TABLE_CHUNK_TOKENS, ge=2)
    """Largest piece, in tokens, of a Markdown table with a header row (CSV and XLSX files
    become such tables): a longer table is cut at rows and each later piece repeats the
    header row; ``null`` cuts tables like any text, the header in the first piece only."""
    search_weights: SearchWeights = Field(default_factory=SearchWeights)
    """Fusion weights of the three rankings."""
    fetch_k: Integer = Field(
        default=DEFAULT_FETCH_K, ge=1, le=1000, json_schema_extra={"rule": ">= top_k"}
    )
    """Candidates each leg (dense, keyword, exact) hands to fusion; a value below ``top_k`` is
    refused. A search fetches ``max(fetch_k, 2 x k)`` (``2 x k`` when one leg alone has
    weight), ``k`` being ``top_k`` or the ``k`` the call asks for. The default is where quality
    stopped improving on the tuning sets."""
    fusion: Literal["rrf", "convex"] = DEFAULT_FUSION
    """How the legs are fused: ``convex`` (convex score fusion, the default) adds each leg's
    scores divided by its best, weighted (Bruch et al., 2023); ``rrf``: weighted reciprocal rank
    fusion (k=60). Chosen on the tuning sets. On the native strategy PostgreSQL fuses either way
    in SQL; Redis and Qdrant fuse ``convex`` from each leg's ids and scores, and ``rrf`` is their
    own one-request fusion (Qdrant's RRF; on Redis Stack 7.4 a linear mix of vector similarity
    and raw BM25)."""
    feedback_docs: Integer = Field(default=DEFAULT_FEEDBACK_DOCS, ge=0, le=50)
    """Dense pseudo-relevance feedback (``search_strategy: fallback`` on the in-memory store):
    after a first fusion the query vector moves toward the vectors of this many best results
    and the candidates are fused again; 0 turns it off."""
    feedback_weight: Number = Field(default=DEFAULT_FEEDBACK_WEIGHT, ge=0, le=10)
    """How far the query vector moves toward them (``unit(q + weight * mean)``)."""
    keyword_index: KeywordIndexConfig = Field(default_factory=default_keyword_index)
    """Keyword index backend, selected by ``provider`` (the registered ones: see their tables)."""
    search_strategy: Literal["auto", "native", "fallback"] = "auto"
    """``native``: the vector store runs dense and keyword search in one request and fuses them
    by ``fusion`` (a backend with ``native_hybrid``); ``fallback``: separate legs fused
    in-process by ``fusion`` (convex score fusion by default); ``auto``: native when the
    backend can and ``keyword_index`` is not a separate engine (OpenSearch)."""
    expand_hops: Integer = Field(default=0, ge=0, le=3)
    """Follow cross-references this many hops from each hit; 0 turns expansion off."""
    expand_direction: Literal["out", "in", "both"] = "out"
    """Follow references a hit makes (out), references to it (in), or both."""
    expand_limit: Integer = Field(default=10, ge=1, le=100)
    """At most this many chunks reached by expansion (the nearest) follow the hits."""

    _keyword_provider_default = field_validator("keyword_index", mode="before")(
        default_keyword_provider
    )

    _not_chunk_settings: ClassVar[frozenset[str]] = _SearchToolConfig._not_chunk_settings | {
        "context_concurrency",
        "context_timeout",  # a context not written in time is written by the next ingest
        "search_weights",
        "fetch_k",
        "fusion",
        "feedback_docs",
        "feedback_weight",
        "keyword_index",  # fed the corpus's chunks, rebuilt from the store when behind
        "search_strategy",
        "expand_hops",
        "expand_direction",
        "expand_limit",
    }

    def chunk_settings(self) -> dict[str, object]:
        """``_SearchToolConfig.chunk_settings``, and the splitter's and the contexts' settings.

        ``max_chunk_tokens`` and ``max_table_chunk_tokens`` (``StructuredMarkdownSplitter``),
        ``contextual_embeddings``, and with it the context model (provider, name and
        temperature: not where it is served) and ``context_max_tokens``: what the context
        part of ``pipeline_fingerprint`` is made of (``None`` without contexts).
        """
        contextual, model = self.contextual_embeddings, self.context_model
        asked = (
            f"{model.provider}:{model.name} at temperature {float(model.temperature):g}"
            if contextual and model is not None
            else None
        )
        return {
            **super().chunk_settings(),
            "max_chunk_tokens": self.max_chunk_tokens,
            "max_table_chunk_tokens": self.max_table_chunk_tokens,
            "contextual_embeddings": contextual,
            "context_model": asked,
            "context_max_tokens": self.context_max_tokens if contextual else None,
        }

    @model_validator(mode="after")
    def _fetch_k_covers_top_k(self) -> HierarchicalDocumentToolConfig:
        if self.fetch_k < self.top_k:
            msg = (
                f"fetch_k ({self.fetch_k}) must be >= top_k ({self.top_k}); each leg must "
                "hand fusion at least the results it returns."
            )
            raise ValueError(msg)
        return self

    @model_validator(mode="after")
    def _context_model_when_contextual(self) -> HierarchicalDocumentToolConfig:
        if self.contextual_embeddings and self.context_model is None:
            msg = (
                "contextual_embeddings is true but context_model is not set; add "
                "context_model: {provider: ..., name: ...} or set contextual_embeddings: false"
            )
            raise ValueError(msg)
        return self


ToolConfig: TypeAlias = Annotated[
    VectorStoreToolConfig | HierarchicalDocumentToolConfig, Field(discriminator="type")
]
"""Any tool of ``agent.yaml``, selected by its ``type`` key."""


class ToolSelectionConfig(BaseModel):
    """How ``HybridToolSelectorMiddleware`` picks the tools shown per model call (hybrid search).

    Applies to every tool the agent is given: this file's tools and any others passed in.
    """

    model_config = MODEL_CONFIG

    max_tools: Integer = Field(default=5, ge=1, le=128)
    """Tools selected per model call, besides ``always_include``."""
    always_include: list[str] = []
    """Tool names always shown to the model; each must be one of the agent's tools."""
    history_turns: Integer = Field(default=0, ge=0, le=20)
    """Earlier user messages added to the selection query (0: the latest only)."""
    fetch_k: Integer = Field(default=20, ge=1, le=1000)
    """Candidates each leg (dense, BM25) contributes to the fusion."""
    weights: tuple[FiniteNumber, FiniteNumber] = Field(
        default=(0.5, 0.5), json_schema_extra={"rule": "two finite numbers >= 0, not both 0"}
    )
    """``[semantic, keyword]``: the RRF weights of the dense and BM25 rankings."""
    mentions: bool = True
    """Always select a tool the user names, such as ``search_tickets`` in "use search_tickets"."""
    embedding_model: str | None = Field(default=None, min_length=1)
    """An OpenAI model name or ``sentence-transformers/<name>``; unset: the local MiniLM."""
    embedding_timeout: Number = Field(
        default=DEFAULT_EMBEDDING_TIMEOUT,
        gt=0,
        le=MAX_SECONDS,
        allow_inf_nan=False,
        json_schema_extra={"rule": "with an OpenAI model"},
    )
    """Seconds one request to the embeddings API of an OpenAI ``embedding_model`` may take (a
    selection query is not retried after a timeout)."""

    _model_name = field_validator("embedding_model")(check_model_name)
    _api_timeout = field_validator("embedding_timeout")(check_api_timeout)

    @model_validator(mode="after")
    def _valid_names_and_weights(self) -> ToolSelectionConfig:
        seen: set[str] = set()
        for name in self.always_include:
            if name in seen:
                msg = f"always_include lists {name!r} twice; list each tool once"
                raise ValueError(msg)
            seen.add(name)
        if any(w < 0 for w in self.weights) or not any(w > 0 for w in self.weights):
            msg = f"weights must be two numbers >= 0, at least one > 0, got {list(self.weights)}"
            raise ValueError(msg)
        return self


def _shown(value: object) -> str:
    """A setting's value as an error shows it: as YAML spells ``null``, ``true`` and ``false``."""
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    return repr(value)


class AgentConfig(BaseModel):
    """An ``agent.yaml``: its tools, plus a few free-form descriptive keys; others are refused.

    ``name``, ``description`` and ``instructions`` are accepted (agent files often carry them);
    ``model`` is free-form for other programs, and ``holodeck-rag chat`` reads it as a
    ``ChatModelConfig`` when present; ``tests`` are ``holodeck-rag test``'s retrieval cases. Any
    other top-level key is an error.
    """

    model_config = MODEL_CONFIG

    tools: list[ToolConfig]
    """The tools, at least one; names must be unique, and tools pinning one ``corpus_id`` must
    read one source and chunk and embed it alike."""
    name: str | None = None
    """Agent name (free-form, not used by this package)."""
    description: str | None = None
    """Agent description (free-form, not used by this package)."""
    model: JsonValue = Field(default=None, repr=False)
    """Agent model; ``holodeck-rag chat`` reads it as a ChatModelConfig (hidden from repr)."""
    instructions: JsonValue = Field(default=None, repr=False)
    """Agent instructions; ``holodeck-rag chat`` uses a string as the system prompt."""
    tests: list[RetrievalTestCase] = Field(default_factory=list)
    """Retrieval regression cases run by ``holodeck-rag test``."""
    tool_selection: ToolSelectionConfig | None = None
    """Select the tools shown per model call (``build_tool_selector_middleware``); unset: all."""

    _unresolved_model: JsonValue = PrivateAttr(default=None)
    """``model:`` as written when one of its ``${VAR}`` was unset (or malformed) at load:
    ``chat_model_config`` resolves it again, and raises that error."""

    @field_validator("tools")
    @classmethod
    def _at_least_one_tool(cls, tools: list[ToolConfig]) -> list[ToolConfig]:
        # every command takes a tool of the file: none would mean a crash or a silent no-op
        if not tools:
            msg = (
                "must contain at least one tool, such as {type: hierarchical_document, "
                "name: docs, source: docs}"
            )
            raise ValueError(msg)
        return tools

    @model_validator(mode="after")
    def _unique_tool_names(self) -> AgentConfig:
        first: dict[str, int] = {}
        for index, tool in enumerate(self.tools):
            if tool.name in first:
                msg = (
                    f"tools[{first[tool.name]}] and tools[{index}] are both named "
                    f"{tool.name!r}; tool names must be unique"
                )
                raise ValueError(msg)
            first[tool.name] = index
        return self

    @model_validator(mode="after")
    def _locate_tools(self, info: ValidationInfo) -> AgentConfig:
        # an error found later (a store's capabilities) names the file and the tool's place
        display = info.context.get("display") if info.context else None
        if isinstance(display, str):
            for index, tool in enumerate(self.tools):
                tool._where = f"{display}: tools[{index}]"
        return self

    @model_validator(mode="after")
    def _one_corpus_per_corpus_id(self) -> AgentConfig:
        # one namespace of one store holds one set of chunks: each ingest deletes and rewrites
        # what its own source and settings do not make (the other's files, the other's
        # chunks); in two stores the namespaces are two and nothing clashes
        pinned: dict[str, list[int]] = {}
        for index, tool in enumerate(self.tools):
            if tool.corpus_id is None:
                continue
            sharing = [
                i for i in pinned.get(tool.corpus_id, []) if _share_a_store(self.tools[i], tool)
            ]
            pinned.setdefault(tool.corpus_id, []).append(index)
            if not sharing:
                continue
            other = sharing[0]
            earlier = self.tools[other]
            theirs, mine = earlier.chunk_settings(), tool.chunk_settings()
            setting = next((key for key in theirs if mine.get(key) != theirs[key]), None)
            way = _way_apart(earlier, tool)
            if setting == "source":
                msg = (
                    f"tools[{other}] ({earlier.name!r}, source {spelt(earlier.source)}) and "
                    f"tools[{index}] ({tool.name!r}, source {spelt(tool.source)}) both pin "
                    f"corpus_id {tool.corpus_id!r}: a corpus is one source, so each ingest "
                    f"would delete the chunks of the other's files; {way}"
                )
                raise ValueError(msg)
            if setting is not None:
                msg = (
                    f"tools[{other}] ({earlier.name!r}, {setting} {_shown(theirs[setting])}) "
                    f"and tools[{index}] ({tool.name!r}, {setting} {_shown(mine[setting])}) "
                    f"both pin corpus_id {tool.corpus_id!r}: a corpus is one set of chunks, "
                    f"so each ingest would replace the chunks the other wrote; {way}, or the "
                    f"same {setting}"
                )
                raise ValueError(msg)
        return self

    @model_validator(mode="after")
    def _tests_name_known_tools(self) -> AgentConfig:
        names = [tool.name for tool in self.tools]
        for index, case in enumerate(self.tests):
            if case.tool is not None and case.tool not in names:
                msg = (
                    f"tests[{index}].tool is {case.tool!r}, which is not a tool of this file; "
                    f"its tools: {', '.join(names)}"
                )
                raise ValueError(msg)
        return self


_UNSET = ("database unset",)
"""The store key of a tool without ``database``: the project's or the user's
``.holodeck/config.yaml`` decides it when the tool is built, so it may be any store."""


def _share_a_store(first: ToolConfig, second: ToolConfig) -> bool:
    """Whether two tools may keep their chunks in one store, not each in its own directory.

    One store: one index or table name on a server-backed provider (on any server: their
    spellings are not compared), or two whose keys nest (``keys_overlap``: Redis ``kb`` and
    ``kb:v2``), one Qdrant directory, one OpenSearch index; or a ``database`` left unset on
    either (the project's may be the other's).
    """
    vectors = [_UNSET if t.database is None else t.database.store_key() for t in (first, second)]
    if None not in vectors and (vectors[0] == vectors[1] or _UNSET in vectors):
        return True
    if _overlap(first, second) is not None:
        return True
    keywords = [getattr(t, "keyword_index", None) for t in (first, second)]
    keys = [None if index is None else index.store_key() for index in keywords]
    return keys[0] is not None and keys[0] == keys[1]


def _overlap(first: ToolConfig, second: ToolConfig) -> str | None:
    """How one tool's store keeps its keys among the other's (``keys_overlap``), or ``None``."""
    if first.database is None or second.database is None:
        return None
    return first.database.keys_overlap(second.database)


def _way_apart(first: ToolConfig, second: ToolConfig) -> str:
    """How two tools pinning one corpus in one store part: each its own corpus_id.

    When their stores nest (a Redis ``kb`` and ``kb:v2``), stores that do not: their own
    corpus_ids alone would still meet in one server's keys.
    """
    overlap = _overlap(first, second)
    if overlap is None:
        return "give each its own corpus_id"
    return (
        f"{overlap}; rename one index_name so that neither is the other's followed by ':' "
        "(two stores then hold two corpora)"
    )


class _VectorstoreSection(BaseModel):
    """The ``vectorstore:`` section of ``.holodeck/config.yaml`` (errors name ``vectorstore.*``)."""

    model_config = MODEL_CONFIG

    vectorstore: DatabaseConfig


rebuild_on_new_provider(
    VectorStoreToolConfig, HierarchicalDocumentToolConfig, _VectorstoreSection, AgentConfig
)


def declared_tool_names(path: str | os.PathLike[str]) -> list[str]:
    """The ``name`` of each entry under ``tools:`` of a YAML file, read but not validated.

    ``[]`` when the file is no YAML mapping or has no ``tools`` list (e.g. any YAML document):
    tells an agent.yaml apart, even one that would not validate (an unset ``${VAR}``).
    """
    try:
        raw = read_yaml_mapping(Path(path), display=str(path))
    except ConfigError:
        return []
    tools = raw.get("tools")
    if not isinstance(tools, list):
        return []
    return [str(t.get("name", "?")) for t in tools if isinstance(t, dict)]


def load_agent_config(
    path: str | os.PathLike[str], *, environ: Mapping[str, str] | None = None
) -> AgentConfig:
    """Read and validate an ``agent.yaml``.

    ``${VAR}`` in string values is replaced from ``environ`` after parsing (``$${VAR}`` keeps a
    literal ``${VAR}``). In ``model:`` an unset (or malformed) one is no error here: the section
    stays as written and ``chat_model_config``, what runs the model, raises it; a ``test`` or an
    ``ingest`` needs no model key. Secrets must be ``${VAR}`` references, anywhere in the file
    (``tools``, ``model``...): values of keys named like ``api_key``, ``password`` or
    ``token``, and URLs embedding a password (``redis://:pw@host``; ``redis://localhost:6379``
    is no secret). Relative tool sources resolve against the file's directory (see
    ``resolved_source``).

    Args:
        path: The agent file.
        environ: Variables for ``${VAR}``; default ``os.environ``.

    Returns:
        The validated configuration.

    Raises:
        ConfigError: When the file is missing, unreadable, too large (1 MiB), not a YAML mapping,
            uses an alias bomb, references an unset variable (outside ``model:``), holds a
            literal secret, or fails validation. The message names the file, the field path and
            the bad value.
    """
    file = Path(path)
    display = str(path)
    raw = read_yaml_mapping(file, display=display)
    reject_literal_secrets(raw, display=display)
    env = os.environ if environ is None else environ
    used: dict[str, str] = {}
    rest = {key: value for key, value in raw.items() if key != "model"}
    data = substitute_env(rest, env, display=display, used=used)
    remember_configured_secrets(data)  # masked wherever a server repeats one
    model, unresolved = raw.get("model"), None
    if isinstance(data, dict) and model is not None:
        try:
            data["model"] = substitute_env(model, env, display=display, path="model", used=used)
        except ConfigError:  # only chat runs the model: chat_model_config raises it there
            data["model"] = unresolved = model  # its "${VAR}" are no secrets to mask
        else:
            remember_configured_secrets(data["model"])
    agent = _validate(
        AgentConfig, data, display=display, base_dir=file.parent.absolute(), used=used
    )
    agent._unresolved_model = unresolved
    return agent


def chat_model_config(
    agent: AgentConfig, *, display: str = "agent.yaml", environ: Mapping[str, str] | None = None
) -> ChatModelConfig | None:
    """The agent's ``model:`` section as a ``ChatModelConfig``; ``None`` when there is none.

    ``load_agent_config`` leaves the section as written when one of its ``${VAR}`` is unset
    (only the command that runs the model needs its key): it is resolved here, or raises.

    Args:
        agent: The agent configuration.
        display: How to name the file in error messages.
        environ: Variables for ``${VAR}``; default ``os.environ``.

    Raises:
        ConfigError: When a ``${VAR}`` of the section is unset or malformed, or the section is
            not a valid ``ChatModelConfig`` (naming ``display``, the field and the bad value,
            secrets masked).
    """
    if agent.model is None:
        return None
    used: dict[str, str] = {}
    section: JSONish = agent.model
    if agent._unresolved_model is not None:  # a ${VAR} was unset at load: resolved (or raised) now
        env = os.environ if environ is None else environ
        section = substitute_env(
            agent._unresolved_model, env, display=display, path="model", used=used
        )
    return _validate(ChatModelConfig, section, display=display, prefix="model", used=used)


def load_project_database_config(
    path: str | os.PathLike[str], *, environ: Mapping[str, str] | None = None
) -> DatabaseConfig | None:
    """Read the ``vectorstore:`` section of a ``.holodeck/config.yaml``.

    Other sections of the file are left alone (not validated, no ``${VAR}`` substitution): the
    file is shared with other programs (HoloDeck's ``providers:``, ``vectorstores:``...). A key
    that is a misspelling of ``vectorstore`` (``vector_store``, ``vectorStore``, ``database``,
    a ``vectorstores:`` holding a ``provider``) is an error, not a silent in-memory store.

    Args:
        path: The config file.
        environ: Variables for ``${VAR}``; default ``os.environ``.

    Returns:
        The database configuration, or None when the file has no ``vectorstore`` section (an
        empty or comment-only file has none).

    Raises:
        ConfigError: When the file cannot be read or parsed, is no mapping (a list, a single
            value), a key misspells ``vectorstore``,
            its ``vectorstore`` section holds a literal secret (as ``load_agent_config``)
            or is invalid (the message names the file and
            ``vectorstore.<field>``).
    """
    display = str(path)
    raw = read_yaml_mapping(
        Path(path),
        display=display,
        expected=f"a mapping of sections, such as '{_VECTORSTORE_KEY}:'",
        empty_is_nothing=True,  # a settings file with nothing set yet is no error
    )
    for key, value in raw.items():
        if _misspells_vectorstore(str(key), value):
            msg = (
                f"{display}: {key}: unknown key; allowed keys: {_VECTORSTORE_KEY} (rename "
                f"{key} to {_VECTORSTORE_KEY})."
            )
            raise ConfigError(msg)
    section = raw.get(_VECTORSTORE_KEY)
    if section is None:
        return None
    reject_literal_secrets(section, display=display, path=_VECTORSTORE_KEY)
    env = os.environ if environ is None else environ
    used: dict[str, str] = {}
    data = substitute_env(section, env, display=display, path="vectorstore", used=used)
    remember_configured_secrets(data)
    wrapped = {"vectorstore": data}
    # relative paths resolve against the project (the directory holding .holodeck/)
    file = Path(path).absolute()
    base = file.parent.parent if file.parent.name == ".holodeck" else file.parent
    loaded = _validate(_VectorstoreSection, wrapped, display=display, base_dir=base, used=used)
    return loaded.vectorstore


_VECTORSTORE_KEY = "vectorstore"
_VECTORSTORE_ALIASES = frozenset({"database", "vectordb", "vectordatabase"})


def _misspells_vectorstore(key: str, value: object) -> bool:
    """Whether a top-level key of ``.holodeck/config.yaml`` was meant as ``vectorstore``.

    It was when it is spelled like it (``vector_store``, ``vectorStore``, ``vectorstor``), names
    it as agent.yaml does (``database``), or holds a section of ours (``provider: redis``...).
    HoloDeck's own ``vectorstores:`` (a map of named stores, no ``provider`` of its own) is not.
    """
    if key == _VECTORSTORE_KEY:
        return False
    ours = isinstance(value, Mapping) and value.get("provider") in provider_configs(DatabaseConfig)
    if ours:
        return True
    if key == "vectorstores" and not (isinstance(value, Mapping) and "provider" in value):
        return False
    plain = "".join(ch for ch in key.lower() if ch.isalnum())
    close = difflib.get_close_matches(plain, [_VECTORSTORE_KEY], n=1, cutoff=0.8)
    return bool(close) or plain in _VECTORSTORE_ALIASES


def resolve_database_config(
    tool_config: VectorStoreToolConfig | HierarchicalDocumentToolConfig | None,
    *,
    project_dir: str | os.PathLike[str] | None = None,
    home_dir: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> DatabaseConfig | None:
    """The database a tool uses: the first of these that is set.

    1. the tool's own ``database``;
    2. the ``vectorstore:`` section of ``<project_dir>/.holodeck/config.yaml``;
    3. the ``vectorstore:`` section of ``<home_dir>/.holodeck/config.yaml``;
    4. None: the in-memory store.

    A missing file, or one without a ``vectorstore:`` section, passes to the next step.

    Args:
        tool_config: The tool (None: only the files are consulted).
        project_dir: Project directory; default the working directory.
        home_dir: User home directory; default ``Path.home()``.
        environ: Variables for ``${VAR}`` in those files; default ``os.environ``.

    Raises:
        ConfigError: When a config file exists but is invalid.
    """
    if tool_config is not None and tool_config.database is not None:
        return tool_config.database
    for base in (project_dir or Path.cwd(), home_dir or Path.home()):
        candidate = Path(base) / ".holodeck" / "config.yaml"
        if candidate.is_file():
            found = load_project_database_config(candidate, environ=environ)
            if found is not None:
                logger.debug("Using the vectorstore section of %s", candidate)
                return found
    return None


def config_reference_markdown() -> str:
    """The configuration reference as Markdown: one table per model (field, type, default, ...).

    The ``database`` and ``keyword_index`` providers are the registered ones, in registration
    order (the built-in ones first).
    """
    return render_models_markdown(
        [
            AgentConfig,
            ToolSelectionConfig,
            VectorStoreToolConfig,
            HierarchicalDocumentToolConfig,
            *provider_configs(DatabaseConfig).values(),
            CohereRerankerConfig,
            VLLMRerankerConfig,
            ContextModelConfig,
            SearchWeights,
            *provider_configs(KeywordIndexConfig).values(),
            ChatModelConfig,
            RetrievalTestCase,
        ]
    )


def _validate(
    model: type[_M],
    data: JSONish,
    *,
    display: str,
    prefix: str = "",
    base_dir: Path | None = None,
    used: Mapping[str, str],
) -> _M:
    try:
        return model.model_validate(data, context={"base_dir": base_dir, "display": display})
    except ValidationError as exc:
        secrets = collect_secrets(data) | secret_variable_values(used)
        text = format_validation_error(exc, model, display=display, prefix=prefix, secrets=secrets)
        # `from None`: pydantic's own message quotes raw input values, secrets included.
        raise ConfigError(text) from None
