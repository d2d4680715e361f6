"""Atomic directory format of ``MatrixVectorStore``: generation files plus a manifest."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np
import numpy.typing as npt

from langchain_holodeck._persist import (
    atomic_write,
    atomic_write_bytes,
    directory_lock,
    generation_name,
    remove_other_generations,
    remove_stale_temporaries,
)
from langchain_holodeck.vectorstores._columns import DocumentColumns

MANIFEST = "manifest.json"
FORMAT = "holodeck-matrix-store"
VERSION = 1


_CHUNK_ROWS = 65_536  # rows copied per step when saving or loading: bounded temporaries


@dataclass(frozen=True)
class Saved:
    """What ``read`` found: the documents as store columns, and where the vectors are."""

    columns: DocumentColumns
    vectors: Path  # a float32 ``.npy`` of ``len(columns)`` rows; read it with ``read_vectors``
    dimension: int | None


def write(
    directory: Path,
    vectors: npt.NDArray[np.float32],
    rows: npt.NDArray[np.intp] | None,
    records: Iterable[tuple[str, str, dict[str, Any]]],
    *,
    dimension: int | None,
    codebook: bytes | None = None,
) -> str:
    """Write one generation, then point the manifest at it, then drop older generations.

    ``rows`` (``None``: all) are the rows of ``vectors`` to save; ``records`` are their
    ``(id, page_content, metadata)``, in the same order. Rows are copied a chunk at a time,
    so saving needs no second copy of the matrix. ``codebook`` (a serialized quantization
    codebook) is saved as ``codebook-<gen>.faiss``. All of it holds the directory's
    exclusive lock, so no other writer's fresh generation and no reader's open one is removed.

    Returns:
        The name of the generation's vectors file, as the manifest names it.
    """
    with directory_lock(directory, exclusive=True):
        remove_stale_temporaries(directory)
        return _write_locked(directory, vectors, rows, records, dimension, codebook)


def _write_locked(
    directory: Path,
    vectors: npt.NDArray[np.float32],
    rows: npt.NDArray[np.intp] | None,
    records: Iterable[tuple[str, str, dict[str, Any]]],
    dimension: int | None,
    codebook: bytes | None,
) -> str:
    vectors_name = generation_name("vectors", ".npy")
    docs_name = generation_name("documents", ".jsonl")
    count = vectors.shape[0] if rows is None else len(rows)
    written = 0

    def write_vectors(f: IO[bytes]) -> None:
        header = {"descr": "<f4", "fortran_order": False, "shape": (count, vectors.shape[1])}
        np.lib.format.write_array_header_1_0(f, header)
        for start in range(0, count, _CHUNK_ROWS):
            stop = min(count, start + _CHUNK_ROWS)
            block = vectors[start:stop] if rows is None else vectors[rows[start:stop]]
            f.write(np.ascontiguousarray(block, dtype="<f4").tobytes())

    def write_docs(f: IO[bytes]) -> None:
        nonlocal written
        for doc_id, text, metadata in records:
            record = {"id": doc_id, "page_content": text, "metadata": metadata}
            try:
                line = json.dumps(record, ensure_ascii=False)
            except (TypeError, ValueError) as error:
                msg = (
                    f"metadata of document {doc_id!r} cannot be saved as JSON ({error}); "
                    "store such values as strings, numbers, lists or mappings."
                )
                raise TypeError(msg) from error
            try:
                data = line.encode("utf-8")
            except UnicodeEncodeError as error:  # a lone surrogate: no UTF-8 holds it
                msg = (
                    f"document {doc_id!r} holds text that is not Unicode ({error.reason}: "
                    f"{error.object[error.start : error.end]!r}); replace it (with U+FFFD) "
                    "before adding the document."
                )
                raise ValueError(msg) from error
            f.write(data)
            f.write(b"\n")
            written += 1

    # the documents first: metadata JSON cannot hold stops the save before any vector is written
    atomic_write(directory / docs_name, write_docs)
    try:
        atomic_write(directory / vectors_name, write_vectors)
    except BaseException:
        (directory / docs_name).unlink(missing_ok=True)
        raise
    if written != count:  # pragma: no cover - the store passes one record per row
        msg = f"wrote {written} documents for {count} vectors; the save is not consistent."
        raise RuntimeError(msg)
    manifest = {
        "format": FORMAT,
        "version": VERSION,
        "count": count,
        "dimension": dimension,
        "vectors": vectors_name,
        "documents": docs_name,
    }
    codebook_name = None
    if codebook is not None:
        codebook_name = generation_name("codebook", ".faiss")
        atomic_write_bytes(directory / codebook_name, codebook)
        manifest["codebook"] = codebook_name
    atomic_write_bytes(directory / MANIFEST, json.dumps(manifest, indent=2).encode())
    remove_other_generations(directory, "vectors-*.npy", keep={vectors_name})
    remove_other_generations(directory, "documents-*.jsonl", keep={docs_name})
    remove_other_generations(
        directory, "codebook-*.faiss", keep=set() if codebook_name is None else {codebook_name}
    )
    return vectors_name


def current_generation(directory: Path) -> str | None:
    """The vectors file the manifest of ``directory`` names; ``None`` when nothing is saved."""
    try:
        manifest = json.loads((directory / MANIFEST).read_text(encoding="utf-8"))
    except (FileNotFoundError, NotADirectoryError):
        return None
    except ValueError as error:  # torn or hand-edited: the writer replaces it
        msg = f"{str(directory / MANIFEST)!r} is not valid JSON ({error})."
        raise ValueError(msg) from error
    name = manifest.get("vectors") if isinstance(manifest, dict) else None
    return name if isinstance(name, str) else None


def read(directory: Path) -> Saved:
    """Read the generation the manifest names; check that its parts agree.

    Documents go straight into store columns (texts packed line by line), so loading never
    holds a ``Document`` per row; the vectors stay on disk until ``read_vectors``.
    """
    manifest_path = directory / MANIFEST
    if not manifest_path.is_file():
        msg = (
            f"no saved MatrixVectorStore at {str(directory)!r}: {MANIFEST} is missing. "
            "Save one with MatrixVectorStore.dump(path) first."
        )
        raise FileNotFoundError(msg)
    try:
        manifest: dict[str, Any] = json.loads(manifest_path.read_text(encoding="utf-8"))
    except ValueError as error:  # UnicodeDecodeError and JSONDecodeError: a torn manifest
        msg = (
            f"{str(manifest_path)!r} is not valid JSON ({error}); the save is damaged. "
            "Delete the directory and run the ingestion again to rebuild it."
        )
        raise ValueError(msg) from error
    if not isinstance(manifest, dict):
        manifest = {"format": type(manifest).__name__}
    version = manifest.get("version")
    if manifest.get("format") == FORMAT and isinstance(version, int) and version > VERSION:
        msg = (
            f"{str(manifest_path)!r} was saved by a newer langchain-holodeck ({FORMAT} version "
            f"{version}; this one reads version {VERSION}): upgrade langchain-holodeck, or "
            f"delete the directory {str(directory)!r} and run the ingestion again."
        )
        raise ValueError(msg)
    if manifest.get("format") != FORMAT or version != VERSION:
        msg = (
            f"{str(manifest_path)!r} is not a {FORMAT} manifest of version {VERSION} "
            f"(got format={manifest.get('format')!r}, version={version!r}); the save is "
            f"damaged. Delete the directory {str(directory)!r} and run the ingestion again."
        )
        raise ValueError(msg)
    vectors_path = directory / _part(manifest, "vectors", manifest_path)
    documents_path = directory / _part(manifest, "documents", manifest_path)
    count = manifest.get("count")
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise ValueError(_damaged(manifest_path, f"count must be a row count, got {count!r}"))
    try:
        shape = _npy_shape(vectors_path)
    except (OSError, ValueError) as error:  # missing, torn or not an .npy at all
        problem = error.strerror if isinstance(error, OSError) and error.strerror else error
        raise ValueError(_damaged(vectors_path, f"cannot be read: {problem}")) from error
    ids: list[str] = []
    texts: list[str] = []
    metadatas: list[dict[str, Any]] = []
    columns = DocumentColumns()
    number = 0
    try:
        with documents_path.open(encoding="utf-8") as f:
            for number, line in enumerate(f, start=1):  # noqa: B007  # named in errors
                if line.strip():
                    rec = json.loads(line)
                    ids.append(rec["id"])
                    texts.append(rec["page_content"])
                    metadatas.append(rec["metadata"])
                    if len(ids) == _CHUNK_ROWS:
                        columns.extend(ids, texts, metadatas)
                        ids, texts, metadatas = [], [], []
    except (OSError, ValueError, KeyError, TypeError) as error:  # torn, truncated or edited
        if isinstance(error, OSError):
            problem = error.strerror or str(error)
        elif isinstance(error, UnicodeDecodeError):  # decoded ahead, in blocks: no line number
            problem = f"not UTF-8: {error}"
        elif isinstance(error, json.JSONDecodeError):
            problem = f"line {number}, column {error.colno}: {error.msg}"
        else:
            detail = f"missing key {error}" if isinstance(error, KeyError) else str(error)
            problem = f"line {number}: {detail}"
        msg = (
            f"{str(documents_path)!r} cannot be read ({problem}). Delete the directory "
            f"{str(directory)!r} and run the ingestion again to rebuild it."
        )
        raise ValueError(msg) from error
    columns.extend(ids, texts, metadatas)
    if len(columns) != count or shape[0] != count:
        msg = (
            f"saved store at {str(directory)!r} is inconsistent: manifest says {count} "
            f"documents, {manifest['documents']} has {len(columns)} and {manifest['vectors']} "
            f"has {shape[0]} rows. Delete the directory and run the ingestion again to "
            "rebuild it."
        )
        raise ValueError(msg)
    if count and len(shape) != 2:  # pragma: no cover - dump always writes 2-D here
        msg = f"{manifest['vectors']} must hold a 2-D matrix, got shape {shape}."
        raise ValueError(msg)
    dim = manifest.get("dimension")
    return Saved(columns, vectors_path, dim if isinstance(dim, int) else None)


def _part(manifest: dict[str, Any], key: str, manifest_path: Path) -> str:
    """The file name ``manifest[key]``: a plain name inside the manifest's directory."""
    name = manifest.get(key)
    if not isinstance(name, str) or not name or Path(name).name != name or name in {".", ".."}:
        raise ValueError(_damaged(manifest_path, f"{key} must name a file beside it, got {name!r}"))
    return name


def _damaged(path: Path, problem: str) -> str:
    """``path: problem``, and the fix: rebuild the save."""
    return (
        f"{str(path)!r} {problem}; the save is damaged. Delete the directory "
        f"{str(path.parent)!r} and run the ingestion again to rebuild it."
    )


def npy_width(path: Path) -> int:
    """Columns of the 2-D ``.npy`` matrix at ``path``."""
    return int(_npy_shape(path)[1])


def _npy_shape(path: Path) -> tuple[int, ...]:
    with path.open("rb") as f:
        shape, _, _ = _read_header(f)
    return shape


def _read_header(f: IO[bytes]) -> tuple[tuple[int, ...], bool, np.dtype[Any]]:
    version = np.lib.format.read_magic(f)
    if version == (1, 0):
        return np.lib.format.read_array_header_1_0(f)  # type: ignore[no-any-return]  # numpy
    return np.lib.format.read_array_header_2_0(f)  # type: ignore[no-any-return]  # stubs: Any


def read_vectors(path: Path, out: npt.NDArray[np.float32]) -> None:
    """Read the rows of the ``.npy`` at ``path`` into ``out`` (C-contiguous, same shape).

    float32 files are read straight into ``out``; others are converted a chunk at a time.
    """
    with path.open("rb") as f:
        shape, fortran, dtype = _read_header(f)
        if fortran or tuple(shape) != out.shape or not out.flags.c_contiguous:  # pragma: no cover
            msg = f"{path.name} holds shape {shape}, expected {out.shape} in C order."
            raise ValueError(msg)
        if not out.size:
            return
        if dtype == np.dtype("<f4"):
            view = out.reshape(-1).view(np.uint8).data  # the matrix's own bytes
            if f.readinto(view) != view.nbytes:  # type: ignore[attr-defined]  # binary file
                msg = _damaged(path, f"is truncated: fewer than {shape[0]} rows of vectors")
                raise ValueError(msg)
            return
        for start in range(0, shape[0], _CHUNK_ROWS):
            stop = min(shape[0], start + _CHUNK_ROWS)
            n = (stop - start) * shape[1]
            out[start:stop] = np.frombuffer(f.read(n * dtype.itemsize), dtype, n).reshape(
                stop - start, shape[1]
            )


def read_codebook(directory: Path) -> bytes | None:
    """The quantization codebook the manifest names, or ``None`` when it names none."""
    manifest_path = directory / MANIFEST
    manifest: dict[str, Any] = json.loads(manifest_path.read_text(encoding="utf-8"))
    if manifest.get("codebook") is None:
        return None
    path = directory / _part(manifest, "codebook", manifest_path)
    try:
        return path.read_bytes()
    except OSError as error:
        raise ValueError(_damaged(path, f"cannot be read: {error.strerror or error}")) from error
