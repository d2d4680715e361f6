"""What every keyword index shares: argument checks and store scans.

The hit type and the protocol (``KeywordHit``, ``KeywordIndex``) are contracts: they live in
``langchain_holodeck.contracts`` and are re-exported here.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from langchain_holodeck._chunk import source_path
from langchain_holodeck.contracts import KeywordHit, KeywordIndex

if TYPE_CHECKING:
    from langchain_core.documents import Document
    from langchain_core.vectorstores import VectorStore

__all__ = ["KeywordHit", "KeywordIndex", "check_ids", "check_k", "scan_store"]

logger = logging.getLogger(__name__)


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
    # imported here: the backends package imports the keyword indexes (memory -> bm25 -> this
    # module), so a module-level import is a cycle when keyword_index is imported first
    from langchain_holodeck.backends._registry import scan_documents

    return scan_documents(store, namespace=namespace)
