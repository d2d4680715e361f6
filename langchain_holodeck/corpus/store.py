"""The corpus object: the store, backend, embedding cache and source a document tool uses."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from langchain_core.stores import ByteStore, InMemoryByteStore

from langchain_holodeck._chunk import CONTEXT_CACHE_PREFIX
from langchain_holodeck._embedding_settings import DEFAULT_LONG_TEXT
from langchain_holodeck.backends import (
    Backend,
    backend_for_store,
    open_vector_store,
    scan_documents,
)
from langchain_holodeck.config.models import resolve_database_config
from langchain_holodeck.contracts import PrunableCache
from langchain_holodeck.corpus.identity import corpus_namespace, legacy_namespace
from langchain_holodeck.embeddings import (
    CachedEmbeddings,
    embedding_dimension,
    embedding_model_id,
    resolve_embeddings,
)
from langchain_holodeck.errors import FORCE_INGEST_WAY, EmbeddingModelMismatchError
from langchain_holodeck.loaders import SourceFile, SourceLoader
from langchain_holodeck.sync import (
    check_embedding_model,
    make_chunk_key,
    read_stored,
    sanitize_error,
    stable_id,
)

if TYPE_CHECKING:
    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings
    from langchain_core.vectorstores import VectorStore

    from langchain_holodeck.config.models import (
        HierarchicalDocumentToolConfig,
        VectorStoreToolConfig,
    )

logger = logging.getLogger(__name__)


class Corpus:
    """One tool's corpus on its store: the store, its backend, the embedding cache, the source.

    What a document tool ingests into and searches: it opens the configured store (through the
    backend registry, falling back when allowed), wraps the embeddings in the corpus's own
    cache, refuses or rebuilds a store of another vector width, reports (and purges) chunks of
    the old namespace scheme, and saves the store after an ingest. Nothing here searches: the
    tools build their retrievers over :meth:`open`'s store.

    Instantiate:
        ```python
        corpus = Corpus(config, store_dir=Path(".holodeck/store/kb"))
        store = corpus.open()  # the store, its backend in corpus.backend
        ```
    """

    def __init__(
        self,
        config: VectorStoreToolConfig | HierarchicalDocumentToolConfig,
        *,
        embeddings: Embeddings | None = None,
        vector_store: VectorStore | None = None,
        project_dir: Path | None = None,
        home_dir: Path | None = None,
        base_dir: Path | None = None,
        store_dir: Path | None = None,
        exclude: Sequence[str | Path] = (),
    ) -> None:
        self.config = config
        self.embeddings = embeddings
        """The embeddings given, then (once open) the ones the store writes with."""
        self.store = vector_store
        """The store given, then (once open) the one in use."""
        self.project_dir = project_dir
        self.home_dir = home_dir
        self.base_dir = base_dir
        self.store_dir = store_dir
        self.exclude = tuple(Path(p).absolute() for p in exclude)
        """Paths under the source that are never read (besides ``store_dir``)."""
        self._loader: SourceLoader | None = None
        self.backend: Backend | None = None
        """The ``Backend`` serving ``store``, once open."""
        self.cache: ByteStore | None = None
        """This corpus's embedding cache (the backend's), once a configured store is open."""
        self.model_id: str | None = None
        self._auto_model: Embeddings | None = None
        """The ``precision="auto"`` model, while the corpus embeds in its store's precision."""
        self.dimension: int | None = None
        self.provider = "unset"
        """The provider the vectors live in (``in-memory``, ``redis``...), or the class name of
        a store passed as ``vector_store``."""
        self.requested_provider = "unset"
        """The provider the configuration asked for (differs from ``provider`` on fallback)."""
        self.fallback_reason: str | None = None
        """Why the configured database was not used (unreachable Redis), or None."""
        self.legacy_chunks_found = False
        """True when the last check found chunks of the old namespace scheme (the tool name)."""

    @property
    def name(self) -> str:
        """The tool name."""
        return self.config.name

    @property
    def source_base(self) -> Path | None:
        """What a relative ``source`` resolves against."""
        return self.config.base_dir if self.base_dir is None else self.base_dir

    @property
    def namespace(self) -> str:
        """``corpus_id``, else derived from the resolved source and the tool name."""
        return corpus_namespace(
            self.config.resolved_source(self.source_base),
            name=self.config.name,
            corpus_id=self.config.corpus_id,
        )

    def describe(self) -> str:
        """One line: where the vectors live (no secret), as the backend describes it."""
        if self.backend is None:
            return self.provider
        return self.backend.describe(store_dir=self.store_dir)

    def loader(self) -> SourceLoader:
        """The source's loader, one per corpus: it leaves out the store's files and ``exclude``.

        The store's files are ``store_dir`` and the backend's own data directories (Qdrant's
        ``path:``), known once ``open`` has run. One loader for every ingest, so a skip summary
        is logged once.
        """
        if self._loader is None:
            own: tuple[Path, ...] = () if self.store_dir is None else (self.store_dir.absolute(),)
            if self.backend is not None:
                own += tuple(path.absolute() for path in self.backend.data_dirs())
            self._loader = SourceLoader(
                self.config.source,
                base_dir=self.source_base,
                exclude=own + self.exclude,
                max_convert_seconds=self.config.max_convert_seconds,
                max_convert_memory_bytes=self.config.max_convert_memory_bytes,
            )
        return self._loader

    def _warn_unapplied_long_text(self, embeddings: Embeddings) -> None:
        """WARNING when the config sets a ``long_text`` other than the given model's own mode.

        A given ``Embeddings`` object embeds as it was built; the config cannot change it.
        """
        if "long_text" not in self.config.model_fields_set:
            return
        model = embeddings.underlying if isinstance(embeddings, CachedEmbeddings) else embeddings
        own = getattr(model, "long_text", DEFAULT_LONG_TEXT)
        if self.config.long_text != own:
            logger.warning(
                "%s: long_text %r in the tool config is not applied: the tool was given %s, "
                "which embeds with long_text=%r (set the mode on that object instead).",
                self.config.name,
                self.config.long_text,
                type(model).__name__,
                own,
            )

    def open(self) -> VectorStore:
        """The store to sync into: the one given, else the configured one (with fallback).

        Embeddings are wrapped in a ``CachedEmbeddings`` keyed by text, so a chunk whose key
        shifted (a paragraph inserted above it) is rewritten without a model call. The cache
        is the backend's, one per corpus: in ``store_dir`` for the persisted in-memory store,
        in Redis for Redis, in a table for PostgreSQL, in memory otherwise.
        """
        if self.store is not None and self.backend is not None:
            return self.store
        if self.embeddings is not None:
            self._warn_unapplied_long_text(self.embeddings)
        base = self.embeddings or resolve_embeddings(
            self.config.embedding_model,
            long_text=self.config.long_text,
            timeout=self.config.embedding_timeout,
        )
        self.model_id = embedding_model_id(base)
        if self.store is not None:
            self.backend = backend_for_store(self.store)
            self.provider = self.requested_provider = type(self.store).__name__
            self.embeddings = base
            return self.store
        database = resolve_database_config(
            self.config, project_dir=self.project_dir, home_dir=self.home_dir
        )
        if database is not None and database is self.config.database and self.base_dir:
            database = database.relative_to(self.base_dir)  # its paths resolve like source
        embeddings = CachedEmbeddings(base, InMemoryByteStore(), model_id=self.model_id)
        handle = open_vector_store(database, embeddings, store_dir=self.store_dir)
        backend = handle.adapter or backend_for_store(handle.store)
        self.cache = backend.byte_store(namespace=self.namespace, store_dir=self.store_dir)
        embeddings.store = self.cache
        self.provider, self.requested_provider = handle.backend, handle.requested
        self.fallback_reason = handle.reason if handle.fell_back else None
        self.backend = backend
        self.embeddings = embeddings
        self.store = handle.store
        return handle.store

    def backend_of(self, store: VectorStore) -> Backend:
        """The backend serving ``store`` (this corpus's once open)."""
        return self.backend or backend_for_store(store)

    def prune_cache(self, store: VectorStore, *, written_before: float) -> int:
        """Drop cached embeddings of texts this corpus no longer stores; return how many.

        For a cache that can prune (``contracts.PrunableCache``: the cache in a directory,
        ``store_dir/embedding_cache/<namespace>``, and the PostgreSQL table, this corpus's
        prefix only), neither of which expires: after a sync that wrote every chunk, an entry
        stays when a stored chunk or model window of this corpus has its text (what a re-sync
        may need when chunk keys move), or when it was written at or after ``written_before``
        (by a sync running at the same time); the rest (texts edited or deleted away) go.
        Other caches (Redis expires its entries; in memory) and stores that cannot be listed
        are left alone.
        """
        cache, embeddings = self.cache, self.embeddings
        if not isinstance(cache, PrunableCache) or not isinstance(embeddings, CachedEmbeddings):
            return 0
        try:
            keep = {
                embeddings.key(doc.page_content)
                for doc in scan_documents(store, namespace=self.namespace, windows=True)
            }
        except TypeError:  # a store no backend can list: nothing is known to be unused
            return 0
        keep.update(cache.yield_keys(prefix=CONTEXT_CACHE_PREFIX))  # contexts are not pruned
        removed = cache.prune(keep, written_before=written_before)
        if removed:
            logger.debug("%s: pruned %d unused embedding-cache entries.", self.name, removed)
        return removed

    def clear_cache(self) -> None:
        """Forget this corpus's cached embeddings (``force_ingest``: re-embed means re-embed).

        Its cached LLM contexts stay: their keys hold the context model, the prompt, the
        document and the chunk, so another model or prompt writes new ones anyway, and a
        forced re-ingest does not pay for every context again.
        """
        if self.cache is not None:
            keys = self.cache.yield_keys()
            self.cache.mdelete([k for k in keys if not k.startswith(CONTEXT_CACHE_PREFIX)])

    def _first_chunk(self, store: VectorStore) -> Document | None:
        """One stored chunk of this corpus (its namespace only), or None.

        None when the corpus has no chunk, or when no backend can list the store (sync then
        checks what it reads).
        """
        try:
            return next(iter(scan_documents(store, namespace=self.namespace)), None)
        except TypeError:  # a store no backend can list
            return None

    def _cached_width(self, store: VectorStore) -> int | None:
        """The width of the vector this model made for a stored chunk, from the cache.

        A model whose width is not known from its settings (a server speaking OpenAI's API)
        embeds a probe text at every run on a store holding vectors. When that call fails (the
        server is down), a stored chunk's text in this corpus's embedding cache, under this
        model's id, still tells the width, so a run with nothing to embed is not stopped.
        None when nothing is cached for it.
        """
        embeddings = self.embeddings
        if not isinstance(embeddings, CachedEmbeddings) or store.embeddings is not embeddings:
            return None
        first = self._first_chunk(store)
        if first is None:
            return None
        vector = embeddings.cached(first.page_content)
        return None if vector is None else len(vector)

    def match_dimension(self, store: VectorStore, *, force_ingest: bool) -> None:
        """Refuse (or, with ``force_ingest``, rebuild) a store holding another vector width.

        Raises:
            EmbeddingModelMismatchError: When the widths differ and ``force_ingest`` is False,
                or the store is shared with corpora of the old width.
        """
        backend = self.backend_of(store)
        have = backend.vector_dimension(store)
        if have is None:
            return
        if self.dimension is None:
            # the store's own embeddings write the vectors (a given store brings its own)
            try:
                self.dimension = embedding_dimension(store.embeddings or self.embeddings)  # type: ignore[arg-type]  # open() sets one
            except Exception as error:  # a provider's own errors: any type
                cached = self._cached_width(store)
                if cached is None:
                    raise
                logger.warning(
                    "%s: the embedding model did not answer its width probe (%s); using the "
                    "width of its cached vectors, %d.",
                    self.name,
                    sanitize_error(error),
                    cached,
                )
                self.dimension = cached
        if have == self.dimension:
            self._expect_width(have)
            return
        if not force_ingest:
            msg = (
                f"{self.name}: the vector store ({self.provider}) holds {have}-dimensional "
                f"vectors but the embedding model {self.model_id!r} makes "
                f"{self.dimension}-dimensional ones; re-ingest with {FORCE_INGEST_WAY} to "
                "rebuild this corpus's vectors."
            )
            raise EmbeddingModelMismatchError(msg)
        logger.warning(
            "%s: rebuilding the vector store for %d-dimensional vectors (was %d).",
            self.name,
            self.dimension,
            have,
        )
        backend.rebuild_for_dimension(store, namespace=self.namespace, dimension=self.dimension)
        self._expect_width(self.dimension)

    def _expect_width(self, width: int) -> None:
        """Tell the cache the store's width: it refuses (and never reads back) any other."""
        if isinstance(self.embeddings, CachedEmbeddings):
            self.embeddings.dimension = width

    def follow_stored_precision(self, store: VectorStore, *, force_ingest: bool) -> None:
        """Embed in the precision of the vectors this corpus's store holds, under ``"auto"``.

        ``OnnxEmbeddings(precision="auto")`` computes in int8 where int8 pays on this CPU. A
        store built in the other precision (by a version before int8 compute, or on another
        CPU) would otherwise stop sync with ``EmbeddingModelMismatchError``; its chunks name
        a model id that differs from ours in the precision alone, so the corpus embeds with
        ``in_precision`` of theirs instead, and nothing is re-embedded. With ``force_ingest``
        the corpus embeds in this CPU's choice again (a forced re-ingest converts the store).
        A precision set explicitly, another model, or an empty store: nothing changes.
        """
        embeddings = self.embeddings
        if not isinstance(embeddings, CachedEmbeddings):  # a store given with its own model
            return
        if force_ingest:
            if self._auto_model is not None:  # followed a store before: this CPU's choice again
                embeddings.underlying, self._auto_model = self._auto_model, None
                self.model_id = embeddings.model_id = embedding_model_id(embeddings.underlying)
            return
        base = embeddings.underlying
        in_precision = getattr(base, "in_precision", None)
        if getattr(base, "requested_precision", None) != "auto" or in_precision is None:
            return
        first = self._first_chunk(store)
        stored = None if first is None else first.metadata.get("embedding_model")
        chosen = getattr(base, "precision", None)
        other = "fp32" if chosen == "int8" else "int8"
        twin = in_precision(other)
        if stored is None or stored != embedding_model_id(twin):
            return
        logger.info(
            "%s: the store holds %s vectors; embedding in %s too (a forced re-ingest embeds "
            "in %s, this CPU's choice).",
            self.name,
            other,
            other,
            chosen,
        )
        self._auto_model = base
        self.model_id = embeddings.model_id = stored
        embeddings.underlying = twin

    def match_model(self, store: VectorStore) -> None:
        """Refuse a store whose chunks of this corpus another embedding model made.

        Sync refuses them before it writes; a tool opened without syncing (``open_sync``:
        ``serve``) compares one stored chunk's ``embedding_model`` the same way, instead of
        answering queries embedded by one model from vectors another made.

        Raises:
            EmbeddingModelMismatchError: When it names another model than ``model_id``.
        """
        if self.model_id is None:  # a store given with its own embeddings: nothing to compare
            return
        first = self._first_chunk(store)
        if first is not None and first.id is not None:
            check_embedding_model({first.id: first}, self.model_id)

    def match_index_settings(self, store: VectorStore, *, force_ingest: bool) -> None:
        """Refuse (or, with ``force_ingest``, re-create) an index built with other settings.

        An existing index keeps the settings it was created with (its vector algorithm and
        distance metric, as its backend reports them); a configuration that changes them is
        not silently ignored.

        Raises:
            EmbeddingModelMismatchError: When a setting differs and ``force_ingest`` is False,
                or the store is shared with other corpora.
        """
        backend = self.backend_of(store)
        changes = backend.index_setting_changes(store)
        if not changes:
            return
        stored = ", ".join(f"{name} {old}" for name, (old, _) in changes.items())
        configured = ", ".join(f"{name} {new}" for name, (_, new) in changes.items())
        if not force_ingest:
            msg = (
                f"{self.name}: the vector index ({self.describe()}) was created with {stored} "
                f"but the configuration sets {configured}; an existing index keeps its "
                f"settings, so re-ingest with {FORCE_INGEST_WAY} to re-create it with the "
                "configured ones, or configure the ones it has."
            )
            raise EmbeddingModelMismatchError(msg)
        backend.rebuild_for_settings(store, namespace=self.namespace)  # may refuse: shared
        logger.warning(
            "%s: re-created the vector index with %s (was %s).", self.name, configured, stored
        )

    def save(self, store: VectorStore) -> bool:
        """Save the store to ``store_dir`` if its backend saves there and it changed."""
        if self.store_dir is None or self.backend is None:
            return False
        return self.backend.save(store, self.store_dir)

    def report_legacy_chunks(self, store: VectorStore, files: Iterable[SourceFile]) -> None:
        """One WARNING when the store holds chunks of the old scheme (namespace = tool name).

        Probes by id: the chunk 0 of each of ``files`` (the source's files, as the ingest
        walked them) under the old namespace, one batched ``get_by_ids``, on any store; nothing
        is scanned and nothing is deleted.
        """
        legacy = legacy_namespace(self.name)
        if self.namespace == legacy:
            return
        try:
            ids = [stable_id(legacy, make_chunk_key(f.source_path, 0)) for f in files]
            self.legacy_chunks_found = bool(read_stored(store, ids, batch_size=500))
        except Exception as error:  # a check, never a reason not to start (ingest reports)
            logger.debug("%s: legacy chunk check failed: %s", self.name, sanitize_error(error))
            return
        if self.legacy_chunks_found:
            logger.warning(
                "%s: the store holds chunks of these files under namespace %r (the tool name), "
                "which this tool does not search: an older version wrote them, or they are "
                "another project's, pinned with corpus_id: %s. Old ones: keep using them with "
                "corpus_id: %s in this tool's config, or delete them with: holodeck-rag "
                "purge-legacy --config <agent.yaml> --tool %s --yes",
                self.name,
                legacy,
                legacy,
                legacy,
                self.name,
            )

    def count_legacy_chunks(self) -> int:
        """How many chunks of the old scheme (namespace = tool name) the store holds."""
        store = self.open()
        legacy = legacy_namespace(self.name)
        if self.backend is None or self.namespace == legacy:
            return 0
        return sum(1 for _ in scan_documents(store, namespace=legacy))

    def purge_legacy_chunks(self) -> int:
        """Delete the chunks of the old scheme (namespace = tool name); return how many.

        Only chunks whose ``namespace`` metadata equals the tool name are deleted; this corpus's
        own chunks (and every other namespace) are untouched.
        """
        store = self.open()
        legacy = legacy_namespace(self.name)
        if self.backend is None or self.namespace == legacy:
            return 0
        deleted = self.backend.delete_namespace(store, legacy)
        self.save(store)
        self.legacy_chunks_found = False
        return deleted
