"""One retrieval core, two drivers: the core yields the I/O it needs, a driver performs it.

A core is a generator. Each ``yield`` hands the driver a ``Step`` (named ``Call``s that may
run concurrently) and receives ``{name: result or Exception}``; the core's ``return`` value is
the result. ``drive`` runs a step's calls on a thread pool (the last one, and those marked
``in_process``, on the caller's thread), ``adrive``
awaits them with ``asyncio.gather`` (a call without an async form runs in the pool), so the
sync and async paths share every decision and differ only in how the calls are gathered.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Awaitable, Callable, Generator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")

_POOL: ThreadPoolExecutor | None = None


def _pool() -> ThreadPoolExecutor:
    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(max_workers=8, thread_name_prefix="holodeck-hybrid")
    return _POOL


@dataclass(frozen=True)
class Call:
    """One piece of I/O: a blocking form, and optionally a native async form."""

    run: Callable[[], Any]
    arun: Callable[[], Awaitable[Any]] | None = None
    in_process: bool = False
    """CPU work in this process that holds the GIL (an in-memory index): the sync driver runs
    it on the caller's thread, since a pool thread would only add a hand-off."""


Step = dict[str, Call]
Outcomes = dict[str, Any]
"""Each call's result, or the ``Exception`` it raised."""
Core = Generator[Step, Outcomes, T]


def _capture(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except Exception as error:  # handed to the core, which decides what a failure means
        return error


def _run_step(step: Step) -> Outcomes:
    items = list(step.items())
    futures: dict[str, Future[Any]] = {}
    for name, call in items[:-1]:
        if call.in_process:
            continue
        ctx = contextvars.copy_context()  # spans opened in the pool nest under the caller's
        futures[name] = _pool().submit(ctx.run, _capture, call.run)
    out = {name: _capture(call.run) for name, call in items if name not in futures}
    out.update({name: future.result() for name, future in futures.items()})
    return {name: out[name] for name, _ in items}


def drive(core: Core[T]) -> T:
    """Run ``core`` to completion, performing each step with threads."""
    outcomes: Outcomes | None = None
    while True:
        try:
            step = core.send(outcomes)  # type: ignore[arg-type]  # the first send must be None
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]  # the core's return value
        outcomes = _run_step(step) if step else {}


async def _acall(call: Call) -> Any:
    if call.arun is not None:
        return await call.arun()
    ctx = contextvars.copy_context()
    return await asyncio.get_running_loop().run_in_executor(_pool(), ctx.run, call.run)


async def adrive(core: Core[T]) -> T:
    """Run ``core`` to completion, awaiting each step's calls together."""
    outcomes: Outcomes | None = None
    while True:
        try:
            step = core.send(outcomes)  # type: ignore[arg-type]  # the first send must be None
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]  # the core's return value
        results = await asyncio.gather(*(_acall(c) for c in step.values()), return_exceptions=True)
        outcomes = {}
        for name, result in zip(step, results, strict=True):
            if isinstance(result, BaseException) and not isinstance(result, Exception):
                core.throw(result)  # cancellation and friends propagate (through the core)
                raise result
            outcomes[name] = result
