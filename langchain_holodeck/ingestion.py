"""Source → documents → chunks → sync, as one Runnable with an mtime fast path."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import logging
import zlib
from collections import Counter
from collections.abc import Callable, Collection, MutableMapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from langchain_core.documents import Document
from langchain_core.runnables import RunnableConfig
from langchain_core.vectorstores import VectorStore
from langchain_text_splitters import TextSplitter

from langchain_holodeck._chunk import CONTEXT_MISSING, FileRecord, source_path
from langchain_holodeck._mirror_batches import MirrorBatches, mirroring
from langchain_holodeck._prefetch import EmbedPrefetch
from langchain_holodeck.errors import NoSupportedFilesError
from langchain_holodeck.loaders import (
    CONVERSION_REVISION,
    DEFAULT_ENCODING_FALLBACKS,
    DEFAULT_MAX_FILE_BYTES,
    Skipped,
    SourceFile,
    SourceLoader,
    encoding_names,
)
from langchain_holodeck.splitters.code import CODE_LANGUAGES
from langchain_holodeck.sync import (
    KeywordIndexLike,
    SyncResult,
    make_chunk_key,
    read_stored,
    sanitize_error,
    stable_id,
    sync_documents,
)

logger = logging.getLogger(__name__)


class ChunkEnricher(Protocol):
    """What the pipeline needs from an enricher such as ``ContextualChunkEnricher``."""

    def enrich(self, document: Document, chunks: list[Document]) -> list[Document]: ...


@dataclass(frozen=True)
class IngestProgress:
    """One progress event: ``stage`` is ``files``, ``contexts``, ``chunks`` or ``embeddings``."""

    stage: str
    advance: int
    total: int | None = None


def pipeline_fingerprint(
    splitter: TextSplitter,
    enricher: object | None = None,
    *,
    code_splitter: TextSplitter | None = None,
    loader: SourceLoader | None = None,
) -> str:
    """Identifies the reading, splitting and enrichment settings: a change re-reads files.

    Of ``loader``'s settings, ``encoding_fallbacks`` changes the text read from the same
    bytes; the default's (or no loader) adds nothing, so a store ingested before fingerprints
    as it did. The conversion limits are remembered per file instead (``_limits_memo``).
    """
    parts = [
        type(splitter).__qualname__,
        str(getattr(splitter, "_chunk_size", "")),
        str(getattr(splitter, "_chunk_overlap", "")),
    ]
    table_limit = getattr(splitter, "_table_limit", None)  # StructuredMarkdownSplitter's
    if table_limit is not None:  # tables cut with their header repeated (none: as before)
        parts.append(f"tables={table_limit}")
    revision = getattr(splitter, "revision", 0)  # same settings, other chunks: re-split once
    if revision:
        parts.append(f"revision={revision}")
    parts.append(f"conversion={CONVERSION_REVISION}")  # same file, other text: read once
    encodings = encoding_names(loader.encoding_fallbacks if loader is not None else ())
    if encodings != encoding_names(DEFAULT_ENCODING_FALLBACKS):  # same bytes, other text
        parts.append(f"encodings={','.join(encodings)}")
    if code_splitter is not None:
        parts += [
            "code",
            type(code_splitter).__qualname__,
            str(getattr(code_splitter, "_chunk_size", "")),
            str(getattr(code_splitter, "_chunk_overlap", "")),
        ]
        code_revision = getattr(code_splitter, "revision", 0)
        if code_revision:
            parts.append(f"revision={code_revision}")
    if enricher is not None:  # what its model is asked (ContextualChunkEnricher), else its name
        asked = (
            getattr(enricher, "context_settings_id", None)
            or getattr(enricher, "context_model_id", None)
            or type(enricher).__qualname__
        )
        parts.append(str(asked))
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


_NO_TEXT_MEMO = [0.0]
"""Ends the ``unreadable`` entry ``[mtime, size, 0.0]`` of a file with no text (empty, binary)
read by a loader with the default reading settings (``_no_text_memo``): not read again at that
mtime and size, and, unlike an unreadable one, nothing of it kept."""


def _no_text_memo(loader: SourceLoader) -> list[float]:
    """The end of a no-text file's ``unreadable`` entry: the settings it had no text under.

    ``_NO_TEXT_MEMO`` with the default ``encoding_fallbacks`` and ``max_file_bytes`` (so the
    entries saved before stay valid), else ``[-1.0, key]``, ``key`` a checksum of the two (a
    limit is never negative: no ``_limits_memo`` reads alike). Bytes no encoding decoded, or a
    workbook expanding past ``max_file_bytes``, are read again once either changed, as their
    warnings advise, though the file's mtime and size did not.
    """
    encodings = encoding_names(loader.encoding_fallbacks)
    if (
        encodings == encoding_names(DEFAULT_ENCODING_FALLBACKS)
        and loader.max_file_bytes == DEFAULT_MAX_FILE_BYTES
    ):
        return list(_NO_TEXT_MEMO)
    settings = f"{','.join(encodings)}|{loader.max_file_bytes}"
    return [-1.0, float(zlib.crc32(settings.encode()))]


def _limits_memo(loader: SourceLoader) -> list[float]:
    """The end of a failed file's ``unreadable`` entry: the limits it failed to convert under.

    ``[max_convert_seconds, max_convert_memory_bytes]`` of ``loader`` (``0.0``: none). A file
    stopped by a limit is converted again once either limit changed (raised, as its warning
    advises), though its mtime and size did not; an entry of an older version (no limits) is
    converted again once too.
    """
    seconds, memory = loader.max_convert_seconds, loader.max_convert_memory_bytes
    return [float(seconds or 0), float(memory or 0)]


class IngestionPipeline(MirrorBatches[str | Path | SourceLoader, SyncResult]):
    """Load a source, split, optionally enrich, and sync into a vector store.

    A file whose ``mtime`` and size equal what the store recorded (and that was read with the
    same ``encoding_fallbacks`` and split with the same settings) is neither read nor split:
    re-running on an unchanged corpus costs one batched ``get_by_ids`` and no embedding call.
    ``force_ingest=True`` re-embeds everything.

    With a model in this process (``OnnxEmbeddings``), the chunks of the first files are
    embedded while the next ones load and split (``_prefetch.py``); sync then writes them
    as it would have, taking those vectors instead of embedding again.

    The splitter is chosen per file: source code (a ``file_type`` in ``CODE_LANGUAGES``) goes
    to ``code_splitter`` (default: a ``SourceCodeSplitter`` with the prose splitter's chunk
    size), everything else to ``splitter``.

    ``reindex=True`` reads and splits every file, unchanged ones too, and gives every chunk
    to ``keyword_index`` (unchanged chunks are skipped by the store, not embedded again): for a
    store the indexes cannot be rebuilt from, because no backend can list it.

    ``cleanup=True`` (the default) makes the namespace mirror the source: each run deletes the
    chunks of every file of the namespace that is not in the source it was given (files
    deleted since the last run), so one namespace holds one source; a file that is there
    when the cleanup runs though its walk missed it (added since) keeps its chunks, which a
    run that walked later (another process) may be writing, and the next run syncs it
    (``SourceLoader.listed_now``). To ingest several
    sources, give each its own pipeline and namespace, or pass ``cleanup=False`` (deleted
    files' chunks then stay). A batch over more than one source with cleanup on (``batch``,
    ``abatch``, ``batch_as_completed``, ``abatch_as_completed``) is refused before anything
    is written: each run would delete the others' chunks. So is a run started while a run
    of another source is syncing into the same namespace of the same store, however the two
    were started (a chain's ``batch_as_completed``, threads, ``ainvoke``s gathered); runs of
    one source may overlap, and runs one after another (re-pointing a namespace at another
    source) work as before.

    Instantiate:
        ```python
        pipeline = IngestionPipeline(store, namespace="kb")
        result = pipeline.invoke("docs/")  # SyncResult(added=12, ...)
        ```
    """

    def __init__(
        self,
        vector_store: VectorStore,
        *,
        namespace: str,
        splitter: TextSplitter | None = None,
        code_splitter: TextSplitter | None = None,
        enricher: ChunkEnricher | None = None,
        keyword_index: KeywordIndexLike | None = None,
        embedding_model: str | None = None,
        batch_size: int = 50,
        cleanup: bool = True,
        base_dir: str | Path | None = None,
        on_progress: Callable[[IngestProgress], None] | None = None,
        reindex: bool = False,
        unreadable: MutableMapping[str, list[float]] | None = None,
        retry_contexts: bool = True,
    ) -> None:
        from langchain_holodeck.splitters.code import SourceCodeSplitter
        from langchain_holodeck.splitters.structured import default_text_splitter

        self.vector_store = vector_store
        self.namespace = namespace
        self.splitter = splitter if splitter is not None else default_text_splitter()
        self.code_splitter = (
            code_splitter
            if code_splitter is not None
            else SourceCodeSplitter(chunk_size=int(getattr(self.splitter, "_chunk_size", 512)))
        )
        self.enricher = enricher
        self.keyword_index = keyword_index
        self.embedding_model = embedding_model
        self.batch_size = batch_size
        self.cleanup = cleanup
        self.base_dir = base_dir
        self.on_progress = on_progress
        self.reindex = reindex
        self.unreadable = unreadable
        """Files skipped when read: ``source_path -> [mtime, size, seconds, memory]`` for one
        that could not be converted under the loader's limits ``max_convert_seconds`` and
        ``max_convert_memory_bytes`` (``0.0``: none; its chunks from an earlier read are kept),
        ``[mtime, size, 0.0]`` for one with no text (empty, binary: its chunks are removed, as
        a deleted file's). A file still at that mtime and size (and, for a failed one, under
        the same limits) is not read again (nor warned about again); the caller keeps the
        mapping between runs. Updated by each run."""
        self.retry_contexts = retry_contexts
        """Enrich again a file some of whose chunks were left without context (the context
        model failed), though it did not change. ``False`` skips it as unchanged, so nothing
        waits for the context model but a changed file: for a search that re-checks the
        source (``holodeck-rag search``); the next run with ``True`` (an ingest) retries."""
        self.walked: tuple[SourceFile, ...] = ()
        """The supported files the last run found in its source, in ``source_path`` order: its
        one walk, for a caller that needs the list too (``HierarchicalDocumentTool``'s legacy
        check), so a re-check costs one stat per file, not two."""
        self.fingerprint = pipeline_fingerprint(
            self.splitter, enricher, code_splitter=self.code_splitter
        )
        """The fingerprint of a run with a default ``SourceLoader`` (a loader with other
        ``encoding_fallbacks`` has its own: ``fingerprint_of``)."""

    def fingerprint_of(self, loader: SourceLoader) -> str:
        """The fingerprint recorded with the files a run of ``loader`` ingests."""
        if encoding_names(loader.encoding_fallbacks) == encoding_names(DEFAULT_ENCODING_FALLBACKS):
            return self.fingerprint
        return pipeline_fingerprint(
            self.splitter, self.enricher, code_splitter=self.code_splitter, loader=loader
        )

    def invoke(
        self,
        input: str | Path | SourceLoader,
        config: RunnableConfig | None = None,
        *,
        force_ingest: bool = False,
        **kwargs: Any,
    ) -> SyncResult:
        return self._call_with_config(
            lambda source: self._ingest(source, force_ingest=force_ingest),
            input,
            config,
            run_type="tool",
        )

    def _refuse_batch(self, inputs: Sequence[str | Path | SourceLoader], method: str) -> None:
        """Refuse, before any write, a batch of several sources that cleanup would undo.

        Each run of the batch deletes the chunks of the namespace's files not in its own
        source: only the last source's would stay, or none (runs side by side).

        Raises:
            ValueError: When cleanup is on and ``inputs`` name more than one source.
        """
        if not self.cleanup:
            return
        sources = {self._loader(source).root: source for source in inputs}
        if len(sources) > 1:
            shown = ", ".join(map(repr, sources))  # their roots: a/docs and b/docs, not docs
            msg = (
                f"{method} got {len(sources)} sources ({shown}) for namespace "
                f"{self.namespace!r} with cleanup on: each run deletes the chunks of the "
                "files not in its own source, so only the last source's would stay. Give "
                "each source its own IngestionPipeline and namespace, or pass cleanup=False."
            )
            raise ValueError(msg)

    def _loader(self, source: str | Path | SourceLoader) -> SourceLoader:
        if isinstance(source, SourceLoader):
            return source
        return SourceLoader(source, base_dir=self.base_dir)

    def _ingest(self, source: str | Path | SourceLoader, *, force_ingest: bool) -> SyncResult:
        loader = self._loader(source)
        with self._mirroring(loader):
            return self._walk_and_sync(loader, force_ingest=force_ingest)

    def _mirroring(self, loader: SourceLoader) -> AbstractContextManager[None]:
        """With cleanup on, hold the namespace for this run: one of another source is refused.

        A batch's inputs are checked up front (``_refuse_batch``); this refuses the runs no
        batch method sees: a chain's ``batch_as_completed`` (each input through ``invoke``),
        threads, ``asyncio.gather`` of ``ainvoke``.
        """
        if not self.cleanup:
            return nullcontext()
        root = loader.root

        def refusal(running: str) -> str:
            return (
                f"invoke got source {root!r} for namespace {self.namespace!r} with cleanup on "
                f"while a run of source {running} is syncing into it: each run deletes the "
                "chunks of the files not in its own source, so one source's would stay, or "
                "none. Give each source its own IngestionPipeline and namespace, or pass "
                "cleanup=False."
            )

        return mirroring(self.vector_store, self.namespace, root, shown=repr(root), refusal=refusal)

    def _walk_and_sync(self, loader: SourceLoader, *, force_ingest: bool) -> SyncResult:
        try:
            files = self.walked = tuple(loader.iter_files())
        except NoSupportedFilesError:
            if not (self.cleanup and self._holds_chunks()):
                raise
            # its last files were deleted: the sync below removes their chunks
            files = self.walked = ()
        fingerprint = self.fingerprint_of(loader)
        unchanged = (
            {} if force_ingest or self.reindex else self._unchanged_files(files, fingerprint)
        )
        cleanup = self.cleanup
        if cleanup and loader.unreachable:
            kept = self._stored_under(loader.unreachable)
            if kept is None:  # cannot tell which chunks are theirs: delete none this run
                cleanup = False
            else:
                unchanged.update(kept)
        prefetch = (
            None  # enriched chunks differ from the split ones: nothing to embed ahead
            if self.enricher is not None
            else EmbedPrefetch.for_sync(
                self.vector_store,
                namespace=self.namespace,
                overwrite=force_ingest,
                embedding_model=self.embedding_model,
                pipeline=fingerprint,
            )
        )
        try:
            return self._load_and_sync(
                loader,
                files,
                unchanged,
                prefetch,
                force_ingest=force_ingest,
                cleanup=cleanup,
                fingerprint=fingerprint,
            )
        finally:
            if prefetch is not None:
                prefetch.close()

    def _load_and_sync(
        self,
        loader: SourceLoader,
        files: Sequence[SourceFile],
        unchanged: dict[str, int],
        prefetch: EmbedPrefetch | None,
        *,
        force_ingest: bool,
        cleanup: bool,
        fingerprint: str,
    ) -> SyncResult:
        split: list[tuple[Document, list[Document]]] = []
        failed = self.unreadable if self.unreadable is not None else {}
        limits, no_text = _limits_memo(loader), _no_text_memo(loader)
        for file in files:
            stat = [file.mtime, float(file.size_bytes)]
            memo = failed.get(file.source_path)
            if file.source_path in unchanged:
                pass
            elif (
                memo is not None
                and memo[:2] == stat
                and memo[2:] in (no_text, limits)
                and not force_ingest
            ):
                logger.debug("%s: skipped at this mtime and size; not read again.", file)
                if memo[2:] != no_text:  # unreadable: keep its last good chunks
                    unchanged[file.source_path] = 0
            else:
                loaded = self._split(loader, file)
                if loaded is Skipped.FAILED or loaded is Skipped.UNREADABLE:  # (warned)
                    unchanged[file.source_path] = 0  # keep the chunks of its last good read
                    if loaded is Skipped.FAILED:  # not again at this mtime, size and limits
                        failed[file.source_path] = stat + limits
                    else:  # a fix (chmod, a remount) keeps mtime and size: read it next time
                        failed.pop(file.source_path, None)
                    logger.info(
                        "%s: any chunks stored from an earlier read stay searchable until it "
                        "loads again or is deleted.",
                        file.source_path,
                    )
                elif loaded is Skipped.NO_TEXT:  # nothing to index now: as if deleted
                    failed[file.source_path] = stat + no_text  # not read again
                else:
                    failed.pop(file.source_path, None)
                    split.append(loaded)
                    if prefetch is not None:
                        prefetch.add(loaded[1])
            self._progress("files", 1, len(files))
        if prefetch is not None:
            prefetch.flush()
        walked = frozenset(file.source_path for file in files)
        for gone in set(failed) - walked:
            del failed[gone]
        gaps: dict[str, str] = {}
        chunks = (
            self._enriched(self.enricher, split, gaps)
            if self.enricher is not None
            else [chunk for _, file_chunks in split for chunk in file_chunks]
        )
        self._progress("chunks", len(chunks), len(chunks))
        result = sync_documents(
            chunks,
            self.vector_store,
            namespace=self.namespace,
            batch_size=self.batch_size,
            overwrite=force_ingest,
            cleanup=cleanup,
            keyword_index=self.keyword_index,
            embedding_model=self.embedding_model,
            pipeline=fingerprint,
            unchanged_sources=unchanged,
            on_batch=lambda n: self._progress("embeddings", n, len(chunks)),
            index_unchanged=self.reindex,
            prefetched=prefetch,
            still_present=functools.partial(_added_since, loader, walked),
        )
        if gaps:
            lines = tuple(f"{source}: {gap}" for source, gap in gaps.items())
            result = dataclasses.replace(result, errors=result.errors + lines)
        return result

    def _split(
        self, loader: SourceLoader, file: SourceFile
    ) -> tuple[Document, list[Document]] | Skipped:
        document = loader.read_document(file)
        if isinstance(document, Skipped):
            return document
        splitter = (
            self.code_splitter
            if str(document.metadata.get("file_type", "")) in CODE_LANGUAGES
            else self.splitter
        )
        chunks = splitter.split_documents([document])
        for index, chunk in enumerate(chunks):
            chunk.metadata.setdefault("chunk_index", index)
        return document, chunks

    def _enriched(
        self,
        enricher: ChunkEnricher,
        split: Sequence[tuple[Document, list[Document]]],
        gaps: dict[str, str],
    ) -> list[Document]:
        """Contextualize every file's chunks, after logging what it will cost."""
        estimate = getattr(enricher, "estimate_cost", None)
        if estimate is not None and split:
            cost = estimate([d for d, _ in split], [c for _, cs in split for c in cs])
            logger.info(
                "contextual enrichment: %d LLM calls (%d cached), ~%d input and <= %d output "
                "tokens",
                cost.calls,
                cost.cached,
                cost.input_tokens,
                cost.output_tokens,
            )
        out: list[Document] = []
        total = sum(len(cs) for _, cs in split)
        with _side_by_side(enricher, len(split)) as pool:
            for (_, chunks), done in zip(
                split,
                pool.map(
                    lambda pair: _enrich(enricher, pair[0], pair[1], gaps) if pair[1] else [], split
                ),
                strict=True,
            ):
                out.extend(done)
                self._progress("contexts", len(chunks), total)
        return out

    def _holds_chunks(self) -> bool:
        """Whether the store holds a chunk of this namespace (``False`` when it cannot tell).

        A source that once had supported files and has none now is a corpus whose files were
        all deleted, not a wrong path: the namespace is the source root's.
        """
        from langchain_holodeck.vectorstores import scan_documents

        try:
            stored = scan_documents(self.vector_store, namespace=self.namespace)
            return next(iter(stored), None) is not None
        except Exception as error:  # an unlistable store, a store down: the error stands
            logger.debug("could not look for stored chunks: %s", sanitize_error(error))
            return False

    def _stored_under(self, unreachable: Sequence[str]) -> dict[str, int] | None:
        """Stored sources the walk could not reach (source -> chunks), kept by the cleanup.

        ``unreachable`` holds folders the walk could not list (ending in ``/``) and files it
        could not stat: their files may all still be there. ``None`` when the store cannot
        be listed; the caller then deletes nothing this run.
        """
        from langchain_holodeck.vectorstores import scan_documents

        folders = tuple(p for p in unreachable if p.endswith("/"))
        files = set(unreachable)
        kept: Counter[str] = Counter()
        try:
            for doc in scan_documents(self.vector_store, namespace=self.namespace):
                source = source_path(doc)
                if source in files or source.startswith(folders):
                    kept[source] += 1
        except Exception as error:  # a store scan_documents cannot list, or one that failed
            logger.warning(
                "could not list the stored chunks of %s (%s); no chunk is deleted this run.",
                ", ".join(unreachable),
                sanitize_error(error),
            )
            return None
        if kept:
            logger.info(
                "%d stored file(s) under %s kept: the walk could not reach them.",
                len(kept),
                ", ".join(unreachable),
            )
        return dict(kept)

    def _unchanged_files(self, files: Sequence[SourceFile], fingerprint: str) -> dict[str, int]:
        """Files whose stored record matches their stat and our settings: source -> chunks."""
        ids = {stable_id(self.namespace, make_chunk_key(f.source_path, 0)): f for f in files}
        stored = read_stored(self.vector_store, list(ids), batch_size=500)
        unchanged: dict[str, int] = {}
        for doc_id, doc in stored.items():
            file = ids[doc_id]
            record = FileRecord.of(doc)
            if record.is_current(
                mtime=file.mtime,
                size_bytes=file.size_bytes,
                pipeline=fingerprint,
                embedding_model=self.embedding_model,
                retry_contexts=self.retry_contexts,
            ):
                unchanged[file.source_path] = record.chunk_count or 1
        return unchanged

    def _progress(self, stage: str, advance: int, total: int | None) -> None:
        if self.on_progress is not None:
            self.on_progress(IngestProgress(stage=stage, advance=advance, total=total))


def _added_since(
    loader: SourceLoader, walked: Collection[str], sources: Collection[str]
) -> set[str]:
    """Of ``sources`` (the cleanup's), the files ``loader`` lists now that its walk did not.

    A file added after this run's walk is kept: a run that walked after it may be writing
    its chunks. One this run walked and did not sync (no text left) goes, as before.
    """
    return loader.listed_now(source for source in sources if source not in walked)


def _side_by_side(enricher: ChunkEnricher, files: int) -> ThreadPoolExecutor:
    """Workers enriching files side by side, for an enricher that shares its call limit.

    ``ContextualChunkEnricher`` caps its LLM calls in flight at ``concurrency`` across them
    (file after file, a one-chunk file left the other slots idle for its round trip); any
    other enricher gets one file at a time, as it was written for.
    """
    from langchain_holodeck.contextual import ContextualChunkEnricher

    workers = enricher.concurrency if isinstance(enricher, ContextualChunkEnricher) else 1
    return ThreadPoolExecutor(max(1, min(workers, files)), thread_name_prefix="holodeck-context")


def _enrich(
    enricher: ChunkEnricher, document: Document, chunks: list[Document], gaps: dict[str, str]
) -> list[Document]:
    """Enrich; chunks left without context mark their file record for a redo."""
    with_stats = getattr(enricher, "enrich_with_stats", None)
    if with_stats is None:
        return enricher.enrich(document, chunks)
    result = with_stats(document, chunks)
    failed = int(result.stats.failed)
    if not failed:
        return list(result.chunks)
    source = source_path(chunks[0])
    gaps[source] = (
        f"{failed} of {len(chunks)} chunks were indexed without context (the context "
        "model failed); the next ingest enriches the file again."
    )
    # chunk 0 is the file record the mtime fast path trusts: the mark makes it redo the file
    return [
        c.model_copy(update={"metadata": {**c.metadata, CONTEXT_MISSING: failed}})
        if c.metadata.get("chunk_index") == 0
        else c
        for c in result.chunks
    ]
