"""The corpus: its identity (``corpus_namespace``) and the ``Corpus`` object over its store.

``identity`` is plain Python (namespaces, the default store directory); ``Corpus`` (in
``store``) opens the store through the backends and is imported on first use, so the command
line's start-up reads the identity without loading any library.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langchain_holodeck.corpus.identity import (
    CORPUS_UUID_NAMESPACE,
    DEFAULT_STORE_DIR,
    corpus_namespace,
    legacy_namespace,
)

if TYPE_CHECKING:
    from langchain_holodeck.corpus.store import Corpus

__all__ = [
    "CORPUS_UUID_NAMESPACE",
    "DEFAULT_STORE_DIR",
    "Corpus",
    "corpus_namespace",
    "legacy_namespace",
]


def __getattr__(name: str) -> Any:
    """``Corpus`` on first use (it imports the backends, embeddings and sync)."""
    if name == "Corpus":
        from langchain_holodeck.corpus.store import Corpus

        return Corpus
    msg = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(msg)
