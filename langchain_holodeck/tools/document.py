"""Agent tools: a configured corpus, ingested idempotently and searched, exposed to a model."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import time
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from langchain_core.vectorstores import VectorStore
from langchain_text_splitters import TextSplitter

from langchain_holodeck._chunk import window_parent
from langchain_holodeck._persist import atomic_write_bytes, os_error_text, why_not_saved
from langchain_holodeck._search_query import check_search_query
from langchain_holodeck._search_query import (
    has_search_terms as has_search_terms,  # re-exported: the CLI's check of QUERY
)
from langchain_holodeck._text_decoding import (
    undecoded_byte as undecoded_byte,  # re-exported: the CLI's and MCP server's check
)
from langchain_holodeck.backends import (
    Backend,
    BackendUnavailableError,
    backend_for_store,
)
from langchain_holodeck.config.models import (
    HierarchicalDocumentToolConfig,
    VectorStoreToolConfig,
)
from langchain_holodeck.contracts import MergingSave
from langchain_holodeck.corpus.store import Corpus
from langchain_holodeck.errors import (
    EmbeddingError,
    HolodeckError,
    IndexNotBuiltError,
    SearchError,
    StoreNotSavedError,
)
from langchain_holodeck.ingestion import IngestionPipeline, IngestProgress
from langchain_holodeck.search_strategy import SearchStrategy
from langchain_holodeck.sync import SyncResult, sanitize_error
from langchain_holodeck.tools._arguments import SearchInput, bad_search_arguments
from langchain_holodeck.tools._wiring import with_reranker
from langchain_holodeck.tools.formatting import format_results

UNREADABLE_FILES = "unreadable_files.json"
"""In ``store_dir``: per corpus, the files that could not be loaded, with their mtime and size."""

SaveErrors = Literal["raise", "warn"]
"""What ``initialize`` does when ``store_dir`` cannot be written: raise, or warn and go on."""
_PREVIOUS_KEPT = "the previous save is kept, without this run's changes"
_NOTHING_SAVED = "nothing is saved (the store had no previous save)"

if TYPE_CHECKING:
    from langchain_holodeck.ingestion import ChunkEnricher
    from langchain_holodeck.sync import KeywordIndexLike

logger = logging.getLogger(__name__)

RERANK_TOP_N_WARNING = "rerank_top_n is less than top_k, reranking may not improve results"


ConfigT = TypeVar("ConfigT", VectorStoreToolConfig, HierarchicalDocumentToolConfig)


class _DocumentTool(Generic[ConfigT]):
    """Shared life cycle of the tools: build store and pipeline, initialize, search, expose."""

    def __init__(
        self,
        config: ConfigT,
        *,
        embeddings: Embeddings | None = None,
        vector_store: VectorStore | None = None,
        project_dir: str | Path | None = None,
        home_dir: str | Path | None = None,
        base_dir: str | Path | None = None,
        store_dir: str | Path | None = None,
        exclude: Sequence[str | Path] = (),
    ) -> None:
        self._config: ConfigT = config
        self.corpus = Corpus(
            config,
            embeddings=embeddings,
            vector_store=vector_store,
            project_dir=Path(project_dir) if project_dir is not None else None,
            home_dir=Path(home_dir) if home_dir is not None else None,
            base_dir=Path(base_dir) if base_dir is not None else None,
            store_dir=Path(store_dir) if store_dir is not None else None,
            exclude=exclude,
        )
        """The corpus: its store, backend, embedding cache and source."""
        self._retriever: BaseRetriever | None = None
        self._search_scope: tuple[VectorStore, dict[str, Any]] | None = None
        self.is_initialized = False
        self.document_count = 0
        self.last_ingest_time: datetime | None = None
        self.last_sync_result: SyncResult | None = None
        self._save_errors: SaveErrors = "raise"
        self._not_saved: StoreNotSavedError | None = None  # this run's failed save, if any
        self._kept = _PREVIOUS_KEPT  # what a failed save leaves: _NOTHING_SAVED on a first
        self._records_only = False  # this run's sync changed no chunk, only file records
        self.search_strategy: SearchStrategy | None = None
        """How searches fuse, once initialized: ``native`` (the vector store fuses dense and
        keyword search in one request) or ``fallback`` (separate legs, fused in-process by the
        config's ``fusion``: convex score fusion by default)."""

    @property
    def config(self) -> ConfigT:
        """The tool's configuration."""
        return self._config

    @property
    def name(self) -> str:
        """The tool name a model calls."""
        return self._config.name

    @property
    def namespace(self) -> str:
        """The corpus namespace: ``corpus_id``, else derived from the resolved source and name.

        Every chunk id derives from it, and every search, write and deletion is scoped to it.
        """
        return self.corpus.namespace

    @property
    def backend(self) -> str:
        """The provider the vectors live in (``in-memory``, ``redis``...).

        Or the class name of a store passed as ``vector_store``.
        """
        return self.corpus.provider

    @property
    def requested_backend(self) -> str:
        """The provider the configuration asked for (differs from ``backend`` on fallback)."""
        return self.corpus.requested_provider

    @property
    def fallback_reason(self) -> str | None:
        """Why the configured database was not used (unreachable Redis), or None."""
        return self.corpus.fallback_reason

    @property
    def legacy_chunks_found(self) -> bool:
        """True when ``initialize`` found chunks of the old namespace scheme (the tool name)."""
        return self.corpus.legacy_chunks_found

    @property
    def _backend(self) -> Backend | None:
        return self.corpus.backend

    @property
    def _store_dir(self) -> Path | None:
        return self.corpus.store_dir

    @property
    def _vector_store(self) -> VectorStore | None:
        return self.corpus.store

    def describe_storage(self) -> str:
        """One line: where the vectors live (no secret), as the backend describes it."""
        return self.corpus.describe()

    # -- building -----------------------------------------------------------------------
    def _resolve_store(self) -> VectorStore:
        """The store to sync into (``Corpus.open``)."""
        return self.corpus.open()

    def _splitter(self) -> TextSplitter | None:
        return None

    def _enricher(self) -> ChunkEnricher | None:
        return None

    def _keyword_index(self, store: VectorStore) -> KeywordIndexLike | None:
        return None

    def _indexes_from_source(self, store: VectorStore) -> bool:
        """Whether the indexes must be fed every chunk of the source (the store is unlisted)."""
        return False

    def _build_retriever(self, store: VectorStore) -> BaseRetriever:
        raise NotImplementedError

    # -- life cycle ---------------------------------------------------------------------
    async def initialize(
        self,
        force_ingest: bool = False,  # noqa: FBT001, FBT002  # the contract: initialize(True)
        *,
        on_progress: Callable[[IngestProgress], None] | None = None,
        retry_contexts: bool = True,
        save_errors: SaveErrors = "raise",
    ) -> SyncResult:
        """Ingest the source into the store (idempotent) and get ready to search.

        Args:
            force_ingest: Re-embed and rewrite every chunk, even unchanged ones.
            on_progress: Called with an ``IngestProgress`` per step (files, chunks,
                embeddings), e.g. to drive progress bars.
            retry_contexts: Enrich again an unchanged file some of whose chunks were left
                without context (the context model failed). ``False`` for a search that
                re-checks the source: only changed files wait for the context model.
            save_errors: When ``store_dir`` cannot be written (a read-only or full disk):
                ``"raise"`` a ``StoreNotSavedError``; ``"warn"``: one WARNING, and the tool
                searches what it synced in memory (the saved store stays as it was), for a
                search that re-checks the source. A sync that changed no chunk, only file
                records (a file touched, its bytes the same), is neither: one DEBUG line.

        Returns:
            The ``SyncResult`` of the ingestion.

        Raises:
            FileNotFoundError: When the source does not exist or holds no supported file.
            EmbeddingModelMismatchError: When the store holds another model's vectors, or its
                index was created with other settings (a vector metric or algorithm), and
                ``force_ingest`` is False.
            EmbeddingError: ``Failed to generate embeddings: ...`` when the embedding model
                fails and no chunk could be embedded (partial failures are counted in
                ``SyncResult.failed`` instead).
            BackendUnavailableError: When the store's server cannot be reached, or goes away
                mid-run (what was written is kept; a re-run finishes the job).
            StoreNotSavedError: When what the sync changed cannot be saved in ``store_dir``
                (read-only, no space left) and ``save_errors`` is ``"raise"``; the previous
                save, if any, is kept.
        """
        return await asyncio.to_thread(
            self.initialize_sync,
            force_ingest=force_ingest,
            on_progress=on_progress,
            retry_contexts=retry_contexts,
            save_errors=save_errors,
        )

    def initialize_sync(
        self,
        force_ingest: bool = False,  # noqa: FBT001, FBT002  # twin of initialize(True)
        *,
        on_progress: Callable[[IngestProgress], None] | None = None,
        retry_contexts: bool = True,
        save_errors: SaveErrors = "raise",
    ) -> SyncResult:
        """Blocking twin of ``initialize``, for scripts and the CLI."""
        if save_errors not in ("raise", "warn"):
            msg = f"save_errors must be 'raise' or 'warn', got {save_errors!r}."
            raise ValueError(msg)
        self._save_errors, self._not_saved, self._records_only = save_errors, None, False
        self._kept = _PREVIOUS_KEPT if self._has_a_save() else _NOTHING_SAVED
        with self._service_outage():
            return self._ingest(
                force_ingest, on_progress=on_progress, retry_contexts=retry_contexts
            )

    def _ingest(
        self,
        force_ingest: bool,  # noqa: FBT001  # initialize_sync's flag
        *,
        on_progress: Callable[[IngestProgress], None] | None,
        retry_contexts: bool,
    ) -> SyncResult:
        store = self._open_store()
        self._warn_about_rerank_top_n()
        self.corpus.follow_stored_precision(store, force_ingest=force_ingest)
        self._match_dimension(store, force_ingest=force_ingest)
        self.corpus.match_index_settings(store, force_ingest=force_ingest)
        loader = self.corpus.loader()  # one per tool: the skip summary is logged once
        if force_ingest:  # re-embed means re-embed (this corpus)
            with self._saving():
                self.corpus.clear_cache()
        reindex = self._indexes_from_source(store)
        pipeline = IngestionPipeline(
            store,
            namespace=self.namespace,
            splitter=self._splitter(),
            enricher=self._enricher(),
            keyword_index=self._keyword_index(store),
            embedding_model=self.corpus.model_id,
            cleanup=not reindex,  # finding removed files' chunks needs a listable store
            base_dir=self.corpus.source_base,
            on_progress=on_progress,
            reindex=reindex,
            unreadable=self._unreadable_files(),
            retry_contexts=retry_contexts,
        )
        started = time.time()
        unsaved = store.unsaved_deletions if isinstance(store, MergingSave) else frozenset()
        result = pipeline.invoke(loader, force_ingest=force_ingest)
        self._records_only = not (result.added or result.updated or result.deleted)
        self.corpus.report_legacy_chunks(store, pipeline.walked)
        with self._saving():
            self._save_unreadable_files(pipeline.unreadable)
        if (result.updated or result.deleted) and not (result.failed or result.errors):
            with self._saving():
                self.corpus.prune_cache(store, written_before=started)  # texts edited away
        self._after_ingest(store)
        result = _without_deletions_by_others(result, store, unsaved)
        self.last_sync_result = result
        if result.failed and not (result.added or result.updated):
            _fail_if_embeddings_are_down(store, result)
        self.document_count = result.added + result.updated + result.skipped
        self.last_ingest_time = datetime.now(timezone.utc)
        self._retriever = self._build_retriever(store)
        self.is_initialized = True
        logger.info("%s: ingested %s (%s)", self.name, self._config.source, result)
        return result

    def open_sync(self) -> int:
        """Get ready to search the store as the last ingest left it, writing nothing.

        Unlike ``initialize_sync``, the source is not read and nothing is synced, written or
        saved: the store is opened, its vector width and index settings are checked (a
        mismatch is refused, never rebuilt), the keyword and exact indexes are loaded, or
        rebuilt in memory from the store, and the retriever is built. ``holodeck-rag serve``
        opens its tools this way: a source emptied, moved or deleted since the ingest leaves
        the store (and the answers) as they were.

        Returns:
            How many chunks of this corpus the store holds (also ``document_count``; 0 for a
            store no backend can list).

        Raises:
            EmbeddingModelMismatchError: When the store holds another model's vectors, or its
                index was created with other settings (``ingest --force-ingest`` rebuilds it).
            EmbeddingError: ``Failed to generate embeddings: ...`` when opening the store needs
                the model (to learn its dimension) and the model fails.
        """
        with self._service_outage():
            store = self._open_store()
            self._warn_about_rerank_top_n()
            self.corpus.follow_stored_precision(store, force_ingest=False)
            self._match_dimension(store, force_ingest=False)
            self.corpus.match_index_settings(store, force_ingest=False)
            self.corpus.match_model(store)
            self.document_count = self._open_indexes(store)
            self._retriever = self._build_retriever(store)
        self.is_initialized = True
        logger.info("%s: opened %d stored chunks", self.name, self.document_count)
        return self.document_count

    @contextlib.contextmanager
    def _service_outage(self) -> Iterator[None]:
        """Turn the store's service going away mid-run into one ``BackendUnavailableError``.

        Not the client's own exception: what was written stays, and a re-run finishes the job.
        """
        try:
            yield
        except HolodeckError:
            raise
        except Exception as error:
            backend = self._backend
            if backend is None or not backend.lost_service(error):
                raise
            msg = (
                f"{backend.describe()} became unavailable ({sanitize_error(error)}); what was "
                "written is kept: run again once it is back."
            )
            raise BackendUnavailableError(msg) from error

    def _open_store(self) -> VectorStore:
        try:
            return self._resolve_store()
        except Exception as error:  # a store probing the model's dimension: the model is down
            if _raised_by_embeddings(error, _EMBED_ANY):
                msg = f"Failed to generate embeddings: {sanitize_error(error)}"
                raise EmbeddingError(msg) from error
            raise

    def _match_dimension(self, store: VectorStore, *, force_ingest: bool) -> None:
        """``corpus.match_dimension``; a model failing its width probe is an ``EmbeddingError``.

        A model whose width is not known (an OpenAI-compatible server, measured with one
        ``embed_query``) is asked at every run on a store that holds vectors.
        """
        try:
            self.corpus.match_dimension(store, force_ingest=force_ingest)
        except Exception as error:
            if _raised_by_embeddings(error, _EMBED_ANY):
                msg = f"Failed to generate embeddings: {sanitize_error(error)}"
                raise EmbeddingError(msg) from error
            raise

    def _open_indexes(self, store: VectorStore) -> int:
        """Load the search indexes from ``store`` (in memory only); return its chunk count."""
        return len(self._stored_chunks(store))

    def _stored_chunks(self, store: VectorStore) -> list[Document]:
        """This corpus's chunks in ``store``; none for a store no backend can list."""
        from langchain_holodeck.vectorstores import scan_documents

        try:
            return list(scan_documents(store, namespace=self.namespace))
        except TypeError:  # a store no backend can list
            logger.warning(
                "%s: %s cannot be listed, so its chunks cannot be counted nor the keyword, "
                "exact and definition indexes rebuilt from it; dense search still answers.",
                self.name,
                type(store).__name__,
            )
            return []

    def _unreadable_path(self) -> Path | None:
        return None if self._store_dir is None else self._store_dir / UNREADABLE_FILES

    def _unreadable_files(self) -> dict[str, list[float]]:
        """This corpus's files that could not be loaded, remembered in ``store_dir``."""
        path = self._unreadable_path()
        try:
            saved = json.loads(path.read_text(encoding="utf-8")) if path else {}
            files = saved.get(self.namespace, {}) if isinstance(saved, dict) else {}
            return {k: list(v) for k, v in files.items()} if isinstance(files, dict) else {}
        except (OSError, ValueError, TypeError):  # absent or damaged: files are read again
            return {}

    def _save_unreadable_files(self, files: Mapping[str, list[float]] | None) -> None:
        """Remember them, so a search does not re-read (and re-warn about) a corrupt file."""
        path = self._unreadable_path()
        if path is None or files is None or files == self._unreadable_files():
            return
        try:
            saved = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            saved = {}
        saved = saved if isinstance(saved, dict) else {}
        saved[self.namespace] = dict(files)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path, json.dumps(saved, ensure_ascii=False).encode("utf-8"))

    def _after_ingest(self, store: VectorStore) -> bool:
        """Save the store to ``store_dir`` if its backend saves there and it changed."""
        saved = False
        if self._not_saved is None:  # else the WARNING said so: nothing more is saved
            with self._saving():
                saved = self.corpus.save(store)
        return saved

    def _has_a_save(self) -> bool:
        """Whether ``store_dir`` holds a save, which a failed one leaves as it was.

        Hidden files (the lock, a torn temporary) are no save.
        """
        store_dir = self._store_dir
        try:
            return store_dir is not None and any(
                not entry.name.startswith(".") for entry in store_dir.iterdir()
            )
        except OSError:  # absent (a first ingest) or unreadable: no save to keep
            return False

    @contextlib.contextmanager
    def _saving(self, kept: str | None = None) -> Iterator[None]:
        """Run one save into ``store_dir``; an ``OSError`` is this run's ``StoreNotSavedError``.

        ``kept`` says what a failure leaves saved (by default the previous save, or nothing on
        a first ingest). The error is raised (``save_errors="raise"``) or logged as one
        WARNING, after which the store and its keyword index are not saved this run: each
        follows the one before, so none may run ahead of it. A sync that changed no chunk,
        only the file records (a file touched, its bytes the same), is no error and no
        warning: one DEBUG line, and the next run checks those files by hash again.
        """
        try:
            yield
        except HolodeckError:
            raise
        except OSError as error:
            failure = self._not_saved_error(error, self._kept if kept is None else kept)
            if self._records_only:
                if self._not_saved is None:
                    logger.debug("%s (only file records changed: nothing to save)", failure)
                self._not_saved = failure
                return
            if self._save_errors == "raise":
                raise failure from error
            if self._not_saved is None:
                self._not_saved = failure
                logger.warning("%s", failure)

    def _not_saved_error(self, error: OSError, kept: str) -> StoreNotSavedError:
        why, fix = why_not_saved(error)
        where = self._store_dir if self._store_dir is not None else error.filename
        cause = os_error_text(error)
        if self._save_errors == "raise":
            msg = f"{self.name}: could not save the store in {where}: {why} ({cause}); {kept}: "
            msg += f"{fix} and run again."
        else:
            msg = (
                f"{self.name}: could not save the store in {where}: {why} ({cause}); this "
                "run searches what it synced in memory and the saved store stays as it was, "
                f"so the next run syncs the changed files again ({fix} to keep them)."
            )
        return StoreNotSavedError(msg)

    def purge_legacy_chunks(self) -> int:
        """Delete the chunks of the old scheme (namespace = tool name); return how many.

        Only chunks whose ``namespace`` metadata equals the tool name are deleted; this corpus's
        own chunks (and every other namespace) are untouched.
        """
        return self.corpus.purge_legacy_chunks()

    def _warn_about_rerank_top_n(self) -> None:
        top_n = self._config.rerank_top_n
        if self._config.rerank and top_n is not None and top_n < self._config.top_k:
            logger.warning(RERANK_TOP_N_WARNING)

    # -- search -------------------------------------------------------------------------
    def _not_built(self) -> str:
        return f"{type(self).__name__} must be initialized before search"

    def as_retriever(self) -> BaseRetriever:
        """The retriever ``search`` uses, for LCEL chains (``retriever | format | llm``)."""
        if self._retriever is None:
            raise IndexNotBuiltError(self._not_built())
        return self._retriever

    def _check_query(self, query: str) -> BaseRetriever:
        if not isinstance(query, str):
            msg = f"Search query must be a string, got {type(query).__name__} {query!r}."
            raise TypeError(msg)
        if not self.is_initialized or self._retriever is None:
            raise IndexNotBuiltError(self._not_built())
        check_search_query(query)
        return self._retriever

    async def search(self, query: str) -> str:
        """Search and format the results for a model (the tool contract's output).

        Raises:
            RuntimeError: Before ``initialize``; ``Search failed: ...`` when the store fails
                (with its cause).
            EmbeddingError: ``Failed to generate query embedding: ...`` when embedding the
                query fails (a ``RuntimeError`` too).
            ValueError: When ``query`` is empty, whitespace or has no letter or digit
                (``'""'``).
            TypeError: When ``query`` is not a string.
        """
        retriever = self._check_query(query)
        try:
            documents = await retriever.ainvoke(query)
        except Exception as error:
            raise _search_error(error) from error
        return await asyncio.to_thread(self._format, query, documents)

    def search_sync(self, query: str) -> str:
        """Blocking twin of ``search``."""
        return self.format_documents(query, self.retrieve_sync(query))

    def retrieve_sync(self, query: str, *, k: int | None = None) -> list[Document]:
        """The documents ``search_sync`` formats (same errors), for callers that show them.

        Args:
            query: What to look for.
            k: How many results, instead of the config's ``top_k``.
        """
        retriever = self._check_query(query)
        try:
            return retriever.invoke(query, None, **({} if k is None else {"k": k}))
        except Exception as error:
            raise _search_error(error) from error

    def format_documents(self, query: str, documents: list[Document]) -> str:
        """The text ``search`` returns for ``documents`` found for ``query``."""
        return self._format(query, documents)

    def _format(self, query: str, documents: list[Document]) -> str:
        if documents:
            return format_results(documents, hybrid=self._shows_sections)
        threshold = self._config.min_similarity_score
        if threshold is not None:
            try:
                unfiltered = self._has_unfiltered_results(query)
            except Exception as error:  # the store failed: as in search, not a raw error
                raise _search_error(error) from error
            if unfiltered:
                return f"No results above similarity threshold {threshold}"
        return f"No relevant results found for query: {query}"

    _shows_sections = False

    def _has_unfiltered_results(self, query: str) -> bool:
        if self._search_scope is None:
            return False
        store, kwargs = self._search_scope
        return bool(store.similarity_search(query, k=1, **kwargs))

    def _scoped(self, store: VectorStore) -> tuple[VectorStore, dict[str, Any]]:
        """The store and search kwargs under which dense search sees this corpus only."""
        backend = self._backend or backend_for_store(store)
        self._search_scope = backend.search_scope(store, self.namespace)
        return self._search_scope

    def as_tool(self) -> BaseTool:
        """A LangChain tool named after the config, taking one required ``query`` string.

        An invalid query (empty, or without a letter or digit) raises ``ToolException`` with
        the message ``search`` raises as ``ValueError``, and the tool handles it
        (``handle_tool_error=True``): the agent reads the message as the tool's answer (a
        ``ToolMessage`` with ``status="error"``) and can ask again; its loop does not stop.
        A call whose ``query`` is missing or not a string, or that passes an argument the tool
        does not take (``k``: its schema says ``additionalProperties: false``), is answered
        the same way, with one line naming the argument and the value it got
        (``bad_search_arguments``), not pydantic's multi-line ``ValidationError`` raised into
        the caller's loop.
        A failing search (the store or the embedding model down: ``Search failed: ...``,
        ``Failed to generate query embedding: ...``) is answered the same way, in one line,
        as ``holodeck-rag serve`` answers it. ``IndexNotBuiltError`` (search before
        ``initialize``: the caller's mistake, not the model's) is raised.
        """

        def run(query: str) -> str:
            with told_to_the_model():
                return self.search_sync(query)

        async def arun(query: str) -> str:
            with told_to_the_model():
                return await self.search(query)

        return StructuredTool.from_function(
            func=run,
            coroutine=arun,
            name=self._config.name,
            description=self._config.description,
            args_schema=SearchInput,
            handle_tool_error=True,
            handle_validation_error=bad_search_arguments,
        )


class VectorStoreTool(_DocumentTool[VectorStoreToolConfig]):
    """Semantic search over a folder of documents, as an agent tool.

    Key init args:
        config: A ``VectorStoreToolConfig`` (from ``agent.yaml`` via ``load_agent_config``).
        embeddings: Overrides the config's ``embedding_model`` (and its ``long_text``).
        vector_store: Overrides the config's ``database``.

    Instantiate:
        ```python
        tool = VectorStoreTool(VectorStoreToolConfig(type="vectorstore", name="kb",
                                                     description="Docs", source="docs/"))
        await tool.initialize()
        print(await tool.search("how do I revoke a token?"))
        ```
    """

    def _build_retriever(self, store: VectorStore) -> BaseRetriever:
        from langchain_holodeck.retrievers.hybrid import HybridRetriever

        view, search_kwargs = self._scoped(store)
        self.search_strategy = "fallback"  # dense only: nothing for an engine to fuse
        retriever: BaseRetriever = HybridRetriever(
            vector_store=view,
            k=self._config.top_k,
            min_similarity_score=self._config.min_similarity_score,
            search_kwargs=search_kwargs,
            provider=self.backend,
        )
        return with_reranker(retriever, self._config)


_EMBED_QUERY = frozenset({"embed_query", "aembed_query"})
_EMBED_ANY = _EMBED_QUERY | {"embed_documents", "aembed_documents"}


def _without_deletions_by_others(
    result: SyncResult, store: VectorStore, unsaved: frozenset[str]
) -> SyncResult:
    """``result`` counting only the deleted chunks this process's save removed from the file.

    A saved store (``MergingSave``) deletes from this process's copy; the chunks another
    process's save removed first were counted by that process. ``unsaved``: the store's
    deletions before this sync, which ``result`` did not count.
    """
    if not isinstance(store, MergingSave):
        return result
    others = store.deleted_by_others - unsaved
    counted = sum(1 for doc_id in others if window_parent(doc_id) == doc_id)
    if not counted:
        return result
    return dataclasses.replace(result, deleted=max(0, result.deleted - counted))


def _raised_by_embeddings(error: BaseException, methods: frozenset[str]) -> bool:
    """Whether ``error`` (or one it chains) was raised inside ``methods`` of an ``Embeddings``.

    True means the model failed, not the store that called it.
    """
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        for frame, _ in traceback.walk_tb(current.__traceback__):
            owner = frame.f_locals.get("self")
            if frame.f_code.co_name in methods and isinstance(owner, Embeddings):
                return True
        current = current.__cause__ or current.__context__
    return False


@contextlib.contextmanager
def told_to_the_model() -> Iterator[None]:
    """A bad query or a failing search becomes a ``ToolException``: the agent reads one line.

    Only those: ``ValueError`` (the query), ``SearchError`` and ``EmbeddingError`` (what
    ``search`` makes of any failure below it). ``IndexNotBuiltError`` (search before
    ``initialize``: the caller's mistake), ``TypeError`` (a query that is not a string) and
    any other error (a defect of this package) are raised as they are.
    """
    try:
        yield
    except IndexNotBuiltError:
        raise
    except (ValueError, SearchError, EmbeddingError) as error:  # the model can ask again
        raise ToolException(str(error)) from error


def _search_error(error: Exception) -> RuntimeError:
    if _raised_by_embeddings(error, _EMBED_QUERY):
        return EmbeddingError(f"Failed to generate query embedding: {sanitize_error(error)}")
    return SearchError(f"Search failed: {sanitize_error(error)}")


def _fail_if_embeddings_are_down(store: VectorStore, result: SyncResult) -> None:
    """Every chunk to write failed: raise if the embedding model is what fails.

    The sync counts failed batches without telling an embedding error from a store error;
    one probe of the model tells them apart (a store failure keeps the counted result).
    """
    embeddings = store.embeddings
    if embeddings is None:
        return
    try:
        embeddings.embed_query("embedding probe")
    except Exception as error:
        msg = (
            f"Failed to generate embeddings: {sanitize_error(error)} "
            f"({result.failed} chunks could not be embedded; none was written)"
        )
        raise EmbeddingError(msg) from error
