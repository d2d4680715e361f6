"""What Ctrl-C prints: one line fitting what the command was doing when it came.

``main`` prints ``interrupt_message()`` and exits 130: ``command_interrupted(command)`` for the
command run, and within it, a step whose work is not resumable (``chat`` waiting for a
question) says so with ``interrupt_says``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

INTERRUPTED = (
    "interrupted: the embeddings computed so far are kept; run the same command again to resume."
)
"""The one line Ctrl-C prints while a command may be ingesting (exit status 130)."""

_said: list[str] = [INTERRUPTED]


def command_interrupted(command: str) -> str:
    """The line Ctrl-C prints in ``command``: ``INTERRUPTED`` for ``ingest``, else a stop.

    ``search``, ``test`` and ``chat`` re-check the source first and may sync it, but they
    were run to answer, not to ingest: being told to run the same command again to resume
    the embeddings read as if the search had been an ingest.
    """
    if command == "ingest":
        return INTERRUPTED
    if command == "purge-legacy":  # some chunks may be gone already: not "intact"
        return "interrupted: purge-legacy stopped before it finished; run it again to finish."
    return f"interrupted: {command} stopped before it finished; the store is intact."


def interrupt_message() -> str:
    """The line Ctrl-C prints now; empty: end quietly."""
    return _said[-1]


@contextmanager
def interrupt_says(message: str) -> Iterator[None]:
    """Within the block, Ctrl-C prints ``message`` (empty: nothing) instead of ``INTERRUPTED``."""
    _said.append(message)
    try:
        yield
    finally:
        _said.pop()
