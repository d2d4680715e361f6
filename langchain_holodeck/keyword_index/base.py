"""What every keyword index shares: the hit type, the protocol, argument checks, store scans."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, NamedTuple, Protocol, runtime_checkable

from langchain_holodeck._chunk import source_path

if TYPE_CHECKING:
    from langchain_core.documents import Document
    from langchain_core.vectorstores import VectorStore

logger = logging.getLogger(__name__)


class KeywordHit(NamedTuple):
    """One keyword search result: a chunk id and its score (higher is better).

    A ``NamedTuple``, so it *is* the ``(id, score)`` pair that
    :func:`~langchain_holodeck.fusion.reciprocal_rank_fusion` takes, and it is immutable.
    """

    id: str
    """The chunk's ``Document.id`` (the same id as in the vector store)."""
    score: float
    """The engine's raw relevance score (BM25: unbounded, > 0); comparable within one query."""


@runtime_checkable
class KeywordIndex(Protocol):
    """A sparse (keyword) index over the same chunks, with the same ids, as the vector store.

    Every implementation indexes ``Document.page_content`` (the contextualized text when the
    contextual enricher ran) and matches chunks by ``Document.id``. An index whose search
    is CPU work in this process (no I/O) may set a class attribute ``in_process = True``:
    the retriever then runs it on the caller's thread instead of a pool thread.
    """

    def upsert(self, documents: Sequence[Document]) -> None:
        """Add or replace documents by ``Document.id``; id-less documents are rejected."""
        ...

    def delete(self, ids: Iterable[str]) -> None:
        """Remove documents by id; unknown ids are ignored."""
        ...

    def search(self, query: str, k: int) -> list[KeywordHit]:
        """Return at most ``k`` hits, best first; ``[]`` when nothing matches."""
        ...

    def rebuild_from_store(self, store: VectorStore, *, namespace: str | None = None) -> int:
        """Re-index every chunk stored in ``store`` (optionally one namespace); return the count."""
        ...


def check_k(k: object) -> int:
    """Validate a result count: a positive int."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        msg = f"k must be a positive integer, got {k!r}."
        raise ValueError(msg)
    return k


def check_ids(documents: Sequence[Document], owner: str) -> list[str]:
    """Return the documents' ids, or raise naming the first id-less document."""
    ids: list[str] = []
    for i, doc in enumerate(documents):
        if not doc.id:
            source = source_path(doc) or None
            msg = (
                f"{owner} needs Document.id; doc {i} (source={source!r}) has none. "
                "Set ids with stable_id() first."
            )
            raise ValueError(msg)
        ids.append(doc.id)
    return ids


def scan_store(store: VectorStore, namespace: str | None) -> Iterator[Document]:
    """Every chunk stored in ``store`` (optionally one namespace), via ``scan_documents``."""
    from langchain_holodeck.vectorstores import scan_documents

    return scan_documents(store, namespace=namespace)
