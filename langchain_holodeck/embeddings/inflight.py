"""Embedding many texts with requests in flight: bounded concurrency, rate-limit aware retries.

An embeddings API answers one batch per round trip; sending the batches one after another
leaves the connection idle for most of a large sync. ``embed_in_flight`` (threads) and
``aembed_in_flight`` (``asyncio``) keep up to ``max_concurrency`` batch requests open at once
and retry the ones the API refuses for a while:

- HTTP 429: after the ``Retry-After`` (or ``retry-after-ms``) the answer gives, else after an
  exponential backoff; every worker pauses until then (one rate limit, one pause), so the
  client stops hammering a server that asked it to wait;
- HTTP 408/409 and 5xx, connection errors and timeouts: exponential backoff with jitter;
- anything else (400, 401, a bad input): no retry.

A batch that still fails is reported (its texts get no vector) and never stops the others;
so is a batch whose answer holds a vector no store should take (NaN or infinite numbers, or
another width than the others of the answer).
The error's status and headers are read from the exception the client raised (``openai``,
``httpx``, ``requests`` and ``cohere`` errors carry a ``status_code`` or a ``response``), so
this works with any ``Embeddings`` without knowing its provider.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any

import numpy as np
import numpy.typing as npt
from langchain_core.embeddings import Embeddings

from langchain_holodeck._redact import one_line
from langchain_holodeck.embeddings._vectors import refused_vectors
from langchain_holodeck.embeddings.local import LocalEmbeddings
from langchain_holodeck.embeddings.onnx import OnnxEmbeddings

__all__ = [
    "DEFAULT_MAX_CONCURRENCY",
    "DEFAULT_MAX_RETRIES",
    "BatchFailure",
    "InFlightResult",
    "aembed_in_flight",
    "embed_in_flight",
    "retry_delay",
    "runs_in_process",
]

DEFAULT_MAX_CONCURRENCY = 8
"""Embedding requests in flight at once: enough to hide a ~150 ms round trip behind the
others, few enough for an API's per-key concurrency."""
DEFAULT_MAX_RETRIES = 6
"""Retries of one batch (rate limits, server errors) before it counts as failed."""
_BASE_DELAY = 0.5
_MAX_DELAY = 60.0
_RETRIED_STATUS = frozenset({408, 409, 429})
_TRANSIENT_NAMES = ("APIConnectionError", "APITimeoutError", "ConnectError", "ReadTimeout")


@dataclass(frozen=True)
class BatchFailure:
    """One batch that failed after its retries."""

    start: int
    """Index of its first text in the input."""
    size: int
    """Number of texts in it."""
    error: str
    """The last error, one sanitized line."""


@dataclass(frozen=True)
class InFlightResult:
    """Vectors in input order (``None`` for a text whose batch failed) and the failures."""

    vectors: list[list[float] | None] | list[npt.NDArray[np.float64] | None]
    """Lists of floats; float64 arrays of the same values with ``packed=True``."""
    failures: tuple[BatchFailure, ...] = ()
    retries: int = 0
    """Requests sent again after a rate limit or a transient error."""


def runs_in_process(embeddings: object) -> bool:
    """Whether ``embeddings`` computes in this process (a local model), not over a network.

    Threads give such a model nothing but contention, so it keeps its own batching. True
    for ``OnnxEmbeddings``, ``LocalEmbeddings`` and any object with ``in_process = True``;
    a cache wrapper (``underlying``) is judged by what it wraps.
    """
    inner = getattr(embeddings, "underlying", None)
    if isinstance(inner, Embeddings):
        return runs_in_process(inner)
    return isinstance(embeddings, (OnnxEmbeddings, LocalEmbeddings)) or (
        getattr(embeddings, "in_process", False) is True
    )


def _status(error: BaseException) -> int | None:
    status = getattr(error, "status_code", None)
    if status is None:
        status = getattr(getattr(error, "response", None), "status_code", None)
    return status if isinstance(status, int) else None


def _retry_after(error: BaseException) -> float | None:
    """Seconds the server asked to wait (``retry-after-ms`` or ``Retry-After``), if it said."""
    headers = getattr(getattr(error, "response", None), "headers", None)
    if headers is None:
        return None
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        try:  # an HTTP date
            return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
        except (TypeError, ValueError):
            return None


def retry_delay(error: BaseException, attempt: int) -> float | None:
    """Seconds to wait before retrying after ``error`` (attempt counts from 0), or ``None``.

    429: the server's ``Retry-After`` (capped at 60 s) when given, else the backoff;
    408, 409, 5xx, connection errors and timeouts: exponential backoff (0.5 s doubling,
    capped at 60 s) with jitter; any other error: ``None`` (do not retry).
    """
    status = _status(error)
    transient = isinstance(error, (ConnectionError, TimeoutError)) or any(
        cls.__name__ in _TRANSIENT_NAMES for cls in type(error).__mro__
    )
    if status is None and not transient:
        return None
    if status is not None and status not in _RETRIED_STATUS and status < 500:
        return None
    backoff = min(_MAX_DELAY, _BASE_DELAY * 2**attempt) * (0.5 + random.random() / 2)
    if status == 429:
        asked = _retry_after(error)
        if asked is not None:
            return min(_MAX_DELAY, asked)
    return backoff


class _Gate:
    """The time before which no worker sends: a rate limit pauses every worker."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._resume_at = 0.0

    def wait_time(self) -> float:
        return max(0.0, self._resume_at - time.monotonic())

    def pause(self, seconds: float) -> None:
        with self._lock:
            self._resume_at = max(self._resume_at, time.monotonic() + seconds)


def _retry_in(error: BaseException, attempt: int, max_retries: int, gate: _Gate) -> float | None:
    """Seconds before the retry of a failed request (a 429 pauses every worker), or None."""
    delay = retry_delay(error, attempt) if attempt < max_retries else None
    if delay is not None and _status(error) == 429:
        gate.pause(delay)
    return delay


def _check(batch_size: int, max_concurrency: int, max_retries: int) -> None:
    for name, value, low in (
        ("batch_size", batch_size, 1),
        ("max_concurrency", max_concurrency, 1),
        ("max_retries", max_retries, 0),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            msg = f"{name} must be an integer >= {low}, got {value!r}."
            raise ValueError(msg)


def _assemble(
    n: int,
    starts: Sequence[int],
    outcomes: Sequence[tuple[Sequence[Any] | BaseException, int]],
    batch_size: int,
    *,
    packed: bool = False,
) -> InFlightResult:
    vectors: list[Any] = [None] * n
    failures: list[BatchFailure] = []
    for start, (outcome, _) in zip(starts, outcomes, strict=True):
        size = min(batch_size, n - start)
        if isinstance(outcome, BaseException):
            failures.append(BatchFailure(start, size, one_line(outcome)))
            continue
        if len(outcome) != size:
            error = f"the model returned {len(outcome)} vectors for {size} texts"
            failures.append(BatchFailure(start, size, error))
            continue
        refused = refused_vectors(outcome)
        if refused:
            first = min(refused)
            error = (
                f"the model returned {len(refused)} unusable vector(s) for {size} texts, "
                f"for text {start + first} {refused[first]}"
            )
            failures.append(BatchFailure(start, size, error))
            continue
        vectors[start : start + size] = list(outcome) if packed else [list(v) for v in outcome]
    retries = sum(tries for _, tries in outcomes)
    return InFlightResult(vectors, tuple(failures), retries)


def embed_in_flight(
    embeddings: Embeddings,
    texts: Sequence[str],
    *,
    batch_size: int = 64,
    max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
    max_retries: int = DEFAULT_MAX_RETRIES,
    on_batch: Callable[[int], None] | None = None,
    packed: bool = False,
) -> InFlightResult:
    """Embed ``texts`` in batches of ``batch_size``, up to ``max_concurrency`` at once.

    Args:
        embeddings: Any ``Embeddings``; ``embed_documents`` is called once per batch (from
            worker threads, so it must be thread-safe: HTTP clients are).
        texts: The texts, in order.
        batch_size: Texts per request.
        max_concurrency: Requests in flight at once (1: one after another).
        max_retries: Retries per batch after a rate limit or a transient error.
        on_batch: Called with the size of each batch once it is done (embedded or failed).
        packed: Keep each vector, as its batch ends, as a float64 array of the same values
            (8 bytes a number; a list of floats takes 32): for a caller holding every vector
            of a large sync. ``tolist()`` gives the list back.

    Returns:
        An ``InFlightResult``: one vector per text (``None`` where its batch failed).

    Raises:
        ValueError: When ``batch_size`` or ``max_concurrency`` is below 1 or ``max_retries``
            below 0.
    """
    _check(batch_size, max_concurrency, max_retries)
    starts = list(range(0, len(texts), batch_size))
    gate = _Gate()

    def one(start: int) -> tuple[Sequence[Any] | BaseException, int]:
        batch = list(texts[start : start + batch_size])
        attempt = 0
        while True:
            time.sleep(gate.wait_time())
            outcome: Sequence[Any] | BaseException  # vectors: lists, or arrays when packed
            try:
                outcome = embeddings.embed_documents(batch)
                if packed:
                    outcome = [np.asarray(v, dtype=np.float64) for v in outcome]
            except Exception as error:  # counted per batch; the others go on
                delay = _retry_in(error, attempt, max_retries, gate)
                if delay is not None:
                    time.sleep(delay)
                    attempt += 1
                    continue
                outcome = error
            if on_batch is not None:
                on_batch(len(batch))
            return outcome, attempt

    if not starts:
        return InFlightResult([])
    if max_concurrency == 1 or len(starts) == 1:
        outcomes = [one(s) for s in starts]
    else:
        workers = min(max_concurrency, len(starts))
        with ThreadPoolExecutor(workers, thread_name_prefix="holodeck-embed") as pool:
            outcomes = list(pool.map(one, starts))
    return _assemble(len(texts), starts, outcomes, batch_size, packed=packed)


async def aembed_in_flight(
    embeddings: Embeddings,
    texts: Sequence[str],
    *,
    batch_size: int = 64,
    max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
    max_retries: int = DEFAULT_MAX_RETRIES,
    on_batch: Callable[[int], None] | None = None,
) -> InFlightResult:
    """Async twin of :func:`embed_in_flight`: ``aembed_documents`` under a semaphore."""
    _check(batch_size, max_concurrency, max_retries)
    starts = list(range(0, len(texts), batch_size))
    gate = _Gate()
    slots = asyncio.Semaphore(max_concurrency)

    async def one(start: int) -> tuple[list[list[float]] | BaseException, int]:
        batch = list(texts[start : start + batch_size])
        attempt = 0
        async with slots:
            while True:
                await asyncio.sleep(gate.wait_time())
                try:
                    outcome: list[list[float]] | BaseException = await embeddings.aembed_documents(
                        batch
                    )
                except Exception as error:  # counted per batch; the others go on
                    delay = _retry_in(error, attempt, max_retries, gate)
                    if delay is not None:
                        await asyncio.sleep(delay)
                        attempt += 1
                        continue
                    outcome = error
                if on_batch is not None:
                    on_batch(len(batch))
                return outcome, attempt

    if not starts:
        return InFlightResult([])
    outcomes = await asyncio.gather(*(one(s) for s in starts))
    return _assemble(len(texts), starts, outcomes, batch_size)
