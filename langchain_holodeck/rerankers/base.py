"""The reranker base: validation, fallback and circuit-breaker shared by every backend.

Backends subclass ``_RerankCompressor`` and implement ``_rank`` (and ``_arank`` for a real async
client); see ``langchain_holodeck.rerankers.cohere`` for the public classes.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from abc import abstractmethod
from collections.abc import Callable, Sequence
from typing import ClassVar, Literal

from langchain_core.callbacks import Callbacks
from langchain_core.documents import BaseDocumentCompressor, Document
from langchain_core.runnables.config import run_in_executor
from pydantic import ConfigDict, Field, PrivateAttr

from langchain_holodeck._chunk import original_content
from langchain_holodeck._fields import Float, Int
from langchain_holodeck._redact import scrub

# Warnings come from the public module's logger, the one users configure.
logger = logging.getLogger("langchain_holodeck.rerankers.cohere")

_MAX_CAUSE_CHARS = 300


class _MalformedRankingError(ValueError):
    """The reranker answered, but not with a usable ranking."""


class _CircuitBreaker:
    """Counts consecutive failures; open for a cool-down, then half-open for one trial call.

    Thread-safe. ``clock`` is injectable so the state machine is testable without sleeping.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._failures = 0
        self._opened_at: float | None = None
        self._trial_running = False

    @property
    def is_open(self) -> bool:
        """Whether calls are currently being skipped (or waiting for a trial)."""
        return self._opened_at is not None

    def allow(self, cooldown: float) -> bool:
        """Whether to call the backend now; after the cool-down, lets exactly one trial through."""
        return self.admit(cooldown) is not None

    def admit(self, cooldown: float) -> Literal["call", "trial"] | None:
        """``allow``, saying which: a ``"call"`` (closed), the one ``"trial"``, or ``None``.

        A trial must end in ``record_success``, ``record_failure`` or ``release_trial``.
        """
        with self._lock:
            if self._opened_at is None:
                return "call"
            if self._trial_running or self._clock() - self._opened_at < cooldown:
                return None
            self._trial_running = True
            return "trial"

    def release_trial(self) -> None:
        """End a trial that neither succeeded nor failed (its caller was cancelled).

        The breaker stays open and the next call after the cool-down is a trial again; left
        running, the trial let no call through ever again.
        """
        with self._lock:
            self._trial_running = False

    def record_success(self) -> None:
        with self._lock:
            self._failures, self._opened_at, self._trial_running = 0, None, False

    def record_failure(self, threshold: int) -> bool:
        """Count a failure; return True when this failure (re)opens the breaker."""
        with self._lock:
            self._failures += 1
            if self._trial_running or self._failures >= threshold:
                self._opened_at, self._trial_running = self._clock(), False
                return True
            return False


def _checked_ranking(
    pairs: Sequence[tuple[object, object]], n_documents: int
) -> list[tuple[int, float]]:
    """Validate a backend's ``(index, score)`` pairs and sort them best first.

    Args:
        pairs: What the backend answered, unvalidated.
        n_documents: How many documents were sent.

    Returns:
        ``(index, score)`` with unique in-range ``int`` indices and finite scores, sorted by
        descending score (ties keep the backend's order).

    Raises:
        ValueError: When the answer is empty, an index is missing, not an int, out of range or
            repeated, or a score is missing or not a finite number.
    """
    if not pairs:
        msg = f"the answer ranks no documents although {n_documents} were sent"
        raise _MalformedRankingError(msg)
    if len(pairs) > n_documents:
        msg = f"the answer ranks {len(pairs)} documents but only {n_documents} were sent"
        raise _MalformedRankingError(msg)
    seen: set[int] = set()
    ranking: list[tuple[int, float]] = []
    for position, (index, score) in enumerate(pairs):
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < n_documents:
            msg = f"result {position} has index {index!r}; expected an int in [0, {n_documents})"
            raise _MalformedRankingError(msg)
        if index in seen:
            msg = f"result {position} repeats index {index}"
            raise _MalformedRankingError(msg)
        if (
            isinstance(score, bool)
            or not isinstance(score, int | float)
            or not math.isfinite(score)
        ):
            msg = f"result {position} has relevance_score {score!r}; expected a finite number"
            raise _MalformedRankingError(msg)
        seen.add(index)
        ranking.append((index, float(score)))
    return sorted(ranking, key=lambda pair: -pair[1])


def _describe(exc: BaseException) -> str:
    """Short cause for a log line (not yet scrubbed)."""
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        body = getattr(exc, "body", None)
        if 200 <= status < 300:
            return f"malformed answer (HTTP {status}, body not valid JSON: {body!r})"
        return f"HTTP {status}: {body!r}"
    if isinstance(exc, _MalformedRankingError):
        return f"malformed answer: {exc}"
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class _RerankCompressor(BaseDocumentCompressor):
    """Shared behaviour of every reranker; each backend only implements ``_rank``."""

    top_n: Int | None = Field(default=3, gt=0)
    """Documents to return; ``None`` returns all, reordered."""
    use_contextualized: bool = False
    """Rerank on ``page_content`` (with the LLM context) instead of ``original_content``."""
    failure_threshold: Int = Field(default=3, gt=0)
    """Consecutive failures that open the circuit-breaker."""
    cooldown: Float = Field(default=30.0, ge=0)
    """Seconds the breaker stays open (no backend call) before one trial call."""

    model_config = ConfigDict(extra="forbid")

    _provider: ClassVar[str] = "reranker"
    _breaker: _CircuitBreaker = PrivateAttr(default_factory=_CircuitBreaker)

    def compress_documents(
        self,
        documents: Sequence[Document],
        query: str,
        callbacks: Callbacks | None = None,
        *,
        at_least: int = 0,
    ) -> Sequence[Document]:
        """Rerank ``documents``: ``top_n`` of them, or ``at_least`` when that is more.

        ``at_least`` is what ``RerankRetriever`` asks for per call (its ``k``): a ``top_n``
        below it would silently shorten the result.
        """
        texts = self._texts(documents)
        if not texts:
            return []  # no call for nothing
        limit = self._limit(len(texts), at_least)
        admitted = self._breaker.admit(self.cooldown)
        if admitted is None:
            return self._skipped(documents, limit)
        try:
            pairs = self._rank(query, texts, limit)
            ranking = _checked_ranking(pairs, len(texts))
        except Exception as exc:  # falling back on any failure is the contract
            return self._fallback(documents, exc, limit)
        except BaseException:  # cancelled (a caller's timeout), interrupted: no verdict
            if admitted == "trial":
                self._breaker.release_trial()
            raise
        return self._reranked(documents, ranking, limit)

    async def acompress_documents(
        self,
        documents: Sequence[Document],
        query: str,
        callbacks: Callbacks | None = None,
        *,
        at_least: int = 0,
    ) -> Sequence[Document]:
        """Async twin of ``compress_documents`` (the backend's ``_arank``)."""
        texts = self._texts(documents)
        if not texts:
            return []
        limit = self._limit(len(texts), at_least)
        admitted = self._breaker.admit(self.cooldown)
        if admitted is None:
            return self._skipped(documents, limit)
        try:
            pairs = await self._arank(query, texts, limit)
            ranking = _checked_ranking(pairs, len(texts))
        except Exception as exc:  # falling back on any failure is the contract
            return self._fallback(documents, exc, limit)
        except BaseException:  # cancelled (a caller's timeout), interrupted: no verdict
            if admitted == "trial":
                self._breaker.release_trial()
            raise
        return self._reranked(documents, ranking, limit)

    @abstractmethod
    def _rank(self, query: str, texts: list[str], top_n: int) -> Sequence[tuple[object, object]]:
        """``(input index, score)`` pairs, at most ``top_n``; validated by the caller."""

    async def _arank(
        self, query: str, texts: list[str], top_n: int
    ) -> Sequence[tuple[object, object]]:
        return await run_in_executor(None, self._rank, query, texts, top_n)

    def _secrets(self) -> list[str]:
        """Secret values to scrub from log lines."""
        return []

    def _describe(self, exc: BaseException) -> str:
        """Short cause of a failure for the warning (scrubbed afterwards)."""
        return _describe(exc)

    # -- helpers shared by the sync and async paths ------------------------------------------

    def _texts(self, documents: Sequence[Document]) -> list[str]:
        if self.use_contextualized:
            return [d.page_content for d in documents]
        return [original_content(d) for d in documents]

    def _limit(self, n_documents: int, at_least: int) -> int:
        """Documents to return: ``top_n`` (all when ``None``), raised to ``at_least``."""
        wanted = n_documents if self.top_n is None else max(self.top_n, at_least)
        return min(wanted, n_documents)

    def _reranked(
        self, documents: Sequence[Document], ranking: list[tuple[int, float]], limit: int
    ) -> list[Document]:
        """The ranked documents, best first, then the others up to ``limit``.

        A backend ranking fewer than ``limit`` (a gateway's own threshold) is filled from the
        retrieval order (with ``rerank_input_rank``, without ``relevance_score``).
        """
        self._breaker.record_success()
        out = [
            documents[i].model_copy(
                update={
                    "metadata": {
                        **documents[i].metadata,
                        "relevance_score": score,
                        "rerank_input_rank": i + 1,
                    }
                }
            )
            for i, score in ranking[:limit]
        ]
        if len(out) < limit:  # a server that ranks only some (its own threshold): fill
            logger.info(
                "%s reranker ranked %d of the %d documents asked for; the other %d follow in "
                "the retrieval order",
                self._provider,
                len(out),
                limit,
                limit - len(out),
            )
            ranked = {i for i, _ in ranking}
            rest = (i for i in range(len(documents)) if i not in ranked)
            out.extend(
                documents[i].model_copy(
                    update={"metadata": {**documents[i].metadata, "rerank_input_rank": i + 1}}
                )
                for _, i in zip(range(limit - len(out)), rest, strict=False)
            )
        return out

    def _original_order(self, documents: Sequence[Document], limit: int) -> list[Document]:
        return [d.model_copy(update={"metadata": dict(d.metadata)}) for d in documents[:limit]]

    def _fallback(
        self, documents: Sequence[Document], exc: BaseException, limit: int
    ) -> list[Document]:
        opened = self._breaker.record_failure(self.failure_threshold)
        cause = scrub(self._describe(exc), self._secrets(), max_chars=_MAX_CAUSE_CHARS)
        breaker = (
            f"; skipping it for {self.cooldown:g} s after "
            f"{self.failure_threshold} consecutive failures"
            if opened
            else ""
        )
        logger.warning(
            "%s reranker failed, keeping the retrieval order (%d documents): %s%s",
            self._provider,
            len(documents),
            cause,
            breaker,
        )
        return self._original_order(documents, limit)

    def _skipped(self, documents: Sequence[Document], limit: int) -> list[Document]:
        logger.debug("%s reranker circuit is open; keeping the retrieval order", self._provider)
        return self._original_order(documents, limit)
