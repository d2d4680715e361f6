"""Embeddings: the embedded ONNX default, sentence-transformers, OpenAI, and a cache.

- ``resolve_embeddings(None)`` is the embedded default: all-MiniLM-L6-v2 (384 dimensions) on
  onnxruntime (``OnnxEmbeddings``), torch-free and offline.
- ``LocalEmbeddings`` runs any other ``sentence-transformers/<name>`` (extra ``local``).
- ``embedding_model_id(embeddings)`` is the string sync stores to detect a model change;
  ``embedding_dimension(embeddings)`` the width of its vectors (a change the store must follow).
- ``CachedEmbeddings`` wraps any ``Embeddings`` with a content-addressed cache over a
  LangChain ``ByteStore`` (``InMemoryByteStore``, ``LocalFileByteStore``, ``RedisByteStore``).
"""

from langchain_holodeck._byte_stores import LocalFileByteStore, RedisByteStore
from langchain_holodeck.embeddings.cached import CachedEmbeddings, embedding_model_id
from langchain_holodeck.embeddings.local import LocalEmbeddings
from langchain_holodeck.embeddings.onnx import OnnxEmbeddings
from langchain_holodeck.embeddings.resolve import (
    DEFAULT_EMBEDDING_MODEL,
    OPENAI_EMBEDDING_MODELS,
    embedding_dimension,
    resolve_embeddings,
)
from langchain_holodeck.embeddings.windows import (
    WindowedEmbeddings,
    combine_windows,
    token_windows,
)

__all__ = [
    "DEFAULT_EMBEDDING_MODEL",
    "OPENAI_EMBEDDING_MODELS",
    "CachedEmbeddings",
    "LocalEmbeddings",
    "LocalFileByteStore",
    "OnnxEmbeddings",
    "RedisByteStore",
    "WindowedEmbeddings",
    "combine_windows",
    "embedding_dimension",
    "embedding_model_id",
    "resolve_embeddings",
    "token_windows",
]
