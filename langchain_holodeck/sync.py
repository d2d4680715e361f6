"""Idempotent sync of chunk Documents into any LangChain ``VectorStore``.

Unlike LangChain's ``index()`` (content-hash ids plus a separate record-manager database), ids
here are stable — UUIDv5 of (namespace, chunk key) — and the vector store is the only state: an
edited chunk keeps its id and is *updated*, an unchanged one is *skipped* without an embedding
call, and a file that now yields fewer chunks loses its old tail.

When the store's model keeps long texts as windows (``long_text="best"``, see
``embeddings/windows.py``), each written chunk longer than the model's window brings its
further windows as entries of their own (``<chunk id>:w<n>``), written before the chunk, so a
chunk is never in the store without its windows; windows a chunk no longer has are deleted
with the stale tails. Counts and the keyword index see chunks only.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import logging
import uuid
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any, Protocol

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.runnables import RunnableConfig
from langchain_core.vectorstores import VectorStore

from langchain_holodeck._chunk import (
    CHUNK_COUNT,
    CHUNK_INDEX,
    CHUNK_KEY,
    CHUNK_TYPE,
    CONTENT_HASH,
    CONTEXT_MISSING,
    MTIME,
    ORIGINAL_CONTENT,
    SIGNATURE,
    SIZE_BYTES,
    VOLATILE_METADATA_KEYS,
    WINDOW,
    WINDOW_CHUNK_TYPE,
    WINDOW_COUNT,
    WINDOW_OF,
    FileRecord,
    source_path,
    window_id,
    window_parent,
)
from langchain_holodeck._chunk import (
    SYNC_METADATA_KEYS as SYNC_METADATA_KEYS,  # re-exported: sync.SYNC_METADATA_KEYS
)
from langchain_holodeck._mirror_batches import MirrorBatches, mirroring
from langchain_holodeck._sync_write import (
    ETA_NOTE_ENTRIES as ETA_NOTE_ENTRIES,  # re-exported: sync.ETA_NOTE_ENTRIES
)
from langchain_holodeck._sync_write import (
    Prefetched,
    Writer,
    batched,
    delete_ids,
    write_entries,
)
from langchain_holodeck._sync_write import (
    sanitize_error as sanitize_error,  # re-exported: sync.sanitize_error
)
from langchain_holodeck.embeddings.inflight import DEFAULT_MAX_CONCURRENCY
from langchain_holodeck.embeddings.windows import (
    WindowTexts,
    stored_windows,
    windowless_chunk_types,
)
from langchain_holodeck.errors import FORCE_INGEST_WAY, EmbeddingModelMismatchError

logger = logging.getLogger(__name__)


_PROBE_WINDOW = 64


class KeywordIndexLike(Protocol):
    """What sync needs from a keyword index to keep it in step with the store."""

    def upsert(self, documents: Sequence[Document]) -> None: ...

    def delete(self, ids: Sequence[str]) -> None: ...


@dataclass(frozen=True)
class SyncResult:
    """Counts of one sync, in chunks; ``errors`` holds one sanitized line per failed batch.

    Every count is of chunks: the model windows of a long chunk (entries of their own in the
    store) are written and deleted with it but never counted. ``deleted`` counts the chunks the
    store removed: on a store that reports which ids existed (``contracts.CountingDelete``:
    Redis, PostgreSQL, ``MatrixVectorStore``) two processes cleaning up the same stale
    chunks at once count each chunk once; on other stores every id asked for is counted.
    """

    added: int = 0
    updated: int = 0
    skipped: int = 0
    failed: int = 0
    deleted: int = 0
    errors: tuple[str, ...] = ()

    @property
    def total(self) -> int:
        """Chunks seen: added + updated + skipped + failed."""
        return self.added + self.updated + self.skipped + self.failed

    def __add__(self, other: SyncResult) -> SyncResult:
        return SyncResult(
            added=self.added + other.added,
            updated=self.updated + other.updated,
            skipped=self.skipped + other.skipped,
            failed=self.failed + other.failed,
            deleted=self.deleted + other.deleted,
            errors=self.errors + other.errors,
        )


@dataclass(frozen=True)
class SyncPlan:
    """What to do with each chunk: the output of the pure ``plan_sync``."""

    add: tuple[Document, ...] = ()
    update: tuple[Document, ...] = ()
    skip: tuple[Document, ...] = ()
    refresh: tuple[Document, ...] = field(default=())
    """Unchanged chunk 0s whose file record (mtime, size, chunk count) moved: rewritten, counted
    as skipped."""


def stable_id(namespace: str, chunk_key: str) -> str:
    """UUIDv5 of (namespace, chunk key): same chunk, same id; other namespaces never collide."""
    return str(uuid.uuid5(_namespace_uuid(namespace), chunk_key))


@functools.lru_cache(maxsize=256)
def _namespace_uuid(namespace: str) -> uuid.UUID:
    return uuid.uuid5(uuid.NAMESPACE_URL, namespace)


def make_chunk_key(source_path: str, chunk_index: int) -> str:
    """The chunk key ``{source_path}_chunk_{index}`` that ``stable_id`` hashes."""
    return f"{source_path}_chunk_{chunk_index}"


def content_hash(document: Document) -> str:
    """SHA-256 over the content and the non-volatile metadata (not mtime, size or sync keys)."""
    stable = {k: v for k, v in document.metadata.items() if k not in VOLATILE_METADATA_KEYS}
    payload = json.dumps(
        [document.page_content, stable], sort_keys=True, ensure_ascii=False, default=str
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def check_store_capabilities(vector_store: VectorStore) -> None:
    """Raise ``TypeError`` unless the store can read by id and write with ``ids=``.

    ``delete`` is optional: without it, sync skips the stale-chunk cleanup and says so.

    Raises:
        TypeError: When ``get_by_ids`` is not overridden, or the store's
            ``add_texts``/``add_documents`` accept no ``ids``.
    """
    name = type(vector_store).__name__
    if type(vector_store).get_by_ids is VectorStore.get_by_ids:
        msg = (
            f"{name} does not override get_by_ids(), which sync needs to read what is stored; "
            "use a store that implements it (MatrixVectorStore, InMemoryVectorStore, Redis...)."
        )
        raise TypeError(msg)
    if not _accepts_ids(vector_store):
        msg = f"{name}.add_documents()/add_texts() accept no ids=; sync needs stable ids."
        raise TypeError(msg)


def _accepts_ids(vector_store: VectorStore) -> bool:
    cls = type(vector_store)
    for method_name in ("add_documents", "add_texts"):
        method = getattr(cls, method_name)
        if method is getattr(VectorStore, method_name):
            continue
        params = inspect.signature(method).parameters
        if "ids" in params or any(p.kind is p.VAR_KEYWORD for p in params.values()):
            return True
    return False


def assign_ids(
    documents: Sequence[Document],
    *,
    namespace: str,
    embedding_model: str | None = None,
    pipeline: str | None = None,
) -> list[Document]:
    """Copies of ``documents`` with stable ids and sync metadata; inputs are not mutated.

    Each document needs ``source_path`` (or ``source``) in its metadata; ``chunk_index``
    defaults to its position among the documents of the same source.

    Raises:
        ValueError: When a document has no ``source_path``/``source``, or two documents share
            a chunk key.
    """
    if not namespace:
        msg = "namespace must be a non-empty string, got ''."
        raise ValueError(msg)
    per_source: dict[str, int] = defaultdict(int)
    counts: dict[str, int] = defaultdict(int)
    sources: list[str] = []
    for position, doc in enumerate(documents):
        source = source_path(doc)
        if not source:
            msg = (
                f"document {position} has no 'source_path' or 'source' in metadata; "
                "load it with SourceLoader or set metadata['source_path']."
            )
            raise ValueError(msg)
        sources.append(str(source))
        counts[str(source)] += 1
    seen: set[str] = set()
    result = []
    for doc, source in zip(documents, sources, strict=True):
        index = doc.metadata.get("chunk_index")
        if index is None:
            index = per_source[source]
        per_source[source] += 1
        key = make_chunk_key(source, int(index))
        if key in seen:
            msg = (
                f"two documents share the chunk key {key!r}; give each chunk of a source "
                "a distinct metadata['chunk_index']."
            )
            raise ValueError(msg)
        seen.add(key)
        metadata = {
            **doc.metadata,
            "source_path": source,
            "source": doc.metadata.get("source", source),
            "chunk_index": int(index),
            "namespace": namespace,
            "chunk_key": key,
            "chunk_count": counts[source],
        }
        if embedding_model is not None:
            metadata["embedding_model"] = embedding_model
        if pipeline is not None:
            metadata["pipeline"] = pipeline
        copy = doc.model_copy(update={"id": stable_id(namespace, key), "metadata": metadata})
        copy.metadata["content_hash"] = content_hash(copy)
        result.append(copy)
    return result


def plan_sync(
    chunks: Sequence[Document], stored: Mapping[str, Document], *, overwrite: bool
) -> SyncPlan:
    """Pure: classify each chunk as add / update / skip by id and ``content_hash``.

    ``chunks`` come from ``assign_ids`` (ids and hashes set); ``stored`` maps id to what the
    store holds for it.
    """
    add, update, skip, refresh = [], [], [], []
    for chunk in chunks:
        old = stored.get(chunk.id or "")
        if old is None:
            add.append(chunk)
        elif overwrite or old.metadata.get("content_hash") != chunk.metadata["content_hash"]:
            update.append(chunk)
        else:
            skip.append(chunk)
            if chunk.metadata.get(CHUNK_INDEX) == 0 and FileRecord.of(old) != FileRecord.of(chunk):
                refresh.append(chunk)
    return SyncPlan(add=tuple(add), update=tuple(update), skip=tuple(skip), refresh=tuple(refresh))


def read_stored(
    vector_store: VectorStore, ids: Sequence[str], *, batch_size: int
) -> dict[str, Document]:
    """What the store holds for ``ids``, read with ``get_by_ids`` in batches."""
    stored: dict[str, Document] = {}
    for batch in batched(list(ids), batch_size):
        for doc in vector_store.get_by_ids(list(batch)):
            if doc.id is not None:
                stored[doc.id] = doc
    return stored


def check_embedding_model(stored: Mapping[str, Document], embedding_model: str | None) -> None:
    """Refuse ``stored`` chunks another model embedded (``embedding_model`` None: no check).

    Raises:
        EmbeddingModelMismatchError: When a chunk's ``embedding_model`` is another one.
    """
    if embedding_model is None:
        return
    for doc in stored.values():
        previous = doc.metadata.get("embedding_model")
        if previous is not None and previous != embedding_model:
            msg = (
                f"the store holds chunks embedded with {previous!r} but the embedding model is "
                f"now {embedding_model!r}; re-ingest with {FORCE_INGEST_WAY} to re-embed "
                "everything."
            )
            error = EmbeddingModelMismatchError(msg)
            error.stored_model, error.configured_model = str(previous), embedding_model
            raise error


def plan_files(
    documents: Sequence[Document],
    vector_store: VectorStore,
    *,
    namespace: str,
    overwrite: bool,
    embedding_model: str | None,
    pipeline: str | None,
) -> SyncPlan:
    """The plan a ``sync_documents`` of ``documents`` (the chunks of whole files) makes.

    Sync's own first steps (``assign_ids``, ``read_stored``, ``plan_sync``), for embedding
    what it will write while later files still load (``texts_to_embed``).

    Raises:
        ValueError: As ``assign_ids`` does.
        EmbeddingModelMismatchError: As sync does.
    """
    chunks = assign_ids(
        documents, namespace=namespace, embedding_model=embedding_model, pipeline=pipeline
    )
    stored = read_stored(vector_store, [c.id for c in chunks if c.id], batch_size=500)
    if not overwrite:
        check_embedding_model(stored, embedding_model)
    return plan_sync(chunks, stored, overwrite=overwrite)


def texts_to_embed(plan: SyncPlan, embeddings: Embeddings) -> list[str]:
    """The texts sync embeds for ``plan``: further entries (windows, signatures), then chunks.

    Sets ``window_count`` on the plan's chunks, as sync does.
    """
    fresh = [*plan.add, *plan.update]
    windows = _further_entries(fresh, embeddings)
    entries = [w.page_content for c in fresh for w in windows.get(c.id or "", ())]
    return entries + [c.page_content for c in [*fresh, *plan.refresh]]


def _stale_tail_ids(
    vector_store: VectorStore,
    namespace: str,
    source: str,
    live: Collection[int],
    known_count: int,
) -> list[str]:
    """Ids of the chunks of ``source`` the store holds past this run's: a shrunk file's old tail.

    ``live``: this run's ``chunk_index`` values of the file. A caller may leave gaps in them
    (a chunk filtered out after splitting): a stored chunk in a gap is stale too, and the tail
    starts past the highest live index, not at the number of chunks (which deleted the last
    live chunk of such a file on every other run). Probes by id (ids are derivable): the gaps
    below the previously recorded chunk count (or this run's) plus 64, so sparse indexes (a
    byte offset as ``chunk_index``) cost no probe per number skipped; then from past the
    highest index up to the previously recorded chunk count, then on in runs of 64 until one
    comes back empty, so a gap left by an earlier failed run is crossed. The ids of their
    model windows come with them.
    """
    end = max(live, default=-1) + 1
    present = set(live)
    reach = min(end, max(known_count, len(present)) + _PROBE_WINDOW)
    gaps = [i for i in range(reach) if i not in present]
    stale = _held(vector_store, namespace, source, gaps)[0] if gaps else []
    start = end
    while True:
        stop = max(known_count, start + _PROBE_WINDOW)
        held, found = _held(vector_store, namespace, source, range(start, stop))
        stale += held
        if not found and start >= known_count:
            return stale
        start = stop


def _held(
    vector_store: VectorStore, namespace: str, source: str, indexes: Iterable[int]
) -> tuple[list[str], bool]:
    """Which of chunks ``indexes`` of ``source`` the store holds, and whether it held any.

    The ids come with the ids of those chunks' model windows.
    """
    probe = [stable_id(namespace, make_chunk_key(source, i)) for i in indexes]
    found = {doc.id: doc for doc in vector_store.get_by_ids(probe) if doc.id}
    held = [
        i
        for doc_id in probe
        if doc_id in found
        for i in (doc_id, *_window_ids(doc_id, 0, _window_count(found[doc_id])))
    ]
    return held, bool(found)


def _window_count(doc: Document) -> int:
    return int(doc.metadata.get(WINDOW_COUNT) or 0)


def _window_ids(chunk_id: str, keep: int, count: int) -> list[str]:
    """Ids of windows ``keep + 1`` .. ``count`` of a chunk (the ones past ``keep``)."""
    return [window_id(chunk_id, n) for n in range(keep + 1, count + 1)]


_NOT_ON_WINDOWS = frozenset(
    {
        CHUNK_INDEX,
        CHUNK_KEY,
        CHUNK_COUNT,
        WINDOW_COUNT,
        CONTENT_HASH,
        MTIME,
        SIZE_BYTES,
        CONTEXT_MISSING,
        ORIGINAL_CONTENT,
        SIGNATURE,
    }
)
"""Chunk metadata a window entry does not carry: the file record and the chunk's own keys."""


def _window_documents(
    chunks: Sequence[Document],
    window_texts: WindowTexts,
    windowless: Collection[str] = frozenset(),
) -> dict[str, list[Document]]:
    """Each long chunk's further model windows as entries of their own; sets ``window_count``.

    A window entry's id is ``<chunk id>:w<n>`` (n from 1), its text the window's text, its
    metadata the chunk's (namespace, source, section...: what filters read) without the file
    record, plus ``window_of``, ``window`` and ``chunk_type: "window"``. ``chunks`` are
    mutated in place (``window_count``); chunks that fit have none, and so have chunks whose
    ``chunk_type`` is in ``windowless``.
    """
    for chunk in chunks:
        if chunk.metadata.get(CHUNK_TYPE) in windowless:
            chunk.metadata[WINDOW_COUNT] = 0
    chunks = [c for c in chunks if c.metadata.get(CHUNK_TYPE) not in windowless]
    if not chunks:  # asked all the same: the model learns sync stores its windows (no WARNING)
        window_texts([])
        return {}
    out: dict[str, list[Document]] = {}
    for chunk, texts in zip(chunks, _cut_windows(chunks, window_texts), strict=True):
        chunk.metadata[WINDOW_COUNT] = len(texts) - 1
        if len(texts) < 2 or not chunk.id:
            continue
        out[chunk.id] = [_window(chunk, n, text) for n, text in enumerate(texts[1:], start=1)]
    return out


def _window(chunk: Document, n: int, text: str) -> Document:
    """Entry ``n`` of ``chunk`` (id ``<chunk id>:w<n>``): ``text`` with the chunk's metadata."""
    base = {k: v for k, v in chunk.metadata.items() if k not in _NOT_ON_WINDOWS}
    base[CHUNK_TYPE] = WINDOW_CHUNK_TYPE
    base[WINDOW_OF] = chunk.id
    return Document(id=window_id(str(chunk.id), n), page_content=text, metadata={**base, WINDOW: n})


def _further_entries(
    chunks: Sequence[Document], embeddings: Embeddings | None
) -> dict[str, list[Document]]:
    """Each chunk's entries beyond its own: its model windows, then its signature (code).

    Sets ``window_count`` on ``chunks``. One rule for sync's writes and for what the ingest
    embeds ahead of them (``texts_to_embed``).
    """
    window_texts = stored_windows(embeddings)
    windows = (
        _window_documents(chunks, window_texts, windowless_chunk_types(embeddings))
        if window_texts
        else {}
    )
    _add_signatures(chunks, windows)
    return windows


def _add_signatures(chunks: Sequence[Document], windows: dict[str, list[Document]]) -> None:
    """Each chunk's non-empty ``signature`` (code) as one more entry, after its model windows.

    Mutates ``chunks`` (``window_count``) and ``windows`` in place. The dense leg scores a
    chunk by its best entry, so a function is found by its name and signature as well as by
    its body: on the code set's dev split Pass@10 0.748 -> 0.760 (``docs/quality.md``).
    """
    for chunk in chunks:
        signature = chunk.metadata.get(SIGNATURE)
        if not signature or not chunk.id:
            continue
        n = _window_count(chunk) + 1
        chunk.metadata[WINDOW_COUNT] = n
        windows.setdefault(chunk.id, []).append(_window(chunk, n, str(signature)))


def _cut_windows(chunks: Sequence[Document], window_texts: WindowTexts) -> Iterator[list[str]]:
    """Each chunk's window texts, cut ``_WINDOW_CUT_BATCH`` chunks at a time (flat memory)."""
    for start in range(0, len(chunks), _WINDOW_CUT_BATCH):
        batch = chunks[start : start + _WINDOW_CUT_BATCH]
        yield from window_texts([c.page_content for c in batch])


def _known_count(stored: Mapping[str, Document], namespace: str, source: str) -> int:
    first = stored.get(stable_id(namespace, make_chunk_key(source, 0)))
    return (FileRecord.of(first).chunk_count or 0) if first is not None else 0


def _orphan_ids(
    vector_store: VectorStore,
    namespace: str,
    live_sources: Collection[str],
    still_present: Callable[[Collection[str]], Collection[str]] | None,
) -> list[str]:
    """Ids of the chunks (and windows) of ``namespace`` whose source is not ``live_sources``.

    A source ``still_present`` returns is kept: its file was added after the caller listed
    the source, and a run that listed it later may be writing it (its chunk 0, the record
    the fast path trusts, last: deleting the chunks written before it lost them for good).
    """
    from langchain_holodeck.vectorstores import scan_documents

    orphans: dict[str, list[str]] = defaultdict(list)
    for doc in scan_documents(vector_store, namespace=namespace, windows=True):
        source = source_path(doc)
        if doc.id is not None and source not in live_sources:
            orphans[source].append(doc.id)
    kept = set(still_present(set(orphans))) if still_present is not None and orphans else set()
    if kept:
        logger.info(
            "sync: %d file(s) added since the source was listed keep their chunks (the next "
            "run syncs them): %s",
            len(kept),
            _some(sorted(kept)),
        )
    return [doc_id for source, ids in orphans.items() if source not in kept for doc_id in ids]


def sync_documents(
    documents: Sequence[Document],
    vector_store: VectorStore,
    *,
    namespace: str,
    batch_size: int = 50,
    overwrite: bool = False,
    cleanup: bool = False,
    keyword_index: KeywordIndexLike | None = None,
    embedding_model: str | None = None,
    pipeline: str | None = None,
    unchanged_sources: Mapping[str, int] | None = None,
    on_batch: Callable[[int], None] | None = None,
    index_unchanged: bool = False,
    max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
    prefetched: Prefetched | None = None,
    still_present: Callable[[Collection[str]], Collection[str]] | None = None,
) -> SyncResult:
    """Write ``documents`` (chunks) into ``vector_store`` idempotently; return the counts.

    With an embeddings API (any model that does not run in this process) and a store that
    takes precomputed vectors (``add_vectors(documents, vectors, ids=...)``:
    ``MatrixVectorStore``, Redis, PostgreSQL), sync embeds the chunks itself, ``max_concurrency``
    batch requests in flight at once, retrying rate-limited (HTTP 429, after its
    ``Retry-After``) and failing (5xx, connection) requests with backoff, a timed-out one
    once; a batch that still fails is counted in ``failed`` and the rest go on, except after
    a batch got no answer at all: the batches left are not sent (counted in ``failed``, one
    line). Then it writes the vectors in batches. Other stores embed inside
    ``add_documents``, one batch at a time.

    Args:
        documents: Chunks with ``source_path`` (or ``source``) and, ideally, ``chunk_index``.
        vector_store: Any store that overrides ``get_by_ids`` and takes ``ids=``; without
            ``delete`` the stale-chunk cleanup is skipped, with a line in ``errors``.
        namespace: Scopes ids and cleanup: other namespaces are never touched.
        batch_size: Chunks per store call; a failing batch is written again one chunk at a
            time (only a chunk the store refuses fails), and the rest go on.
        overwrite: Rewrite (and re-embed) chunks even when their hash is unchanged.
        cleanup: Also delete chunks of sources that are neither in ``documents`` nor in
            ``unchanged_sources`` (files removed from the source), unless ``still_present``
            keeps them. Needs a store that
            ``scan_documents`` can enumerate. A run with cleanup started while one of other
            sources is syncing into ``namespace`` of ``vector_store`` is refused.
        keyword_index: Kept in step: written chunks upserted, deleted ids removed.
        embedding_model: Identifier stored with each chunk; a different one already in the
            store raises ``EmbeddingModelMismatchError`` unless ``overwrite``.
        pipeline: Identifier of the splitter/enricher settings, stored with each chunk so the
            mtime fast path knows when a re-split is due.
        unchanged_sources: Sources the caller skipped as unchanged (source -> chunk count):
            counted as skipped and kept by cleanup.
        on_batch: Called with the size of each batch written (progress bars).
        index_unchanged: Also give ``keyword_index`` the unchanged (skipped) chunks, for an
            index that cannot be rebuilt from a store no backend can list.
        max_concurrency: Embedding requests in flight at once (above); 1 sends them one
            after another.
        prefetched: Vectors embedded ahead (``IngestionPipeline`` embeds the chunks of the
            first files while it loads the next): with a model in this process, texts it
            has are taken from it, not embedded again.
        still_present: With ``cleanup``: given the sources whose chunks the cleanup is about
            to delete, returns those whose files are there now; their chunks are kept. Such a
            file was added after the caller listed its source, and another run (a process
            that listed it later) may be writing it; the next run syncs it.
            ``IngestionPipeline`` asks its ``SourceLoader`` (``listed_now``); ``None``
            deletes them all.

    Returns:
        A ``SyncResult``; store failures are counted in ``failed`` and ``errors``, not raised.

    Raises:
        TypeError: When the store lacks a capability sync needs.
        ValueError: When ``batch_size`` or ``max_concurrency`` < 1 or a document has no source,
            or, with ``cleanup``, while a run of other sources is syncing into the namespace.
        EmbeddingModelMismatchError: When the store holds another model's vectors.
    """
    if batch_size < 1:
        msg = f"batch_size must be >= 1, got {batch_size}."
        raise ValueError(msg)
    if (
        isinstance(max_concurrency, bool)
        or not isinstance(max_concurrency, int)
        or (max_concurrency < 1)
    ):
        msg = f"max_concurrency must be an integer >= 1, got {max_concurrency!r}."
        raise ValueError(msg)
    check_store_capabilities(vector_store)
    chunks = assign_ids(
        documents, namespace=namespace, embedding_model=embedding_model, pipeline=pipeline
    )
    unchanged = dict(unchanged_sources or {})
    with _mirroring(vector_store, namespace, chunks, unchanged) if cleanup else nullcontext():
        stored = read_stored(vector_store, [c.id for c in chunks if c.id], batch_size=batch_size)
        if not overwrite:
            check_embedding_model(stored, embedding_model)
        plan = plan_sync(chunks, stored, overwrite=overwrite)
        to_write = [*plan.add, *plan.update, *plan.refresh]
        windows = _further_entries([*plan.add, *plan.update], vector_store.embeddings)
        for chunk in plan.refresh:  # same text: its stored windows stay, only the record moves
            chunk.metadata[WINDOW_COUNT] = _window_count(stored[chunk.id or ""])

        counts: dict[str, int] = defaultdict(int)
        live: dict[str, set[int]] = defaultdict(set)
        for chunk in chunks:
            counts[chunk.metadata["source_path"]] += 1
            live[chunk.metadata["source_path"]].add(chunk.metadata[CHUNK_INDEX])
        errors: list[str] = []
        deletes = type(vector_store).delete is not VectorStore.delete
        # a shrunk file's old tail goes before its chunk 0 (the record the fast path trusts) is
        # written, so a kill in between leaves the old record and the next run redoes the file
        tails: dict[str, list[str]] = {}
        try:
            for source in counts:
                known = _known_count(stored, namespace, source)
                tail = _stale_tail_ids(vector_store, namespace, source, live[source], known)
                if tail:
                    tails[source] = tail
        except Exception as error:  # the store failed mid-sync: reported, re-running converges
            errors.append(f"looking for stale chunks: {sanitize_error(error)}")
            logger.warning("sync: %s", errors[-1])
            tails = {source: [] for source in counts}  # no record moves: every file is redone
        kept_tails = [] if deletes else [i for ids in tails.values() for i in ids]
        if not deletes:
            tails = {}  # reported with the other stale chunks below

        written, write_errors, failed, deleted = write_entries(
            vector_store,
            to_write,
            windows,
            Writer(vector_store, batch_size, max_concurrency, on_batch, prefetched),
            tails,
        )
        errors += write_errors
        written_ids = {doc.id for doc in written}
        added = sum(1 for doc in plan.add if doc.id in written_ids)
        updated = sum(1 for doc in plan.update if doc.id in written_ids)
        skipped = len(plan.skip) + sum(unchanged.values())

        stale: list[str] = []
        for chunk in written:  # windows a rewritten chunk no longer has
            old = stored.get(chunk.id or "")
            if old is not None and chunk.id:
                stale += _window_ids(chunk.id, _window_count(chunk), _window_count(old))
        try:
            if cleanup:
                live_sources = set(counts) | set(unchanged)
                stale.extend(_orphan_ids(vector_store, namespace, live_sources, still_present))
        except (
            TypeError
        ) as error:  # a store scan_documents cannot enumerate: say so, keep the tails
            errors.append(f"cleanup of deleted files skipped: {error}")
            logger.warning("sync: %s", errors[-1])
        except Exception as error:  # the store failed mid-sync: reported, re-running converges
            errors.append(f"looking for stale chunks: {sanitize_error(error)}")
            logger.warning("sync: %s", errors[-1])
        if (stale or kept_tails) and not deletes:
            errors.append(
                f"stale-chunk cleanup skipped: {type(vector_store).__name__} does not override "
                f"delete(), so {len(set(stale) | set(kept_tails))} stale chunk(s) stay in the "
                "store; use a store that implements delete() to remove them."
            )
            logger.warning("sync: %s", errors[-1])
            stale = []
        more_deleted = delete_ids(vector_store, stale)
        deleted += more_deleted

        if keyword_index is not None:
            indexed = [*written, *plan.skip] if index_unchanged else written
            _update_keyword_index(keyword_index, indexed, deleted.ids)
        return SyncResult(
            added=added,
            updated=updated,
            skipped=skipped,
            failed=failed,
            # chunks only, and only those the store says existed: of two processes deleting
            # the same stale ids at once, each id is counted once (CountingDelete)
            deleted=sum(1 for doc_id in deleted.existed if window_parent(doc_id) == doc_id),
            errors=tuple(errors + list(more_deleted.errors)),
        )


_WINDOW_CUT_BATCH = 256
"""Chunks cut into model windows at a time: the tokenizer's work stays small (flat memory)."""


def _update_keyword_index(
    keyword_index: KeywordIndexLike, written: Sequence[Document], deleted: Sequence[str]
) -> None:
    try:
        if deleted:
            keyword_index.delete(list(deleted))
        if written:
            keyword_index.upsert(list(written))
    except Exception as error:  # the keyword leg degrades, the store is right
        logger.warning(
            "sync: keyword index update failed (%s); it will be rebuilt from the store.",
            sanitize_error(error),
        )


class DocumentSync(MirrorBatches[Sequence[Document], SyncResult]):
    """The sync step as a Runnable: chunks in, ``SyncResult`` out.

    ``cleanup=True`` makes the namespace mirror each input: a run deletes the chunks of the
    sources its chunks do not come from. A batch of chunk lists of different sources with
    cleanup on (``batch``, ``abatch``, ``batch_as_completed``, ``abatch_as_completed``) is
    refused before anything is written: each run would delete the others' chunks. So is a
    run (of ``sync_documents`` too) started while a run of other sources is syncing into the
    same namespace of the same store, however the two were started (a chain's
    ``batch_as_completed``, threads, ``ainvoke``s gathered).

    Instantiate:
        ```python
        sync = DocumentSync(store, namespace="kb")
        result = sync.invoke(chunks)  # SyncResult(added=..., skipped=...)
        ```
    """

    def __init__(
        self,
        vector_store: VectorStore,
        *,
        namespace: str,
        batch_size: int = 50,
        overwrite: bool = False,
        cleanup: bool = False,
        keyword_index: KeywordIndexLike | None = None,
        embedding_model: str | None = None,
        max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
    ) -> None:
        self.vector_store = vector_store
        self.max_concurrency = max_concurrency
        self.namespace = namespace
        self.batch_size = batch_size
        self.overwrite = overwrite
        self.cleanup = cleanup
        self.keyword_index = keyword_index
        self.embedding_model = embedding_model

    def invoke(
        self, input: Sequence[Document], config: RunnableConfig | None = None, **kwargs: Any
    ) -> SyncResult:
        return self._call_with_config(self._sync, input, config, run_type="tool")

    def _refuse_batch(self, inputs: Sequence[Sequence[Document]], method: str) -> None:
        """Refuse, before any write, a batch of chunk lists that cleanup would undo.

        Raises:
            ValueError: When cleanup is on and the lists do not all come from the same
                sources (each run deletes the chunks of the sources not in its own list).
        """
        if not self.cleanup:
            return
        lists: list[tuple[str, ...]] = []
        for documents in inputs:
            sources = tuple(sorted({str(source_path(doc) or "") for doc in documents}))
            if sources not in lists:
                lists.append(sources)
        if len(lists) > 1:
            shown = ", ".join(_some(sources) for sources in lists)
            msg = (
                f"{method} got {len(inputs)} chunk lists of {len(lists)} different sets of "
                f"sources ({shown}) for namespace {self.namespace!r} with cleanup on: each "
                "run deletes the chunks of the sources not in its own list, so only the last "
                "list's would stay. Sync them as one list, give each its own DocumentSync "
                "and namespace, or pass cleanup=False."
            )
            raise ValueError(msg)

    def _sync(self, documents: Sequence[Document]) -> SyncResult:
        return sync_documents(
            documents,
            self.vector_store,
            namespace=self.namespace,
            batch_size=self.batch_size,
            overwrite=self.overwrite,
            cleanup=self.cleanup,
            keyword_index=self.keyword_index,
            embedding_model=self.embedding_model,
            max_concurrency=self.max_concurrency,
        )


def _some(sources: Sequence[str], shown: int = 3) -> str:
    """``sources`` for a message: the first ``shown``, then how many more."""
    more = f", and {len(sources) - shown} more" if len(sources) > shown else ""
    return f"[{', '.join(map(repr, sources[:shown]))}{more}]"


def _mirroring(
    vector_store: VectorStore,
    namespace: str,
    chunks: Sequence[Document],
    unchanged: Mapping[str, int],
) -> AbstractContextManager[None]:
    """Hold ``namespace`` for a run with cleanup: a run of other sources is refused at its start.

    Runs of the same sources (``chunks`` and ``unchanged``) may overlap: they converge.
    """
    sources = frozenset(chunk.metadata["source_path"] for chunk in chunks) | frozenset(unchanged)
    shown = _some(sorted(sources))

    def refusal(running: str) -> str:
        return (
            f"sync_documents got chunks of {shown} for namespace {namespace!r} with cleanup on "
            f"while a run of {running} is syncing into it: each run deletes the chunks of the "
            "sources not in its own list, so one list's would stay, or none. Sync them as one "
            "list, give each its own DocumentSync and namespace, or pass cleanup=False."
        )

    return mirroring(vector_store, namespace, sources, shown=shown, refusal=refusal)
