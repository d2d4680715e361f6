"""The files below a source folder: a walk that never leaves it, and what it refuses.

``SourceLoader`` lists its files with ``walk`` (symlinks followed only inside the source, each
real file once), after ``refuse_system_directories`` has vetted the folder.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from langchain_holodeck.errors import ConfigError

logger = logging.getLogger("langchain_holodeck.loaders")  # the loader's: what users filter on

_SYSTEM_DIRECTORIES = ("/proc", "/sys", "/dev")


def expand_home(path: str | os.PathLike[str]) -> str:
    """``path`` with a leading ``~`` or ``~user`` expanded: what a shell would open.

    A configured ``source: ~/notes`` otherwise joined the agent.yaml's directory
    (``<dir>/~/notes``) and was not found. A ``~user`` that names no user stays as written.
    """
    return os.path.expanduser(os.fspath(path))


def real_path(path: str | os.PathLike[str]) -> Path:
    """``path`` absolute, its symlinks followed: ``Path.resolve()``, but never raising.

    ``Path.resolve()`` (before Python 3.13) raises ``RuntimeError`` on a symlink loop, which
    reached the CLI as a traceback; here a loop is left as it is, and the loader says what the
    source is.
    """
    return Path(os.path.realpath(path))


def refuse_system_directories(root: str, source: str | os.PathLike[str]) -> None:
    """Refuse the file system root and the kernel's pseudo file systems as a source.

    Raises:
        ConfigError: When ``root`` resolves to ``/`` or lies under /proc, /sys or /dev.
    """
    real = os.path.realpath(root)
    if real == os.path.sep or any(inside(real, d) for d in _SYSTEM_DIRECTORIES):
        msg = (
            f"source {os.fspath(source)!r} resolves to {real!r}, the file system root or a "
            "system directory (/proc, /sys, /dev); point source at a folder of documents."
        )
        raise ConfigError(msg)


def readable_name(name: str) -> str:
    r"""``name`` with each byte that is not UTF-8 (a surrogate escape) spelled as ``\xNN``.

    File names are bytes on POSIX; ``os.fsdecode`` keeps undecodable ones as lone
    surrogates, which no UTF-8 encoder (ids, JSON, Redis) accepts. The escaped form is
    stable, so the file keeps its chunk ids from run to run.
    """
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return name


def inside(path: str, root: str) -> bool:
    return path == root or os.path.commonpath([root, path]) == root


def open_inside(path: str | os.PathLike[str], root_real: str | None) -> BinaryIO:
    """``path`` opened for reading, held to the walk's rule: it must resolve inside the source.

    The walk refuses a symlink resolving outside ``root_real``; a file (or a folder above it)
    swapped for one after the walk is refused here, where it is opened: the real path of
    ``path`` must lie inside ``root_real`` and be the file that was opened (same device and
    inode), and that file must be a regular one. Opened without blocking, so a FIFO swapped in
    is refused, not waited on. ``root_real`` ``None`` (a file source, which names its file
    itself) checks nothing but the opening.

    Raises:
        OSError: When ``path`` cannot be opened, or what it opens is outside ``root_real`` or
            not a regular file.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    handle = os.fdopen(fd, "rb")
    try:
        opened = os.fstat(handle.fileno())
        if not stat.S_ISREG(opened.st_mode):
            msg = "it is no longer a regular file (replaced since the walk); not read"
            raise OSError(msg)
        if root_real is None:
            return handle
        real = os.path.realpath(path)
        if not inside(real, root_real):
            msg = (
                f"it now resolves to {real}, outside the source {root_real} (a symlink put "
                "there since the walk); not read"
            )
            raise OSError(msg)
        if not os.path.samestat(opened, os.stat(real)):
            msg = "it was replaced while it was opened; not read"
            raise OSError(msg)
    except BaseException:
        handle.close()
        raise
    return handle


def walk(
    root: str,
    excluded: set[str] | frozenset[str] = frozenset(),
    warn: Callable[..., None] = logger.warning,
    unlisted: list[tuple[str, OSError]] | None = None,
) -> list[tuple[str, str]]:
    """(posix path relative to root, absolute lexical path) of every regular file below root.

    ``warn`` (``logger.warning``'s signature) reports what the walk skips. Each directory it
    cannot list is appended to ``unlisted`` as (its relative path ending in ``/``, ``""`` for
    ``root``; the error).

    Entries whose real path is in ``excluded`` are left out, directories with all they hold;
    an excluded path that is ``root`` or holds it leaves nothing out.

    Real entries are walked first; symlinks are resolved afterwards in sorted order, so a
    target reachable directly keeps its direct path. Each real file and directory is
    listed once; links escaping ``root`` are refused, links to walked directories skipped.
    """
    root_real = os.path.realpath(root)
    excluded_below = [path_out for path_out in excluded if not inside(root_real, path_out)]
    seen_dirs = {root_real}
    seen_files: set[str] = set()
    found: list[tuple[str, str]] = []
    dirs: list[tuple[str, str, str]] = [("", root, root_real)]  # (rel prefix, path, real path)
    links: list[tuple[str, str]] = []  # (rel, path) of symlinks, resolved once dirs run out
    while dirs or links:
        if not dirs:
            links.sort(reverse=True)
            rel, path = links.pop()
            target = os.path.realpath(path)
            if any(inside(target, path_out) for path_out in excluded_below):
                logger.debug("Ignoring symlink %s: it resolves into an excluded path.", rel)
                continue
            _follow(rel, path, root_real, seen_dirs, seen_files, found, dirs, warn)
            continue
        prefix, dir_path, dir_real = dirs.pop()
        try:
            with os.scandir(dir_path) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as e:
            if unlisted is not None:
                unlisted.append((prefix, e))
            if prefix or unlisted is None:  # the source itself: the caller raises
                warn("Skipping directory %s: cannot list it (%s).", prefix or ".", e)
            continue
        for entry in entries:
            rel = prefix + entry.name
            if entry.name.startswith("."):
                logger.debug("Ignoring hidden %s.", rel)
            elif os.path.join(dir_real, entry.name) in excluded:
                logger.debug("Ignoring %s: excluded (a store directory).", rel)
            elif entry.is_symlink():
                links.append((rel, entry.path))
            elif entry.is_dir(follow_symlinks=False):
                real = os.path.join(dir_real, entry.name)
                if real not in seen_dirs:
                    seen_dirs.add(real)
                    dirs.append((rel + "/", entry.path, real))
            elif entry.is_file(follow_symlinks=False):
                seen_files.add(os.path.join(dir_real, entry.name))
                found.append((rel, entry.path))
            else:
                warn("Skipping %s: not a regular file.", rel)
    found.sort()
    return found


def _follow(
    rel: str,
    path: str,
    root_real: str,
    seen_dirs: set[str],
    seen_files: set[str],
    found: list[tuple[str, str]],
    dirs: list[tuple[str, str, str]],
    warn: Callable[..., None],
) -> None:
    """Resolve one symlink below the source and queue its target if it is safe and new."""
    try:
        st = os.stat(path)  # follows the link; ELOOP / ENOENT for loops and dangling links
    except OSError as e:
        warn("Skipping symlink %s: cannot resolve it (%s).", rel, e.strerror or e)
        return
    real = os.path.realpath(path)
    if not inside(real, root_real):
        warn("Refusing symlink %s: it resolves to %s, outside the source %s.", rel, real, root_real)
        return
    if stat.S_ISDIR(st.st_mode):
        if real in seen_dirs:
            parent_real = os.path.realpath(os.path.dirname(path))
            if inside(parent_real, real):
                warn("Skipping symlink %s: it loops back to %s.", rel, real)
            else:
                logger.debug("Skipping symlink %s: its directory is already loaded.", rel)
            return
        seen_dirs.add(real)
        dirs.append((rel + "/", path, real))
    elif stat.S_ISREG(st.st_mode):
        if real in seen_files:
            logger.debug("Skipping symlink %s: its file is already loaded.", rel)
            return
        seen_files.add(real)
        found.append((rel, path))
    else:
        warn("Skipping %s: not a regular file.", rel)
