"""Embedding many texts with requests in flight: bounded concurrency, rate-limit aware retries.

An embeddings API answers one batch per round trip; sending the batches one after another
leaves the connection idle for most of a large sync. ``embed_in_flight`` (threads) and
``aembed_in_flight`` (``asyncio``) keep up to ``max_concurrency`` batch requests open at once
and retry the ones the API refuses for a while:

- HTTP 429: after the ``Retry-After`` (or ``retry-after-ms``) the answer gives, else after an
  exponential backoff; every worker pauses until then (one rate limit, one pause), so the
  client stops hammering a server that asked it to wait;
- HTTP 408/409 and 5xx and connection errors: exponential backoff with jitter;
- a timeout (no answer within the model's own timeout): once (``TIMEOUT_RETRIES``), after
  the same backoff: each try costs the whole timeout;
- anything else (400, 401, a bad input): no retry.

A batch that still fails is reported (its texts get no vector) and never stops the others;
so is a batch whose answer holds a vector no store should take (NaN or infinite numbers, or
another width than the others of the answer). One exception: a batch that failed with no
answer at all (its last try timed out, or could not connect) stops the run from sending
more. The batches not sent yet, and those waiting to be retried, fail at once with one line
saying so; requests already in flight end as they do. A server that accepts requests and
never answers so costs about two timeouts (two minutes at the default 60 s), whatever the
number of batches, not seven timeouts a batch; the next run embeds what is missing.
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
from langchain_holodeck._request_url import with_unanswered_url
from langchain_holodeck.embeddings._vectors import refused_vectors
from langchain_holodeck.embeddings.local import LocalEmbeddings
from langchain_holodeck.embeddings.onnx import OnnxEmbeddings

__all__ = [
    "DEFAULT_MAX_CONCURRENCY",
    "DEFAULT_MAX_RETRIES",
    "TIMEOUT_RETRIES",
    "BatchFailure",
    "InFlightResult",
    "aembed_in_flight",
    "embed_in_flight",
    "retry_delay",
    "runs_in_process",
    "timed_out",
]

DEFAULT_MAX_CONCURRENCY = 8
"""Embedding requests in flight at once: enough to hide a ~150 ms round trip behind the
others, few enough for an API's per-key concurrency."""
DEFAULT_MAX_RETRIES = 6
"""Retries of one batch (rate limits, server errors) before it counts as failed."""
TIMEOUT_RETRIES = 1
"""Retries of one batch after its request timed out (within ``max_retries``): a server slow
for a moment gets a second try; one that takes the whole timeout twice is not answering."""
_BASE_DELAY = 0.5
_MAX_DELAY = 60.0
_RETRIED_STATUS = frozenset({408, 409, 429})
_CONNECTION_NAMES = ("APIConnectionError", "ConnectError")
_TIMEOUT_NAMES = ("APITimeoutError", "ReadTimeout", "TimeoutException")


@dataclass(frozen=True)
class BatchFailure:
    """One batch that failed after its retries."""

    start: int
    """Index of its first text in the input."""
    size: int
    """Number of texts in it."""
    error: str
    """The last error, one sanitized line."""
    sent: bool = True
    """False: never sent (or not sent again), as another batch got no answer at all."""


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


def _named(error: BaseException, names: Sequence[str]) -> bool:
    return any(cls.__name__ in names for cls in type(error).__mro__)


def timed_out(error: BaseException) -> bool:
    """Whether ``error`` is a request that got no answer in time (``openai``, ``httpx``)."""
    return isinstance(error, TimeoutError) or _named(error, _TIMEOUT_NAMES)


def _unanswered(error: BaseException) -> bool:
    """No answer at all: a timeout or a connection that failed (not an HTTP error status)."""
    connection = isinstance(error, ConnectionError) or _named(error, _CONNECTION_NAMES)
    return _status(error) is None and (connection or timed_out(error))


def retry_delay(error: BaseException, attempt: int) -> float | None:
    """Seconds to wait before retrying after ``error`` (attempt counts from 0), or ``None``.

    429: the server's ``Retry-After`` (capped at 60 s) when given, else the backoff;
    408, 409, 5xx, connection errors and timeouts: exponential backoff (0.5 s doubling,
    capped at 60 s) with jitter; any other error: ``None`` (do not retry).
    """
    status = _status(error)
    if status is None and not _unanswered(error):
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
    """When workers may send: after a rate limit's pause, and not once a batch got no answer."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._resume_at = 0.0
        self.closed: _NotSent | None = None

    def wait_time(self) -> float:
        return max(0.0, self._resume_at - time.monotonic())

    def pause(self, seconds: float) -> None:
        with self._lock:
            self._resume_at = max(self._resume_at, time.monotonic() + seconds)

    def close(self, tries: int, error: BaseException) -> None:
        """Send nothing more: a batch got no answer in ``tries`` tries, the last ``error``."""
        with self._lock:
            if self.closed is None:
                self.closed = _NotSent(
                    f"not sent: the embeddings server did not answer a batch in {tries} "
                    f"tries ({with_unanswered_url(one_line(error), error)}); the next run "
                    "embeds them"
                )


class _NotSent(RuntimeError):
    """A batch not sent, or not sent again, as the server stopped answering."""


class _Tries:
    """One batch's tries: how many were retries, how many timed out."""

    def __init__(self, max_retries: int, gate: _Gate) -> None:
        self.max_retries, self.gate = max_retries, gate
        self.attempt = self.timeouts = 0

    def retry_in(self, error: BaseException) -> float | None:
        """Seconds before the retry of a failed request (a 429 pauses every worker), or None.

        None also when the run sends nothing more; a batch that ends with no answer at all
        closes the gate for the others.
        """
        self.timeouts += timed_out(error)
        delay = retry_delay(error, self.attempt) if self.attempt < self.max_retries else None
        if self.timeouts > TIMEOUT_RETRIES or self.gate.closed is not None:
            delay = None
        if delay is None and _unanswered(error):
            self.gate.close(self.attempt + 1, error)
        elif delay is not None and _status(error) == 429:
            self.gate.pause(delay)
        if delay is not None:
            self.attempt += 1
        return delay

    def stopped(self) -> BaseException | None:
        """The reason not to send (again), once the gate is closed."""
        return self.gate.closed


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
        if isinstance(outcome, _NotSent):
            failures.append(BatchFailure(start, size, str(outcome), sent=False))
            continue
        if isinstance(outcome, BaseException):
            line = with_unanswered_url(one_line(outcome), outcome)  # a server down: its URL
            failures.append(BatchFailure(start, size, line))
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
        max_retries: Retries per batch after a rate limit or a transient error; after a
            timeout at most ``TIMEOUT_RETRIES``. Once a batch failed with no answer at all
            (timed out, or could not connect), no batch is sent (again): each fails at once,
            ``BatchFailure.sent`` False.
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
        tries = _Tries(max_retries, gate)
        while True:
            time.sleep(gate.wait_time())
            outcome: Sequence[Any] | BaseException | None  # lists, or arrays when packed
            outcome = tries.stopped()
            if outcome is None:
                try:
                    outcome = embeddings.embed_documents(batch)
                    if packed:
                        outcome = [np.asarray(v, dtype=np.float64) for v in outcome]
                except Exception as error:  # counted per batch; the others go on
                    delay = tries.retry_in(error)
                    if delay is not None:
                        time.sleep(delay)
                        continue
                    outcome = error
            if on_batch is not None:
                on_batch(len(batch))
            return outcome, tries.attempt

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
        tries = _Tries(max_retries, gate)
        async with slots:
            while True:
                await asyncio.sleep(gate.wait_time())
                outcome: list[list[float]] | BaseException | None = tries.stopped()
                if outcome is None:
                    try:
                        outcome = await embeddings.aembed_documents(batch)
                    except Exception as error:  # counted per batch; the others go on
                        delay = tries.retry_in(error)
                        if delay is not None:
                            await asyncio.sleep(delay)
                            continue
                        outcome = error
                if on_batch is not None:
                    on_batch(len(batch))
                return outcome, tries.attempt

    if not starts:
        return InFlightResult([])
    outcomes = await asyncio.gather(*(one(s) for s in starts))
    return _assemble(len(texts), starts, outcomes, batch_size)
