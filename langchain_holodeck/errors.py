"""Errors callers may catch: every one is a ``HolodeckError``."""

from __future__ import annotations

FORCE_INGEST_WAY = "force_ingest=True (CLI: `holodeck-rag ingest` with --force-ingest)"
"""How an ``EmbeddingModelMismatchError`` names its way out; the CLI says its whole command
instead (the ``--config``, ``--tool`` and ``--store`` the tool came from)."""


class HolodeckError(Exception):
    """Base class of the errors this package raises on purpose."""


class ConfigError(HolodeckError, ValueError):
    """A configuration file or value is invalid; the message names file, field and value."""


class IndexNotBuiltError(HolodeckError, RuntimeError):
    """A tool was searched before ``initialize`` built or loaded its indexes."""


class EmbeddingModelMismatchError(HolodeckError, RuntimeError):
    """The store's vectors or index do not match the configuration; re-run with ``force_ingest``.

    Another embedding model's vectors, or an index created with other settings (dimension,
    distance metric, algorithm).
    """

    stored_model: str | None = None
    """The ``embedding_model`` id of the stored chunks, when that is the mismatch."""
    configured_model: str | None = None
    """The ``embedding_model`` id the tool embeds with now, when that is the mismatch."""


class EmbeddingError(HolodeckError, RuntimeError):
    """The embedding model failed: ``Failed to generate embeddings: ...`` (or query embedding)."""


class SearchError(HolodeckError, RuntimeError):
    """The store failed during a search: ``Search failed: ...`` (the cause chained)."""


class NoSupportedFilesError(HolodeckError, FileNotFoundError):
    """A source directory holds no file the loader can read."""


class SourceUnreadableError(HolodeckError, OSError):
    """The source directory itself could not be listed (permissions, an I/O error).

    Raised before anything is synced, so the store keeps what it holds: a source that cannot
    be read for now is not a source whose files were deleted.
    """


class StoreNotSavedError(HolodeckError, OSError):
    """What an ingest changed could not be saved in the store directory (read-only, full).

    The message names the directory, why (a read-only file system, no space left), what was
    kept (the previous save: every save replaces its files atomically; nothing, on a first
    ingest) and the fix.
    """


class DocumentLoadError(HolodeckError):
    """A file could not be read or converted (raised only with ``on_error="raise"``)."""
