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
from langchain_core.language_models import BaseChatModel
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from langchain_core.vectorstores import VectorStore
from langchain_text_splitters import TextSplitter
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from langchain_holodeck._chunk import chunk_hashes, content_digest, window_parent
from langchain_holodeck._defaults import DEFAULT_STORE_DIR
from langchain_holodeck._persist import atomic_write_bytes, os_error_text, why_not_saved
from langchain_holodeck._tracing import span
from langchain_holodeck.backends import (
    Backend,
    BackendUnavailableError,
    backend_for_store,
    get_keyword_index_provider,
)
from langchain_holodeck.config.models import (
    HierarchicalDocumentToolConfig,
    VectorStoreToolConfig,
)
from langchain_holodeck.contracts import CountedKeywordIndex, MergingSave
from langchain_holodeck.corpus.store import Corpus
from langchain_holodeck.definitions import DefinitionIndex
from langchain_holodeck.errors import (
    EmbeddingError,
    HolodeckError,
    IndexNotBuiltError,
    SearchError,
    StoreNotSavedError,
)
from langchain_holodeck.exact import ExactMatchIndex
from langchain_holodeck.ingestion import IngestionPipeline, IngestProgress
from langchain_holodeck.keyword_index import BM25KeywordIndex, KeywordIndex
from langchain_holodeck.search_strategy import SearchStrategy, tool_search_strategy
from langchain_holodeck.sync import SyncResult, sanitize_error
from langchain_holodeck.tools._wiring import IndexFanOut, chat_model, rebuild_index, with_reranker
from langchain_holodeck.tools.formatting import format_results, snippet

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


def has_search_terms(query: str) -> bool:
    """Whether ``query`` has anything to search for: a letter or a digit (any script)."""
    return any(ch.isalnum() for ch in query)


def undecoded_byte(text: str) -> str | None:
    """Where ``text`` holds a character no UTF-8 encodes (a lone surrogate), else ``None``.

    Bytes that were not UTF-8 reach Python as such surrogates (``surrogateescape``: argv,
    stdin); a JSON string may carry one too. The embedding tokenizer refuses them, so the
    dense leg failed and the search quietly lost it.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        code = ord(text[error.start])
        what = f"byte 0x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"U+{code:04X}"
        return f"{what} at character {error.start}"
    return None


class SearchInput(BaseModel):
    """The single argument a model passes to a search tool; any other is refused."""

    # an argument the tool does not take (k, top_k, a misspelt qeury) was dropped without a
    # word: the model never learnt it had no effect (bad_search_arguments names it now)
    model_config = ConfigDict(extra="forbid")
    query: str = Field(
        description="What to look for, in natural language; keywords, identifiers and "
        "section numbers (e.g. 'Section 4.2') also work."
    )


def bad_search_arguments(error: ValidationError) -> str:
    """One line naming each bad argument of a tool call and the value it got.

    What ``as_tool`` answers (a ``ToolMessage`` with ``status="error"``) instead of raising
    pydantic's multi-line report, so an agent loop without its own handler goes on and the
    model can call again.
    """
    problems: dict[str, str] = {}
    unknown: list[str] = []
    for detail in error.errors():
        name = ".".join(str(part) for part in detail["loc"]) or "arguments"
        got = snippet(json.dumps(detail.get("input"), ensure_ascii=False, default=repr), 60)
        if detail["type"] == "extra_forbidden":
            unknown.append(f"{name} (got {got})")
        elif detail["type"] == "missing":
            problem = f"{name} is required: pass the words to look for, e.g. 'revoke a token'."
            problems.setdefault(name, problem)
        else:
            problem = f"{name} must be a string of words to look for, got {got}."
            problems.setdefault(name, problem)
    if unknown:
        plural = "s" if len(unknown) > 1 else ""
        problems[""] = f"unknown argument{plural} {', '.join(unknown)}: the tool takes query only."
    return " ".join(problems.values())


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
        if not query or not query.strip():
            msg = "Search query cannot be empty"
            raise ValueError(msg)
        where = undecoded_byte(query)
        if where is not None:
            msg = f"Search query is not UTF-8 text ({where}); send the words as UTF-8."
            raise ValueError(msg)
        if not has_search_terms(query):  # '""' or '?!': any "nearest" chunk would be noise
            msg = (
                f"Search query has no letters or digits, got {query!r}; ask with words, "
                "identifiers or section numbers."
            )
            raise ValueError(msg)
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


def load_tools(
    agent_yaml: str | Path,
    *,
    project_dir: str | Path | None = None,
    home_dir: str | Path | None = None,
    embeddings: Embeddings | None = None,
    store_dir: str | Path | None = None,
    **kwargs: Any,
) -> list[VectorStoreTool | HierarchicalDocumentTool]:
    """Build (not initialize) the tools an ``agent.yaml`` defines, in file order.

    The tools persist, as ``holodeck-rag`` does: a tool on the in-memory store saves its
    vectors, keyword index and embedding cache under ``<store_dir>/<tool name>/`` after each
    ``initialize``, and a later process loads them, embedding only what changed. The store
    directory is left out of the tools' sources.

    Args:
        agent_yaml: The agent.yaml; relative sources resolve against its directory.
        project_dir: Where ``.holodeck/config.yaml`` is looked up; default the working
            directory.
        home_dir: Where ``~/.holodeck/config.yaml`` is looked up; default the home directory.
        embeddings: Overrides every tool's ``embedding_model`` and ``long_text``.
        store_dir: The store root; default ``<project_dir>/.holodeck/store``, the directory
            ``holodeck-rag`` (run in ``project_dir``) uses. Stores on a server (Redis...)
            keep their vectors there; the root then holds only what they do not.
        **kwargs: Passed to every tool's constructor (``vector_store=``, ``llm=``...).

    Example:
        ```python
        tool = load_tools("agent.yaml")[0]
        await tool.initialize()  # first run embeds; a new process reuses .holodeck/store/
        ```
    """
    from langchain_holodeck.config.models import load_agent_config

    path = Path(agent_yaml)
    config = load_agent_config(path)
    root = (
        Path(store_dir)
        if store_dir is not None
        else Path(project_dir or Path.cwd()) / DEFAULT_STORE_DIR
    )
    tools: list[VectorStoreTool | HierarchicalDocumentTool] = []
    for tool_config in config.tools:
        cls = (
            HierarchicalDocumentTool
            if isinstance(tool_config, HierarchicalDocumentToolConfig)
            else VectorStoreTool
        )
        tools.append(
            cls(
                tool_config,  # type: ignore[arg-type]  # the isinstance above picks the class
                embeddings=embeddings,
                project_dir=project_dir,
                home_dir=home_dir,
                base_dir=path.parent,
                store_dir=root / tool_config.name,
                **kwargs,
            )
        )
    return tools


class HierarchicalDocumentTool(_DocumentTool[HierarchicalDocumentToolConfig]):
    """Hybrid search (dense + BM25 + exact section) over structured documents, as a tool.

    Documents are split along their structure (``StructuredMarkdownSplitter``), optionally
    given an LLM-written context (``ContextualChunkEnricher``), synced idempotently, and
    searched by a ``HybridRetriever``: a query naming "Section 203(a)" gets that section
    first, a defined term brings its definition, cross-references can be followed.
    ``search_strategy`` (after ``initialize``) says how dense and keyword search fuse: ``native``
    when the backend fuses them in one request (``BackendCapabilities.native_hybrid``), else
    ``fallback`` (fused here by ``fusion``, convex score fusion by default).

    Key init args:
        config: A ``HierarchicalDocumentToolConfig``.
        llm: The chat model that writes chunk contexts; overrides ``context_model``.

    Instantiate:
        ```python
        tool = HierarchicalDocumentTool(config, embeddings=embeddings)
        await tool.initialize()
        print(await tool.search("What does Section 203(a) require?"))
        ```
    """

    _shows_sections = True

    def __init__(
        self,
        config: HierarchicalDocumentToolConfig,
        *,
        embeddings: Embeddings | None = None,
        vector_store: VectorStore | None = None,
        llm: BaseChatModel | None = None,
        project_dir: str | Path | None = None,
        home_dir: str | Path | None = None,
        base_dir: str | Path | None = None,
        store_dir: str | Path | None = None,
        exclude: Sequence[str | Path] = (),
    ) -> None:
        super().__init__(
            config,
            embeddings=embeddings,
            vector_store=vector_store,
            project_dir=project_dir,
            home_dir=home_dir,
            base_dir=base_dir,
            store_dir=store_dir,
            exclude=exclude,
        )
        self._llm = llm
        self._keywords: KeywordIndex | None = None
        self._exact = ExactMatchIndex()
        self._exact_loaded = False
        self._fan_out: IndexFanOut | None = None
        self._keywords_stale = False
        self._keywords_checked = False
        self._indexed: dict[str, str] = {}
        """``id -> content_hash`` of what the exact index (and an in-memory keyword index)
        hold: checked against the store at each initialize, as another process may have
        re-ingested this corpus (``_follow_the_store``)."""
        self.definitions: DefinitionIndex = DefinitionIndex()
        """Defined terms of the corpus, rebuilt from the stored chunks at each initialize: a
        ``{normalized term: Definition}`` mapping that also holds each document's own
        definition (``DefinitionIndex.every``)."""

    def _splitter(self) -> TextSplitter:
        from langchain_holodeck.splitters.structured import StructuredMarkdownSplitter

        return StructuredMarkdownSplitter(
            max_chunk_tokens=self._config.max_chunk_tokens,
            max_table_chunk_tokens=self._config.max_table_chunk_tokens,
        )

    def _enricher(self) -> ChunkEnricher | None:
        if not self._config.contextual_embeddings:
            return None
        from langchain_holodeck.contextual import ContextualChunkEnricher

        llm = self._llm or chat_model(self._config)
        return ContextualChunkEnricher(
            llm,
            concurrency=self._config.context_concurrency,
            max_context_tokens=self._config.context_max_tokens,
            timeout=self._config.context_timeout,
            cache=self.corpus.cache,  # beside the embeddings: kept across runs, forced ones too
        )

    def _listable(self, store: VectorStore) -> bool:
        return (self._backend or backend_for_store(store)).capabilities.enumerates

    def _indexes_from_source(self, store: VectorStore) -> bool:
        """A store no backend can list: the indexes are built from the chunks sync sees.

        Every file is then read and split at each initialize and each chunk, unchanged or
        not, reaches the keyword and exact indexes; unchanged chunks are not embedded again.
        """
        if self._listable(store):
            return False
        logger.warning(
            "%s: %s cannot be listed, so the keyword and exact indexes are built from the "
            "source: every file is read and split again at each initialize (unchanged chunks "
            "are not embedded again), and chunks of files removed from the source stay in the "
            "store.",
            self.name,
            type(store).__name__,
        )
        return True

    def _keyword_index(self, store: VectorStore) -> KeywordIndexLike:
        """The configured keyword index and the exact index, kept in step by sync."""
        if self._keywords is None:
            provider = get_keyword_index_provider(self._config.keyword_index)
            self._keywords = provider.open(
                backend=self._backend or backend_for_store(store),
                store=store,
                namespace=self.namespace,
                store_dir=self._store_dir,
            )
        listable = self._listable(store)
        if self._keywords_stale and listable:  # a sync could not write to it: rebuild it
            try:
                rebuild_index("keyword", self._keywords, store, self.namespace)
                self._keywords_stale = False
            except Exception as error:  # still down: the keyword leg degrades at search
                logger.warning(
                    "%s: keyword index rebuild failed (%s); retrying at the next initialize.",
                    self.name,
                    sanitize_error(error),
                )
        if not self._exact_loaded and listable:  # else sync gives it every chunk
            attributes = {
                "index.kind": "exact",
                "index.provider": type(self._exact).__name__,
                "index.source": "store",
            }
            with span("holodeck.index_build", attributes) as current:
                chunks = self._stored_chunks(store)
                current.set_attribute("index.document_count", self._exact.replace(chunks))
            self._indexed = chunk_hashes(chunks)
            self._exact_loaded = True
        if self._exact_loaded and not self._keywords_checked:
            self._keywords_checked = self._check_keyword_index(store)
        self._fan_out = IndexFanOut((self._keywords, self._exact), keep=not listable)
        return self._fan_out

    def _check_counted_index(self, keywords: CountedKeywordIndex, store: VectorStore) -> bool:
        """Compare the server's count with the store's chunks; rebuild when they differ.

        Returns whether the check ran: with the server down it did not (the keyword leg
        degrades at search), and the next initialize checks again.
        """
        want = len(self._exact.ids)
        try:
            held = keywords.count(namespace=self.namespace)
            if held != want:
                logger.warning(
                    "%s: the keyword index holds %d chunk(s) of this corpus and the store %d; "
                    "rebuilding it from the store.",
                    self.name,
                    held,
                    want,
                )
                rebuild_index("keyword", keywords, store, self.namespace)
        except Exception as error:
            logger.debug("%s: keyword index check failed: %s", self.name, sanitize_error(error))
            return False
        return True

    def _check_keyword_index(self, store: VectorStore) -> bool:
        """Rebuild a keyword index that does not hold exactly the store's chunks.

        A saved BM25 index is saved after the store, so a process killed in between (or a
        store written by another tool) leaves it behind the store; its ids are checked
        against the exact index's, just rebuilt from the store. A server's index
        (``CountedKeywordIndex``: OpenSearch) that an earlier process could not write to is
        behind too, and only that process knew: its count of this corpus's chunks is checked.
        """
        keywords = self._keywords
        if isinstance(keywords, CountedKeywordIndex):
            return self._check_counted_index(keywords, store)
        if not isinstance(keywords, BM25KeywordIndex):
            return True
        have, want = keywords.ids, self._exact.ids
        if have != want:
            logger.warning(
                "%s: the saved keyword index holds %d chunk(s) the store does not and lacks %d "
                "it does; rebuilding it from the store.",
                self.name,
                len(have - want),
                len(want - have),
            )
            rebuild_index("keyword", keywords, store, self.namespace)
        elif keywords.content_digest != content_digest(self._indexed):
            # the same ids, other texts: a file re-ingested by another process (its own
            # saved index), or a save from before digests were recorded
            logger.info(
                "%s: the saved keyword index was not saved over the store's chunk texts; "
                "rebuilding it from the store.",
                self.name,
            )
            rebuild_index("keyword", keywords, store, self.namespace)
        return True

    def _after_ingest(self, store: VectorStore) -> bool:
        from langchain_holodeck.vectorstores import scan_documents

        saved = super()._after_ingest(store)
        if self._fan_out is not None and self._keywords in self._fan_out.failed:
            self._keywords_stale = True
        if self._fan_out is not None and self._fan_out.kept is not None:
            chunks = list(self._fan_out.kept.values())  # an unlisted store: what sync saw
        else:
            chunks = list(scan_documents(store, namespace=self.namespace))
            self._follow_the_store(chunks)
        if self._keywords is not None and self._store_dir is not None and self._not_saved is None:
            with self._saving("the store is saved; its keyword index is rebuilt from it"):
                get_keyword_index_provider(self._config.keyword_index).save(
                    self._keywords,
                    self._store_dir,
                    namespace=self.namespace,
                    store_saved=saved,
                )
        self._extract_definitions(chunks)
        return saved

    def _follow_the_store(self, chunks: Sequence[Document]) -> None:
        """Re-index what another process changed in this corpus since the indexes were built.

        This process's sync keeps the exact index (and an in-memory keyword index) in step
        with its own writes. A file another process re-ingested meanwhile is unchanged here
        (its stored record matches the file), so nothing else would reach them: a long-lived
        tool kept finding a section that no longer exists. ``chunks`` are the corpus's chunks
        in the store now.
        """
        expected = dict(self._indexed)
        if self._fan_out is not None:
            for doc_id in self._fan_out.removed:
                expected.pop(doc_id, None)
            expected.update(self._fan_out.written)
        stored = chunk_hashes(chunks)
        keywords = self._keywords if isinstance(self._keywords, BM25KeywordIndex) else None
        in_memory = keywords is not None and not self._keywords_stale
        if stored != expected:
            logger.info(
                "%s: %d chunk(s) of this corpus changed in the store since its indexes were "
                "built (another process ingested it); re-indexing them.",
                self.name,
                len(set(stored.items()) ^ set(expected.items())),
            )
            self._exact.replace(chunks)
            if keywords is not None and in_memory:
                keywords.replace(chunks)
        self._indexed = stored
        if keywords is not None and in_memory and keywords.content_digest is None:
            # a write made it unknown; a known one still holds (any write resets it)
            keywords.content_digest = content_digest(stored)  # saved with it: checked on load

    def _extract_definitions(self, chunks: Sequence[Document]) -> None:
        from langchain_holodeck.definitions import DefinitionExtractor

        with span("holodeck.index_build", {"index.kind": "definitions"}) as current:
            self.definitions = DefinitionExtractor().extract(chunks)
            current.set_attribute("index.document_count", len(chunks))
            current.set_attribute("index.term_count", len(self.definitions))

    def _open_indexes(self, store: VectorStore) -> int:
        """The keyword index (loaded or rebuilt in memory), exact index and definitions."""
        self._keyword_index(store)  # on a listable store: exact rebuilt, saved BM25 checked
        chunks = self._stored_chunks(store)
        self._extract_definitions(chunks)
        return len(chunks)

    def _build_retriever(self, store: VectorStore) -> BaseRetriever:
        from langchain_holodeck.retrievers.hybrid import HybridRetriever

        config = self._config
        view, search_kwargs = self._scoped(store)
        backend = self._backend or backend_for_store(store)
        self.search_strategy = tool_search_strategy(
            config, backend, store=view, backend_name=self.backend
        )
        retriever = HybridRetriever(
            vector_store=view,
            search_strategy=self.search_strategy,
            keyword_index=self._keywords,
            exact_index=self._exact,
            k=config.top_k,
            weights=(
                config.search_weights.semantic,
                config.search_weights.keyword,
                config.search_weights.exact,
            ),
            fetch_k=config.fetch_k,
            fusion=config.fusion,
            feedback_docs=config.feedback_docs,
            feedback_weight=config.feedback_weight,
            min_similarity_score=config.min_similarity_score,
            definitions=self.definitions,
            expand_hops=config.expand_hops,
            expand_direction=config.expand_direction,
            expand_limit=config.expand_limit,
            search_kwargs=search_kwargs,
            provider=self.backend,
        )
        return with_reranker(retriever, config)
