"""Issue 25 item 13: damaged or busy state gives one ``error:`` line or a documented recovery.

- a Qdrant ``path:`` held by another process: the store falls back to memory (the default
  ``fallback_to_memory``) or raises ``BackendUnavailableError``; was a raw ``RuntimeError``;
- a truncated ``bm25_tokens-*.npz``: ``BadZipFile`` escaped the documented "rebuilding it";
- a truncated ``manifest.json``: was a raw ``JSONDecodeError`` traceback;
- a damaged ``documents-*.jsonl``: named neither the file nor the fix.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from langchain_holodeck import HierarchicalDocumentTool, HierarchicalDocumentToolConfig
from langchain_holodeck.backends.base import BackendUnavailableError
from langchain_holodeck.errors import HolodeckError
from langchain_holodeck.vectorstores import MatrixVectorStore, create_vector_store_with_status
from tests.helpers import HashingEmbeddings
from tests.reliability import corpus

REPO = Path(__file__).resolve().parents[2]
HOLD = (
    "import sys\nfrom qdrant_client import QdrantClient\nc = QdrantClient(path=sys.argv[1])\n"
    "print('open', flush=True)\nsys.stdin.read()\n"
)


def make_tool(tmp_path: Path) -> HierarchicalDocumentTool:
    config = HierarchicalDocumentToolConfig(type="hierarchical_document", name="kb", source="src")
    return HierarchicalDocumentTool(
        config, embeddings=HashingEmbeddings(), base_dir=tmp_path, store_dir=tmp_path / "store"
    )


@pytest.mark.parametrize("fallback", [True, False])
def test_a_qdrant_path_held_by_another_process_falls_back_or_fails_in_one_line(
    tmp_path: Path, fallback: bool
) -> None:
    pytest.importorskip("qdrant_client")
    path = tmp_path / "qdrant"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "open"
        config = {"provider": "qdrant", "path": str(path), "fallback_to_memory": fallback}
        if fallback:
            handle = create_vector_store_with_status(config, HashingEmbeddings())
            assert handle.fell_back
            assert isinstance(handle.store, MatrixVectorStore)
            assert "in use by another process" in (handle.reason or "")
        else:
            with pytest.raises(BackendUnavailableError, match="in use by another process"):
                create_vector_store_with_status(config, HashingEmbeddings())
    finally:
        holder.communicate("", timeout=60)  # closing stdin ends the process we started


def test_a_truncated_bm25_token_file_is_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.chdir(tmp_path)
    corpus.write_files(tmp_path / "src", files=3, paragraphs=4)
    first = make_tool(tmp_path)
    first.initialize_sync()
    (tokens,) = (tmp_path / "store" / "bm25" / first.namespace).glob("bm25_tokens-*.npz")
    tokens.write_bytes(tokens.read_bytes()[:100])
    again = make_tool(tmp_path)
    result = again.initialize_sync()
    assert (result.added, result.updated, result.failed) == (0, 0, 0)
    assert "rebuilding it" in caplog.text
    assert "Found 10 result(s)" in again.search_sync("warp core")


def test_a_truncated_store_manifest_is_one_error_naming_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    corpus.write_files(tmp_path / "src", files=2, paragraphs=3)
    make_tool(tmp_path).initialize_sync()
    manifest = tmp_path / "store" / "manifest.json"
    manifest.write_bytes(manifest.read_bytes()[:20])
    with pytest.raises(ValueError, match=r"is not valid JSON .* Delete the directory"):
        MatrixVectorStore.load(tmp_path / "store", HashingEmbeddings())
    with pytest.raises(HolodeckError, match=r"store saved in .* is damaged: .* not valid JSON"):
        make_tool(tmp_path).initialize_sync()  # the CLI prints a HolodeckError as one line


@pytest.mark.parametrize(
    ("damage", "problem"),
    [
        (lambda data: data[:300], r"line \d+, column \d+: Unterminated string"),
        (lambda data: data + b"\xff\xfe\n", "not UTF-8"),
        (lambda data: data + b'{"id": "x"}\n', "line \\d+: missing key 'page_content'"),
    ],
)
def test_a_damaged_documents_file_is_one_error_naming_it_and_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: Callable[[bytes], bytes], problem: str
) -> None:
    monkeypatch.chdir(tmp_path)
    corpus.write_files(tmp_path / "src", files=2, paragraphs=3)
    make_tool(tmp_path).initialize_sync()
    (documents,) = (tmp_path / "store").glob("documents-*.jsonl")
    documents.write_bytes(damage(documents.read_bytes()))
    with pytest.raises(HolodeckError) as info:
        make_tool(tmp_path).initialize_sync()
    message = str(info.value)
    assert f"{str(documents)!r} cannot be read (" in message
    assert re.search(problem, message), message
    assert message.endswith(
        f"Delete the directory {str(tmp_path / 'store')!r} and run the ingestion again to "
        "rebuild it."
    )


def _edit_manifest(store: Path, **changes: object) -> None:
    manifest = store / "manifest.json"
    data = json.loads(manifest.read_text(encoding="utf-8"))
    data.update(changes)
    data = {key: value for key, value in data.items() if value is not _DROP}
    manifest.write_text(json.dumps(data), encoding="utf-8")


_DROP = object()


def _vectors(store: Path) -> Path:
    (vectors,) = store.glob("vectors-*.npy")
    return vectors


@pytest.mark.parametrize(
    ("damage", "problem"),
    [
        # a manifest without a part, or with a count that is no count: a KeyError traceback
        (lambda s: _edit_manifest(s, vectors=_DROP), "vectors must name a file beside it"),
        (lambda s: _edit_manifest(s, documents=7), "documents must name a file beside it, got 7"),
        (lambda s: _edit_manifest(s, count="x"), "count must be a row count, got 'x'"),
        # a part naming a file outside the store was opened
        (
            lambda s: _edit_manifest(s, vectors="../../outside.npy"),
            "vectors must name a file beside it, got '../../outside.npy'",
        ),
        # vectors missing or not an .npy: '[Errno 2] No such file', 'EOF: reading magic string'
        (lambda s: _vectors(s).unlink(), "cannot be read: No such file or directory"),
        (lambda s: _vectors(s).write_bytes(b"garbage"), "cannot be read: EOF: reading magic"),
        (
            lambda s: _vectors(s).write_bytes(_vectors(s).read_bytes()[:-64]),
            "is truncated: fewer than",
        ),
    ],
)
def test_a_damaged_store_manifest_or_vectors_file_is_one_error_naming_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: Callable[[Path], None], problem: str
) -> None:
    monkeypatch.chdir(tmp_path)
    corpus.write_files(tmp_path / "src", files=2, paragraphs=3)
    make_tool(tmp_path).initialize_sync()
    damage(tmp_path / "store")
    with pytest.raises(HolodeckError) as info:
        make_tool(tmp_path).initialize_sync()
    message = str(info.value)
    assert problem in message, message
    assert "\n" not in message
    assert message.endswith(
        f"Delete the directory {str(tmp_path / 'store')!r} and run the ingestion again to "
        "rebuild it."
    )
