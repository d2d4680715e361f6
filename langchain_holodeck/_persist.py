"""Atomic writes for every saved artefact: a killed process never leaves a torn or mixed save.

A file is written through a temporary file in its directory, fsynced, then ``os.replace``d.
A save made of several files writes each data file under a fresh generation name, then
replaces the one manifest naming them, then removes older generations: readers follow the
manifest, so they see the old save or the new one, never half of each.

Processes share a saved directory through ``directory_lock``: an advisory ``flock`` on its
``.lock`` file, exclusive for a writer (from its first generation file to the removal of the
old ones), shared for a reader (from the manifest to the last data file). So a writer never
removes a generation another writer has written but not yet named, nor one a reader is
reading; and leftover temporary files, which only a killed writer leaves, are removed by the
next writer.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import IO

LOCK_FILE = ".lock"
"""The file a saved directory's readers and writers ``flock``."""

_STALE_TMP_SECONDS = 60.0
"""A temporary file older than this, found by a writer holding the lock, is a killed write's."""

_held = threading.local()  # this thread's locks: path -> (fd, depth, exclusive)

_WHY_NOT_SAVED = {
    errno.EROFS: ("its file system is read-only", "mount it read-write"),
    errno.EACCES: ("it is not writable by this user", "make it writable"),
    errno.EPERM: ("it is not writable by this user", "make it writable"),
    errno.ENOSPC: ("no space is left on its disk", "free space"),
    errno.EDQUOT: ("the disk quota is exceeded", "free space"),
}


def why_not_saved(error: OSError) -> tuple[str, str]:
    """Why a save into a directory failed, and the fix, in words: ``(why, fix)``.

    A read-only file system, a directory this user cannot write, a full disk or quota; any
    other error is said as itself.
    """
    known = _WHY_NOT_SAVED.get(error.errno or 0)
    if known is not None:
        return known
    return error.strerror or type(error).__name__, "fix that"


def os_error_text(error: OSError) -> str:
    """``[Errno 28] No space left on device``: the error without the file (a temporary's).

    Whoever says it names the directory; an error without an errno is said whole.
    """
    if error.errno is None or not error.strerror:
        return f"{type(error).__name__}: {error}"
    return f"[Errno {error.errno}] {error.strerror}"


def atomic_write(path: Path, write: Callable[[IO[bytes]], None], *, durable: bool = True) -> None:
    """Write ``path`` through a temporary file in its directory, fsync, then ``os.replace``.

    ``durable=False`` skips the fsync: a killed process still never leaves a torn file, but a
    power cut may (for caches, whose readers treat a bad value as a miss).
    """
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            if durable:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """``atomic_write`` of a bytes value (a manifest, a JSON record)."""

    def write(f: IO[bytes]) -> None:
        f.write(data)

    atomic_write(path, write)


def generation_name(stem: str, suffix: str) -> str:
    """A fresh file name for one generation of a multi-file save: ``{stem}-{gen}{suffix}``."""
    return f"{stem}-{uuid.uuid4().hex[:12]}{suffix}"


def remove_other_generations(directory: Path, pattern: str, *, keep: Collection[str]) -> None:
    """Delete the files of ``directory`` matching ``pattern`` except ``keep`` (after a save).

    Call it holding ``directory_lock(directory, exclusive=True)`` since before the kept
    generation was written: then no other writer is between writing a generation and naming
    it, and no reader is reading one.
    """
    for old in directory.glob(pattern):
        if old.name not in keep:
            with contextlib.suppress(FileNotFoundError):
                old.unlink()


def remove_stale_temporaries(directory: Path, *, older_than: float = _STALE_TMP_SECONDS) -> int:
    """Delete the ``.*.tmp`` files of ``atomic_write`` that a killed writer left in ``directory``.

    Call it holding the exclusive ``directory_lock``. Only files older than ``older_than``
    seconds go (a writer of this directory that takes no lock, such as an older version,
    may be writing a young one). Returns how many were removed.
    """
    removed = 0
    cutoff = time.time() - older_than
    for tmp in directory.glob(".*.tmp"):
        with contextlib.suppress(FileNotFoundError):
            if tmp.stat().st_mtime < cutoff:
                tmp.unlink()
                removed += 1
    return removed


@contextlib.contextmanager
def directory_lock(directory: Path, *, exclusive: bool) -> Iterator[None]:
    """Hold an inter-process lock on ``directory`` (created if missing when ``exclusive``).

    Writers take it ``exclusive``, readers shared; it is an advisory ``flock`` on
    ``directory/.lock``, released when the block ends or the process dies (a killed process
    never leaves a stale lock). Re-entrant within a thread; a shared hold cannot be upgraded.
    A directory where the lock file cannot be created (read-only) is read without a lock.

    Raises:
        RuntimeError: When a thread holding the shared lock asks for the exclusive one.
    """
    key = str(Path(directory).absolute())
    held: dict[str, list[int]] = _held.__dict__.setdefault("locks", {})
    if key in held:
        fd, depth, is_exclusive = held[key]
        if exclusive and not is_exclusive:
            msg = f"{key}: asked for the exclusive lock while holding the shared one."
            raise RuntimeError(msg)
        held[key] = [fd, depth + 1, is_exclusive]
        try:
            yield
        finally:
            held[key][1] -= 1
        return
    if exclusive:
        Path(directory).mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(Path(directory) / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:  # missing or read-only directory: no writer can be at work in it either
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        held[key] = [fd, 1, int(exclusive)]
        try:
            yield
        finally:
            del held[key]
    finally:
        os.close(fd)  # closing releases the flock
