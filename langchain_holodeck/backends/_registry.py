"""The registry: provider name -> backend class, and the one place that falls back to memory."""

from __future__ import annotations

import importlib
import logging
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, TypeAdapter, ValidationError

from langchain_holodeck._chunk import is_window
from langchain_holodeck.backends.base import (
    Backend,
    BackendUnavailableError,
    KeywordIndexProvider,
    LangChainStoreBackend,
    VectorStoreHandle,
)
from langchain_holodeck.config._backends import provider_value, register_provider_config
from langchain_holodeck.errors import ConfigError

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings
    from langchain_core.vectorstores import VectorStore

logger = logging.getLogger(__name__)

_B = TypeVar("_B", bound=type[Backend])
_K = TypeVar("_K", bound=type[KeywordIndexProvider])

_BACKENDS: dict[str, type[Backend]] = {}
_ADOPTERS: list[type[Backend]] = []
_KEYWORD_INDEXES: dict[str, type[KeywordIndexProvider]] = {}
BUILTIN_PROVIDER_MODULES = ("langchain", "memory", "opensearch", "postgres", "qdrant", "redis")
"""The built-in provider modules of ``langchain_holodeck.backends``, imported by name (like
plugins) the first time the registry is asked: importing one registers its classes. A new
built-in provider is one name here; a provider of another package registers on its import."""
_builtins_loaded = False
_builtins_loading = False
"""True while the thread holding ``_BUILTINS_LOCK`` imports them (a module importing the
registry back returns at once)."""
_BUILTINS_LOCK = threading.RLock()

_DEFAULT: type[Backend] | None = None
"""The backend with ``is_default``: no ``database`` configured, or the service unreachable."""


def register_backend(cls: _B) -> _B:
    """Class decorator: make ``cls`` the backend of ``cls.provider`` (and let it adopt stores).

    Its ``config_type`` (a ``DatabaseConfig`` subclass) is registered too, so the ``database:``
    section of an agent.yaml accepts ``provider: <cls.provider>`` from now on. The backend
    with ``is_default`` serves tools without a ``database`` and unreachable services.

    Raises:
        ValueError: When another class already serves that provider, or ``config_type``
            selects another provider.
    """
    global _DEFAULT
    if cls.provider is not None:
        other = _BACKENDS.get(cls.provider)
        if other is not None and other is not cls:
            msg = f"provider {cls.provider!r} is already served by {other.__name__}."
            raise ValueError(msg)
        _check_config_type(cls, cls.provider)
        _BACKENDS[cls.provider] = cls
        if cls.is_default:
            _DEFAULT = cls
    if cls not in _ADOPTERS:
        _ADOPTERS.append(cls)
    return cls


def register_keyword_index(cls: _K) -> _K:
    """Class decorator: make ``cls`` the keyword index of ``keyword_index.provider``.

    Its ``config_type`` (a ``KeywordIndexConfig`` subclass) is registered too, so the
    ``keyword_index:`` section accepts ``provider: <cls.provider>`` from now on.

    Raises:
        ValueError: When ``config_type`` selects another provider.
    """
    _check_config_type(cls, cls.provider)
    _KEYWORD_INDEXES[cls.provider] = cls
    return cls


def client_loggers() -> frozenset[str]:
    """The ``client_loggers`` of the keyword-index providers registered so far.

    Built-in providers are not imported for this: a provider whose module was never imported
    has no client that could have logged.
    """
    return frozenset(name for cls in _KEYWORD_INDEXES.values() for name in cls.client_loggers)


def _check_config_type(cls: type[Backend] | type[KeywordIndexProvider], provider: str) -> None:
    config_type = cls.config_type
    if config_type is None:
        return
    if provider_value(config_type) != provider:
        msg = (
            f"{cls.__name__}.config_type {config_type.__name__} selects provider "
            f"{provider_value(config_type)!r}, but {cls.__name__}.provider is {provider!r}; "
            "make them equal."
        )
        raise ValueError(msg)
    register_provider_config(config_type)


def load_builtin_providers() -> None:
    """Import the built-in provider modules once (each registers itself).

    Thread-safe: a thread asking while another imports them waits until every one has
    registered (else it would see only the first, and refuse ``provider: qdrant``).
    """
    global _builtins_loaded, _builtins_loading
    if _builtins_loaded:
        return
    with _BUILTINS_LOCK:
        if _builtins_loaded or _builtins_loading:  # done, or this thread is importing them
            return
        _builtins_loading = True
        try:
            for name in BUILTIN_PROVIDER_MODULES:
                importlib.import_module(f"langchain_holodeck.backends.{name}")
        finally:
            _builtins_loaded, _builtins_loading = True, False


def registered_providers() -> tuple[str, ...]:
    """The ``database.provider`` values a backend is registered for, sorted."""
    load_builtin_providers()
    return tuple(sorted(_BACKENDS))


def native_hybrid_providers() -> tuple[str, ...]:
    """The ``database.provider`` values whose backend fuses dense + keyword search itself."""
    load_builtin_providers()
    return tuple(sorted(name for name, cls in _BACKENDS.items() if cls.capabilities.native_hybrid))


def get_backend(config: Any | None) -> Backend:
    """The backend a ``database`` configuration selects; ``None`` selects the in-memory one.

    ``config`` is a ``DatabaseConfig`` variant, a mapping with the same keys, or any object
    with those attributes.

    Raises:
        ConfigError: When ``provider`` is unknown or the settings are invalid (naming them).
    """
    load_builtin_providers()
    if config is None:
        return _default_backend()()
    provider = config.get("provider") if isinstance(config, Mapping) else config.provider
    cls = _BACKENDS.get(str(provider))
    if cls is None:
        known = " or ".join(repr(p) for p in registered_providers())
        msg = f"database.provider must be {known}, got {provider!r}."
        raise ConfigError(msg)
    return cls(_coerce(cls, config))


def backend_for_store(store: VectorStore) -> Backend:
    """The backend that knows ``store``'s class; any other LangChain store gets the generic one."""
    load_builtin_providers()
    for cls in reversed(_ADOPTERS):  # specific backends register after the generic one
        if cls.handles(store):
            return cls()
    return LangChainStoreBackend()


def get_keyword_index_provider(config: Any) -> KeywordIndexProvider:
    """The keyword-index provider a ``keyword_index`` configuration selects.

    Raises:
        ConfigError: When ``provider`` is unknown.
    """
    load_builtin_providers()
    provider = config.get("provider") if isinstance(config, Mapping) else config.provider
    cls = _KEYWORD_INDEXES.get(str(provider))
    if cls is None:
        known = " or ".join(repr(p) for p in sorted(_KEYWORD_INDEXES))
        msg = f"keyword_index.provider must be {known}, got {provider!r}."
        raise ConfigError(msg)
    coerced = _coerce(cls, config)
    return cls(config if coerced is None else coerced)


def open_vector_store(
    config: Any | None,
    embeddings: Embeddings,
    *,
    fallback: bool = True,
    connect_timeout: float = 2.0,
    store_dir: Path | None = None,
) -> VectorStoreHandle:
    """Open the configured store; if its service is unreachable, fall back to memory or raise.

    It falls back (with one WARNING, connection string masked) only when both ``fallback`` and
    the config's ``fallback_to_memory`` (default true) allow it.

    Raises:
        ConfigError: When the configuration is invalid.
        BackendUnavailableError: When the service is unreachable and fallback is off.
    """
    backend = get_backend(config)
    requested = backend.provider or type(backend).__name__
    try:
        store = backend.open_store(embeddings, store_dir=store_dir, connect_timeout=connect_timeout)
    except BackendUnavailableError as error:
        if backend.is_default or not (fallback and backend.fallback_to_memory):
            raise  # the in-memory store failing (a damaged save) has nothing to fall back to
        reason = str(error)
        logger.warning("%s; falling back to the in-memory vector store.", reason)
        memory = get_backend(None)
        store = memory.open_store(embeddings, store_dir=store_dir)
        return VectorStoreHandle(
            store, str(memory.provider), requested, fell_back=True, reason=reason, adapter=memory
        )
    return VectorStoreHandle(store, requested, requested, fell_back=False, adapter=backend)


def create_vector_store(
    database_config: Any | None,
    embeddings: Embeddings,
    *,
    fallback: bool = True,
    connect_timeout: float = 2.0,
) -> VectorStore:
    """Build the vector store a ``DatabaseConfig`` describes (details: ``..._with_status``).

    Args:
        database_config: A ``DatabaseConfig`` variant, an equivalent mapping, or ``None``.
        embeddings: The embeddings of documents and queries.
        fallback: Fall back to memory when the service is unreachable (else raise).
        connect_timeout: Seconds to wait for the connection.

    Returns:
        A ``MatrixVectorStore``, a ``HolodeckRedisVectorStore``, or another backend's store.
    """
    return create_vector_store_with_status(
        database_config, embeddings, fallback=fallback, connect_timeout=connect_timeout
    ).store


def create_vector_store_with_status(
    database_config: Any | None,
    embeddings: Embeddings,
    *,
    fallback: bool = True,
    connect_timeout: float = 2.0,
) -> VectorStoreHandle:
    """Build the vector store a ``DatabaseConfig`` describes, reporting any fallback.

    A thin wrapper over ``backends.open_vector_store``: ``None`` or ``provider: in-memory``
    gives a ``MatrixVectorStore``; ``provider: redis`` a ``HolodeckRedisVectorStore`` on
    ``connection_string`` (the index is created when missing; an existing index keeps its own
    settings). If the service cannot be reached within ``connect_timeout`` seconds, a WARNING
    is logged (connection string masked) and, when both ``fallback`` and the config's
    ``fallback_to_memory`` allow it, a ``MatrixVectorStore`` is returned with ``fell_back=True``.

    Setup:
        Redis needs the extra: ``pip install "langchain-holodeck[redis]"``.

    Example:
        ```python
        handle = create_vector_store_with_status(None, embeddings)
        handle.backend, handle.fell_back  # -> ('in-memory', False)
        ```

    Raises:
        ConfigError: If ``provider`` is unknown or a setting is invalid (naming it).
        ImportError: If the provider's extra is not installed.
        BackendUnavailableError: If the service is unreachable and fallback is off.
    """
    return open_vector_store(
        database_config, embeddings, fallback=fallback, connect_timeout=connect_timeout
    )


def scan_documents(
    store: VectorStore,
    *,
    namespace: str | None = None,
    batch_size: int = 1000,
    windows: bool = False,
) -> Iterator[Document]:
    """Yield every stored chunk (copies with ``id`` set), optionally of one ``namespace``.

    Works for every store a backend can enumerate (``MatrixVectorStore``, langchain-core
    ``InMemoryVectorStore``, langchain-redis ``RedisVectorStore`` by SCAN, ``batch_size`` keys
    per round trip). Order is unspecified. Model windows (entries ``<chunk id>:w<n>``, see
    ``_chunk``) are left out unless ``windows``.

    Raises:
        TypeError: For a store no backend can enumerate, naming its class.
        ValueError: If ``batch_size`` is not positive.
    """
    if batch_size <= 0:
        msg = f"batch_size must be positive, got {batch_size}."
        raise ValueError(msg)
    docs = backend_for_store(store).iter_documents(
        store, namespace=namespace, batch_size=batch_size
    )
    return docs if windows else (d for d in docs if not is_window(d))


def _default_backend() -> type[Backend]:
    load_builtin_providers()
    if _DEFAULT is None:
        msg = "no backend is registered with is_default; import langchain_holodeck.backends."
        raise RuntimeError(msg)
    return _DEFAULT


def _coerce(cls: type[Backend] | type[KeywordIndexProvider], config: Any) -> BaseModel | None:
    """``config`` as an instance of the provider's config class (validated if it was not)."""
    model = cls.config_type
    if model is None or isinstance(config, model):
        return config if isinstance(config, BaseModel) else None
    if isinstance(config, Mapping):
        data = dict(config)
    else:  # any object with the config's attributes
        data = {name: getattr(config, name) for name in model.model_fields if hasattr(config, name)}
    try:
        return TypeAdapter(model).validate_python(data)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'value'}: {e['msg']}"
            for e in error.errors(include_input=False)
        )
        msg = f"invalid {cls.provider} configuration: {problems}."
        raise ConfigError(msg) from None
