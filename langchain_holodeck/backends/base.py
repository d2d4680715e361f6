"""The backend seam: what one vector-store or keyword-index provider knows, behind one interface.

A ``Backend`` opens its vector store, restricts a search to one namespace in the store's own
filter syntax, lists a namespace's documents, gives the byte store of the embedding cache and its
own keyword index if it has one, and says in one line where the data lives. Code outside
``backends/`` asks a backend; it never names a provider.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from langchain_core.stores import ByteStore, InMemoryByteStore

from langchain_holodeck._byte_stores import LocalFileByteStore, namespace_segment
from langchain_holodeck.contracts import (
    BackendCapabilities,
    KeywordIndex,
    check_native_hybrid_args,
)
from langchain_holodeck.errors import EmbeddingModelMismatchError, HolodeckError
from langchain_holodeck.vectorstores.namespace import NamespaceFilteredStore

if TYPE_CHECKING:
    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings
    from langchain_core.vectorstores import VectorStore
    from pydantic import BaseModel

__all__ = [
    "Backend",
    "BackendCapabilities",
    "BackendUnavailableError",
    "KeywordIndexProvider",
    "LangChainStoreBackend",
    "VectorStoreHandle",
    "check_native_hybrid_args",
]

logger = logging.getLogger(__name__)


class BackendUnavailableError(HolodeckError, ConnectionError):
    """A backend's service could not be reached; the message is one line, secrets masked."""


class Backend(ABC):
    """One vector-store provider: subclass it in one module and ``register_backend`` it.

    ``provider`` is the ``database.provider`` value that selects it (``None`` for backends that
    only adopt stores a caller built, found by ``handles``); ``config_type`` its config class.
    """

    provider: ClassVar[str | None] = None
    """The ``database.provider`` value of this backend, or ``None`` for adopted stores only."""
    config_type: ClassVar[type[BaseModel] | None] = None
    """The config class of ``provider`` (a ``DatabaseProviderConfig`` subclass)."""
    capabilities: ClassVar[BackendCapabilities]
    """What this backend can do."""
    is_default: ClassVar[bool] = False
    """Serves tools that configure no ``database``, and services that cannot be reached."""
    own_store: ClassVar[str] = "another vector store"
    """How a corpus gets a store of its own, as the error that asks for one names it
    (``another database.table_name`` for PostgreSQL)."""

    def __init__(self, config: BaseModel | None = None) -> None:
        self.config = config

    # -- choosing ---------------------------------------------------------------------------
    @classmethod
    def handles(cls, store: VectorStore) -> bool:
        """Whether ``store`` (built by a caller) belongs to this backend."""
        return False

    @property
    def fallback_to_memory(self) -> bool:
        """Whether an unreachable service falls back to the in-memory store (config decides)."""
        return bool(getattr(self.config, "fallback_to_memory", True))

    # -- opening ----------------------------------------------------------------------------
    @abstractmethod
    def open_store(
        self,
        embeddings: Embeddings,
        *,
        store_dir: Path | None = None,
        connect_timeout: float = 2.0,
    ) -> VectorStore:
        """The vector store, with data saved in ``store_dir`` loaded when the backend saves there.

        Raises:
            BackendUnavailableError: When the service cannot be reached.
        """

    def describe(self, *, store_dir: Path | None = None) -> str:
        """One line for logs and the CLI: where the vectors live (no secret)."""
        return self.provider or type(self).__name__

    def lost_service(self, error: BaseException) -> bool:
        """Whether ``error`` is this backend's service gone (unreachable, dropped mid-run).

        The tool then raises ``BackendUnavailableError`` (one line) instead of the client's
        own exception. By default no error is.
        """
        return False

    def save(self, store: VectorStore, store_dir: Path) -> bool:
        """Save ``store`` into ``store_dir`` if it changed since the last save; return whether."""
        return False

    def data_dirs(self) -> tuple[Path, ...]:
        """Local directories the store writes its data in, besides ``store_dir``.

        A tool never reads them as source files (Qdrant's ``path:`` may lie inside the
        source). By default none: a server's data is not in the source.
        """
        return ()

    def store_identity(self) -> str:
        """Which store this is, for what is saved beside it (the BM25 index of a tool).

        Equal for the same store, different for another (another server, index or table, or
        the in-memory fallback); no secret. By default ``describe()``, which names the
        server (password masked) and the index or table.
        """
        return self.describe()

    # -- one namespace ----------------------------------------------------------------------
    def namespace_filter(self, store: VectorStore, namespace: str) -> dict[str, Any] | None:
        """Search kwargs restricting dense search to ``namespace``, or ``None`` if it cannot."""
        return None

    def search_scope(
        self, store: VectorStore, namespace: str
    ) -> tuple[VectorStore, dict[str, Any]]:
        """The store and search kwargs under which a dense search sees ``namespace`` only.

        Stores that cannot filter are wrapped in a ``NamespaceFilteredStore`` (post-filter).
        """
        kwargs = self.namespace_filter(store, namespace)
        if kwargs is not None:
            return store, kwargs
        return NamespaceFilteredStore(store, namespace=namespace), {}

    def iter_documents(
        self, store: VectorStore, *, namespace: str | None = None, batch_size: int = 1000
    ) -> Iterator[Document]:
        """Every stored chunk (copies with ``id``), optionally of one namespace; any order.

        Raises:
            TypeError: When the store cannot be enumerated (``capabilities.enumerates``).
        """
        msg = (
            f"cannot enumerate documents of {type(store).__name__}; stale-file cleanup and "
            "keyword-index rebuilds need a store a backend can list (MatrixVectorStore, "
            "InMemoryVectorStore, Redis)."
        )
        raise TypeError(msg)

    def has_documents(self, store: VectorStore, namespace: str) -> bool:
        """Whether the store holds at least one chunk of ``namespace``."""
        return next(iter(self.iter_documents(store, namespace=namespace)), None) is not None

    def delete_namespace(self, store: VectorStore, namespace: str, *, batch_size: int = 500) -> int:
        """Delete every chunk of ``namespace`` (and nothing else); return how many."""
        ids = [d.id for d in self.iter_documents(store, namespace=namespace) if d.id]
        for start in range(0, len(ids), batch_size):
            store.delete(ids=ids[start : start + batch_size])
        return len(ids)

    # -- vector dimension ------------------------------------------------------------------
    def vector_dimension(self, store: VectorStore) -> int | None:
        """Width of the vectors ``store`` holds or accepts; ``None`` when not fixed or unknown."""
        return None

    def rebuild_for_dimension(self, store: VectorStore, *, namespace: str, dimension: int) -> None:
        """Make ``store`` take ``dimension``-wide vectors for ``namespace``, before a re-ingest.

        The default refuses a store shared with other namespaces (when it can be listed) and
        otherwise leaves it to the re-ingest, which overwrites every chunk of ``namespace``;
        backends whose store fixes one width (a matrix, an index schema) override
        ``_reset_dimension``.

        Raises:
            EmbeddingModelMismatchError: When chunks of other namespaces share the store: one
                store holds one width, and theirs must not be touched.
        """
        others = self._other_namespaces(store, namespace)
        if others:
            msg = (
                f"cannot rebuild the vectors of {namespace!r} for dimension {dimension}: "
                f"the store ({self.describe()}) also holds chunks of {others} embedded at "
                f"dimension {self.vector_dimension(store)}, and one store holds one "
                f"dimension. Give this corpus its own store ({self.own_store}), or "
                "re-ingest the other corpora with the same embedding model."
            )
            raise EmbeddingModelMismatchError(msg)
        self._reset_dimension(store, namespace=namespace, dimension=dimension)

    def _reset_dimension(self, store: VectorStore, *, namespace: str, dimension: int) -> None:
        """Backend part of ``rebuild_for_dimension``, once the store is known to be unshared."""
        return

    def _other_namespaces(self, store: VectorStore, namespace: str) -> str:
        """The other namespaces with chunks in ``store`` (up to 5, quoted), or ``""``."""
        if not self.capabilities.enumerates:
            return ""
        found = {str(d.metadata.get("namespace")) for d in self.iter_documents(store)}
        return ", ".join(repr(name) for name in sorted(found - {namespace})[:5])

    # -- index settings --------------------------------------------------------------------
    def index_setting_changes(self, store: VectorStore) -> dict[str, tuple[str, str]]:
        """Settings the store's index was created with that the configuration now changes.

        ``{setting: (stored, configured)}``, e.g. ``{"distance_metric": ("COSINE", "IP")}``;
        empty when they agree or the backend has no such settings. An existing index keeps
        its settings when opened; ``rebuild_for_settings`` applies the configured ones.
        """
        return {}

    def rebuild_for_settings(self, store: VectorStore, *, namespace: str) -> None:
        """Re-create ``store``'s index with the configured settings, before a re-ingest.

        Raises:
            EmbeddingModelMismatchError: When chunks of other namespaces share the store:
                their index is not changed under them.
        """
        changes = self.index_setting_changes(store)
        if not changes:
            return
        others = self._other_namespaces(store, namespace)
        if others:
            shown = ", ".join(f"{k} {old} -> {new}" for k, (old, new) in changes.items())
            msg = (
                f"cannot re-create the index of {namespace!r} with {shown}: the store "
                f"({self.describe()}) also holds chunks of {others}, searched with the "
                f"settings it has. Give this corpus its own store ({self.own_store}), or "
                "configure the settings the index has."
            )
            raise EmbeddingModelMismatchError(msg)
        self._reset_settings(store, namespace=namespace)

    def _reset_settings(self, store: VectorStore, *, namespace: str) -> None:
        """Backend part of ``rebuild_for_settings``, once the store is known to be unshared."""
        return

    # -- companions ------------------------------------------------------------------------
    def byte_store(self, *, namespace: str, store_dir: Path | None = None) -> ByteStore:
        """The embedding cache of one corpus: clearing it never touches another corpus's."""
        if store_dir is not None:
            # a cache: a value a power cut tore is a miss, so no fsync per vector
            return LocalFileByteStore(
                Path(store_dir) / "embedding_cache" / namespace_segment(namespace), durable=False
            )
        return InMemoryByteStore()

    def keyword_index(self, store: VectorStore, *, namespace: str) -> KeywordIndex | None:
        """The backend's own keyword index over ``store`` (one namespace), if it has one."""
        return None


class KeywordIndexProvider(ABC):
    """One keyword-index provider: subclass it in one module and ``register_keyword_index`` it."""

    provider: ClassVar[str]
    """The ``keyword_index.provider`` value that selects it."""
    config_type: ClassVar[type[BaseModel]]
    """Its config class (a ``KeywordIndexProviderConfig`` subclass)."""
    client_loggers: ClassVar[tuple[str, ...]] = ()
    """Loggers of its client library that log every failed request attempt themselves
    (opensearch-py: a WARNING per retry). The failure reaches the user once, as this package's
    WARNING, so ``holodeck-rag`` shows these loggers' lines only with ``-vv``."""

    def __init__(self, config: BaseModel) -> None:
        self.config = config

    @abstractmethod
    def open(
        self,
        *,
        backend: Backend,
        store: VectorStore,
        namespace: str,
        store_dir: Path | None = None,
    ) -> KeywordIndex:
        """The keyword index of one namespace of ``store`` (loaded or rebuilt as needed)."""

    def save(
        self, index: KeywordIndex, store_dir: Path, *, namespace: str, store_saved: bool
    ) -> None:
        """Persist ``index`` (of ``namespace``) next to a saved store, if it keeps files."""
        return

    def describe(self, *, store_dir: Path | None = None, backend: Backend | None = None) -> str:
        """One line for logs and the CLI: where the keyword index lives (no secret).

        ``backend``: the store's, when known: an index that needs another store says what
        ``open`` uses instead.
        """
        return self.provider

    def separate_engine(self, backend: Backend) -> bool:
        """Whether this index is an engine apart from ``backend``'s store.

        OpenSearch next to Qdrant, say: the ``auto`` search strategy then fuses in-process,
        where this index is used.
        """
        return self.provider != backend.provider


@dataclass(frozen=True)
class VectorStoreHandle:
    """What ``open_vector_store`` built, and whether it had to fall back."""

    store: VectorStore
    """The vector store to use."""
    backend: str
    """The provider actually in use (the default backend's after a fallback)."""
    requested: str
    """The provider the configuration asked for."""
    fell_back: bool
    """``True`` when the requested service was unreachable and the default backend is used."""
    reason: str | None = None
    """Why it fell back (one line, connection string masked), else ``None``."""
    adapter: Backend | None = None
    """The ``Backend`` serving ``store``: ask it for filters, scans, caches, keyword index."""


class LangChainStoreBackend(Backend):
    """Any LangChain ``VectorStore`` given to a tool: searches are post-filtered by namespace.

    The registry's answer for a store no registered backend ``handles``.
    """

    capabilities = BackendCapabilities(filters_namespace=False, enumerates=False, persistent=False)

    @classmethod
    def handles(cls, store: VectorStore) -> bool:
        return True

    def open_store(
        self,
        embeddings: Embeddings,
        *,
        store_dir: Path | None = None,
        connect_timeout: float = 2.0,
    ) -> VectorStore:
        msg = "LangChainStoreBackend adopts a store a caller built; it opens none."
        raise TypeError(msg)

    def describe(self, *, store_dir: Path | None = None) -> str:
        return "a LangChain vector store (searches post-filtered by namespace)"
