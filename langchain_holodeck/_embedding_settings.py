"""The words of a tool's embedding settings, in one home: the config and the embeddings read them.

``long_text`` modes (how the local models embed a text longer than they read; see
``embeddings/windows.py``) and which ``embedding_model`` names are OpenAI's (models with no
windows, so no ``long_text`` to choose). Imports nothing of the package, so the configuration
can validate a tool without loading a model runtime.
"""

from __future__ import annotations

from typing import Literal

LongTextMode = Literal["fit", "auto", "best", "mean", "first"]
"""How a local model (``OnnxEmbeddings``, ``LocalEmbeddings``) embeds a text longer than it
reads: ``fit``, ``auto``, ``best``, ``mean`` or ``first`` (see ``embeddings/windows.py``)."""
LONG_TEXT_MODES: tuple[LongTextMode, ...] = ("fit", "auto", "best", "mean", "first")
DEFAULT_LONG_TEXT: LongTextMode = "fit"
"""A tool's ``long_text`` unless set: chosen on SciFact train and the code set's dev split."""
WINDOWED_MODES: tuple[LongTextMode, ...] = ("fit", "auto", "best")
"""The modes whose further windows sync stores as entries of their own (part of the model id
with their window size)."""
UNSET_LONG_TEXTS: tuple[LongTextMode, ...] = ("fit", "auto")
"""The ``long_text`` values that mean "not chosen": the default, and ``auto``, the default
before it, which settings written then may name. A model without windows (OpenAI, a given
``Embeddings`` object) accepts only these."""

DEFAULT_LOCAL_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
"""The model an unset ``embedding_model`` names (``OnnxEmbeddings`` runs it)."""

OPENAI_EMBEDDING_MODELS = frozenset(
    {"text-embedding-3-small", "text-embedding-3-large", "text-embedding-ada-002"}
)
"""Bare model names routed to langchain-openai (any ``openai/<name>`` is too)."""
_OPENAI_PREFIX = "openai/"
_LOCAL_PREFIX = "sentence-transformers/"
MODEL_NAMES = (
    "an OpenAI model name (text-embedding-3-small, text-embedding-3-large, "
    "text-embedding-ada-002 or 'openai/<name>') or 'sentence-transformers/<name>'"
)
"""The ``embedding_model`` names ``resolve_embeddings`` accepts, as its errors say them."""


def openai_model(embedding_model: str | None) -> str | None:
    """The OpenAI model an ``embedding_model`` setting names, else ``None``.

    Example:
        ```python
        openai_model("openai/text-embedding-3-large")  # -> "text-embedding-3-large"
        openai_model("sentence-transformers/all-MiniLM-L6-v2")  # -> None
        ```
    """
    if embedding_model is None:
        return None
    name = embedding_model.strip()
    if name.startswith(_OPENAI_PREFIX) and len(name) > len(_OPENAI_PREFIX):
        return name.removeprefix(_OPENAI_PREFIX)
    return name if name in OPENAI_EMBEDDING_MODELS else None


def model_in_use(embedding_model: str | None) -> str:
    """The model an ``embedding_model`` setting names, spelt one way.

    ``openai/<name>`` is ``<name>``; unset is ``DEFAULT_LOCAL_MODEL``; spaces around are
    dropped. Two settings naming one model give one string (the vectors are the same).

    Example:
        ```python
        model_in_use("openai/text-embedding-3-small")  # -> "text-embedding-3-small"
        model_in_use(None)  # -> "sentence-transformers/all-MiniLM-L6-v2"
        ```
    """
    if embedding_model is None:
        return DEFAULT_LOCAL_MODEL
    return openai_model(embedding_model) or embedding_model.strip()


def long_text_without_windows(model: str) -> str:
    """What is wrong with a ``long_text`` other than the default on an OpenAI ``model``.

    A phrase the caller ends with the value it got (``..., got 'first'.``), as config errors do.
    """
    also = " or ".join(repr(mode) for mode in UNSET_LONG_TEXTS if mode != DEFAULT_LONG_TEXT)
    return (
        f"must be {DEFAULT_LONG_TEXT!r} (the default) or {also} with embedding_model {model!r}: "
        "OpenAI models have no windows, the other modes are for the local models (remove "
        "long_text, or leave embedding_model unset)"
    )


def timeout_without_an_api(model: str | None, *, setting: str = "embedding_timeout") -> str:
    """What is wrong with an ``embedding_timeout`` set for a model that is no API.

    A phrase the caller ends with the value it got, as config errors do; ``setting`` is the
    name to remove (``timeout`` for ``resolve_embeddings``).
    """
    named = f"embedding_model {model!r}" if model else "the local default (embedding_model unset)"
    return (
        f"applies to an OpenAI embedding_model (each request to its API); {named} runs in "
        f"this process, with no requests to time out (remove {setting})"
    )


def check_model_name(name: str | None) -> str | None:
    """``name`` if it is an ``embedding_model`` name of an accepted form (``None`` passes).

    The form only: whether an OpenAI key is set or a local model is cached is found when the
    model is built. A configuration refuses a misspelt name when it is read, in one line.

    Raises:
        ValueError: When ``name`` is neither an OpenAI model nor ``sentence-transformers/...``.
    """
    if name is None or openai_model(name) is not None:
        return name
    stripped = name.strip()
    if stripped.startswith(_LOCAL_PREFIX) and len(stripped) > len(_LOCAL_PREFIX):
        return name
    msg = f"must be {MODEL_NAMES} (unset: the local all-MiniLM-L6-v2), got {name!r}"
    raise ValueError(msg)
