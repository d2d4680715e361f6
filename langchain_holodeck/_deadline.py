"""A wall-clock limit on one blocking call: what an HTTP client's timeout is not.

``httpx`` (under the openai and cohere clients) times each network read, not the answer: a
server sending one byte every 0.1 s is waited for as long as it keeps sending. A synchronous
call cannot be interrupted either, so ``call_with_deadline`` runs it in a daemon thread and
stops *waiting* at the deadline; the abandoned call ends on its own (at its next read timeout,
or when the answer is complete), and its result is dropped.
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Callable
from typing import TypeVar

__all__ = ["call_with_deadline"]

T = TypeVar("T")


def call_with_deadline(
    call: Callable[[], T],
    timeout: float | None,
    *,
    what: str,
    extension: Callable[[], float] | None = None,
) -> T:
    """``call()``, or ``TimeoutError`` once ``timeout`` seconds have passed without its answer.

    Args:
        call: The blocking call (an HTTP request); it runs in a daemon thread, in a copy of
            the caller's context (callbacks, tracing).
        timeout: Seconds the caller waits in all; ``None`` calls ``call`` in this thread.
        what: What is waited for, for the error (``"the rerank request"``).
        extension: Seconds the call has earned beyond ``timeout`` so far (a server's
            ``Retry-After`` its client waits for); read when ``timeout`` runs out, and the
            wait goes on while it grew.

    Raises:
        TimeoutError: No answer within ``timeout``; the message names ``what`` and the limit.
        BaseException: Whatever ``call`` raised, as it raised it.
    """
    if timeout is None:
        return call()
    context = contextvars.copy_context()
    done = threading.Event()
    outcome: list[T] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            outcome.append(context.run(call))
        except BaseException as error:  # handed to the waiting caller below
            failure.append(error)
        finally:
            done.set()

    started = time.monotonic()
    threading.Thread(target=run, name="holodeck-deadline", daemon=True).start()
    limit = timeout
    while not done.wait(max(0.0, started + limit - time.monotonic())):
        longer = timeout + (extension() if extension is not None else 0.0)
        if longer <= limit:
            msg = f"no answer to {what} within the {limit:g} s timeout"
            raise TimeoutError(msg)
        limit = longer
    if failure:
        raise failure[0]
    return outcome[0]
