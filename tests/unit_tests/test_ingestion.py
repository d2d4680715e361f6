"""IngestionPipeline: mtime fast path, force_ingest, cleanup, tails, the embedding cache."""

from __future__ import annotations

import asyncio
import os
import random
import shutil
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.runnables import RunnableLambda
from langchain_core.stores import InMemoryByteStore
from langchain_core.vectorstores import VectorStore

from langchain_holodeck._chunk import FileRecord
from langchain_holodeck.embeddings import CachedEmbeddings
from langchain_holodeck.errors import NoSupportedFilesError
from langchain_holodeck.ingestion import IngestionPipeline, IngestProgress
from langchain_holodeck.loaders import Skipped, SourceFile, SourceLoader
from langchain_holodeck.splitters import StructuredMarkdownSplitter, default_text_splitter
from langchain_holodeck.sync import SyncResult
from langchain_holodeck.vectorstores import MatrixVectorStore, scan_documents
from tests.helpers import (
    DATA_DIR,
    HashingEmbeddings,
    OverlappingStore,
    added_between_walks,
    crash_after_files,
)

NAMESPACE = "kb"
WORDS = (
    "holodeck",
    "safety",
    "protocol",
    "arch",
    "program",
    "crew",
    "shift",
    "officer",
    "replicator",
    "deck",
    "sensor",
    "power",
    "grid",
    "matrix",
    "subroutine",
)
INSERTED = "A newly inserted paragraph on holodeck arch rules."


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A private copy of tests/data/docs at ``root/docs``; source paths are ``docs/...``."""
    shutil.copytree(DATA_DIR / "docs", tmp_path / "docs")
    return tmp_path


@pytest.fixture
def loads(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Counts SourceLoader.read_document calls per source path: what the fast path avoided."""
    counter: Counter[str] = Counter()
    original = SourceLoader.read_document

    def counting(self: SourceLoader, file: SourceFile) -> Document | Skipped:
        counter[file.source_path] += 1
        return original(self, file)

    monkeypatch.setattr(SourceLoader, "read_document", counting)
    return counter


def make_pipeline(
    root: Path, embeddings: Embeddings, *, store: VectorStore | None = None, **kwargs: Any
) -> IngestionPipeline:
    return IngestionPipeline(
        store if store is not None else MatrixVectorStore(embeddings),
        namespace=NAMESPACE,
        base_dir=root,
        **kwargs,
    )


def stored_by_source(store: VectorStore) -> dict[str, list[str]]:
    """source_path -> chunk texts in chunk_index order."""
    out: dict[str, list[tuple[int, str]]] = {}
    for doc in scan_documents(store, namespace=NAMESPACE):
        meta = doc.metadata
        out.setdefault(meta["source_path"], []).append((meta["chunk_index"], doc.page_content))
    return {source: [text for _, text in sorted(chunks)] for source, chunks in out.items()}


def long_text(paragraphs: int, *, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return [
        f"Paragraph {i}. " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(25, 70))) + "."
        for i in range(paragraphs)
    ]


def replace_keeping_stat(path: Path, text: str) -> None:
    """Write same-length content and restore the file's mtime to the nanosecond."""
    before = path.stat()
    assert len(text.encode()) == before.st_size
    path.write_text(text, encoding="utf-8")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def test_first_ingest_adds_and_embeds_every_chunk(
    root: Path, embeddings: HashingEmbeddings
) -> None:
    pipeline = make_pipeline(root, embeddings)
    result = pipeline.invoke("docs")
    stored = stored_by_source(pipeline.vector_store)
    assert set(stored) == {
        "docs/api.md",
        "docs/auth.md",
        "docs/crew.json",
        "docs/guide/shifts.txt",
        "docs/maintenance.csv",
    }
    assert result.added == sum(len(v) for v in stored.values()) == embeddings.texts_embedded
    assert (result.updated, result.skipped, result.failed, result.deleted) == (0, 0, 0, 0)


def test_unchanged_files_are_neither_loaded_nor_embedded(
    root: Path, embeddings: HashingEmbeddings, loads: Counter[str]
) -> None:
    pipeline = make_pipeline(root, embeddings)
    first = pipeline.invoke("docs")
    assert sum(loads.values()) == 5
    loads.clear()
    calls = embeddings.calls

    second = pipeline.invoke("docs")

    assert sum(loads.values()) == 0
    assert embeddings.calls == calls
    assert (second.added, second.updated, second.skipped) == (0, 0, first.added)
    assert second.deleted == 0


def test_fast_path_trusts_mtime_and_size_by_design(
    root: Path, embeddings: HashingEmbeddings, loads: Counter[str]
) -> None:
    """The trade-off: same mtime and size means unchanged, without reading the file.

    Editors and ``git checkout`` move the mtime, so real edits are seen; a rewrite that keeps
    both (only possible on purpose, as here) goes unnoticed until the mtime moves or
    ``force_ingest=True``.
    """
    pipeline = make_pipeline(root, embeddings)
    pipeline.invoke("docs")
    api = root / "docs" / "api.md"
    original = api.read_text(encoding="utf-8")
    forged = original.replace("accepts", "ACCEPTS")
    replace_keeping_stat(api, forged)
    loads.clear()

    result = pipeline.invoke("docs")

    assert loads["docs/api.md"] == 0
    assert result.updated == 0
    assert stored_by_source(pipeline.vector_store)["docs/api.md"] == [original.strip()]

    os.utime(api, ns=(api.stat().st_atime_ns, api.stat().st_mtime_ns + 1_000_000_000))
    result = pipeline.invoke("docs")

    assert loads["docs/api.md"] == 1
    assert result.updated == 1
    assert "ACCEPTS" in stored_by_source(pipeline.vector_store)["docs/api.md"][0]


def test_a_files_stats_and_chunk_count_are_current_on_its_chunk_0(
    root: Path, embeddings: HashingEmbeddings
) -> None:
    """Per-file fields describe the file on chunk 0 only (the ``_chunk`` contract): a later
    chunk whose text did not change is skipped, so it keeps them as the run that wrote it saw
    the file (found 2026-12-07; by design: rewriting it would re-embed or rewrite every chunk
    of every edited file)."""
    notes = root / "docs" / "notes.md"
    notes.write_text("# One\n\nFirst section.\n\n# Two\n\nSecond section.\n", encoding="utf-8")
    pipeline = make_pipeline(root, embeddings, splitter=StructuredMarkdownSplitter())
    pipeline.invoke("docs")
    before = notes.stat()
    notes.write_text(notes.read_text(encoding="utf-8") + "\n# Three\n\nThird section.\n")
    os.utime(notes, ns=(before.st_atime_ns, before.st_mtime_ns + 10**9))
    result = pipeline.invoke("docs")
    assert result.added == 1
    chunks = {
        d.metadata["chunk_index"]: d.metadata
        for d in scan_documents(pipeline.vector_store, namespace=NAMESPACE)
        if d.metadata["source_path"] == "docs/notes.md"
    }
    assert FileRecord.of(chunks[0]) == FileRecord(
        notes.stat().st_mtime, notes.stat().st_size, 3, chunks[0]["pipeline"]
    )
    assert (chunks[1]["size_bytes"], chunks[1]["chunk_count"]) == (before.st_size, 2)
    assert (chunks[2]["size_bytes"], chunks[2]["chunk_count"]) == (notes.stat().st_size, 3)


def test_force_ingest_reloads_and_reembeds_everything(
    root: Path, embeddings: HashingEmbeddings, loads: Counter[str]
) -> None:
    pipeline = make_pipeline(root, embeddings)
    first = pipeline.invoke("docs")
    loads.clear()
    before = embeddings.texts_embedded

    result = pipeline.invoke("docs", force_ingest=True)

    assert sum(loads.values()) == 5
    assert (result.added, result.updated, result.skipped) == (0, first.added, 0)
    assert embeddings.texts_embedded - before == first.added


def test_changed_splitter_settings_invalidate_the_fast_path(
    root: Path, embeddings: HashingEmbeddings, loads: Counter[str]
) -> None:
    store = MatrixVectorStore(embeddings)
    make_pipeline(root, embeddings, store=store).invoke("docs")
    resplit = make_pipeline(
        root, embeddings, store=store, splitter=default_text_splitter(chunk_size=64)
    )
    loads.clear()

    resplit.invoke("docs")
    assert sum(loads.values()) == 5  # every file re-read and re-split
    loads.clear()

    again = resplit.invoke("docs")
    assert sum(loads.values()) == 0  # the new settings are recorded: fast again
    assert again.added == again.updated == 0


def test_deleted_file_chunks_are_cleaned_up(root: Path, embeddings: HashingEmbeddings) -> None:
    pipeline = make_pipeline(root, embeddings)
    pipeline.invoke("docs")
    (root / "docs" / "auth.md").unlink()

    result = pipeline.invoke("docs")

    assert result.deleted == 1
    assert "docs/auth.md" not in stored_by_source(pipeline.vector_store)
    assert len(stored_by_source(pipeline.vector_store)) == 4


def test_a_file_that_stops_converting_keeps_its_chunks(
    root: Path, embeddings: HashingEmbeddings, loads: Counter[str]
) -> None:
    """A PDF that no longer converts (half written?) keeps the chunks of its last good read."""
    from tests.unit_tests.test_loaders import write_pdf

    write_pdf(root / "docs" / "report.pdf", "Quarterly holodeck report")
    pipeline = make_pipeline(root, embeddings, unreadable={})
    pipeline.invoke("docs")
    before = stored_by_source(pipeline.vector_store)["docs/report.pdf"]
    (root / "docs" / "report.pdf").write_bytes(b"%PDF-1.4\nnot a PDF any more")

    result = pipeline.invoke("docs")

    assert result.deleted == 0
    assert stored_by_source(pipeline.vector_store)["docs/report.pdf"] == before
    assert pipeline.invoke("docs").deleted == 0  # and on every run after
    assert loads["docs/report.pdf"] == 2  # not read again at the same mtime and size


def test_a_file_swapped_for_a_symlink_out_of_the_source_during_a_run_keeps_its_chunks(
    root: Path, embeddings: HashingEmbeddings
) -> None:
    """Found 2026-12-07 (a probe): a file swapped for a symlink out of the source after the
    walk was read and indexed. Now it is unreadable for that run: its chunks are kept, the
    outside file's text is not stored, and the next walk refuses the link as before."""
    (root / "outside.md").write_text("# Secret\n\nTOPSECRET outside the source\n", "utf-8")
    pipeline = make_pipeline(root, embeddings, unreadable={})
    pipeline.invoke("docs")
    before = stored_by_source(pipeline.vector_store)["docs/auth.md"]
    auth = root / "docs" / "auth.md"
    auth.write_text(auth.read_text(encoding="utf-8") + "\nEdited.\n", encoding="utf-8")

    def swap(progress: IngestProgress) -> None:  # another process, after the walk
        if progress.stage == "files" and not auth.is_symlink():
            auth.unlink()
            auth.symlink_to(root / "outside.md")

    result = make_pipeline(
        root, embeddings, store=pipeline.vector_store, unreadable={}, on_progress=swap
    ).invoke("docs")

    assert result.deleted == 0
    stored = stored_by_source(pipeline.vector_store)
    assert stored["docs/auth.md"] == before
    assert not any("TOPSECRET" in text for texts in stored.values() for text in texts)
    assert pipeline.invoke("docs").deleted == len(before)  # the walk refuses it: gone


def test_a_file_stopped_by_a_conversion_limit_loads_once_the_limit_is_raised(
    root: Path, embeddings: HashingEmbeddings, loads: Counter[str]
) -> None:
    """The warning says "raise max_convert_seconds to load it": the next run does, though the
    file's mtime and size did not change (it was remembered as failed, and stayed missing)."""
    (root / "docs" / "maintenance.csv").unlink()  # the page is the one file converted
    (root / "docs" / "page.html").write_text(
        "<html><body><h1>Zebras</h1><p>Zebras graze.</p></body></html>", encoding="utf-8"
    )
    unreadable: dict[str, list[float]] = {}
    pipeline = make_pipeline(root, embeddings, unreadable=unreadable)

    def run(seconds: float) -> int:
        return pipeline.invoke(SourceLoader(root / "docs", max_convert_seconds=seconds)).added

    assert run(1e-300) == 4  # every file but the page: stopped at once
    assert run(1e-300) == 0  # same limit: remembered, not converted again
    assert loads["docs/page.html"] == 1
    assert "docs/page.html" not in stored_by_source(pipeline.vector_store)
    embedded = embeddings.texts_embedded

    assert run(120) == 1  # the limit raised: converted again, and loaded
    page = stored_by_source(pipeline.vector_store)["docs/page.html"]
    assert "Zebras graze." in "".join(page)
    assert "docs/page.html" not in unreadable
    assert embeddings.texts_embedded == embedded + len(page)  # the other files: not embedded


def test_a_file_no_encoding_decoded_loads_once_the_fallbacks_change(
    root: Path, embeddings: HashingEmbeddings, loads: Counter[str]
) -> None:
    """The warning names encoding_fallbacks: a run with others reads the file again, though
    its mtime and size did not change (it was remembered as holding no text)."""
    (root / "docs" / "legacy.txt").write_bytes(bytes(range(128, 256)) * 10)
    unreadable: dict[str, list[float]] = {}
    pipeline = make_pipeline(root, embeddings, unreadable=unreadable)

    def run(*fallbacks: str) -> int:
        loader = SourceLoader(root / "docs", encoding_fallbacks=fallbacks or ("cp1252",))
        return pipeline.invoke(loader).added

    assert run() > 0  # the readable files; the bytes decode under no fallback
    assert run() == 0  # same settings: remembered, not read again
    assert loads["docs/legacy.txt"] == 1
    assert "docs/legacy.txt" not in stored_by_source(pipeline.vector_store)
    assert run("latin-1") > 0  # the fallbacks changed: read again, and loaded
    assert "\u00e9" in "".join(stored_by_source(pipeline.vector_store)["docs/legacy.txt"])
    assert "docs/legacy.txt" not in unreadable
    assert loads["docs/legacy.txt"] == 2


@pytest.mark.parametrize(
    "content", [b"", b"   \n\t\n", b"\x00\x01\x02 not text any more \xff" * 50]
)
def test_a_file_left_with_no_text_loses_its_chunks(
    root: Path, embeddings: HashingEmbeddings, loads: Counter[str], content: bytes
) -> None:
    """Emptied, whitespace only or binary: its old text is gone from the file, so from the
    store too (as a deleted file's), even with force_ingest; and it is not read again."""
    pipeline = make_pipeline(root, embeddings, unreadable={})
    pipeline.invoke("docs")
    (root / "docs" / "auth.md").write_bytes(content)

    result = pipeline.invoke("docs", force_ingest=True)

    assert result.deleted == 1
    assert "docs/auth.md" not in stored_by_source(pipeline.vector_store)
    assert len(stored_by_source(pipeline.vector_store)) == 4
    assert pipeline.invoke("docs").deleted == 0
    assert loads["docs/auth.md"] == 2  # the first ingest and the forced one


def test_a_source_whose_last_file_was_deleted_is_emptied(
    root: Path, embeddings: HashingEmbeddings
) -> None:
    """ingest --help: files deleted from SOURCE have their chunks removed, the last ones too;
    a source that never held a supported file is still an error."""
    pipeline = make_pipeline(root, embeddings)
    pipeline.invoke("docs")
    shutil.rmtree(root / "docs")
    (root / "docs").mkdir()

    result = pipeline.invoke("docs")

    assert result.deleted == 5
    assert stored_by_source(pipeline.vector_store) == {}
    with pytest.raises(NoSupportedFilesError, match="has no supported file"):
        pipeline.invoke("docs")  # nothing stored any more: nothing to remove
    (root / "other").mkdir()
    with pytest.raises(NoSupportedFilesError):
        make_pipeline(root, embeddings).invoke("other")


def test_a_file_added_while_another_run_writes_it_keeps_its_chunks(
    root: Path, embeddings: HashingEmbeddings
) -> None:
    """Two ingests of one folder overlap (two processes, an ingest beside a search): a file
    added after run A walked the folder, which run B (walking later) is writing, is not A's to
    delete. Before: A's cleanup deleted what B had written of it, B then wrote its chunk 0
    (the record the fast path trusts), and every later run skipped the file, chunks missing.
    A file deleted from disk still loses its chunks."""
    store = MatrixVectorStore(embeddings)
    make_pipeline(root, embeddings, store=store).invoke("docs")
    (root / "docs" / "auth.md").unlink()

    results = added_between_walks(
        lambda progress: make_pipeline(
            root, embeddings, store=store, batch_size=2, on_progress=progress
        ).invoke("docs"),
        root / "docs" / "new.md",
    )

    fresh = make_pipeline(root, embeddings)
    fresh.invoke("docs")
    assert len(stored_by_source(fresh.vector_store)["docs/new.md"]) > 3  # B wrote in batches
    assert stored_by_source(store) == stored_by_source(fresh.vector_store)
    assert results["A"].deleted == 1  # auth.md, deleted before A walked
    assert results["B"].added == len(stored_by_source(store)["docs/new.md"])
    again = make_pipeline(root, embeddings, store=store).invoke("docs")
    assert (again.added, again.updated, again.deleted) == (0, 0, 0)


def test_without_cleanup_a_deleted_file_stays(root: Path, embeddings: HashingEmbeddings) -> None:
    pipeline = make_pipeline(root, embeddings, cleanup=False)
    pipeline.invoke("docs")
    (root / "docs" / "auth.md").unlink()

    result = pipeline.invoke("docs")

    assert result.deleted == 0
    assert "docs/auth.md" in stored_by_source(pipeline.vector_store)


async def test_a_batch_of_two_sources_with_cleanup_is_refused_before_any_write(
    root: Path, embeddings: HashingEmbeddings
) -> None:
    # each run's cleanup deleted the other sources' chunks: only the last source stayed
    (root / "more").mkdir()
    (root / "more" / "extra.md").write_text("# Extra\n\nArch controls.\n", encoding="utf-8")
    pipeline = make_pipeline(root, embeddings)
    sources = [str(root / "docs"), SourceLoader(root / "more", base_dir=root)]
    refused = r"batch got 2 sources \('.*docs', '.*more'\) for namespace 'kb' with cleanup on"
    with pytest.raises(ValueError, match=refused):
        pipeline.batch(sources)
    with pytest.raises(ValueError, match="pass cleanup=False"):
        await pipeline.abatch(sources)
    assert stored_by_source(pipeline.vector_store) == {}
    # one source, however given, is one source; without cleanup both are kept
    (result,) = pipeline.batch([str(root / "docs")])
    assert result.added > 0
    again = pipeline.batch([root / "docs", f"{root}/./docs"], config={"max_concurrency": 1})
    assert again[1].skipped == result.added
    kept = make_pipeline(root, embeddings, store=pipeline.vector_store, cleanup=False)
    await kept.abatch(sources, config={"max_concurrency": 1})
    assert {"docs/auth.md", "more/extra.md"} <= set(stored_by_source(kept.vector_store))


async def test_batch_as_completed_of_two_sources_with_cleanup_is_refused_at_the_call(
    root: Path, embeddings: HashingEmbeddings
) -> None:
    """Found 2026-12-07: only batch/abatch were checked; batch_as_completed ran both sources
    side by side into one namespace, each cleanup deleting the other's chunks (the store
    could end empty while both results said added=N)."""
    (root / "more").mkdir()
    (root / "more" / "extra.md").write_text("# Extra\n\nArch controls.\n", encoding="utf-8")
    pipeline = make_pipeline(root, embeddings)
    sources = [str(root / "docs"), str(root / "more")]
    with pytest.raises(ValueError, match=r"batch_as_completed got 2 sources \('.*docs', '"):
        pipeline.batch_as_completed(sources)  # at the call, before the first result
    with pytest.raises(ValueError, match=r"abatch_as_completed got 2 sources .* cleanup=False"):
        pipeline.abatch_as_completed(sources, return_exceptions=True)
    assert stored_by_source(pipeline.vector_store) == {}
    # one source given twice is one source
    twice = [root / "docs", f"{root}/./docs"]
    done = dict(pipeline.batch_as_completed(twice, config={"max_concurrency": 1}))
    assert {r.failed + r.deleted for r in done.values()} == {0}
    assert "docs/auth.md" in stored_by_source(pipeline.vector_store)
    kept = make_pipeline(root, embeddings, store=pipeline.vector_store, cleanup=False)
    async for _, result in kept.abatch_as_completed(sources):
        assert result.failed == 0
    assert {"docs/auth.md", "more/extra.md"} <= set(stored_by_source(kept.vector_store))


def write_more(root: Path) -> str:
    """A second source beside ``docs``: ``more``, one file."""
    (root / "more").mkdir()
    (root / "more" / "extra.md").write_text("# Extra\n\nArch controls.\n", encoding="utf-8")
    return str(root / "more")


def one_refused(done: dict[int, SyncResult | Exception], sources: list[str]) -> int:
    """Of two runs' results, check one is the refusal; the index of the run that went on."""
    refused = [(i, out) for i, out in done.items() if isinstance(out, Exception)]
    assert len(refused) == 1, done  # before: both ran, each deleting the other's chunks
    (i, error), ran = refused[0], 1 - refused[0][0]
    assert isinstance(error, ValueError)
    assert str(error) == (
        f"invoke got source {sources[i]!r} for namespace 'kb' with cleanup on while a run of "
        f"source {sources[ran]!r} is syncing into it: each run deletes the chunks of the files "
        "not in its own source, so one source's would stay, or none. Give each source its own "
        "IngestionPipeline and namespace, or pass cleanup=False."
    )
    return ran


async def test_a_chain_of_two_sources_with_cleanup_runs_one_and_refuses_the_other(
    root: Path, embeddings: HashingEmbeddings
) -> None:
    """Found 2026-12-07: ``(prep | pipeline).batch_as_completed`` runs each source through
    the pipeline's ``invoke``, past the batch check: two sources ran side by side into one
    namespace, each cleanup deleting the other's chunks, and the store could end empty while
    both results said added=3. A run is now refused at its start while another source's run
    syncs into the namespace; one after the other, the second re-points it, as before."""
    sources = [str(root / "docs"), write_more(root)]
    clean, files = make_pipeline(root, embeddings), {}
    for source in sources:  # what each source is alone
        clean.invoke(source)
        files[source] = set(stored_by_source(clean.vector_store))
    for run_async in (False, True):
        store = OverlappingStore(embeddings)  # the first run waits until the other came
        chain = RunnableLambda(lambda source: source) | make_pipeline(root, embeddings, store=store)
        done: dict[int, SyncResult | Exception] = {}
        if run_async:
            async for i, out in chain.abatch_as_completed(sources, return_exceptions=True):
                done[i] = out
                store.go.set()  # the refused run came first: the other may go on
        else:
            for i, out in chain.batch_as_completed(sources, return_exceptions=True):
                done[i] = out
                store.go.set()
        ran = one_refused(done, sources)
        result = done[ran]
        assert isinstance(result, SyncResult)
        assert set(stored_by_source(store)) == files[sources[ran]]
        assert (result.added, result.deleted, result.failed) == (len(store.store), 0, 0)
        # one after the other: the later source replaces the earlier, as before
        after = chain.invoke(sources[1 - ran])
        assert after.deleted == result.added
        assert set(stored_by_source(store)) == files[sources[1 - ran]]


async def test_runs_of_one_source_with_cleanup_may_overlap(
    root: Path, embeddings: HashingEmbeddings
) -> None:
    # they converge: neither deletes what the other writes
    clean = make_pipeline(root, embeddings)
    expected = clean.invoke(str(root / "docs")).added
    for run_async in (False, True):
        store = OverlappingStore(embeddings)  # each run waits until the other reached the store
        pipeline = make_pipeline(root, embeddings, store=store)
        twice = [str(root / "docs"), SourceLoader("docs", base_dir=root)]
        if run_async:
            results = await asyncio.gather(*(pipeline.ainvoke(source) for source in twice))
        else:
            chain = RunnableLambda(lambda source: source) | pipeline
            results = [result for _, result in chain.batch_as_completed(twice)]
        assert store.go.is_set()  # set by the second run's arrival: both were under way
        assert [(r.failed, r.deleted) for r in results] == [(0, 0), (0, 0)]
        assert stored_by_source(store) == stored_by_source(clean.vector_store)
        assert len(store.store) == expected


def test_a_run_that_fails_midway_lets_another_source_in(
    root: Path, embeddings: HashingEmbeddings
) -> None:
    def crash() -> None:
        msg = "the disk went away"
        raise OSError(msg)

    crashing = make_pipeline(root, embeddings, on_progress=crash_after_files(crash))
    with pytest.raises(OSError, match="the disk went away"):
        crashing.invoke(str(root / "docs"))
    other = make_pipeline(root, embeddings, store=crashing.vector_store)
    with ThreadPoolExecutor(1) as pool:  # another thread: nothing of the failed run's context
        result = pool.submit(other.invoke, write_more(root)).result()
    assert (result.added, result.failed) == (1, 0)


async def test_a_cancelled_ainvoke_holds_the_namespace_until_its_thread_ends(
    root: Path, embeddings: HashingEmbeddings
) -> None:
    # ainvoke runs invoke in a thread, which a cancel does not stop: it still writes and
    # deletes, so another source is refused until it has ended
    store = OverlappingStore(embeddings)
    pipeline = make_pipeline(root, embeddings, store=store)
    task = asyncio.create_task(pipeline.ainvoke(str(root / "docs")))
    assert await asyncio.to_thread(store.waiting.wait, 30)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    more = write_more(root)
    with pytest.raises(ValueError, match=r"while a run of source '.*/docs' is syncing into it"):
        await pipeline.ainvoke(more)
    store.go.set()
    await asyncio.get_running_loop().shutdown_default_executor()  # the cancelled run ends
    result = pipeline.invoke(more)
    assert result.deleted > 0
    assert set(stored_by_source(store)) == {"more/extra.md"}


def test_a_batch_knows_two_folders_of_one_name_apart_and_one_folder_spelt_twice(
    root: Path, embeddings: HashingEmbeddings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found 2026-12-07: the check compared the sources as given, ignoring a loader's
    base_dir and ``~``: a/docs and b/docs (both "docs") ran, each deleting the other's files,
    and ~/docs beside its absolute spelling was refused."""
    for side in ("a", "b"):
        (root / side / "docs").mkdir(parents=True)
        (root / side / "docs" / f"{side}.md").write_text(f"# {side}\n\nText.\n", "utf-8")
    pipeline = make_pipeline(root, embeddings)
    two = [SourceLoader("docs", base_dir=root / "a"), SourceLoader("docs", base_dir=root / "b")]
    with pytest.raises(ValueError, match=r"batch got 2 sources \('.*/a/docs', '.*/b/docs'\)"):
        pipeline.batch(two)
    assert stored_by_source(pipeline.vector_store) == {}
    monkeypatch.setenv("HOME", str(root / "a"))
    results = pipeline.batch(["~/docs", SourceLoader(root / "a" / "docs")])  # one source
    assert [r.failed + r.deleted for r in results] == [0, 0]
    assert list(stored_by_source(pipeline.vector_store)) == ["docs/a.md"]


def test_shrinking_file_loses_its_tail(root: Path, embeddings: HashingEmbeddings) -> None:
    paragraphs = long_text(40)
    long_md = root / "docs" / "long.md"
    long_md.write_text("\n\n".join(paragraphs), encoding="utf-8")
    pipeline = make_pipeline(root, embeddings, splitter=default_text_splitter(chunk_size=128))
    pipeline.invoke("docs")
    before = len(stored_by_source(pipeline.vector_store)["docs/long.md"])

    long_md.write_text("\n\n".join(paragraphs[:10]), encoding="utf-8")
    result = pipeline.invoke("docs")

    after = stored_by_source(pipeline.vector_store)["docs/long.md"]
    assert before > len(after) > 0
    assert result.deleted == before - len(after)
    assert "Paragraph 39." not in " ".join(after)
    chunk_counts = {
        d.metadata["chunk_count"]
        for d in scan_documents(pipeline.vector_store, namespace=NAMESPACE)
        if d.metadata["source_path"] == "docs/long.md" and d.metadata["chunk_index"] == 0
    }
    assert chunk_counts == {len(after)}


def test_new_file_is_added_and_only_it_is_loaded(
    root: Path, embeddings: HashingEmbeddings, loads: Counter[str]
) -> None:
    pipeline = make_pipeline(root, embeddings)
    first = pipeline.invoke("docs")
    (root / "docs" / "guide" / "replicators.md").write_text(
        "# Replicators\n\nReplicators on deck 4 are rationed during night shifts.\n",
        encoding="utf-8",
    )
    loads.clear()

    result = pipeline.invoke("docs")

    assert dict(loads) == {"docs/guide/replicators.md": 1}
    assert (result.added, result.updated, result.skipped) == (1, 0, first.added)


def test_touched_but_unchanged_file_is_reread_not_reembedded_with_the_cache(
    root: Path, loads: Counter[str]
) -> None:
    counting = HashingEmbeddings()
    cached = CachedEmbeddings(counting, InMemoryByteStore())
    pipeline = make_pipeline(root, cached)
    first = pipeline.invoke("docs")
    api = root / "docs" / "api.md"
    os.utime(api, ns=(api.stat().st_atime_ns, api.stat().st_mtime_ns + 1_000_000_000))
    loads.clear()
    before = counting.texts_embedded

    result = pipeline.invoke("docs")

    assert dict(loads) == {"docs/api.md": 1}
    assert (result.added, result.updated, result.skipped) == (0, 0, first.added)
    assert counting.texts_embedded == before  # the rewritten file record hit the cache
    third = pipeline.invoke("docs")
    assert third.skipped == first.added
    assert sum(loads.values()) == 1  # the new mtime was recorded


def test_paragraph_inserted_near_the_top_embeds_only_the_new_chunk_texts(root: Path) -> None:
    """Positional keys shift, so most chunks are *updated*; the cache makes that free."""
    splitter = default_text_splitter(chunk_size=128, chunk_overlap=20)
    paragraphs = long_text(120)
    long_md = root / "docs" / "long.md"
    long_md.write_text("\n\n".join(paragraphs), encoding="utf-8")
    counting = HashingEmbeddings()
    pipeline = make_pipeline(
        root, CachedEmbeddings(counting, InMemoryByteStore()), splitter=splitter
    )
    pipeline.invoke("docs")
    old_texts = set(splitter.split_text(long_md.read_text(encoding="utf-8")))
    edited = [
        *paragraphs[:2],
        "A newly inserted paragraph on holodeck arch rules.",
        *paragraphs[2:],
    ]
    long_md.write_text("\n\n".join(edited), encoding="utf-8")
    new_chunks = splitter.split_text(long_md.read_text(encoding="utf-8"))
    genuinely_new = set(new_chunks) - old_texts
    before = counting.texts_embedded

    result = pipeline.invoke("docs")

    assert counting.texts_embedded - before == len(genuinely_new)
    assert 0 < len(genuinely_new) <= 5
    assert result.added + result.updated > 3 * len(genuinely_new)  # keys did shift
    assert stored_by_source(pipeline.vector_store)["docs/long.md"] == new_chunks


def test_without_the_cache_the_shifted_chunks_are_reembedded(root: Path) -> None:
    """The baseline the cache is measured against (benchmarks/bench_insert_paragraph.py)."""
    splitter = default_text_splitter(chunk_size=128, chunk_overlap=20)
    paragraphs = long_text(120)
    long_md = root / "docs" / "long.md"
    long_md.write_text("\n\n".join(paragraphs), encoding="utf-8")
    plain = HashingEmbeddings()
    pipeline = make_pipeline(root, plain, splitter=splitter)
    pipeline.invoke("docs")
    edited = [
        *paragraphs[:2],
        "A newly inserted paragraph on holodeck arch rules.",
        *paragraphs[2:],
    ]
    long_md.write_text("\n\n".join(edited), encoding="utf-8")
    before = plain.texts_embedded

    result = pipeline.invoke("docs")

    assert plain.texts_embedded - before == result.added + result.updated > 10


def test_progress_events_cover_files_chunks_and_writes(
    root: Path, embeddings: HashingEmbeddings
) -> None:
    events: list[IngestProgress] = []
    pipeline = make_pipeline(root, embeddings, on_progress=events.append, batch_size=2)
    result = pipeline.invoke("docs")

    files = [e for e in events if e.stage == "files"]
    assert [e.advance for e in files] == [1] * 5
    assert {e.total for e in files} == {5}
    (chunks,) = [e for e in events if e.stage == "chunks"]
    assert chunks.advance == chunks.total == result.added
    writes = [e for e in events if e.stage == "embeddings"]
    assert sum(e.advance for e in writes) == result.added
    assert all(e.advance <= 2 and e.total == result.added for e in writes)

    events.clear()
    pipeline.invoke("docs")
    assert [e.stage for e in events] == ["files"] * 5 + ["chunks"]
    assert events[-1].advance == 0


def test_a_new_table_policy_re_splits_unchanged_files(
    root: Path, embeddings: HashingEmbeddings, loads: Counter[str]
) -> None:
    from langchain_holodeck.splitters import StructuredMarkdownSplitter

    header = "| deck | program | officer |\n|---|---|---|"
    rows = "\n".join(f"| {n} | program {n} | officer {n % 9} |" for n in range(200))
    (root / "docs" / "decks.md").write_text(f"{header}\n{rows}\n", encoding="utf-8")
    store = MatrixVectorStore(embeddings)
    old = StructuredMarkdownSplitter(max_table_chunk_tokens=None)
    make_pipeline(root, embeddings, store=store, splitter=old).invoke("docs")
    assert not stored_by_source(store)["docs/decks.md"][1].startswith(header)
    pipeline = make_pipeline(root, embeddings, store=store, splitter=StructuredMarkdownSplitter())
    loads.clear()

    pipeline.invoke("docs")  # no file changed, but the splitting did: every file is re-read

    assert loads["docs/decks.md"] == 1
    pieces = stored_by_source(pipeline.vector_store)["docs/decks.md"]
    assert len(pieces) > 5
    assert all(piece.startswith(header) for piece in pieces)
    loads.clear()
    pipeline.invoke("docs")
    assert not loads  # and once converged, nothing is read again


def test_a_new_conversion_revision_reads_unchanged_files_again(
    root: Path,
    embeddings: HashingEmbeddings,
    loads: Counter[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import langchain_holodeck.ingestion as ingestion

    store = MatrixVectorStore(embeddings)
    make_pipeline(root, embeddings, store=store).invoke("docs")
    loads.clear()
    make_pipeline(root, embeddings, store=store).invoke("docs")
    assert not loads  # same version: nothing read again
    # a version whose loaders convert some file differently (PDF page breaks, HTML permalinks)
    monkeypatch.setattr(ingestion, "CONVERSION_REVISION", ingestion.CONVERSION_REVISION + 1)
    pipeline = make_pipeline(root, embeddings, store=store)

    result = pipeline.invoke("docs")  # no file changed, but their conversion may have

    assert set(loads) == set(stored_by_source(store))
    assert result.failed == 0
    loads.clear()
    pipeline.invoke("docs")
    assert not loads  # and once converged, nothing is read again


def test_an_rst_file_is_split_at_its_titles(root: Path, embeddings: HashingEmbeddings) -> None:
    from langchain_holodeck.ingestion import pipeline_fingerprint
    from langchain_holodeck.splitters import StructuredMarkdownSplitter

    text = "Testing\n=======\n\nIntro.\n\nForm Data\n~~~~~~~~~\n\nUse data=.\n\n"
    text += "JSON Data\n~~~~~~~~~\n\nUse json=.\n"
    (root / "docs" / "testing.rst").write_text(text, encoding="utf-8")
    pipeline = make_pipeline(root, embeddings, splitter=StructuredMarkdownSplitter())
    pipeline.invoke("docs")
    chunks = [
        d
        for d in scan_documents(pipeline.vector_store, namespace=NAMESPACE)
        if d.metadata["source_path"] == "docs/testing.rst"
    ]
    # "~~~~" was read as a Markdown code fence: one chunk, under "Testing" only
    assert sorted(d.metadata["heading"] for d in chunks) == ["Form Data", "JSON Data", "Testing"]
    # and a store split before that re-splits its (unchanged) files once
    assert pipeline_fingerprint(StructuredMarkdownSplitter()) != "b1ae0838ef8dc2b2"


def test_other_encoding_fallbacks_read_unchanged_files_again(
    root: Path, embeddings: HashingEmbeddings, loads: Counter[str]
) -> None:
    """Found 2026-12-07 (a probe): after a first ingest read cp1250 Polish as cp1252
    mojibake, ``SourceLoader(encoding_fallbacks=("cp1250",))`` (as its docstring advises)
    changed nothing: the mtime fast path skipped the unchanged file. Now the fallbacks are
    part of the fingerprint, a default loader's adding nothing (a store ingested before is
    not read again)."""
    from langchain_holodeck.ingestion import pipeline_fingerprint

    text = "# Polska\n\n" + "Polska leży w Europie Środkowej. Stolicą jest Warszawa. " * 3
    (root / "docs" / "pl.txt").write_bytes(text.encode("cp1250"))
    pipeline = make_pipeline(root, embeddings)
    pipeline.invoke("docs")
    assert "Środkowej" not in "".join(stored_by_source(pipeline.vector_store)["docs/pl.txt"])
    loads.clear()

    polish = SourceLoader(root / "docs", encoding_fallbacks=("cp1250",))
    result = pipeline.invoke(polish)

    assert "Środkowej" in "".join(stored_by_source(pipeline.vector_store)["docs/pl.txt"])
    assert result.updated >= 1
    assert loads["docs/pl.txt"] == 1
    loads.clear()
    assert pipeline.invoke(polish).updated == 0  # converged: nothing read again
    assert not loads
    # the default loader (however spelt) fingerprints as before the fallbacks were in it
    default = SourceLoader(root / "docs", encoding_fallbacks=("windows-1252",))
    assert pipeline.fingerprint_of(default) == pipeline.fingerprint
    code = pipeline.code_splitter
    assert pipeline.fingerprint == pipeline_fingerprint(pipeline.splitter, code_splitter=code)
    assert pipeline.fingerprint_of(polish) != pipeline.fingerprint
