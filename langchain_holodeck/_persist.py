"""Atomic writes for every saved artefact: a killed process never leaves a torn or mixed save.

A file is written through a temporary file in its directory, fsynced, then ``os.replace``d.
A save made of several files writes each data file under a fresh generation name, then
replaces the one manifest naming them, then removes older generations: readers follow the
manifest, so they see the old save or the new one, never half of each.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import uuid
from collections.abc import Callable, Collection
from pathlib import Path
from typing import IO


def atomic_write(path: Path, write: Callable[[IO[bytes]], None]) -> None:
    """Write ``path`` through a temporary file in its directory, fsync, then ``os.replace``."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
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
    """Delete the files of ``directory`` matching ``pattern`` except ``keep`` (after a save)."""
    for old in directory.glob(pattern):
        if old.name not in keep:
            with contextlib.suppress(FileNotFoundError):
                old.unlink()
