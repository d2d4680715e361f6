"""The registry: provider name -> backend class, and the one place that falls back to memory."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, TypeAdapter, ValidationError

from langchain_holodeck.backends.base import (
    Backend,
    BackendUnavailableError,
    KeywordIndexProvider,
    VectorStoreHandle,
)
from langchain_holodeck.errors import ConfigError

if TYPE_CHECKING:
    from pathlib import Path

    from langchain_core.embeddings import Embeddings
    from langchain_core.vectorstores import VectorStore

logger = logging.getLogger(__name__)

_B = TypeVar("_B", bound=type[Backend])
_K = TypeVar("_K", bound=type[KeywordIndexProvider])

_BACKENDS: dict[str, type[Backend]] = {}
_ADOPTERS: list[type[Backend]] = []
_KEYWORD_INDEXES: dict[str, type[KeywordIndexProvider]] = {}
_FALLBACK = "in-memory"


def register_backend(cls: _B) -> _B:
    """Class decorator: make ``cls`` the backend of ``cls.provider`` (and let it adopt stores).

    Raises:
        ValueError: When another class already serves that provider.
    """
    if cls.provider is not None:
        other = _BACKENDS.get(cls.provider)
        if other is not None and other is not cls:
            msg = f"provider {cls.provider!r} is already served by {other.__name__}."
            raise ValueError(msg)
        _BACKENDS[cls.provider] = cls
    if cls not in _ADOPTERS:
        _ADOPTERS.append(cls)
    return cls


def register_keyword_index(cls: _K) -> _K:
    """Class decorator: make ``cls`` the keyword index of ``keyword_index.provider``."""
    _KEYWORD_INDEXES[cls.provider] = cls
    return cls


def registered_providers() -> tuple[str, ...]:
    """The ``database.provider`` values a backend is registered for, sorted."""
    return tuple(sorted(_BACKENDS))


def get_backend(config: Any | None) -> Backend:
    """The backend a ``database`` configuration selects; ``None`` selects the in-memory one.

    ``config`` is a ``DatabaseConfig`` variant, a mapping with the same keys, or any object
    with those attributes.

    Raises:
        ConfigError: When ``provider`` is unknown or the settings are invalid (naming them).
    """
    if config is None:
        return _BACKENDS[_FALLBACK]()
    provider = config.get("provider") if isinstance(config, Mapping) else config.provider
    cls = _BACKENDS.get(str(provider))
    if cls is None:
        known = " or ".join(repr(p) for p in registered_providers())
        msg = f"database.provider must be {known}, got {provider!r}."
        raise ConfigError(msg)
    return cls(_coerce(cls, config))


def backend_for_store(store: VectorStore) -> Backend:
    """The backend that knows ``store``'s class; any other LangChain store gets the generic one."""
    for cls in reversed(_ADOPTERS):  # specific backends register after the generic one
        if cls.handles(store):
            return cls()
    from langchain_holodeck.backends.langchain import LangChainStoreBackend

    return LangChainStoreBackend()


def get_keyword_index_provider(config: Any) -> KeywordIndexProvider:
    """The keyword-index provider a ``keyword_index`` configuration selects.

    Raises:
        ConfigError: When ``provider`` is unknown.
    """
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
        if not (fallback and backend.fallback_to_memory):
            raise
        reason = str(error)
        logger.warning("%s; falling back to the in-memory vector store.", reason)
        memory = get_backend(None)
        store = memory.open_store(embeddings, store_dir=store_dir)
        return VectorStoreHandle(
            store, _FALLBACK, requested, fell_back=True, reason=reason, adapter=memory
        )
    return VectorStoreHandle(store, requested, requested, fell_back=False, adapter=backend)


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
