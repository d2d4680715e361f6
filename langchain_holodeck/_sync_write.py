"""The write path of sync: embedding ahead, batched writes, stale-id deletes, the ETA note.

Private to ``sync.py``, which decides *what* to write; this module writes it, a failing batch
counted and reported, the rest going on. Log lines keep the ``langchain_holodeck.sync`` logger.

Two ways of embedding ahead, so the embedder never waits for the store:

- an embeddings API (``in_flight``): every text is embedded first, requests in flight
  (``embed_in_flight``), then written by vector;
- a model in this process (``OnnxEmbeddings``, ``LocalEmbeddings``) under a store with
  ``add_vectors``: one thread embeds the next ``AHEAD_BATCHES`` batches, as one call (so the
  model's own batching and threads see full, cross-file batches), while this thread writes the
  batches before them. Memory stays at two slices of vectors. Texts already embedded ahead
  (``prefetched``: ``IngestionPipeline`` embeds while it still loads files, ``_prefetch.py``)
  are taken from there, not embedded again.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
from langchain_core.documents import Document
from langchain_core.vectorstores import VectorStore

from langchain_holodeck._redact import one_line
from langchain_holodeck._request_url import with_unanswered_url
from langchain_holodeck.contracts import CountingDelete
from langchain_holodeck.embeddings.inflight import embed_in_flight, runs_in_process

logger = logging.getLogger("langchain_holodeck.sync")

AHEAD_BATCHES = 4
"""Write batches a model in this process embeds in one call, one such slice ahead of the
writes: large enough that its threads rarely wait on a slice's last window."""


class Prefetched(Protocol):
    """Vectors embedded ahead of sync (``_prefetch.EmbedPrefetch``)."""

    def vectors(self, texts: Sequence[str]) -> list[list[float] | None]:
        """Each text's vector, ``None`` where sync must embed it itself."""
        ...


def embeds_ahead(vector_store: VectorStore) -> bool:
    """Whether sync embeds for this store with a model in this process (``Writer.ahead``)."""
    embeddings = getattr(vector_store, "embeddings", None)
    add_vectors = getattr(vector_store, "add_vectors", None)
    return callable(add_vectors) and embeddings is not None and runs_in_process(embeddings)


def sanitize_error(error: BaseException) -> str:
    """One line, no traceback, no credentials: safe to store in ``SyncResult.errors``.

    A request that got no answer (an embeddings server not running) names its URL.
    """
    return with_unanswered_url(one_line(error), error)


def batched(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    """``items`` in consecutive slices of at most ``size``."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


class Writer:
    """Writes batches to the store: by precomputed vectors when sync embeds them itself."""

    def __init__(
        self,
        vector_store: VectorStore,
        batch_size: int,
        max_concurrency: int,
        on_batch: Callable[[int], None] | None,
        prefetched: Prefetched | None = None,
    ) -> None:
        self.store, self.batch_size, self.on_batch = vector_store, batch_size, on_batch
        self.max_concurrency = max_concurrency
        embeddings = getattr(vector_store, "embeddings", None)
        add_vectors = getattr(vector_store, "add_vectors", None)
        by_vector = callable(add_vectors) and embeddings is not None
        self.in_flight = by_vector and not runs_in_process(embeddings)
        self.ahead = embeds_ahead(vector_store)
        """A model in this process: the next slice is embedded while this one is written."""
        self.prefetched = prefetched
        self.vectors: dict[str, npt.NDArray[np.float64]] = {}
        """Vectors embedded ahead (``embed``), packed: a list of floats would take 4x the memory."""
        self.eta: Eta | None = None
        self._shown = _Share(0, 0)

    def embed(self, documents: Sequence[Document], *, shown: int | None = None) -> list[str]:
        """Embed ``documents`` ahead, requests in flight; the error line of each failed batch.

        A document whose batch failed gets no vector: its write counts as failed. ``on_batch``
        counts ``shown`` in all (default: one per document), in proportion as batches end: the
        chunks, when their model windows are embedded with them.
        """
        if not self.in_flight or not documents:
            return []
        self._shown = _Share(len(documents), len(documents) if shown is None else shown)
        result = embed_in_flight(
            self.store.embeddings,  # type: ignore[arg-type]  # checked in __init__
            [d.page_content for d in documents],
            batch_size=self.batch_size,
            max_concurrency=self.max_concurrency,
            on_batch=self._embedded,
            packed=True,
        )
        for doc, vector in zip(documents, result.vectors, strict=True):
            if vector is not None and doc.id:
                self.vectors[doc.id] = np.asarray(vector)  # packed: the array itself
        lines = []
        for failure in result.failures:
            if not failure.sent:
                continue  # one line for them all, below
            first = documents[failure.start].metadata.get("source_path")
            line = f"embedding batch of {failure.size} from {first!r}: {failure.error}"
            logger.warning("sync: %s", line)
            lines.append(line)
        unsent = [failure for failure in result.failures if not failure.sent]
        if unsent:
            texts = sum(failure.size for failure in unsent)
            line = f"{len(unsent)} embedding batch(es) of {texts} text(s) {unsent[0].error}"
            logger.warning("sync: %s", line)
            lines.append(line)
        if result.retries:
            logger.info("sync: %d embedding request(s) retried", result.retries)
        return lines

    def _embedded(self, n: int) -> None:
        """Progress while requests are in flight (embedding is the slow part)."""
        shown = self._shown.advance(n)
        if self.on_batch is not None and shown:
            self.on_batch(shown)
        if self.eta is not None:
            self.eta.advance(n)

    def write(
        self, chunks: Sequence[Document], what: str = "chunks", *, progress: bool = True
    ) -> tuple[list[Document], list[str], int]:
        """Write ``chunks`` in batches; a failing batch is written again chunk by chunk."""
        written: list[Document] = []
        errors: list[str] = []
        failed = 0
        batches = list(batched(chunks, self.batch_size))
        ahead = (
            _EmbedAhead(self.store.embeddings, batches, self.prefetched)
            if self.ahead and batches
            else None
        )
        try:
            for n, batch in enumerate(batches):
                ok, lines = self._write_one(batch, n, ahead, what)
                failed += len(batch) - len(ok)
                written.extend(ok)
                errors += lines
                if self.in_flight:
                    continue  # progress was reported as the batches were embedded
                if progress and self.on_batch is not None:
                    self.on_batch(len(batch))
                if self.eta is not None:
                    self.eta.advance(len(batch))
        finally:
            if ahead is not None:
                ahead.close()
        return written, errors, failed

    def _write_one(
        self, batch: Sequence[Document], n: int, ahead: _EmbedAhead | None, what: str
    ) -> tuple[list[Document], list[str]]:
        """Write one batch: the documents written and the error lines (none when it went in).

        A batch that fails is written again one document at a time (``_write_singly``), so a
        chunk the store refuses (PostgreSQL and a NUL character) fails alone, not its batch.
        """
        ready = list(batch)
        if self.in_flight:  # a chunk whose embedding failed was reported by embed()
            ready = [d for d in batch if d.id in self.vectors]
        if not ready:
            return [], []
        vectors: list[list[float]] | None = None
        try:
            if ahead is not None:
                vectors = ahead.vectors(n)
            elif self.in_flight:
                vectors = [self.vectors[d.id or ""].tolist() for d in ready]  # the same floats
            self._add(ready, vectors)
        except Exception as error:  # one bad batch never stops the rest
            line = f"batch of {len(ready)} {what} from {_sources(ready)}: {sanitize_error(error)}"
            if len(ready) > 1:
                return self._write_singly(ready, vectors, what, line)
            logger.warning("sync: %s", line)
            return [], [line]
        return ready, []

    def _add(self, documents: list[Document], vectors: list[list[float]] | None) -> None:
        """One write: by vector when sync embedded them, else the store embeds."""
        ids = [d.id for d in documents]
        if vectors is None:
            self.store.add_documents(documents, ids=ids)
        else:
            self.store.add_vectors(  # type: ignore[attr-defined]  # checked in __init__
                documents, vectors, ids=ids
            )

    def _write_singly(
        self,
        documents: list[Document],
        vectors: list[list[float]] | None,
        what: str,
        batch_line: str,
    ) -> tuple[list[Document], list[str]]:
        """After a batch failed: each of its documents on its own, so one bad chunk fails alone.

        Writes are upserts by id, so writing again what part of the batch wrote is harmless.
        When ``SINGLY_FAILURES`` writes in a row fail, the store is failing, not a chunk: the
        rest are not tried (a store out of reach costs a few writes per batch, not one per
        chunk), and when nothing went in the batch's line is the one reported.
        """
        written: list[Document] = []
        lines: list[str] = []
        streak = 0
        for k, doc in enumerate(documents):
            try:
                self._add([doc], None if vectors is None else [vectors[k]])
            except Exception as error:
                source = doc.metadata.get("source_path")
                lines.append(
                    f"{what.removesuffix('s')} {doc.id} from {source!r}: {sanitize_error(error)}"
                )
                streak += 1
                if streak < SINGLY_FAILURES:
                    continue
                left = len(documents) - k - 1
                if not written:
                    lines = [batch_line]
                elif left:
                    lines.append(
                        f"{left} more {what} of that batch not written: {SINGLY_FAILURES} "
                        "writes in a row failed"
                    )
                break
            else:
                streak = 0
                written.append(doc)
        for line in lines:
            logger.warning("sync: %s", line)
        return written, lines


SINGLY_FAILURES = 3
"""Writes in a row that fail, while a failed batch is written one document at a time, after
which the store itself is taken to be failing and the batch's other documents are not tried."""


def _sources(documents: Sequence[Document]) -> str:
    """The files of ``documents`` for an error line: ``'a.md'``, ``3 files ('a.md', ...)``."""
    paths = list(dict.fromkeys(str(d.metadata.get("source_path")) for d in documents))
    if len(paths) == 1:
        return repr(paths[0])
    shown = ", ".join(map(repr, paths[:3])) + (", ..." if len(paths) > 3 else "")
    return f"{len(paths)} files ({shown})"


class _Share:
    """``shown`` units reported in proportion as ``texts`` are done (from worker threads)."""

    def __init__(self, texts: int, shown: int) -> None:
        self.texts, self.shown = texts, shown
        self.done = self.reported = 0
        self.lock = threading.Lock()

    def advance(self, texts: int) -> int:
        """The units to report now that ``texts`` more are done."""
        with self.lock:
            self.done += texts
            due = self.shown * min(self.done, self.texts) // max(self.texts, 1)
            step, self.reported = due - self.reported, due
            return step


class _EmbedAhead:
    """Vectors of ``batches``, embedded one slice of ``AHEAD_BATCHES`` ahead on one thread.

    ``vectors(n)`` returns batch ``n``'s vectors (asked in order). When a slice's call
    fails, each of its batches is embedded again on its own, so only a batch that fails alone
    raises (and counts as failed); the others go on. Texts ``prefetched`` has are taken from
    it.
    """

    def __init__(
        self,
        embeddings: Any,
        batches: Sequence[Sequence[Document]],
        prefetched: Prefetched | None = None,
    ) -> None:
        self.embeddings, self.batches, self.prefetched = embeddings, batches, prefetched
        self.pool = ThreadPoolExecutor(1, thread_name_prefix="holodeck-embed-ahead")
        self.slices: dict[int, Future[list[list[float]]]] = {}
        self._submit(0)

    def _submit(self, first: int) -> None:
        if first >= len(self.batches) or first in self.slices:
            return
        texts = [d.page_content for b in self.batches[first : first + AHEAD_BATCHES] for d in b]
        self.slices[first] = self.pool.submit(self._embed, texts)

    def _embed(self, texts: list[str]) -> list[list[float]]:
        """Vectors of ``texts``: those embedded ahead, the rest from the model."""
        if self.prefetched is None:
            return self.embeddings.embed_documents(texts)
        have = self.prefetched.vectors(texts)
        missing = [n for n, vector in enumerate(have) if vector is None]
        if missing:
            fresh = self.embeddings.embed_documents([texts[n] for n in missing])
            for n, vector in zip(missing, fresh, strict=True):
                have[n] = vector
        return [vector for vector in have if vector is not None]

    def vectors(self, n: int) -> list[list[float]]:
        first = n - n % AHEAD_BATCHES
        self._submit(first)
        self._submit(first + AHEAD_BATCHES)  # the next slice runs while this one is written
        try:
            vectors = self.slices[first].result()
        except Exception:  # find the batch that fails: embed this one on its own
            return self._embed([d.page_content for d in self.batches[n]])
        if n % AHEAD_BATCHES == AHEAD_BATCHES - 1 or n == len(self.batches) - 1:
            del self.slices[first]  # its last batch: keep memory at two slices
        offset = sum(len(b) for b in self.batches[first:n])
        return vectors[offset : offset + len(self.batches[n])]

    def close(self) -> None:
        """Drop what was not asked for (an interrupted write returns now, not a slice later)."""
        self.pool.shutdown(wait=False, cancel_futures=True)


def write_entries(
    vector_store: VectorStore,
    chunks: Sequence[Document],
    windows: Mapping[str, Sequence[Document]],
    writer: Writer,
    tails: Mapping[str, Sequence[str]],
) -> tuple[list[Document], list[str], int, Deleted]:
    """Write in batches: windows, then chunks, then delete ``tails``, each chunk 0 last.

    A chunk goes in only once all its windows are in, and chunk 0 carries the mtime the fast
    path trusts, so it is written only once every other chunk of its file is in and its
    stale tail (``tails``: source -> ids) is gone: a run that fails or is killed part-way
    leaves the old record, and the next run redoes that file instead of skipping it.
    Returns the chunks written (never windows), the error lines, the number of chunks not
    written and what was deleted.
    """
    entries = [w for c in chunks for w in windows.get(c.id or "", ())]
    writer.eta = Eta(len(chunks), len(entries))
    errors = writer.embed([*entries, *chunks], shown=len(chunks))  # the bar counts chunks
    window_ok, more_errors, _ = writer.write(entries, "model windows", progress=False)
    errors += more_errors
    window_ids = {w.id for w in window_ok}
    without = [
        c for c in chunks if any(w.id not in window_ids for w in windows.get(c.id or "", ()))
    ]
    without_ids = {c.id for c in without}
    if without:
        errors.append(
            f"{len(without)} chunk(s) not written because their model windows failed: "
            f"{', '.join(sorted({c.metadata['source_path'] for c in without})[:5])}"
        )
    ready = [c for c in chunks if c.id not in without_ids]
    heads = [c for c in ready if c.metadata.get("chunk_index") == 0]
    body = [c for c in ready if c.metadata.get("chunk_index") != 0]
    written, more_errors, failed = writer.write(body)
    errors += more_errors
    written_ids = {doc.id for doc in written}
    broken = {c.metadata["source_path"] for c in without} | {
        c.metadata["source_path"] for c in body if c.id not in written_ids
    }
    deleted = delete_ids(vector_store, [i for ids in tails.values() for i in ids])
    errors += deleted.errors
    if deleted.errors or any(not ids for ids in tails.values()):  # a tail may remain
        broken |= set(tails)
    held = [c for c in heads if c.metadata["source_path"] in broken]
    if held:
        errors.append(
            f"{len(held)} file record(s) not written because other chunks of the file failed: "
            f"{', '.join(sorted(c.metadata['source_path'] for c in held)[:5])}"
        )
    more, more_errors, more_failed = writer.write(
        [c for c in heads if c.metadata["source_path"] not in broken]
    )
    failed += more_failed + len(held) + len(without)
    return written + more, errors + more_errors, failed, deleted


ETA_NOTE_ENTRIES = 2000
"""A sync writing at least this many entries (chunks and model windows) says, early on, how many
there are and about how long the rest will take."""
ETA_PACE_SHARE = 0.05
"""The share of a long sync's entries after its first batch that the time left is paced on."""
ETA_MIN_LEFT = 10.0
"""Seconds left under which the note is not given: "about 0 s left" at the end of an ingest
whose vectors were embedded while its files loaded says nothing a user can act on."""


class Eta:
    """One note early in a long sync: entries to write, and time left at the pace since batch 1.

    No note when less than ``ETA_MIN_LEFT`` is left. The first batch is not a pace: it also
    waits for the model to load, and in an ingest for the vectors embedded while files loaded
    (after which the rest goes faster). The rate is measured from the end of the first batch
    over the next 5% of the entries (at least one batch; requests in flight end in bursts, so
    one batch alone is no pace either).
    """

    def __init__(self, chunks: int, windows: int) -> None:
        self.chunks, self.windows = chunks, windows
        self.done = 0
        self.first: tuple[int, float] | None = None  # entries done and time at batch 1's end
        self.noted = chunks + windows < ETA_NOTE_ENTRIES

    def advance(self, written: int) -> None:
        self.done += written
        if self.noted:
            return
        now = time.perf_counter()
        if self.first is None:
            self.first = (self.done, now)
            return
        done, since = self.first
        total = self.chunks + self.windows
        if self.done - done < max(done, ETA_PACE_SHARE * total):
            return
        self.noted = True
        elapsed = now - since
        rate = (self.done - done) / elapsed if elapsed > 0 else 0.0
        left = (total - self.done) / rate if rate > 0 else 0.0
        if left < ETA_MIN_LEFT:
            return
        logger.warning(
            "note: embedding and writing %d chunks (and %d model windows): about %s left at "
            "%.1f entries/s. Ctrl-C keeps what is written; the next run resumes.",
            self.chunks,
            self.windows,
            duration(left),
            rate,
        )


def duration(seconds: float) -> str:
    """``40 s``, ``12 min``, ``1 h 05 min``."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    return f"{minutes} min" if minutes < 60 else f"{minutes // 60} h {minutes % 60:02d} min"


@dataclass(frozen=True)
class Deleted:
    """What one or more deletes did: the ids asked for, those that existed, the error lines."""

    ids: tuple[str, ...] = ()
    """Every id sync asked the store to delete (the keyword index drops them all)."""
    existed: tuple[str, ...] = ()
    """The ids the store says it removed; without ``CountingDelete``, all of ``ids``."""
    errors: tuple[str, ...] = ()
    """One line per failed delete."""

    def __add__(self, other: Deleted) -> Deleted:
        return Deleted(
            self.ids + other.ids, self.existed + other.existed, self.errors + other.errors
        )


def delete_ids(vector_store: VectorStore, ids: Sequence[str]) -> Deleted:
    """Delete ``ids``; a store that is ``CountingDelete`` says which of them existed."""
    unique = tuple(dict.fromkeys(ids))
    if not unique:
        return Deleted()
    try:
        if isinstance(vector_store, CountingDelete):
            existed = tuple(vector_store.delete_existing(unique))
        else:  # the LangChain contract cannot say: every id counts as deleted
            vector_store.delete(ids=list(unique))
            existed = unique
    except Exception as error:  # reported, re-running converges
        line = f"delete of {len(unique)} stale chunks: {sanitize_error(error)}"
        logger.warning("sync: %s", line)
        return Deleted(errors=(line,))
    return Deleted(unique, existed)
