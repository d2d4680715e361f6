"""Vector dimensions: what a store holds, what a model makes, and rebuilding when they differ.

A change of embedding model to one of another dimension leaves a store that cannot take the
new vectors: ``MatrixVectorStore`` has one matrix of one width, a Redis index has a fixed
vector field. ``stored_dimension`` and ``embedding_dimension`` detect that before any write;
``rebuild_for_dimension`` makes the store take the new dimension for one corpus, before a
``force_ingest`` rewrites that corpus's vectors.
"""

from __future__ import annotations

from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore

from langchain_holodeck.errors import EmbeddingModelMismatchError
from langchain_holodeck.vectorstores.matrix import MatrixVectorStore

__all__ = ["embedding_dimension", "rebuild_for_dimension", "stored_dimension"]

_PROBE = "dimension probe"
_OPENAI_DIMENSIONS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}
"""OpenAI's published widths, used only against OpenAI's own API (no ``base_url``)."""
_DEFAULT_LOCAL_DIMENSION = 384
"""all-MiniLM-L6-v2: known without loading the model."""


def embedding_dimension(embeddings: Embeddings) -> int:
    """Dimension of the vectors ``embeddings`` makes, without a model call when possible.

    Read from its settings when it states one (``dimensions``, ``size``), known for the local
    default and OpenAI's models on OpenAI's API, a local model's ``dimension`` (it loads the
    model), else measured with one ``embed_query`` call.
    """
    from langchain_holodeck.embeddings import (
        DEFAULT_EMBEDDING_MODEL,
        CachedEmbeddings,
        LocalEmbeddings,
    )

    base = embeddings.underlying if isinstance(embeddings, CachedEmbeddings) else embeddings
    for attr in ("dimensions", "size"):
        value = getattr(base, attr, None)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    if isinstance(base, LocalEmbeddings):
        if base.model_name == DEFAULT_EMBEDDING_MODEL:
            return _DEFAULT_LOCAL_DIMENSION
        return base.dimension
    model = getattr(base, "model", None)
    openai_api = type(base).__name__ == "OpenAIEmbeddings" and not getattr(
        base, "openai_api_base", None
    )
    if openai_api and model in _OPENAI_DIMENSIONS:
        return _OPENAI_DIMENSIONS[str(model)]
    return len(embeddings.embed_query(_PROBE))


def stored_dimension(store: VectorStore) -> int | None:
    """Dimension of the vectors ``store`` holds or accepts; ``None`` when not fixed or unknown.

    ``MatrixVectorStore``: its matrix width (kept by ``clear()``); Redis: the index's vector
    field; ``InMemoryVectorStore``: the length of a stored vector. Other stores: ``None``.
    """
    if isinstance(store, MatrixVectorStore):
        return store.embedding_dimension
    if isinstance(store, InMemoryVectorStore):
        record = next(iter(store.store.values()), None)
        return len(record["vector"]) if record is not None else None
    dimension = getattr(store, "vector_dimension", None)
    if type(store).__name__ == "HolodeckRedisVectorStore" and isinstance(dimension, int):
        return dimension
    return None


def rebuild_for_dimension(store: VectorStore, *, namespace: str, dimension: int) -> None:
    """Make ``store`` take ``dimension``-wide vectors for ``namespace``, before a re-ingest.

    ``MatrixVectorStore`` is emptied and forgets its width; a Redis index is re-created with
    the new vector field (documents kept: the re-ingest rewrites them); ``InMemoryVectorStore``
    loses the corpus's chunks. Other stores are left as they are (the re-ingest overwrites
    every chunk of the corpus).

    Raises:
        EmbeddingModelMismatchError: When chunks of other corpora (other namespaces) share the
            store: one store holds one dimension, and theirs must not be touched.
    """
    from langchain_holodeck.vectorstores import scan_documents

    try:
        documents = list(scan_documents(store))
    except TypeError:  # a store we cannot list: nothing to rebuild, the re-ingest overwrites
        return
    others = sorted({str(d.metadata.get("namespace")) for d in documents} - {namespace})
    if others:
        shown = ", ".join(repr(name) for name in others[:5])
        msg = (
            f"cannot rebuild the vectors of {namespace!r} for dimension {dimension}: the "
            f"{type(store).__name__} also holds chunks of {shown} embedded at dimension "
            f"{stored_dimension(store)}, and one store holds one dimension. Give this corpus "
            "its own store (another store_dir or database.index_name), or re-ingest the other "
            "corpora with the same embedding model."
        )
        raise EmbeddingModelMismatchError(msg)
    if isinstance(store, MatrixVectorStore):
        store.clear(keep_dimension=False)
    elif isinstance(store, InMemoryVectorStore):
        store.delete([d.id for d in documents if d.id])
    elif callable(getattr(store, "rebuild_index", None)):
        store.rebuild_index(dimension)  # type: ignore[attr-defined]  # HolodeckRedisVectorStore
