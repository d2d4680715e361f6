"""Atomic directory format of ``MatrixVectorStore``: generation files plus a manifest."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np
import numpy.typing as npt
from langchain_core.documents import Document

from langchain_holodeck._persist import (
    atomic_write,
    atomic_write_bytes,
    generation_name,
    remove_other_generations,
)

MANIFEST = "manifest.json"
FORMAT = "holodeck-matrix-store"
VERSION = 1


def write(
    directory: Path,
    vectors: npt.NDArray[np.float32],
    docs: Sequence[Document],
    *,
    dimension: int | None,
    codebook: bytes | None = None,
) -> None:
    """Write one generation, then point the manifest at it, then drop older generations.

    ``codebook`` (a serialized quantization codebook) is saved as ``codebook-<gen>.faiss``.
    """
    directory.mkdir(parents=True, exist_ok=True)
    vectors_name = generation_name("vectors", ".npy")
    docs_name = generation_name("documents", ".jsonl")

    def write_docs(f: IO[bytes]) -> None:
        for doc in docs:
            record = {"id": doc.id, "page_content": doc.page_content, "metadata": doc.metadata}
            f.write(json.dumps(record, ensure_ascii=False).encode("utf-8"))
            f.write(b"\n")

    atomic_write(directory / vectors_name, lambda f: np.save(f, vectors, allow_pickle=False))
    atomic_write(directory / docs_name, write_docs)
    manifest = {
        "format": FORMAT,
        "version": VERSION,
        "count": len(docs),
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


def read(directory: Path) -> tuple[npt.NDArray[np.float32], list[Document], int | None]:
    """Read the generation the manifest names; check that its parts agree."""
    manifest_path = directory / MANIFEST
    if not manifest_path.is_file():
        msg = (
            f"no saved MatrixVectorStore at {str(directory)!r}: {MANIFEST} is missing. "
            "Save one with MatrixVectorStore.dump(path) first."
        )
        raise FileNotFoundError(msg)
    manifest: dict[str, Any] = json.loads(manifest_path.read_text(encoding="utf-8"))
    if manifest.get("format") != FORMAT or manifest.get("version") != VERSION:
        msg = (
            f"{str(manifest_path)!r} is not a {FORMAT} manifest of version {VERSION} "
            f"(got format={manifest.get('format')!r}, version={manifest.get('version')!r})."
        )
        raise ValueError(msg)
    vectors = np.load(directory / manifest["vectors"], allow_pickle=False)
    docs = []
    with (directory / manifest["documents"]).open(encoding="utf-8") as f:
        for line in f:
            if line.strip():
                rec = json.loads(line)
                docs.append(
                    Document(
                        id=rec["id"], page_content=rec["page_content"], metadata=rec["metadata"]
                    )
                )
    count = manifest["count"]
    if len(docs) != count or vectors.shape[0] != count:
        msg = (
            f"saved store at {str(directory)!r} is inconsistent: manifest says {count} "
            f"documents, {manifest['documents']} has {len(docs)} and {manifest['vectors']} "
            f"has {vectors.shape[0]} rows. Re-run the ingestion to rebuild it."
        )
        raise ValueError(msg)
    dim = manifest.get("dimension")
    if count and vectors.ndim != 2:  # pragma: no cover - np.save always writes 2-D here
        msg = f"{manifest['vectors']} must hold a 2-D matrix, got shape {vectors.shape}."
        raise ValueError(msg)
    return vectors.astype(np.float32, copy=False), docs, dim if isinstance(dim, int) else None


def read_codebook(directory: Path) -> bytes | None:
    """The quantization codebook the manifest names, or ``None`` when it names none."""
    manifest: dict[str, Any] = json.loads((directory / MANIFEST).read_text(encoding="utf-8"))
    name = manifest.get("codebook")
    return (directory / name).read_bytes() if isinstance(name, str) else None
