"""Database and keyword-index configuration: two open families, one class per provider.

``DatabaseConfig`` (the ``database:`` / ``vectorstore:`` section) and ``KeywordIndexConfig``
(the ``keyword_index:`` section) are family bases. Each provider is a subclass whose
``provider`` field is a one-value ``Literal``, registered with ``register_provider_config``
(``backends.register_backend`` / ``register_keyword_index`` do it for their ``config_type``).
A field annotated with the family base validates against every provider registered *at that
time*, by ``provider``; calling the base, ``DatabaseConfig(provider="redis", ...)``, builds the
registered variant. A provider registered later (another package, a test) rebuilds the models
that hold a section (``rebuild_on_new_provider``), so its ``provider:`` works in an agent.yaml
without touching this package.

Private: import these names from ``langchain_holodeck.config.models``, which re-exports them.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar, Union, get_args
from urllib.parse import urlsplit

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    PrivateAttr,
    SecretStr,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import CoreSchema

from langchain_holodeck._defaults import DEFAULT_PAIR_WEIGHT, MAX_CACHE_TTL_DAYS, MAX_SECONDS
from langchain_holodeck._masked_url import MaskedUrlStr
from langchain_holodeck._redact import mask_connection_string, userinfo_problem
from langchain_holodeck.config._sections import (
    MODEL_CONFIG,
    Integer,
    Number,
    PathStr,
    check_http_url,
)

if TYPE_CHECKING:
    from typing_extensions import Self  # typing.Self is Python 3.11+; requires-python is 3.10

_C = TypeVar("_C", bound=type[BaseModel])
_M = TypeVar("_M", bound=type[BaseModel])

_FAMILY_KEYS = {
    "DatabaseConfig": "database.provider",
    "KeywordIndexConfig": "keyword_index.provider",
}
"""The family bases, by class name, and how their ``provider`` key is named in messages."""
_VARIANTS: dict[str, dict[str, type[_ProviderConfig]]] = {name: {} for name in _FAMILY_KEYS}
"""Family base name -> provider value -> its config class, in registration order."""
_DEPENDENTS: list[type[BaseModel]] = []
"""Models holding a family section, inner ones first: rebuilt when a provider is added."""


def _is_family(cls: type) -> bool:
    """Whether ``cls`` is a family base (a direct subclass of ``_ProviderConfig``)."""
    base = cls.__base__
    return cls.__name__ in _FAMILY_KEYS and base is not None and base.__name__ == "_ProviderConfig"


class _ProviderConfig(BaseModel):
    """Shared by the variants of one family: a key of a sibling provider gets a clear error."""

    model_config = MODEL_CONFIG

    def __new__(cls, *args: Any, **data: Any) -> Any:
        if _is_family(cls) and data:
            return provider_config_type(cls, data.get("provider"))(**data)
        return super().__new__(cls)

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        """A family base, used as an annotation, is the union of its registered providers."""
        if source is cls and _is_family(cls) and _VARIANTS[cls.__name__]:
            members = tuple(_VARIANTS[cls.__name__].values())
            if len(members) == 1:
                return handler.generate_schema(members[0])
            union = Annotated[Union[members], Field(discriminator="provider")]  # type: ignore[valid-type]  # noqa: UP007  (a runtime tuple of classes)
            return handler.generate_schema(union)
        return handler(source)

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

    def store_key(self) -> tuple[object, ...] | None:
        """Where this keeps a corpus's chunks, as a key: equal keys name one store.

        Two tools pinning one ``corpus_id`` in one store must agree on its chunks
        (``AgentConfig``); in two stores they cannot clash. ``None``: each tool's own (its
        store directory). By default every config of a provider counts as one store; a
        provider that knows where its data lives says so (a server and an index or table).
        """
        return (type(self).__name__,)  # one key per provider: its config class

    def keys_overlap(self, other: _ProviderConfig) -> str | None:
        """Why ``other`` keeps its chunks among this store's keys though their keys differ.

        ``None`` when it does not (the default: equal ``store_key``s alone name one store).
        A provider whose stores can nest says how (one store's keys inside the other's).
        """
        return None


def _family_of(cls: type[_ProviderConfig]) -> type[_ProviderConfig]:
    return next(c for c in cls.__mro__ if _is_family(c))


def provider_value(cls: type[BaseModel]) -> str:
    """The one ``provider`` value a variant accepts (its ``Literal``).

    Raises:
        TypeError: When ``provider`` is not a one-value ``Literal`` field.
    """
    field = cls.model_fields.get("provider")
    values = get_args(field.annotation) if field is not None else ()
    if len(values) != 1 or not isinstance(values[0], str):
        msg = (
            f"{cls.__name__}.provider must be a one-value Literal such as "
            f"provider: Literal['mydb'], got {field.annotation if field else None!r}."
        )
        raise TypeError(msg)
    return values[0]


def register_provider_config(cls: _C) -> _C:
    """Class decorator: make ``cls`` the config of its ``provider`` in its family.

    ``cls`` subclasses ``DatabaseConfig`` or ``KeywordIndexConfig``. Registering the same class
    again does nothing; models holding a section of the family are rebuilt, so YAML accepts the
    new ``provider`` from now on.

    Raises:
        TypeError: When ``cls`` is not a variant of a family or its ``provider`` is no Literal.
        ValueError: When another class already has that provider.
    """
    if not (isinstance(cls, type) and issubclass(cls, _ProviderConfig)) or _is_family(cls):
        msg = (
            f"register_provider_config takes a subclass of DatabaseConfig or "
            f"KeywordIndexConfig, got {cls!r}."
        )
        raise TypeError(msg)
    family = _VARIANTS[_family_of(cls).__name__]
    provider = provider_value(cls)
    other = family.get(provider)
    if other is cls:
        return cls
    if other is not None:
        msg = f"provider {provider!r} already has the config class {other.__name__}."
        raise ValueError(msg)
    family[provider] = cls
    for model in _DEPENDENTS:
        if model.__pydantic_complete__:
            model.model_rebuild(force=True)
    return cls


def provider_configs(family: type[BaseModel]) -> dict[str, type[BaseModel]]:
    """The registered providers of ``DatabaseConfig`` or ``KeywordIndexConfig``, by value."""
    return dict(_VARIANTS[family.__name__])


def provider_config_type(family: type[BaseModel], provider: object) -> type[BaseModel]:
    """The config class of ``provider`` in ``family``.

    Raises:
        ValueError: When no provider of that name is registered (naming the known ones).
    """
    variants = _VARIANTS[family.__name__]
    found = variants.get(str(provider)) if provider is not None else None
    if found is None:
        known = ", ".join(repr(name) for name in variants)
        msg = f"{_FAMILY_KEYS[family.__name__]} must be one of {known}, got {provider!r}."
        raise ValueError(msg)
    return found


def family_members(annotation: object) -> list[type[BaseModel]] | None:
    """The registered variants when ``annotation`` is a family base, else ``None``."""
    if (
        isinstance(annotation, type)
        and issubclass(annotation, _ProviderConfig)
        and _is_family(annotation)
    ):
        return list(_VARIANTS[annotation.__name__].values())
    return None


def rebuild_on_new_provider(*models: _M) -> None:
    """Rebuild ``models`` (inner ones first) whenever a provider registers after them."""
    _DEPENDENTS.extend(models)


class DatabaseConfig(_ProviderConfig):
    """Where a tool's vectors live: the ``database:`` section, selected by its ``provider`` key.

    An open family: each provider is a subclass registered with ``register_provider_config``
    (a backend's ``config_type``). ``DatabaseConfig(provider="redis", connection_string=...)``
    builds that provider's class.
    """

    provider: str
    """The provider's name; each variant narrows it to its one value."""

    _base_dir: Path | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _remember_base_dir(self, info: ValidationInfo) -> DatabaseConfig:
        # the loaders pass the directory relative paths resolve against as validation context:
        # the agent.yaml's (as for a tool's source), the project's for .holodeck/config.yaml
        if info.context and isinstance(info.context.get("base_dir"), Path):
            self._base_dir = info.context["base_dir"]
        return self

    @property
    def base_dir(self) -> Path | None:
        """Directory a relative path in this section resolves against, once known.

        The agent.yaml's directory, or the project's for ``.holodeck/config.yaml``.
        """
        return self._base_dir

    def relative_to(self, base_dir: str | os.PathLike[str]) -> Self:
        """A copy whose relative paths resolve against ``base_dir`` (a tool's own base)."""
        copy = self.model_copy()
        copy._base_dir = Path(base_dir).absolute()
        return copy


DatabaseProviderConfig = DatabaseConfig
"""The family base under its earlier name."""


@register_provider_config
class InMemoryDatabaseConfig(DatabaseConfig):
    """The in-memory vector store (``MatrixVectorStore``), saved in the tool's store directory."""

    provider: Literal["in-memory"]
    """Selects the in-memory store."""

    def store_key(self) -> None:
        """None: each tool's store is its own directory (``<store>/<tool name>``)."""
        return None


@register_provider_config
class RedisDatabaseConfig(DatabaseConfig):
    """Redis Stack (RediSearch), through langchain-redis; needs the ``redis`` extra."""

    provider: Literal["redis"]
    """Selects Redis."""
    model_config = ConfigDict(**MODEL_CONFIG, hide_input_in_errors=True)  # the URL is a secret
    connection_string: SecretStr = Field(json_schema_extra={"rule": "redis:// or rediss://"})
    """Redis URL such as ``${REDIS_URL}``; a secret (it may embed a password)."""
    index_name: str = Field(default="holodeck_vectors", pattern=r"^[A-Za-z0-9_.:-]+$")
    """Name of the vector index (RediSearch index and key prefix ``<index_name>:``). One that is
    another index's name followed by ``:`` (``kb:v2`` beside ``kb``) is refused on one server:
    that index would cover its keys."""
    vector_algorithm: Literal["HNSW", "FLAT"] = "HNSW"
    """Vector index algorithm: approximate (HNSW) or exact (FLAT). An existing index keeps its
    own: a change is refused until ``--force-ingest`` re-creates the index."""
    distance_metric: Literal["COSINE", "L2", "IP"] = "COSINE"
    """Distance metric of the vector index; scores are reported as similarities in [0, 1]. An
    existing index keeps its own: a change is refused until ``--force-ingest`` re-creates it."""
    fallback_to_memory: bool = True
    """When Redis is unreachable: warn and use the in-memory store (true), or fail (false)."""
    embedding_cache_ttl_days: Number = Field(
        default=30, gt=0, le=MAX_CACHE_TTL_DAYS, allow_inf_nan=False
    )
    """Days an embedding-cache entry lives after it was last written or read (a century at
    most); the cache only spares a model call for a chunk whose key moved, so an expired
    entry costs one embedding."""

    def store_key(self) -> tuple[object, ...]:
        """``index_name`` (the index and its key prefix), on whatever server.

        Two ``index_name``s are two stores on any server. The server is left out: one server
        has many spellings (``/1`` and ``?db=1``, ``localhost`` and ``127.0.0.1``), and two
        tools taking one for two would delete each other's chunks; two servers holding one
        index name are refused too (give each its own ``index_name`` or ``corpus_id``).
        """
        return ("redis", self.index_name)

    def keys_overlap(self, other: _ProviderConfig) -> str | None:
        """How one ``index_name`` is the other's followed by ``:`` (``kb`` and ``kb:v2``).

        The index ``kb`` (key prefix ``kb:``) covers every key of ``kb:v2`` (``kb:v2:``):
        on one server it would search and delete the other's chunks (the store refuses to
        open the second), so the two count as one store here.
        """
        if not isinstance(other, RedisDatabaseConfig):
            return None
        outer, inner = sorted((self.index_name, other.index_name), key=len)
        if not inner.startswith(outer + ":"):
            return None
        return (
            f"index_name {inner!r} is {outer!r} followed by ':', so the index {outer!r} "
            f"covers its keys on one server"
        )

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
        problem = userinfo_problem(value.get_secret_value())
        if problem is not None:  # redis-py would connect to a host made of password pieces
            msg = f"{problem}, got {mask_connection_string(value.get_secret_value())!r}"
            raise ValueError(msg)
        path = urlsplit(value.get_secret_value()).path  # the user info is well-formed here
        if path.strip("/") and not path.strip("/").isdigit():  # redis-py ignores it: db 0
            msg = (
                "the path must be a database number such as /0 (Redis databases have no "
                f"names; index_name keeps stores apart), got path {path!r}"
            )
            raise ValueError(msg)
        return value

    @property
    def masked_connection_string(self) -> str:
        """The connection string with its password replaced by ``***``: safe to log or show."""
        return mask_connection_string(self.connection_string.get_secret_value())


@register_provider_config
class QdrantDatabaseConfig(DatabaseConfig):
    """Qdrant, through langchain-qdrant: in-process, on disk, or a server; needs ``qdrant``.

    Exactly one of ``location``, ``path`` and ``url``. ``location`` and ``path`` run
    qdrant-client's local mode (no server); ``url`` talks to a Qdrant server through the same
    client code.
    """

    provider: Literal["qdrant"]
    """Selects Qdrant."""
    location: Literal[":memory:"] | None = None
    """``":memory:"``: an in-process collection that lives as long as the process."""
    path: PathStr | None = Field(default=None, min_length=1)
    """Directory of an on-disk local-mode store (one process at a time; the tools of one
    process share it); a path resolves like a tool's ``source``: ``~`` is the home directory,
    a relative path is under the agent.yaml's directory (the project's for
    ``.holodeck/config.yaml``)."""
    url: MaskedUrlStr | None = Field(
        default=None, json_schema_extra={"rule": "http:// or https://"}
    )
    """URL of a Qdrant server, e.g. ``http://localhost:6333``."""
    api_key: SecretStr | None = None
    """Qdrant API key, from the environment (``${QDRANT_API_KEY}``); only with ``url``."""
    collection_name: str = Field(default="holodeck_vectors", pattern=r"^[A-Za-z0-9_.-]+$")
    """Collection holding the chunks; corpora sharing it never see each other's chunks."""
    timeout: Number = Field(default=10.0, gt=0, le=MAX_SECONDS, allow_inf_nan=False)
    """Seconds per request to a Qdrant server."""
    fallback_to_memory: bool = True
    """When the server at ``url`` is unreachable, or the local ``path`` is held by another
    process (``serve``, another ingest): warn and use the in-memory store, or fail."""

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

    def store_key(self) -> tuple[object, ...] | None:
        """The server or the resolved directory, and ``collection_name``.

        ``None`` for ``location: ':memory:'``: each tool's own client, in its process.
        """
        path = self.resolved_path()
        if path is not None:
            return ("qdrant", os.path.realpath(path), self.collection_name)
        if self.url is not None:  # the server left out, as Redis's is (its spellings)
            return ("qdrant", "server", self.collection_name)
        return None

    def resolved_path(self) -> Path | None:
        """The absolute directory of ``path`` (``None`` without one).

        ``path`` itself stays as configured, for display. A relative one resolves against
        ``base_dir``, else the working directory.
        """
        if self.path is None:
            return None
        path = Path(self.path).expanduser()
        if path.is_absolute():
            return path
        return ((self._base_dir or Path.cwd()) / path).absolute()


@register_provider_config
class PostgresDatabaseConfig(DatabaseConfig):
    """PostgreSQL + pgvector (psycopg 3); needs the ``postgres`` extra.

    One table holds every corpus (apart by namespace). ``read_replicas`` take the searches;
    ``shards`` make ``connection_string`` a coordinator whose table is hash-partitioned over
    ``postgres_fdw`` foreign partitions on those servers.
    """

    provider: Literal["postgres"]
    """Selects PostgreSQL."""
    model_config = ConfigDict(**MODEL_CONFIG, hide_input_in_errors=True)  # the URL is a secret
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
    ef_search: Integer = Field(default=100, ge=1, le=1000)
    """HNSW candidates per search (``hnsw.ef_search``; iterative scans continue past it)."""
    read_replicas: list[SecretStr] = Field(default_factory=list)
    """URLs of streaming standbys that take the searches (writes go to the primary)."""
    max_replica_lag_bytes: Integer = Field(default=16 * 1024 * 1024, ge=0)
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
            problem = None
            if not url.get_secret_value().startswith(("postgresql://", "postgres://")):
                problem = "must start with postgresql://"
            else:  # libpq would connect to a host made of password pieces
                problem = userinfo_problem(url.get_secret_value())
            if problem is not None:  # the URL, masked: a list's item is shown by no one else
                msg = f"{problem}, got {mask_connection_string(url.get_secret_value())!r}"
                raise ValueError(msg)
        return value

    @model_validator(mode="after")
    def _one_layout(self) -> PostgresDatabaseConfig:
        if len(self.shards) == 1:
            msg = "shards needs two or more servers (one shard is one node: drop shards)"
            raise ValueError(msg)
        return self

    def store_key(self) -> tuple[object, ...]:
        """``table_name``, on whatever server: the server left out, as Redis's is.

        A database omitted from the URL is the user's (``...:5432`` and ``...:5432/postgres``
        are one), and a host has many spellings: two tools taking one for two would delete
        each other's chunks.
        """
        return ("postgres", self.table_name)

    @property
    def masked_connection_string(self) -> str:
        """The connection string with its password replaced by ``***``: safe to log or show."""
        return mask_connection_string(self.connection_string.get_secret_value())


class KeywordIndexConfig(_ProviderConfig):
    """The keyword (BM25) index of a hierarchical document tool, selected by ``provider``.

    An open family like ``DatabaseConfig``: ``KeywordIndexConfig(provider="opensearch",
    endpoint=...)`` builds that provider's class.
    """

    provider: str
    """The provider's name; each variant narrows it to its one value."""


KeywordIndexProviderConfig = KeywordIndexConfig
"""The family base under its earlier name."""


@register_provider_config
class InMemoryKeywordIndexConfig(KeywordIndexConfig):
    """BM25 in memory (bm25s), saved next to the in-memory store; the default."""

    provider: Literal["in-memory"]
    """Selects the in-memory BM25 index (the default when ``keyword_index`` is unset)."""
    pair_weight: float = Field(default=DEFAULT_PAIR_WEIGHT, ge=0, le=10, allow_inf_nan=False)
    """Weight of the query's adjacent-term pairs: the best 100 candidates gain this times the
    BM25 of each pair they hold side by side (not code chunks); ``0`` ranks by terms alone."""

    def store_key(self) -> None:
        """None: saved in each tool's store directory."""
        return None


@register_provider_config
class RedisKeywordIndexConfig(KeywordIndexConfig):
    """RediSearch full-text search on the Redis vector index itself (no second copy)."""

    provider: Literal["redis"]
    """Selects Redis full-text search; needs ``database`` provider ``redis``."""

    def store_key(self) -> None:
        """None: it is the Redis vector index itself, compared as the ``database``."""
        return None


@register_provider_config
class OpenSearchKeywordIndexConfig(KeywordIndexConfig):
    """An OpenSearch index; needs the ``opensearch`` extra."""

    provider: Literal["opensearch"]
    """Selects OpenSearch."""
    endpoint: MaskedUrlStr = Field(json_schema_extra={"rule": "http(s) URL"})
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
    timeout_seconds: Number = Field(
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

    def store_key(self) -> tuple[object, ...]:
        """``index_name``, on whatever endpoint: the server left out, as Redis's is."""
        return ("opensearch", self.index_name)


def default_keyword_index() -> InMemoryKeywordIndexConfig:
    """The keyword index of a tool that configures none: in-memory BM25."""
    return InMemoryKeywordIndexConfig(provider="in-memory")


def default_keyword_provider(value: Any) -> Any:
    """``keyword_index: {}`` (no provider) means the in-memory index, as it always did."""
    if isinstance(value, dict) and "provider" not in value:
        return {**value, "provider": "in-memory"}
    return value
