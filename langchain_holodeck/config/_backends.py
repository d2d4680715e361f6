"""Database and keyword-index configuration: one class per provider, joined by ``provider``.

Private: import them from ``langchain_holodeck.config.models``, which re-exports them. Adding a
provider is one class here (a subclass of ``DatabaseProviderConfig`` or
``KeywordIndexProviderConfig``, added to its union) plus its module in ``backends/``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal, TypeAlias

from pydantic import (
    AliasChoices,
    BaseModel,
    Field,
    SecretStr,
    field_validator,
    model_validator,
)

from langchain_holodeck._redact import mask_url_password
from langchain_holodeck.config._sections import MODEL_CONFIG, check_http_url


class _ProviderConfig(BaseModel):
    """Shared by the variants of one family: a key of a sibling provider gets a clear error."""

    model_config = MODEL_CONFIG

    @model_validator(mode="before")
    @classmethod
    def _keys_of_another_provider(cls, data: Any) -> Any:
        family = next(c for c in cls.__mro__ if _ProviderConfig in c.__bases__)
        if not isinstance(data, dict) or cls is family:
            return data
        own = set(cls.model_fields)
        siblings: Sequence[type[BaseModel]] = family.__subclasses__()
        for sibling in siblings:
            if sibling is cls:
                continue
            foreign = sorted(key for key in data if key not in own and key in sibling.model_fields)
            if foreign:
                owner = sibling.model_fields["provider"].annotation
                owner_name = "'" + "', '".join(getattr(owner, "__args__", ("?",))) + "'"
                verb = "applies" if len(foreign) == 1 else "apply"
                msg = (
                    f"{', '.join(foreign)} only {verb} to provider {owner_name}, "
                    f"got provider {data.get('provider')!r}"
                )
                raise ValueError(msg)
        return data


class DatabaseProviderConfig(_ProviderConfig):
    """Base of the ``database:`` variants; each subclass is one vector-store provider."""


class InMemoryDatabaseConfig(DatabaseProviderConfig):
    """The in-memory vector store (``MatrixVectorStore``), saved in the tool's store directory."""

    provider: Literal["in-memory"]
    """Selects the in-memory store."""


class RedisDatabaseConfig(DatabaseProviderConfig):
    """Redis Stack (RediSearch), through langchain-redis; needs the ``redis`` extra."""

    provider: Literal["redis"]
    """Selects Redis."""
    connection_string: SecretStr = Field(json_schema_extra={"rule": "redis:// or rediss://"})
    """Redis URL such as ``${REDIS_URL}``; a secret (it may embed a password)."""
    index_name: str = Field(default="holodeck_vectors", pattern=r"^[A-Za-z0-9_.:-]+$")
    """Name of the vector index (RediSearch index and key prefix)."""
    vector_algorithm: Literal["HNSW", "FLAT"] = "HNSW"
    """Vector index algorithm: approximate (HNSW) or exact (FLAT)."""
    distance_metric: Literal["COSINE", "L2", "IP"] = "COSINE"
    """Distance metric of the vector index; scores are reported as similarities in [0, 1]."""
    fallback_to_memory: bool = True
    """When Redis is unreachable: warn and use the in-memory store (true), or fail (false)."""

    @model_validator(mode="before")
    @classmethod
    def _connection_string_first(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("connection_string") is None:
            msg = (
                "provider 'redis' needs connection_string "
                "(for example redis://localhost:6379 or ${REDIS_URL})"
            )
            raise ValueError(msg)
        return data

    @field_validator("connection_string")
    @classmethod
    def _redis_scheme(cls, value: SecretStr) -> SecretStr:
        if not value.get_secret_value().startswith(("redis://", "rediss://")):
            msg = "must start with redis:// or rediss://"
            raise ValueError(msg)
        return value

    @property
    def masked_connection_string(self) -> str:
        """The connection string with its password replaced by ``***``: safe to log or show."""
        return mask_url_password(self.connection_string.get_secret_value())


class QdrantDatabaseConfig(DatabaseProviderConfig):
    """Qdrant, through langchain-qdrant: in-process, on disk, or a server; needs ``qdrant``.

    Exactly one of ``location``, ``path`` and ``url``. ``location`` and ``path`` run
    qdrant-client's local mode (no server); ``url`` talks to a Qdrant server through the same
    client code.
    """

    provider: Literal["qdrant"]
    """Selects Qdrant."""
    location: Literal[":memory:"] | None = None
    """``":memory:"``: an in-process collection that lives as long as the process."""
    path: str | None = Field(default=None, min_length=1)
    """Directory of an on-disk local-mode store (one process at a time)."""
    url: str | None = Field(default=None, json_schema_extra={"rule": "http:// or https://"})
    """URL of a Qdrant server, e.g. ``http://localhost:6333``."""
    api_key: SecretStr | None = None
    """Qdrant API key, from the environment (``${QDRANT_API_KEY}``); only with ``url``."""
    collection_name: str = Field(default="holodeck_vectors", pattern=r"^[A-Za-z0-9_.-]+$")
    """Collection holding the chunks; corpora sharing it never see each other's chunks."""
    timeout: float = Field(default=10.0, gt=0)
    """Seconds per request to a Qdrant server."""
    fallback_to_memory: bool = True
    """When the server at ``url`` is unreachable: warn and use the in-memory store, or fail."""

    @model_validator(mode="after")
    def _one_location(self) -> QdrantDatabaseConfig:
        given = [name for name in ("location", "path", "url") if getattr(self, name) is not None]
        if len(given) != 1:
            msg = (
                "provider 'qdrant' needs exactly one of location (':memory:'), path (a "
                f"directory) or url (http://...), got {given or 'none'}"
            )
            raise ValueError(msg)
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            msg = f"url must start with http:// or https://, got {self.url!r}"
            raise ValueError(msg)
        if self.api_key is not None and self.url is None:
            msg = "api_key is only used with url (a Qdrant server); remove it for local mode"
            raise ValueError(msg)
        return self


class PostgresDatabaseConfig(DatabaseProviderConfig):
    """PostgreSQL + pgvector (psycopg 3); needs the ``postgres`` extra.

    One table holds every corpus (apart by namespace). ``read_replicas`` take the searches;
    ``shards`` make ``connection_string`` a coordinator whose table is hash-partitioned over
    ``postgres_fdw`` foreign partitions on those servers.
    """

    provider: Literal["postgres"]
    """Selects PostgreSQL."""
    connection_string: SecretStr = Field(json_schema_extra={"rule": "postgresql:// URL"})
    """Primary (or coordinator) URL such as ``${POSTGRES_URL}``; a secret (it may embed a
    password)."""
    table_name: str = Field(default="holodeck_vectors", pattern=r"^[a-z_][a-z0-9_]{0,40}$")
    """Table of the chunks (``<table>_terms`` and ``<table>_stats`` hold BM25's statistics)."""
    distance_metric: Literal["COSINE", "L2", "IP"] = "COSINE"
    """Distance of the HNSW index; scores are reported as similarities in [0, 1]."""
    keyword_scoring: Literal["bm25", "ts_rank_cd"] = "bm25"
    """Keyword leg of native hybrid search: BM25 computed in SQL from the term statistics the
    backend writes, or Postgres's ``ts_rank_cd`` (no IDF)."""
    read_replicas: list[SecretStr] = Field(default_factory=list)
    """URLs of streaming standbys that take the searches (writes go to the primary)."""
    max_replica_lag_bytes: int = Field(default=16 * 1024 * 1024, ge=0)
    """A replica whose replay lags the primary by more WAL than this is skipped (WARNING)."""
    shards: list[SecretStr] = Field(default_factory=list)
    """URLs of shard servers (reachable from the coordinator and from this process)."""
    fallback_to_memory: bool = True
    """When PostgreSQL is unreachable: warn and use the in-memory store (true), or fail."""

    @model_validator(mode="before")
    @classmethod
    def _connection_string_first(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("connection_string") is None:
            msg = (
                "provider 'postgres' needs connection_string "
                "(for example postgresql://postgres@127.0.0.1:5433/postgres or ${POSTGRES_URL})"
            )
            raise ValueError(msg)
        return data

    @field_validator("connection_string", "read_replicas", "shards")
    @classmethod
    def _postgres_scheme(cls, value: SecretStr | list[SecretStr]) -> SecretStr | list[SecretStr]:
        for url in value if isinstance(value, list) else [value]:
            if not url.get_secret_value().startswith(("postgresql://", "postgres://")):
                shown = mask_url_password(url.get_secret_value())
                msg = f"must start with postgresql://, got {shown!r}"
                raise ValueError(msg)
        return value

    @model_validator(mode="after")
    def _one_layout(self) -> PostgresDatabaseConfig:
        if len(self.shards) == 1:
            msg = "shards needs two or more servers (one shard is one node: drop shards)"
            raise ValueError(msg)
        return self

    @property
    def masked_connection_string(self) -> str:
        """The connection string with its password replaced by ``***``: safe to log or show."""
        return mask_url_password(self.connection_string.get_secret_value())


DatabaseConfig: TypeAlias = Annotated[
    InMemoryDatabaseConfig | RedisDatabaseConfig | QdrantDatabaseConfig | PostgresDatabaseConfig,
    Field(discriminator="provider"),
]
"""Where a tool's vectors live, selected by its ``provider`` key."""


class KeywordIndexProviderConfig(_ProviderConfig):
    """Base of the ``keyword_index:`` variants; each subclass is one keyword-index provider."""


class InMemoryKeywordIndexConfig(KeywordIndexProviderConfig):
    """BM25 in memory (bm25s), saved next to the in-memory store; the default."""

    provider: Literal["in-memory"]
    """Selects the in-memory BM25 index (the default when ``keyword_index`` is unset)."""


class RedisKeywordIndexConfig(KeywordIndexProviderConfig):
    """RediSearch full-text search on the Redis vector index itself (no second copy)."""

    provider: Literal["redis"]
    """Selects Redis full-text search; needs ``database`` provider ``redis``."""


class OpenSearchKeywordIndexConfig(KeywordIndexProviderConfig):
    """An OpenSearch index; needs the ``opensearch`` extra."""

    provider: Literal["opensearch"]
    """Selects OpenSearch."""
    endpoint: str = Field(json_schema_extra={"rule": "http(s) URL"})
    """OpenSearch URL, e.g. ``https://localhost:9200``."""
    index_name: str = Field(default="holodeck_keywords", pattern=r"^[a-z0-9_.-]+$")
    """OpenSearch index name (lowercase); corpora sharing it stay apart by namespace."""
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

    _endpoint_is_http = field_validator("endpoint")(check_http_url)

    @property
    def timeout(self) -> float:
        """``timeout_seconds``, under its older name."""
        return self.timeout_seconds

    @model_validator(mode="before")
    @classmethod
    def _one_timeout_name(cls, data: Any) -> Any:
        if isinstance(data, dict) and "timeout" in data and "timeout_seconds" in data:
            msg = "timeout is an alias of timeout_seconds; set only timeout_seconds"
            raise ValueError(msg)
        return data

    @model_validator(mode="before")
    @classmethod
    def _endpoint_first(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("endpoint") is None:
            msg = "provider 'opensearch' needs endpoint (for example https://localhost:9200)"
            raise ValueError(msg)
        return data

    @model_validator(mode="after")
    def _credentials(self) -> OpenSearchKeywordIndexConfig:
        if (self.username is None) != (self.password is None):
            msg = "username and password go together; set both or neither"
            raise ValueError(msg)
        if self.api_key is not None and self.password is not None:
            msg = "set either api_key or username/password, not both"
            raise ValueError(msg)
        return self


KeywordIndexConfig: TypeAlias = Annotated[
    InMemoryKeywordIndexConfig | RedisKeywordIndexConfig | OpenSearchKeywordIndexConfig,
    Field(discriminator="provider"),
]
"""The keyword (BM25) index of a hierarchical document tool, selected by ``provider``."""


def default_keyword_index() -> InMemoryKeywordIndexConfig:
    """The keyword index of a tool that configures none: in-memory BM25."""
    return InMemoryKeywordIndexConfig(provider="in-memory")


def default_keyword_provider(value: Any) -> Any:
    """``keyword_index: {}`` (no provider) means the in-memory index, as it always did."""
    if isinstance(value, dict) and "provider" not in value:
        return {**value, "provider": "in-memory"}
    return value
