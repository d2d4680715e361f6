"""Vector stores: the fast in-memory ``MatrixVectorStore`` and ``create_vector_store()``.

``create_vector_store(database_config, embeddings)`` opens the store a ``database:`` section
describes, through the backend registry (``langchain_holodeck.backends``), falling back to
memory — with a WARNING — when the service is unreachable and fallback is allowed.
``scan_documents(store)`` enumerates the chunks of any store a backend can list.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import VectorStore

from langchain_holodeck._chunk import is_window
from langchain_holodeck.backends.base import VectorStoreHandle
from langchain_holodeck.vectorstores.matrix import DocumentFilter, MatrixVectorStore

if TYPE_CHECKING:
    from langchain_holodeck.vectorstores.redis import HolodeckRedisVectorStore

__all__ = [
    "DocumentFilter",
    "HolodeckRedisVectorStore",
    "MatrixVectorStore",
    "VectorStoreHandle",
    "create_vector_store",
    "create_vector_store_with_status",
    "scan_documents",
]


def __getattr__(name: str) -> Any:
    """Import the Redis store lazily: it needs the optional ``redis`` extra."""
    if name == "HolodeckRedisVectorStore":
        from langchain_holodeck.vectorstores.redis import HolodeckRedisVectorStore

        return HolodeckRedisVectorStore
    msg = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(msg)


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
    from langchain_holodeck.backends import open_vector_store

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
    from langchain_holodeck.backends import backend_for_store

    docs = backend_for_store(store).iter_documents(
        store, namespace=namespace, batch_size=batch_size
    )
    return docs if windows else (d for d in docs if not is_window(d))
