"""Embedding while files load (``_prefetch.py``): same store, same counts, same texts embedded.

Each test ingests a corpus twice, with the chunks of the first files embedded while later
files still load (the default) and with that turned off (``PREFETCH_CHUNKS = 0``: the serial
path, sync embedding everything as it writes), and compares.
"""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path

import pytest
from langchain_core.documents import Document

from langchain_holodeck import _prefetch
from langchain_holodeck.ingestion import IngestionPipeline
from langchain_holodeck.loaders import Skipped, SourceFile, SourceLoader
from langchain_holodeck.splitters import default_text_splitter
from langchain_holodeck.sync import SyncResult
from langchain_holodeck.vectorstores import MatrixVectorStore, scan_documents
from tests.helpers import LONG_CHUNK, SHORT_CHUNK, WindowedHashingEmbeddings

FILES = 24


class RecordingEmbeddings(WindowedHashingEmbeddings):
    """Records every text embedded and the thread that embedded it."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(long_text="auto", **kwargs)  # type: ignore[arg-type]  # test double
        self.texts: Counter[str] = Counter()
        self.threads: set[str] = set()
        self.embedded = threading.Event()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        with self._lock:
            self.texts.update(texts)
            self.threads.add(threading.current_thread().name)
        self.embedded.set()
        return super().embed_documents(texts)


def write_corpus(root: Path, *, poison: int | None = None) -> None:
    docs = root / "docs"
    docs.mkdir(parents=True, exist_ok=True)
    for n in range(FILES):
        body = "\n\n".join(
            f"Part {j} of file {n}: {LONG_CHUNK} {SHORT_CHUNK} rota {n * 7 + j}." for j in range(6)
        )
        if n == poison:
            body += "\n\nThis part holds the poison word."
        (docs / f"f{n:02}.md").write_text(f"# File {n}\n\n{body}\n", encoding="utf-8")


def ingest(root: Path, embeddings: RecordingEmbeddings) -> tuple[SyncResult, MatrixVectorStore]:
    store = MatrixVectorStore(embeddings)
    pipeline = IngestionPipeline(
        store,
        namespace="kb",
        base_dir=root,
        splitter=default_text_splitter(chunk_size=64, chunk_overlap=0),
        batch_size=3,
    )
    return pipeline.invoke("docs"), store


def contents(store: MatrixVectorStore) -> dict[str, tuple[str, dict[str, object], list[float]]]:
    docs = list(scan_documents(store, namespace="kb", windows=True))
    vectors = store.get_vectors([d.id or "" for d in docs])
    return {d.id or "": (d.page_content, d.metadata, vectors[d.id or ""]) for d in docs}


@pytest.fixture
def small_groups(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_prefetch, "GROUP_CHUNKS", 8)


class LastFileGate:
    """Holds the last file's loading until ``embeddings`` has embedded something (or 30 s)."""

    def __init__(self) -> None:
        self.embeddings: RecordingEmbeddings | None = None
        self.embedded_before_last_file: bool | None = None


@pytest.fixture
def gate(monkeypatch: pytest.MonkeyPatch) -> LastFileGate:
    gate = LastFileGate()
    original = SourceLoader.read_document

    def read_document(self: SourceLoader, file: SourceFile) -> Document | Skipped:
        if file.source_path.endswith(f"f{FILES - 1:02}.md") and gate.embeddings is not None:
            gate.embedded_before_last_file = gate.embeddings.embedded.wait(timeout=30)
        return original(self, file)

    monkeypatch.setattr(SourceLoader, "read_document", read_document)
    return gate


def serial(
    monkeypatch: pytest.MonkeyPatch, root: Path, **kwargs: object
) -> tuple[SyncResult, MatrixVectorStore, RecordingEmbeddings]:
    """The same ingest with nothing embedded ahead."""
    with monkeypatch.context() as patch:
        patch.setattr(_prefetch, "PREFETCH_CHUNKS", 0)
        embeddings = RecordingEmbeddings(**kwargs)
        result, store = ingest(root, embeddings)
    return result, store, embeddings


@pytest.mark.usefixtures("small_groups")
def test_embedding_while_loading_writes_what_the_serial_path_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gate: LastFileGate
) -> None:
    write_corpus(tmp_path)
    before, serial_store, serial_embeddings = serial(monkeypatch, tmp_path)
    embeddings = gate.embeddings = RecordingEmbeddings()

    result, store = ingest(tmp_path, embeddings)

    assert gate.embedded_before_last_file is True  # the model ran while files still loaded
    assert any(name.startswith("holodeck-prefetch") for name in embeddings.threads)
    assert result == before
    assert result.added == len({k for k in contents(store) if ":w" not in k}) > FILES
    assert contents(store) == contents(serial_store)
    assert embeddings.texts == serial_embeddings.texts  # nothing embedded twice, nor extra
    assert any(":w" in key for key in contents(store))  # model windows were embedded ahead


@pytest.mark.usefixtures("small_groups")
def test_a_rerun_embeds_nothing_ahead(tmp_path: Path) -> None:
    write_corpus(tmp_path)
    embeddings = RecordingEmbeddings()
    store = MatrixVectorStore(embeddings)
    pipeline = IngestionPipeline(store, namespace="kb", base_dir=tmp_path, reindex=True)
    first = pipeline.invoke("docs")
    embedded = sum(embeddings.texts.values())

    again = pipeline.invoke("docs")  # reindex: every file read and split again

    assert sum(embeddings.texts.values()) == embedded
    assert (again.added, again.updated, again.skipped) == (0, 0, first.added)


@pytest.mark.usefixtures("small_groups")
def test_a_late_file_that_fails_to_embed_is_counted_and_the_rest_lands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_corpus(tmp_path, poison=FILES - 2)
    before, serial_store, _ = serial(monkeypatch, tmp_path, fail_on="poison")
    embeddings = RecordingEmbeddings(fail_on="poison")

    result, store = ingest(tmp_path, embeddings)

    assert any(name.startswith("holodeck-prefetch") for name in embeddings.threads)
    assert result.failed > 0
    assert (result.added, result.failed, result.updated) == (
        before.added,
        before.failed,
        before.updated,
    )
    assert contents(store) == contents(serial_store)
    assert {d.metadata["source_path"] for d in scan_documents(store, namespace="kb")} == {
        f"docs/f{n:02}.md" for n in range(FILES)
    }  # the poisoned file keeps its other chunks; its record waits for the next run


@pytest.mark.usefixtures("small_groups")
def test_a_late_unreadable_file_leaves_the_rest_landing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_corpus(tmp_path)
    (tmp_path / "docs" / f"f{FILES - 1:02}.md").write_bytes(b"\x00\x01\x02 not text \xff" * 50)
    before, serial_store, _ = serial(monkeypatch, tmp_path)
    embeddings = RecordingEmbeddings()

    result, store = ingest(tmp_path, embeddings)

    assert result == before
    assert result.added > 0
    assert result.failed == 0
    assert contents(store) == contents(serial_store)


@pytest.mark.usefixtures("small_groups")
def test_code_signatures_are_embedded_ahead_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for n in range(FILES):
        functions = "\n\n".join(
            f"def rotate_crew_{n}_{j}(crew, shift):\n"
            f'    """Move crew {j} of file {n} to the next shift."""\n'
            f"    return crew[{j}:] + crew[:{j}] + [shift * {n}]\n"
            for j in range(3)
        )
        (docs / f"m{n:02}.py").write_text(functions + "\n", encoding="utf-8")
    before, serial_store, serial_embeddings = serial(monkeypatch, tmp_path)
    embeddings = RecordingEmbeddings()

    result, store = ingest(tmp_path, embeddings)

    assert result == before
    assert contents(store) == contents(serial_store)
    assert embeddings.texts == serial_embeddings.texts
    signatures = [d for d in scan_documents(store, namespace="kb", windows=True) if ":w" in d.id]
    assert signatures  # each function chunk has its signature entry
    # sync found every text embedded ahead, signatures included: it ran the model on none
    assert "holodeck-embed-ahead" not in {t.rsplit("_", 1)[0] for t in embeddings.threads}
    assert "holodeck-embed-ahead" in {t.rsplit("_", 1)[0] for t in serial_embeddings.threads}
