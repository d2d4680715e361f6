"""Runs of a Runnable whose every run makes a namespace mirror its own input.

With cleanup on, ``IngestionPipeline`` and ``DocumentSync`` (``sync_documents``) delete the
namespace's chunks that their input does not hold. Two such runs of different inputs side by
side in one namespace each delete the other's chunks: the namespace can end with one input's,
or none, while both results count their chunks added. Two guards keep them apart:

- ``MirrorBatches`` refuses such a batch before any run starts, in every batch method
  (``batch``, ``abatch``, ``batch_as_completed``, ``abatch_as_completed``): the clearest
  message, naming every input.
- ``mirroring`` holds (store, namespace) for the length of one run, so a run of another input
  into the same namespace of the same store object is refused at its start, however the runs
  were started: threads, a chain's ``batch_as_completed`` (which runs each input's
  ``invoke``, not the step's batch), ``asyncio.gather`` of ``ainvoke``. Runs of one input
  share the namespace (they converge), and runs one after another are untouched.
"""

from __future__ import annotations

import threading
from abc import abstractmethod
from collections.abc import AsyncIterator, Callable, Hashable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, overload

from langchain_core.runnables import Runnable, RunnableConfig

InputT = TypeVar("InputT")
OutputT = TypeVar("OutputT")


class MirrorBatches(Runnable[InputT, OutputT]):
    """A Runnable that checks each batch's inputs (``_refuse_batch``) before running any."""

    @abstractmethod
    def _refuse_batch(self, inputs: Sequence[InputT], method: str) -> None:
        """Raise ``ValueError`` naming ``method`` when ``inputs`` would undo each other."""

    def batch(
        self,
        inputs: list[InputT],
        config: RunnableConfig | list[RunnableConfig] | None = None,
        *,
        return_exceptions: bool = False,
        **kwargs: Any | None,
    ) -> list[OutputT]:
        self._refuse_batch(inputs, "batch")
        return super().batch(inputs, config, return_exceptions=return_exceptions, **kwargs)

    async def abatch(
        self,
        inputs: list[InputT],
        config: RunnableConfig | list[RunnableConfig] | None = None,
        *,
        return_exceptions: bool = False,
        **kwargs: Any | None,
    ) -> list[OutputT]:
        self._refuse_batch(inputs, "abatch")
        return await super().abatch(inputs, config, return_exceptions=return_exceptions, **kwargs)

    @overload
    def batch_as_completed(
        self,
        inputs: Sequence[InputT],
        config: RunnableConfig | Sequence[RunnableConfig] | None = None,
        *,
        return_exceptions: Literal[False] = False,
        **kwargs: Any,
    ) -> Iterator[tuple[int, OutputT]]: ...

    @overload
    def batch_as_completed(
        self,
        inputs: Sequence[InputT],
        config: RunnableConfig | Sequence[RunnableConfig] | None = None,
        *,
        return_exceptions: Literal[True],
        **kwargs: Any,
    ) -> Iterator[tuple[int, OutputT | Exception]]: ...

    def batch_as_completed(
        self,
        inputs: Sequence[InputT],
        config: RunnableConfig | Sequence[RunnableConfig] | None = None,
        *,
        return_exceptions: bool = False,
        **kwargs: Any | None,
    ) -> Iterator[tuple[int, OutputT | Exception]]:
        self._refuse_batch(inputs, "batch_as_completed")  # at the call, not the first next()
        if return_exceptions:
            return super().batch_as_completed(inputs, config, return_exceptions=True, **kwargs)
        return super().batch_as_completed(inputs, config, return_exceptions=False, **kwargs)

    @overload
    def abatch_as_completed(
        self,
        inputs: Sequence[InputT],
        config: RunnableConfig | Sequence[RunnableConfig] | None = None,
        *,
        return_exceptions: Literal[False] = False,
        **kwargs: Any | None,
    ) -> AsyncIterator[tuple[int, OutputT]]: ...

    @overload
    def abatch_as_completed(
        self,
        inputs: Sequence[InputT],
        config: RunnableConfig | Sequence[RunnableConfig] | None = None,
        *,
        return_exceptions: Literal[True],
        **kwargs: Any | None,
    ) -> AsyncIterator[tuple[int, OutputT | Exception]]: ...

    def abatch_as_completed(
        self,
        inputs: Sequence[InputT],
        config: RunnableConfig | Sequence[RunnableConfig] | None = None,
        *,
        return_exceptions: bool = False,
        **kwargs: Any | None,
    ) -> AsyncIterator[tuple[int, OutputT | Exception]]:
        self._refuse_batch(inputs, "abatch_as_completed")
        if return_exceptions:
            return super().abatch_as_completed(inputs, config, return_exceptions=True, **kwargs)
        return super().abatch_as_completed(inputs, config, return_exceptions=False, **kwargs)


@dataclass
class _Mirroring:
    """The runs making one (store, namespace) mirror ``source``: how many, and how it reads."""

    source: Hashable
    shown: str
    runs: int


_LOCK = threading.Lock()
_MIRRORING: dict[tuple[int, str], _Mirroring] = {}
"""(``id`` of the store, namespace) -> the runs in flight; a key lives while its store is in
use by a run, so its ``id`` cannot be reused meanwhile."""
_HELD: ContextVar[frozenset[tuple[int, str]]] = ContextVar(
    "holodeck_mirroring", default=frozenset()
)
"""The keys the run this code is part of holds: a run inside it (``IngestionPipeline``'s
``sync_documents``) is part of it, not a second run."""


@contextmanager
def mirroring(
    vector_store: object,
    namespace: str,
    source: Hashable,
    *,
    shown: str,
    refusal: Callable[[str], str],
) -> Iterator[None]:
    """Hold ``namespace`` of ``vector_store`` while a run with cleanup makes it mirror ``source``.

    Runs of an equal ``source`` hold it together; the key is released when the last of them
    ends, however it ends (an exception, a cancelled ``ainvoke``, whose thread runs to its end
    first). Nothing waits: a refused run is refused at once, so a run calling another cannot
    deadlock. Two store objects over one saved directory are two stores here.

    Args:
        vector_store: The store; kept apart by identity.
        namespace: The namespace the run mirrors.
        source: What the run mirrors (a source's root, a set of ``source_path``s): runs with
            equal ones converge.
        shown: ``source`` for another run's refusal.
        refusal: The refusal's message, given the ``shown`` of the runs in flight.

    Raises:
        ValueError: ``refusal(...)``, when runs of another source are syncing into
            ``namespace`` of ``vector_store``.
    """
    key = (id(vector_store), namespace)
    held = _HELD.get()
    if key in held:  # a run inside this run: the outer one holds it
        yield
        return
    with _LOCK:
        running = _MIRRORING.get(key)
        if running is None:
            _MIRRORING[key] = _Mirroring(source, shown, 1)
        elif running.source == source:
            running.runs += 1
        else:
            raise ValueError(refusal(running.shown))
    token = _HELD.set(held | {key})
    try:
        yield
    finally:
        _HELD.reset(token)
        with _LOCK:
            running = _MIRRORING[key]
            running.runs -= 1
            if not running.runs:
                del _MIRRORING[key]
