"""Standard output that its reader may close (``| head``): the output ends, the exit status stays.

A reader that has read enough closes the pipe, and the next write raises ``BrokenPipeError``.
That ends the output, quietly, but not what the command decided: ``holodeck-rag test ... |
head -n 1`` with a failing case still exits 1, and an ``ingest`` whose chunks failed still
logs them and exits 1. ``print_result`` prints a command's result so that a closed pipe only
ends the output; ``flush_stdout`` does the same for what is still buffered when the command
returns.

A stdout whose encoding cannot hold every character (a Windows redirect, cp1252; a Latin-1
locale) writes such a character as a backslash escape instead of failing the command
(``escape_what_stdout_cannot_hold``), and ``--json`` writes its escapes there, ASCII only
(``stdout_holds_any_text``).
"""

from __future__ import annotations

import codecs
import os
import sys
from typing import TextIO


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


def stdout_holds_any_text() -> bool:
    """Whether stdout's encoding can write every character (a UTF encoding)."""
    return _holds_any_text(sys.stdout)


def escape_what_stdout_cannot_hold() -> None:
    """Write a character stdout's (or stderr's) encoding cannot hold as a backslash escape.

    Under ``PYTHONIOENCODING=latin-1`` or a cp1252 redirect, ``search`` of a Japanese text, and
    of any text past the section breadcrumb's U+203A, raised ``UnicodeEncodeError`` with a
    traceback. A UTF-8 stream, and one with an error handler of its own, are left as they are.
    """
    for stream in (sys.stdout, sys.stderr):
        if _holds_any_text(stream) or getattr(stream, "errors", None) not in _FAILING:
            continue
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:  # a TextIOWrapper: the console's, a redirect's
            reconfigure(errors="backslashreplace")


_FAILING = frozenset({"strict", "surrogateescape"})
"""Error handlers that fail on a character the encoding has not (surrogateescape: but bytes)."""


def _holds_any_text(stream: TextIO) -> bool:
    try:
        name = codecs.lookup(getattr(stream, "encoding", None) or "ascii").name
    except LookupError:
        return False
    return name.startswith("utf")  # utf-8, utf-8-sig, utf-16, utf-32
