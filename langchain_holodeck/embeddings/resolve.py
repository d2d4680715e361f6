"""Resolve ``embedding_model`` settings into ``Embeddings``, and name them stably.

``None`` (and ``sentence-transformers/all-MiniLM-L6-v2``) is the embedded default,
``OnnxEmbeddings``: torch-free and offline. Other ``sentence-transformers/<name>`` run through
``LocalEmbeddings`` (extra ``local``); OpenAI names through langchain-openai (extra ``openai``).
"""

from __future__ import annotations

import logging
import os
from urllib.parse import urlsplit

from langchain_core.embeddings import Embeddings

from langchain_holodeck._defaults import DEFAULT_EMBEDDING_TIMEOUT, check_seconds
from langchain_holodeck._embedding_settings import (
    DEFAULT_LONG_TEXT,
    MODEL_NAMES,
    UNSET_LONG_TEXTS,
    LongTextMode,
    long_text_without_windows,
    openai_model,
    timeout_without_an_api,
)
from langchain_holodeck._embedding_settings import (
    OPENAI_EMBEDDING_MODELS as OPENAI_EMBEDDING_MODELS,  # re-exported: its documented home
)
from langchain_holodeck.embeddings.cached import CachedEmbeddings
from langchain_holodeck.embeddings.local import LocalEmbeddings
from langchain_holodeck.embeddings.onnx import MINILM_NAME, OnnxEmbeddings
from langchain_holodeck.embeddings.windows import check_long_text
from langchain_holodeck.errors import ConfigError

logger = logging.getLogger(__name__)

DEFAULT_EMBEDDING_MODEL = MINILM_NAME
"""The embedded default model (384 dimensions), run by ``OnnxEmbeddings``."""
_ACCEPTED = f"None (the local all-MiniLM-L6-v2 default), an Embeddings object, {MODEL_NAMES}"


def resolve_embeddings(
    embedding_model: str | Embeddings | None,
    *,
    long_text: LongTextMode = DEFAULT_LONG_TEXT,
    timeout: float | None = DEFAULT_EMBEDDING_TIMEOUT,
) -> Embeddings:
    """Turn an ``embedding_model`` setting into an ``Embeddings`` object.

    Args:
        embedding_model: ``None`` (or ``sentence-transformers/all-MiniLM-L6-v2``) for the
            embedded default, ``OnnxEmbeddings`` (all-MiniLM-L6-v2 on onnxruntime, offline);
            an OpenAI model name (``text-embedding-3-small``, ``-3-large``, ``-ada-002`` or
            ``openai/<name>``) for langchain-openai (reads ``OPENAI_API_KEY``);
            another ``sentence-transformers/<name>`` for ``LocalEmbeddings`` (it must already
            be in the Hugging Face cache: nothing is downloaded); or any ``Embeddings`` object,
            which is returned unchanged.
        long_text: How a local model embeds a chunk: ``"fit"`` (the default: a chunk that
            fits is embedded whole, and a prose chunk longer than one window of 128 word
            pieces also gets its windows of 128, stored by sync as entries of their own; a
            chunk longer than the model reads is its windows), ``"auto"`` (the default
            before), ``"best"``, ``"mean"`` or ``"first"`` (truncation: one vector per chunk,
            about half the word pieces embedded on prose docs). Passed to ``OnnxEmbeddings`` /
            ``LocalEmbeddings``; an OpenAI model or an ``Embeddings`` object takes only
            ``UNSET_LONG_TEXTS`` (the default, or ``"auto"``).
        timeout: Seconds one request of an OpenAI model may take, its whole answer (a server
            still sending is given up 0.25 s later: ``TimeoutError``), ``None``: no limit. Its
            client retries nothing: sync retries a batch itself (a 429 pauses every request
            until its ``Retry-After``), and a query is retried after a 429, a server error or
            a lost connection (not after a timeout). A local model sends no request: another
            value than the default is refused, as ``embedding_timeout`` in YAML is. At most a
            week (604800). An ``Embeddings`` object keeps its own.

    Returns:
        The embeddings. Local models load lazily, on first use.

    Example:
        ```python
        resolve_embeddings(None)  # -> OnnxEmbeddings(model_name='sentence-transformers/...')
        resolve_embeddings(None, long_text="first").long_text  # -> 'first'
        ```

    Raises:
        ValueError: If ``embedding_model`` is none of the accepted forms, ``long_text`` is not
            a mode, ``long_text`` is not left unset for an OpenAI model or an object,
            ``timeout`` is not left at its default for a local model, or is not > 0 and at
            most a week.
        TypeError: If ``timeout`` is not a number (nor ``None``).
        ImportError: If the provider's extra (``local`` or ``openai``) is not installed.
        ConfigError: If OpenAI is selected and its API key is missing.
    """
    check_long_text(long_text)
    check_seconds("timeout", timeout)
    if isinstance(embedding_model, Embeddings):
        if long_text not in UNSET_LONG_TEXTS:
            msg = (
                f"long_text {long_text!r} applies to a model name; embedding_model is the "
                f"object {type(embedding_model).__name__}: set its own mode instead "
                f"(e.g. OnnxEmbeddings(long_text={long_text!r}))."
            )
            raise ValueError(msg)
        return embedding_model
    if embedding_model is None:
        _no_timeout(None, timeout)
        return OnnxEmbeddings(long_text=long_text)
    if not isinstance(embedding_model, str):
        msg = f"embedding_model must be {_ACCEPTED}; got {type(embedding_model).__name__}."
        raise TypeError(msg)
    name = embedding_model.strip()
    openai = openai_model(name)
    if openai is not None:
        if long_text not in UNSET_LONG_TEXTS:
            msg = f"long_text {long_text_without_windows(name)}, got {long_text!r}."
            raise ValueError(msg)
        return _openai(openai, timeout)
    if name == DEFAULT_EMBEDDING_MODEL:
        _no_timeout(name, timeout)
        return OnnxEmbeddings(long_text=long_text)
    if name.startswith("sentence-transformers/") and len(name) > len("sentence-transformers/"):
        _no_timeout(name, timeout)
        return LocalEmbeddings(name, long_text=long_text)
    msg = f"embedding_model must be {_ACCEPTED}; got {embedding_model!r}."
    raise ValueError(msg)


def _no_timeout(model: str | None, timeout: float | None) -> None:
    """Refuse a ``timeout`` other than the default for a local ``model``: it has no request."""
    if timeout != DEFAULT_EMBEDDING_TIMEOUT:
        msg = f"timeout {timeout_without_an_api(model, setting='timeout')}, got {timeout}."
        raise ValueError(msg)


def _openai(model: str, timeout: float | None) -> Embeddings:
    try:
        import openai

        # langchain-openai's model, its queries retried by holodeck (needs the extra)
        from langchain_holodeck.embeddings._openai import OpenAIEmbeddings
    except ImportError as e:
        msg = f"embedding_model {model!r} needs langchain-openai: " + (
            'pip install "langchain-holodeck[openai]"'
        )
        raise ImportError(msg) from e
    try:
        # check_embedding_ctx_length=False: plain strings on the wire. The default (True)
        # downloads tiktoken's cl100k_base file at the first call (an offline or firewalled
        # host fails there) and sends token ids, which many OpenAI-compatible servers
        # (vLLM, Ollama, LiteLLM, TEI, ...) reject. What the check buys, splitting a text
        # longer than the model's 8191 tokens, is not needed: chunks are bounded by the
        # splitter's max_chunk_tokens (800 cl100k tokens by default, counted offline) and
        # queries are short; a longer text gets the API's own error.
        # max_retries=0 and a timeout: see resolve_embeddings(timeout=...).
        return OpenAIEmbeddings(
            model=model, check_embedding_ctx_length=False, max_retries=0, timeout=timeout
        )
    except openai.OpenAIError as e:
        msg = (
            f"embedding_model {model!r} uses OpenAI, which needs the OPENAI_API_KEY "
            "environment variable; set it, or leave embedding_model unset for the local default."
        )
        raise ConfigError(msg) from e


_PROBE = "dimension probe"
_OPENAI_DIMENSIONS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}
"""OpenAI's published widths, used only against OpenAI's own API (no ``base_url``)."""
_DEFAULT_LOCAL_DIMENSION = 384
"""all-MiniLM-L6-v2: known without loading the model."""


def _on_openais_api(embeddings: Embeddings) -> bool:
    """Whether an ``OpenAIEmbeddings`` calls OpenAI's own API (its models' published widths).

    Its base URL is ``openai_api_base`` (or ``OPENAI_API_BASE``), else the openai client's
    ``OPENAI_BASE_URL``: a compatible server behind either may serve the name at any width.
    """
    url = getattr(embeddings, "openai_api_base", None) or os.environ.get("OPENAI_BASE_URL")
    return not url or urlsplit(str(url)).hostname == "api.openai.com"


def embedding_dimension(embeddings: Embeddings) -> int:
    """Dimension of the vectors ``embeddings`` makes, without a model call when possible.

    Read from its settings when it states one (``dimensions``, ``size``), known for the local
    default (``OnnxEmbeddings`` with its packaged weights, or ``LocalEmbeddings`` of
    all-MiniLM-L6-v2) and OpenAI's models on OpenAI's API, a local model's ``dimension`` (it
    loads the model), else measured with one ``embed_query`` call.
    """
    base = embeddings.underlying if isinstance(embeddings, CachedEmbeddings) else embeddings
    for attr in ("dimensions", "size"):
        value = getattr(base, attr, None)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    if isinstance(base, OnnxEmbeddings) and base.model_path is None:
        return _DEFAULT_LOCAL_DIMENSION
    if isinstance(base, LocalEmbeddings):
        if base.model_name == DEFAULT_EMBEDDING_MODEL:
            return _DEFAULT_LOCAL_DIMENSION
        return base.dimension
    model = getattr(base, "model", None)
    openai_api = type(base).__name__ == "OpenAIEmbeddings" and _on_openais_api(base)
    if openai_api and model in _OPENAI_DIMENSIONS:
        return _OPENAI_DIMENSIONS[str(model)]
    return len(embeddings.embed_query(_PROBE))
