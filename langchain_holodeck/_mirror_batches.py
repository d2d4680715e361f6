"""Batches of a Runnable whose every run makes a namespace mirror its own input.

With cleanup on, ``IngestionPipeline`` and ``DocumentSync`` delete the namespace's chunks
that their input does not hold. Runnable's batch methods run the inputs side by side into the
same namespace, so each run deletes the others' chunks: the namespace can end with one
input's, or none. ``MirrorBatches`` refuses such a batch before any run starts, in every
batch method (``batch``, ``abatch``, ``batch_as_completed``, ``abatch_as_completed``).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import AsyncIterator, Iterator, Sequence
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
