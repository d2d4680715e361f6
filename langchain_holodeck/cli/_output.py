"""Standard output that its reader may close (``| head``): the output ends, the exit status stays.

A reader that has read enough closes the pipe, and the next write raises ``BrokenPipeError``.
That ends the output, quietly, but not what the command decided: ``holodeck-rag test ... |
head -n 1`` with a failing case still exits 1, and an ``ingest`` whose chunks failed still
logs them and exits 1. ``print_result`` prints a command's result so that a closed pipe only
ends the output; ``flush_stdout`` does the same for what is still buffered when the command
returns.
"""

from __future__ import annotations

import os
import sys


def print_result(text: str) -> bool:
    """Print ``text`` on stdout (flushed); False when the reader has gone, stdout then silenced."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        silence_stdout()
        return False
    return True


def flush_stdout() -> None:
    """Flush stdout; a reader that has gone silences it (a closed pipe fails here, not at exit)."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        silence_stdout()


def silence_stdout() -> None:
    """Point stdout at /dev/null, so that flushing it at exit raises no second BrokenPipeError."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout without a file descriptor (tests): nothing to flush
        pass
