"""Bounded conversion: markitdown converts a file in a child process, under a time and memory cap.

``SourceLoader`` hands the formats markitdown converts (PDF, Office, HTML, CSV) to the
process's :func:`shared_pool`. Each worker is a child Python that imports markitdown's
converters only, converts one file at a time and stays up for the next, so a process pays
one start-up per thread converting at once (text formats never come here); workers end
when the process exits. A conversion still running after ``max_seconds`` is
stopped: the worker is killed and the next file gets a fresh one. The worker runs under an
address-space limit (``RLIMIT_AS``, where the OS has one), so a conversion that needs more
memory fails in the child instead of swapping the machine. Either way the caller goes on
with the next file; :class:`ConversionLimitError` says which limit was hit.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import pickle
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, BinaryIO

if TYPE_CHECKING:
    from markitdown import DocumentConverter

DEFAULT_MAX_CONVERT_SECONDS = 120.0
"""Seconds one file's conversion may take by default before it is stopped and skipped."""
DEFAULT_MAX_CONVERT_MEMORY_BYTES = 4 * 1024**3
"""Address space a conversion worker may use by default (4 GiB; ``RLIMIT_AS``)."""
MAX_CONVERT_MEMORY_BYTES = 2**62
"""The largest address-space limit taken (4 EiB, past any machine's memory): ``RLIMIT_AS`` is
a 64-bit number, and a limit past it killed every worker as it started."""

_MARKDOWNIFIED = frozenset({"html", "htm", "docx", "pptx"})
"""Formats markitdown writes through markdownify (HTML; Word via mammoth's HTML; slides' tables)."""
_AS_WRITTEN = {"escape_underscores": False, "escape_asterisks": False}
"""markdownify's options: ``_`` and ``*`` as written. Its default escapes them
(``POOL\\_SIZE\\_LIMIT``, ``\\*args``): a quoted identifier had no exact match, and results
showed the backslashes. Code blocks were never escaped; other escapes are markdownify's."""
_START_SECONDS = 120.0
"""How long a worker may take to start (import markitdown); not counted against a file."""
_PACKAGE_PARENT = str(Path(__file__).resolve().parents[1])


class ConversionError(Exception):
    """The converter failed in the worker; the message is its error, ``Type: message``."""


class ConversionLimitError(Exception):
    """A conversion was stopped by a limit; ``limit`` is ``"time"`` or ``"memory"``."""

    def __init__(self, message: str, *, limit: str) -> None:
        super().__init__(message)
        self.limit = limit


@dataclass(frozen=True)
class ConversionRequest:
    """One file to convert: its extension, where it is, or its decoded bytes."""

    file_type: str
    """Lowercase extension without the dot; picks the converter."""
    filename: str
    """The file's name (markitdown's ``StreamInfo.filename``)."""
    local_path: str
    """The file on disk; read by the worker when ``data`` is ``None``."""
    data: bytes | None = None
    """The bytes to convert instead of the file's (text the loader decoded, as UTF-8)."""
    charset: str | None = None
    """The charset of ``data``."""


def converters() -> dict[str, DocumentConverter]:
    """The converter of markitdown per extension (no plugins, no network); ``.xlsx``: ours."""
    from markitdown.converters import CsvConverter, DocxConverter, PdfConverter, PptxConverter

    from langchain_holodeck._html import PageHtmlConverter  # imports markitdown: child only
    from langchain_holodeck._xlsx import SheetTableConverter

    html = PageHtmlConverter()  # the page's main content, without the site's navigation
    return {
        "csv": CsvConverter(),
        "html": html,
        "htm": html,
        "pdf": PdfConverter(),
        "docx": DocxConverter(),
        "pptx": PptxConverter(),
        "xlsx": SheetTableConverter(),  # the cells as shown, not as pandas reads them
    }


def convert(request: ConversionRequest, table: dict[str, DocumentConverter]) -> str:
    """The markdown markitdown makes of ``request``, in this process."""
    import io

    from markitdown import StreamInfo

    info = StreamInfo(
        extension=f".{request.file_type}",
        charset=request.charset,
        filename=request.filename,
        local_path=request.local_path,
    )
    converter = table[request.file_type]
    options = _AS_WRITTEN if request.file_type in _MARKDOWNIFIED else {}
    if request.data is not None:
        return converter.convert(io.BytesIO(request.data), info, **options).markdown
    with open(request.local_path, "rb") as stream:
        return converter.convert(stream, info, **options).markdown


class _Worker:
    """One child process serving conversions over its stdin and stdout (pickled frames)."""

    def __init__(self, memory_bytes: int | None) -> None:
        path = os.environ.get("PYTHONPATH")
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([_PACKAGE_PARENT, *([path] if path else [])]),
        }
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "from langchain_holodeck._conversion import serve; raise SystemExit(serve())",
                str(memory_bytes or 0),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self.ready = False

    def ask(self, request: ConversionRequest | None, seconds: float) -> tuple[Any, ...]:
        """Send ``request`` (``None``: wait for start-up) and the reply within ``seconds``.

        Returns ``("timeout",)`` after killing the worker when no reply came in time, and
        ``("died", returncode)`` when the worker ended without one.
        """
        stdin, stdout = self.process.stdin, self.process.stdout
        if stdin is None or stdout is None:  # pragma: no cover - Popen was given PIPE
            return ("died", None)
        reply: list[tuple[Any, ...]] = []
        if request is not None:
            try:
                pickle.dump(request, stdin)
                stdin.flush()
            except OSError:
                return ("died", self.process.poll())
        reader = threading.Thread(target=_read_reply, args=(stdout, reply), daemon=True)
        reader.start()
        reader.join(seconds)
        if reader.is_alive():
            self.kill()
            reader.join()
            return ("timeout",)
        if not reply:
            self.kill()
            return ("died", self.process.returncode)
        return reply[0]

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            self.process.kill()
        self.process.wait()
        for pipe in (self.process.stdin, self.process.stdout):
            with contextlib.suppress(OSError):
                if pipe is not None:
                    pipe.close()

    def close(self) -> None:
        """End the worker: closing its stdin ends its loop; kill it if it lingers."""
        with contextlib.suppress(OSError):
            if self.process.stdin is not None:
                self.process.stdin.close()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()
        if self.process.stdout is not None:
            self.process.stdout.close()


def _read_reply(stdout: IO[bytes], reply: list[tuple[Any, ...]]) -> None:
    with contextlib.suppress(EOFError, OSError, ValueError, pickle.UnpicklingError):
        reply.append(pickle.load(stdout))


class ConversionPool:
    """Conversion workers, started on demand; one per thread converting at once.

    Instantiate:
        ```python
        pool = ConversionPool(max_seconds=120.0, max_memory_bytes=4 * 1024**3)
        markdown = pool.convert(ConversionRequest("pdf", "a.pdf", "/docs/a.pdf"))
        pool.close()
        ```
    """

    def __init__(self, *, max_seconds: float, max_memory_bytes: int | None) -> None:
        self.max_seconds = max_seconds
        self.max_memory_bytes = max_memory_bytes
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()

    def convert(self, request: ConversionRequest) -> str:
        """The markdown of ``request``, converted in a worker.

        Raises:
            ConversionLimitError: When the conversion ran past ``max_seconds`` (the worker
                is killed) or past ``max_memory_bytes`` (the worker is replaced).
            ConversionError: When the converter failed (its error, one line), the worker
                ended without a reply or could not start.
        """
        worker, reused = self._take()
        reply = worker.ask(request, self.max_seconds)
        if reply[0] == "died" and reused:
            # An idle worker killed from outside can still look alive for a moment (its
            # threads are exiting, so it cannot be reaped yet): once more, on a fresh one.
            worker.kill()
            worker = self._start()
            reply = worker.ask(request, self.max_seconds)
        kind = reply[0]
        if kind == "ok":
            self._give_back(worker)
            return str(reply[1])
        if kind == "error":
            self._give_back(worker)
            raise ConversionError(reply[1])
        if kind == "timeout":
            msg = (
                f"converting it took longer than max_convert_seconds={self.max_seconds:g}; "
                "the conversion was stopped (raise max_convert_seconds to load it)"
            )
            raise ConversionLimitError(msg, limit="time")
        worker.kill()
        if kind == "memory" or self.max_memory_bytes is not None:
            # a converter's C code may crash instead of raising MemoryError at the limit
            how = "ran out of memory" if kind == "memory" else f"crashed (exit code {reply[1]})"
            msg = (
                f"its conversion {how} under max_convert_memory_bytes={self.max_memory_bytes} "
                "(raise max_convert_memory_bytes to load it)"
            )
            raise ConversionLimitError(msg, limit="memory")
        msg = f"the conversion process crashed (exit code {reply[1]})"
        raise ConversionError(msg)

    def _take(self) -> tuple[_Worker, bool]:
        """An idle worker still running (and ``True``: it was reused), else a fresh one."""
        with self._lock:
            while self._idle:
                worker = self._idle.pop()
                if worker.process.poll() is None:
                    return worker, True
                worker.kill()  # ended while idle (killed from outside): start another
        return self._start(), False

    def _start(self) -> _Worker:
        worker = _Worker(self.max_memory_bytes)
        reply = worker.ask(None, _START_SECONDS)
        if reply[0] != "ready":
            worker.kill()
            msg = f"the conversion process did not start ({' '.join(map(str, reply))})"
            raise ConversionError(msg)
        return worker

    def _give_back(self, worker: _Worker) -> None:
        with self._lock:
            self._idle.append(worker)

    def close(self) -> None:
        """End every idle worker (a busy one ends when its conversion returns)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.close()


_POOLS: dict[tuple[float, int | None], ConversionPool] = {}
_POOLS_LOCK = threading.Lock()


def shared_pool(*, max_seconds: float, max_memory_bytes: int | None) -> ConversionPool:
    """The process's pool for these limits: every loader with the same limits shares it."""
    key = (float(max_seconds), max_memory_bytes)
    with _POOLS_LOCK:
        pool = _POOLS.get(key)
        if pool is None:
            pool = _POOLS[key] = ConversionPool(
                max_seconds=key[0], max_memory_bytes=max_memory_bytes
            )
        return pool


@atexit.register
def _close_pools() -> None:
    with _POOLS_LOCK:
        pools = list(_POOLS.values())
    for pool in pools:
        pool.close()


def _limit_memory(max_bytes: int) -> None:
    try:
        import resource
    except ImportError:  # Windows: no rlimits, the time limit still holds
        return
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = max_bytes if hard == resource.RLIM_INFINITY else min(max_bytes, hard)
    # macOS may refuse, a limit past the C type overflows: the time limit holds
    with contextlib.suppress(ValueError, OverflowError, OSError):
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def _exit_with(parent: int) -> None:
    """End this worker when its parent has gone (a killed parent leaves no busy orphan)."""
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(1)


def serve() -> int:
    """The worker's loop: read a request, reply with its markdown or its error, repeat.

    Replies go to a private copy of stdout; stdout itself is pointed at stderr, so a
    library that prints cannot corrupt a reply. Ends when stdin closes (the parent is done
    or gone; a busy worker notices within a second that its parent is gone), and after a
    ``MemoryError`` (the parent starts a fresh worker).
    """
    parent = os.getppid()
    threading.Thread(target=_exit_with, args=(parent,), daemon=True).start()
    replies: BinaryIO = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    requests = sys.stdin.buffer
    max_bytes = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    table = converters()
    if max_bytes > 0:
        _limit_memory(max_bytes)
    pickle.dump(("ready",), replies)
    replies.flush()
    while True:
        try:
            request = pickle.load(requests)
        except (EOFError, OSError):
            return 0
        try:
            reply: tuple[Any, ...] = ("ok", convert(request, table))
        except MemoryError:
            reply = ("memory",)
        except Exception as error:
            reply = ("error", " ".join(f"{type(error).__name__}: {error}".split())[:500])
        try:
            pickle.dump(reply, replies)
            replies.flush()
        except MemoryError:
            return 1
        if reply[0] == "memory":
            return 1
