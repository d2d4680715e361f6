"""The in-memory backend: ``MatrixVectorStore``, saved in the tool's store directory, and BM25."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_holodeck._byte_stores import namespace_segment
from langchain_holodeck._defaults import DEFAULT_PAIR_WEIGHT
from langchain_holodeck._tracing import span
from langchain_holodeck.backends._registry import register_backend, register_keyword_index
from langchain_holodeck.backends.base import (
    Backend,
    BackendCapabilities,
    BackendUnavailableError,
    KeywordIndexProvider,
)
from langchain_holodeck.config._backends import InMemoryDatabaseConfig, InMemoryKeywordIndexConfig
from langchain_holodeck.contracts import KeywordIndex
from langchain_holodeck.keyword_index.bm25 import BM25KeywordIndex
from langchain_holodeck.vectorstores.matrix import MatrixVectorStore

if TYPE_CHECKING:
    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings
    from langchain_core.vectorstores import VectorStore

logger = logging.getLogger(__name__)

MANIFEST = "manifest.json"
"""The file whose presence in ``store_dir`` means a saved store."""


@register_backend
class MemoryBackend(Backend):
    """``provider: in-memory``: a ``MatrixVectorStore``; persistent when given a ``store_dir``."""

    provider = "in-memory"
    own_store = "another store_dir=, CLI --store"
    config_type = InMemoryDatabaseConfig
    is_default = True
    capabilities = BackendCapabilities(filters_namespace=True, enumerates=True, persistent=False)

    def __init__(self, config: InMemoryDatabaseConfig | None = None) -> None:
        super().__init__(config)
        self._saved: dict[int, int] = {}  # id(store) -> version last saved or loaded

    @classmethod
    def handles(cls, store: VectorStore) -> bool:
        return isinstance(store, MatrixVectorStore)

    def open_store(
        self,
        embeddings: Embeddings,
        *,
        store_dir: Path | None = None,
        connect_timeout: float = 2.0,
    ) -> MatrixVectorStore:
        if store_dir is not None and (Path(store_dir) / MANIFEST).exists():
            try:
                store = MatrixVectorStore.load(store_dir, embeddings)
            except ValueError as error:  # a damaged save (the message names the file)
                msg = f"the store saved in {store_dir} is damaged: {error}"
                raise BackendUnavailableError(msg) from error
            self._saved[id(store)] = store.version
            return store
        return MatrixVectorStore(embeddings)

    def save(self, store: VectorStore, store_dir: Path) -> bool:
        if not isinstance(store, MatrixVectorStore):
            return False
        if self._saved.get(id(store)) == store.version:  # nothing written since
            return False
        store.dump(store_dir, merge=True)  # another process's corpus in the directory stays
        self._saved[id(store)] = store.version
        return True

    def describe(self, *, store_dir: Path | None = None) -> str:
        return f"in-memory, saved in {store_dir}" if store_dir is not None else "in-memory"

    def namespace_filter(self, store: VectorStore, namespace: str) -> dict[str, Any]:
        # a mapping is matched on the stored metadata: no Document is built per candidate
        return {"filter": {"namespace": namespace}}

    def vector_dimension(self, store: VectorStore) -> int | None:
        """The matrix width (kept by ``clear()``, so an emptied store still has one)."""
        return store.embedding_dimension if isinstance(store, MatrixVectorStore) else None

    def _reset_dimension(self, store: VectorStore, *, namespace: str, dimension: int) -> None:
        if isinstance(store, MatrixVectorStore):  # the corpus is all it holds: start over
            store.clear(keep_dimension=False)

    def iter_documents(
        self, store: VectorStore, *, namespace: str | None = None, batch_size: int = 1000
    ) -> Iterator[Document]:
        if not isinstance(store, MatrixVectorStore):
            return super().iter_documents(store, namespace=namespace)
        docs = store.iter_documents()
        if namespace is None:
            return docs
        return (d for d in docs if d.metadata.get("namespace") == namespace)


@register_keyword_index
class MemoryKeywordIndexProvider(KeywordIndexProvider):
    """``keyword_index.provider: in-memory``: ``BM25KeywordIndex``, saved next to the store."""

    provider = "in-memory"
    config_type = InMemoryKeywordIndexConfig

    def separate_engine(self, backend: Backend) -> bool:
        """BM25 in-process is no engine apart: any backend's native search may replace it."""
        return False

    def open(
        self,
        *,
        backend: Backend,
        store: VectorStore,
        namespace: str,
        store_dir: Path | None = None,
    ) -> KeywordIndex:
        """The index saved in ``store_dir`` over this same store, else one built from the store.

        A save records the store it was made over (``Backend.store_identity``): the directory
        is the tool's, and the tool may have moved to another store (Redis, then PostgreSQL,
        or the in-memory fallback). A save over another store is known not to match, so it
        is rebuilt from this one without a warning (DEBUG).
        """
        saved = self._directory(store_dir, namespace)
        origin = backend.store_identity()
        if saved is not None and saved.exists():
            attributes = {
                "index.kind": "keyword",
                "index.provider": BM25KeywordIndex.__name__,
                "index.source": "disk",
            }
            try:
                with span("holodeck.index_build", attributes) as current:
                    loaded = BM25KeywordIndex.load(saved)
                    current.set_attribute("index.document_count", len(loaded))
            except (OSError, ValueError) as error:  # rebuilt below: the store is the truth
                logger.warning("BM25 index in %s unreadable (%s); rebuilding it.", saved, error)
            else:
                if loaded.origin != origin:
                    logger.debug(
                        "BM25 index in %s was saved over %s, not %s; rebuilding it from this "
                        "store.",
                        saved,
                        loaded.origin or "an unrecorded store",
                        origin,
                    )
                elif loaded.chunk_types_known or not backend.capabilities.enumerates:
                    loaded.pair_weight = self._pair_weight()
                    return loaded
                else:  # its code chunks would gain pair bonuses: rebuilt once, quietly
                    logger.debug("BM25 index in %s predates code chunk records; rebuilding.", saved)
        index = BM25KeywordIndex(pair_weight=self._pair_weight())
        index.origin = origin
        if not backend.capabilities.enumerates:  # nothing to rebuild from: sync fills it
            return index
        attributes = {
            "index.kind": "keyword",
            "index.provider": type(index).__name__,
            "index.source": "store",
        }
        with span("holodeck.index_build", attributes) as current:
            current.set_attribute(
                "index.document_count", index.rebuild_from_store(store, namespace=namespace)
            )
        return index

    def save(
        self, index: KeywordIndex, store_dir: Path, *, namespace: str, store_saved: bool
    ) -> None:
        """Save ``index`` when the store was saved or the index changed since it was loaded.

        A store on a server (Redis, PostgreSQL) is never saved here, so the index is saved
        whenever a sync (or a rebuild) changed it; else the next process would load a save
        behind the store, and warn and rebuild.
        """
        directory = self._directory(store_dir, namespace)
        if not isinstance(index, BM25KeywordIndex) or directory is None:
            return
        if store_saved or index.unsaved:  # it follows the store, or its own writes
            index.save(directory)

    def _pair_weight(self) -> float:
        """``keyword_index.pair_weight``: the configuration's, never a save's."""
        return float(getattr(self.config, "pair_weight", DEFAULT_PAIR_WEIGHT))

    def describe(self, *, store_dir: Path | None = None, backend: Backend | None = None) -> str:
        where = f", saved in {Path(store_dir) / 'bm25'}" if store_dir is not None else ""
        return f"in-memory BM25{where}"

    @staticmethod
    def _directory(store_dir: Path | None, namespace: str | None) -> Path | None:
        """``<store_dir>/bm25/<namespace>`` (``namespace_segment``): corpora keep apart."""
        if store_dir is None or not namespace:
            return None
        return Path(store_dir) / "bm25" / namespace_segment(namespace)
