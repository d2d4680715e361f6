"""A generated corpus in two versions, and the "state" of a store, for convergence checks.

Version 2 differs from version 1 in every way sync must handle: unchanged files, edited
chunks, a file that shrinks (stale tail), a file that grows, a removed file (orphans), a new
file, and a file whose mtime alone moved (file-record refresh).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from langchain_core.documents import Document
from langchain_core.vectorstores import VectorStore

from langchain_holodeck.vectorstores import scan_documents

_VOCABULARY = """arch safety protocol officer replicator warp core shift rotation tea console
simulation program log engineer bridge deck sensor shield phaser transporter
holodeck matrix emitter crew quarters captain ensign diagnostic subroutine"""
WORDS = _VOCABULARY.split()

NAMESPACE = "reliability"

# file -> (chunk count, mtime) per version; None: absent from that version.
LAYOUT: dict[str, tuple[tuple[int, float] | None, tuple[int, float] | None]] = {
    "docs/same.md": ((8, 100.0), (8, 100.0)),
    "docs/edited.md": ((8, 100.0), (8, 200.0)),
    "docs/shrinks.md": ((9, 100.0), (3, 200.0)),
    "docs/grows.md": ((5, 100.0), (11, 200.0)),
    "docs/removed.md": ((7, 100.0), None),
    "docs/new.md": (None, (8, 200.0)),
    "docs/touched.md": ((6, 100.0), (6, 300.0)),
}
EDITED_CHUNKS = {2, 5}


def chunk_text(source: str, index: int, version: int) -> str:
    rng = random.Random(f"{source}:{index}")
    words = " ".join(rng.choice(WORDS) for _ in range(24))
    edited = version == 2 and source == "docs/edited.md" and index in EDITED_CHUNKS
    tag = "revised" if edited else "original"
    return f"{source} part {index} {tag}: {words}."


def chunks(version: int) -> list[Document]:
    """The chunk Documents of ``version`` (1 or 2), as a loader + splitter would emit them."""
    out = []
    for source, versions in LAYOUT.items():
        spec = versions[version - 1]
        if spec is None:
            continue
        count, mtime = spec
        for index in range(count):
            text = chunk_text(source, index, version)
            out.append(
                Document(
                    page_content=text,
                    metadata={
                        "source": source,
                        "source_path": source,
                        "file_type": "md",
                        "mtime": mtime,
                        "size_bytes": 1000 + count,
                        "chunk_index": index,
                    },
                )
            )
    return out


def write_files(root: Path, *, files: int = 8, paragraphs: int = 12) -> None:
    """Markdown files under ``root`` that the default splitter cuts into several chunks each."""
    root.mkdir(parents=True, exist_ok=True)
    for f in range(files):
        rng = random.Random(f)
        parts = [f"# Manual {f}\n"]
        for p in range(paragraphs):
            body = " ".join(rng.choice(WORDS) for _ in range(180))
            parts.append(f"## Part {p}\n\n{body}.\n")
        (root / f"manual_{f:02d}.md").write_text("\n".join(parts), encoding="utf-8")


State = dict[str, tuple[str, dict[str, Any]]]


def state(store: VectorStore, namespace: str = NAMESPACE) -> State:
    """Every chunk of ``namespace``: id -> (page_content, metadata). Raises on duplicate ids."""
    out: State = {}
    for doc in scan_documents(store, namespace=namespace):
        assert doc.id is not None
        if doc.id in out:
            msg = f"duplicate id {doc.id} in the store"
            raise AssertionError(msg)
        out[doc.id] = (doc.page_content, doc.metadata)
    return out


def essentials(snapshot: State) -> dict[str, tuple[str, str, str, int]]:
    """id -> (content, content_hash, source_path, chunk_index): what a clean run fixes."""
    return {
        doc_id: (text, meta["content_hash"], meta["source_path"], meta["chunk_index"])
        for doc_id, (text, meta) in snapshot.items()
    }
