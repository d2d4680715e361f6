"""``SourceLoader``: one markdown Document per file of a source file or directory."""

from __future__ import annotations

import asyncio
import codecs
import enum
import io
import json
import logging
import os
import re
import stat
import threading
import zipfile
from collections import Counter
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Literal

from langchain_core.document_loaders import BaseLoader
from langchain_core.documents import Document

from langchain_holodeck import _source_walk
from langchain_holodeck._conversion import (
    DEFAULT_MAX_CONVERT_MEMORY_BYTES,
    DEFAULT_MAX_CONVERT_SECONDS,
    MAX_CONVERT_MEMORY_BYTES,
    ConversionError,
    ConversionLimitError,
    ConversionRequest,
    convert,
    converters,
    shared_pool,
)
from langchain_holodeck._converted import promote_empty_headers, without_permalinks
from langchain_holodeck._defaults import check_seconds
from langchain_holodeck._inline_data import without_base64_data
from langchain_holodeck._json_formats import json_lines_markdown, json_text, notebook_markdown
from langchain_holodeck._source_walk import (
    expand_home,
    open_inside,
    readable_name,
    refuse_system_directories,
)
from langchain_holodeck._text_decoding import (
    bom_encoding,
    check_encoding,
    decode,
    mostly_utf8,
    without_lone_surrogates,
)
from langchain_holodeck.errors import (
    DocumentLoadError,
    HolodeckError,
    NoSupportedFilesError,
    SourceUnreadableError,
)
from langchain_holodeck.splitters.code import CODE_LANGUAGES

if TYPE_CHECKING:
    from markitdown import DocumentConverter

logger = logging.getLogger(__name__)
SKIP_SUMMARY = "holodeck_skip_summary"
"""Set (``True``) on the log records of a walk's reports (the unsupported-files summary, a
dangling link, a symlink loop, a FIFO), so a caller that re-checks a source an ingest reported
on (``holodeck-rag search``) can lower them to DEBUG."""

_PROSE_TYPES = frozenset({"md", "markdown", "txt", "rst", "json", "jsonl", "ndjson"})
"""``.log`` stays out: a stray build or app log (tens of thousands of lines) would outweigh
the documents in the index and the ingest; rename a log to ``.txt`` to ingest it."""
_TEXT_TYPES = _PROSE_TYPES | frozenset(CODE_LANGUAGES)
"""Read directly: decoded, newlines normalized, otherwise verbatim (prose: inline base64
``data:`` payloads dropped; JSON: indented, a record a line; JSON Lines: one record a line;
source code: as written)."""
_JSON_LINES_TYPES = frozenset({"jsonl", "ndjson"})
_NOTEBOOK_TYPES = frozenset({"ipynb"})
"""Decoded by us, then made markdown in this process (``notebook_markdown``)."""
_DECODED_CONVERTED_TYPES = frozenset({"csv", "html", "htm"})
"""Decoded by us (BOM, fallbacks, binary check), then converted by markitdown."""
_BINARY_CONVERTED_TYPES = frozenset({"pdf", "docx", "pptx", "xlsx"})
_ZIPPED_TYPES = frozenset({"docx", "pptx", "xlsx"})  # Office Open XML: zip archives
"""Handed to markitdown's converter for the format as a binary stream."""

SUPPORTED_FILE_TYPES: frozenset[str] = (
    _TEXT_TYPES | _NOTEBOOK_TYPES | _DECODED_CONVERTED_TYPES | _BINARY_CONVERTED_TYPES
)
"""Lowercase extensions (no dot) that ``SourceLoader`` reads; others are skipped with a warning."""

_NO_TEXT_LAYER = (
    "; a PDF of scanned pages has no text layer: run OCR on it first (e.g. ocrmypdf) to index it"
)
_SNIFF_BYTES = 8192
_BYTES_PER_CHUNK = 2048
"""About 4 bytes a token and 512 tokens a chunk: a large text file's chunk estimate."""
_PACKAGE_MARKERS = frozenset({"__init__.py", "__init__.pyi"})
"""Files that are empty by design: skipped at DEBUG, not with a WARNING, when they are."""
_SHOWN_BAD_LINES = 5
"""Line numbers a JSON Lines file's warning names before ``...``."""
_SHOWN_KINDS = 8
"""Extensions the skip summary names before ``...``."""


class Skipped(enum.Enum):
    """Why :meth:`SourceLoader.read_document` skipped a file."""

    NO_TEXT = "no text"
    """Nothing to index: empty, whitespace only, binary or undecodable, a zip bomb."""
    FAILED = "failed"
    """Could not be converted (an error or a conversion limit), maybe only for now."""
    UNREADABLE = "unreadable"
    """Could not be opened or read (permissions, an I/O error, gone since the walk): unlike
    ``FAILED``, a fix leaves its mtime and size as they were, so it is worth reading again."""


@dataclass(frozen=True)
class SourceFile:
    """A supported file found under the source: stat data only, content not read."""

    path: Path
    """Absolute path to open (lexical: symlinks inside the source are not resolved)."""
    source_path: str
    """The stable, readable path stored as ``source``/``source_path`` metadata."""
    file_type: str
    """Lowercase extension without the dot, e.g. ``md``, ``pdf``."""
    mtime: float
    """``st_mtime`` of the file (of the target, for a symlink)."""
    size_bytes: int
    """``st_size`` of the file (of the target, for a symlink)."""


DEFAULT_ENCODING_FALLBACKS = ("cp1252",)
"""``SourceLoader``'s default ``encoding_fallbacks``: Windows' Western European code page."""
DEFAULT_MAX_FILE_BYTES = 20 * 1024**2
"""``SourceLoader``'s default ``max_file_bytes``: 20 MiB."""


def encoding_names(encodings: Sequence[str]) -> tuple[str, ...]:
    """``encodings`` by their codec names (``CP1252``, ``windows-1252`` -> ``cp1252``).

    Part of the ingestion fingerprint: other fallbacks read the same bytes as other text.
    """
    return tuple(codecs.lookup(name).name for name in encodings)


CONVERSION_REVISION = 4
"""Raised when the same file converts to other text (1: PDF page breaks, header-less tables,
speaker notes, xlsx empty cells and sheets, HTML permalinks; 2: JSON a record a line; 3: an
HTML page's main content without its navigation; 4: cp1252 French, Italian and Portuguese
read as cp1252, ``.xlsx`` cells as stored, base64 ``data:`` payloads dropped from Markdown,
text and JSON, ``_`` and ``*`` of HTML, Word and slides unescaped). Part of the ingestion
fingerprint: a file ingested before is read again once, though its mtime and size are the ones
recorded."""


class SourceLoader(BaseLoader):
    r"""Load every supported file of a file or directory as one markdown ``Document``.

    ``.md``/``.markdown``/``.txt``/``.rst``/``.json``/``.jsonl``/``.ndjson`` and source code
    (``.py``, ``.js``, ``.ts``, ``.go``, ``.java``, ``.rs``, ``.c``, ``.h``, ``.cpp``, ``.rb``,
    ``.sh``, ``.sql``, ``.toml``, ``.yaml`` and the other extensions of ``CODE_LANGUAGES``) are
    read directly (``.log`` files are skipped: rename one to ``.txt``): UTF-8 (a UTF-8, UTF-16
    or UTF-32 byte-order mark wins), else the encoding charset-normalizer detects, unless one of
    ``encoding_fallbacks`` (in order) decodes the bytes and reads as cleanly, or at most 0.1
    messier (its chaos score) with its non-ASCII characters standing mostly alone or in pairs
    among ASCII letters, as accents do: the detector scores cp1252 French, Italian or Portuguese
    a little messier than cp1250, cp775 or cp1257, which read ``très`` as ``trĶs``, while a
    double-byte, Cyrillic or Greek text read as cp1252 makes runs of symbols and accented
    letters. A text too short for the detector to offer the fallback at all, read by it as a
    double-byte code page or UTF-16 (``Eu não sei.`` as Big5), takes the fallback when, read so,
    its only non-ASCII characters are accented Latin letters standing as accents do. So text of
    another single-byte Latin code page (Polish, Hungarian, Turkish, Baltic) may read as the
    cp1252 default: set ``encoding_fallbacks`` to its code page (KOI8-R Russian is detected as
    Shift-JIS: convert it to UTF-8). In all but source code an inline base64 ``data:`` URI
    (``![plot](data:image/png;base64,iVBOR...)``, a pasted image) keeps its head and loses its
    payload (``_inline_data``), as in notebooks and HTML. JSON is indented (2 spaces) as a
    fenced ``json`` code block, each nested value of at most 1,000 characters on one line, so an
    array's records are a line each and no chunk cuts one in two (invalid JSON: kept as written
    in the block, with a WARNING); JSON Lines is one fenced ``json`` block, one compact record a
    line (a line that is not JSON: kept as written, one WARNING naming the file and its bad
    lines). A Jupyter notebook (``.ipynb``) is decoded the same way and made markdown here:
    markdown cells as written, code cells as fenced blocks in the kernel's language, each
    followed by at most 10 lines of its text output (images, HTML and base64 data left out); a
    notebook that is not valid JSON fails like a corrupt PDF (see ``on_error``).
    ``.csv``/``.html``/``.htm`` are decoded the same way, then converted by markitdown;
    ``.pdf``/``.docx``/``.pptx`` go to markitdown's converter for their extension and ``.xlsx``
    to ours (the extension alone picks the converter, so a corrupt PDF fails instead of being
    read as text; no plugins, no network); a PDF's page breaks (form feeds) become paragraph
    breaks, and a converted table without header cells (``|  |  |``) takes its first row as
    header; a slide's speaker notes follow its text under a ``Notes:`` line (not a heading of
    their own); an ``.xlsx`` is a ``## sheet`` heading over a table per sheet (its first row the
    header), each cell as stored, not as pandas reads it (``NA``, ``null`` and ``#N/A`` stay
    text, ``001234`` keeps its zeros, ``2540000`` is not ``2.540000e+06``), empty rows, columns
    and sheets left out (``_xlsx.SheetTableConverter``); an HTML page is its main element
    (``<main>``, ``role="main"``) without the site's navigation (``<nav>``,
    ``role="navigation"``) when it marks one, and its headings lose the permalinks Sphinx and
    MkDocs end them with (``[¶](#scope)``).

    Directories are walked recursively; files come in sorted order of their ``source_path``. Hidden
    files and directories (name starting with ``.``, e.g. ``.holodeck/``) and the paths of
    ``exclude`` (a store directory inside the source) are ignored. Files of an unsupported extension
    are skipped with one WARNING per walk that counts them by extension (``Skipping 246 files of
    unsupported types: png 183, svg 56, ...``), each named at DEBUG; a loader repeating the same
    walk does not warn again. Skipped with a WARNING naming the file: empty files (0 bytes, or only
    whitespace once converted; an empty ``__init__.py``, a package marker, at DEBUG), binary content
    under a text extension (a NUL, with a byte order mark or without, or not decodable), non-regular
    files, and symlinks resolving outside the source. A file over ``max_file_bytes`` is loaded with
    a WARNING. The formats markitdown converts (``.pdf``, ``.docx``, ``.pptx``, ``.xlsx``, ``.csv``,
    ``.html``, ``.htm``) are converted in a child process (reused, one per thread converting at
    once, shared by the loaders of the process): a conversion still running after
    ``max_convert_seconds`` is stopped (the child is killed), and one that needs more address space
    than ``max_convert_memory_bytes`` fails in the child; either way the file is skipped with one
    WARNING naming it and the limit, and the walk goes on. A file that cannot be read or converted
    is logged (WARNING, one line) and skipped when ``on_error="skip"``; with ``on_error="raise"`` a
    ``DocumentLoadError`` naming it is raised. A directory that cannot be listed is skipped with a
    WARNING in both modes.

    Symlinks below the source are followed only when they resolve inside the (resolved)
    source; each real file and directory is loaded once, under its direct path when it
    has one (else under one of its links, chosen deterministically), so links and link
    loops never duplicate or recurse. Each file is held to that rule again when it is opened
    (the converters get its bytes, never its name): one swapped for a symlink out of the
    source after the walk (or below a folder swapped so) is not read, with one WARNING naming
    it, and counts as unreadable for that run (an ingest keeps its chunks).

    ``source_path`` is the source folder's own name joined with the file's path below it:
    ``docs/guide/shifts.txt`` whether the source was given as ``docs``, ``./docs/``,
    ``data/docs``, ``../docs``, ``~/data/docs``, ``/srv/data/docs`` or ``.`` from inside it,
    so every spelling of one folder gives the same ``source_path`` values, hence the same
    chunk ids (a folder with no name, ``/``, gives the path below it). For a file source it is
    the file's name. The name is the folder's as the path spells it, symlinks not followed
    (``.`` is the working directory's real name): two machines indexing one share into one
    store (a pinned ``corpus_id``) must reach it through folders of the same name. A relative
    source is resolved against ``base_dir`` (default: the working directory at load time); a
    leading ``~`` or ``~user`` is that home directory, as in a shell (``~/notes`` is
    absolute, never ``base_dir/~/notes``).

    Emits metadata: ``source`` and ``source_path`` (same value), ``file_type``,
    ``mtime`` (float), ``size_bytes`` (int).

    Setup:
        Included in the core install (markitdown is a core dependency)::

            pip install langchain-holodeck

    Key init args:
        source: A file or directory.
        base_dir: Directory that a relative ``source`` is resolved against.
        on_error: ``"skip"`` logs and skips a file that fails to read or convert;
            ``"raise"`` raises ``DocumentLoadError``.
        max_file_bytes: Size above which a file is warned about (it is still loaded), with a
            rough count of the chunks a text file that size makes; default 20 MiB.
        max_convert_seconds: Seconds one file's markitdown conversion may take before it is
            stopped and the file skipped; default 120, at most a week (604800). ``None``
            converts in this process, unbounded.
        max_convert_memory_bytes: Address space of the conversion process (``RLIMIT_AS``,
            where the OS has one); default 4 GiB, at most 2**62; ``None``: no limit.
        encoding_fallbacks: Legacy encodings for non-UTF-8 text, in order of preference
            (see above); default ``("cp1252",)``, Windows' Western European code page. Part
            of the ingestion fingerprint: other fallbacks read unchanged files again.
        exclude: Files or directories never loaded (relative and ``~`` ones resolve like
            ``source``), e.g. a store directory that lies inside the source. One that is the
            source or holds it leaves nothing out (its other files are the source's): name the
            files in it that are not, e.g. a store's manifest when the store is the source
            folder.

    Instantiate:
        ```python
        from langchain_holodeck.loaders import SourceLoader

        loader = SourceLoader("tests/data/docs")
        ```

    Lazy load:
        ```python
        for doc in loader.lazy_load():
            print(doc.metadata["source_path"], doc.metadata["file_type"])
        # docs/api.md md
        # docs/auth.md md
        # docs/crew.json json
        # docs/guide/shifts.txt txt
        # docs/maintenance.csv csv
        ```

    Async lazy load:
        ```python
        docs = [doc async for doc in loader.alazy_load()]  # same Documents, same order
        ```
    """

    def __init__(
        self,
        source: str | os.PathLike[str],
        *,
        base_dir: str | os.PathLike[str] | None = None,
        on_error: Literal["raise", "skip"] = "skip",
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        max_convert_seconds: float | None = DEFAULT_MAX_CONVERT_SECONDS,
        max_convert_memory_bytes: int | None = DEFAULT_MAX_CONVERT_MEMORY_BYTES,
        encoding_fallbacks: Sequence[str] = DEFAULT_ENCODING_FALLBACKS,
        exclude: Sequence[str | os.PathLike[str]] = (),
    ) -> None:
        if not os.fspath(source):
            msg = "source must be a file or directory path, got ''."
            raise ValueError(msg)
        if on_error not in ("raise", "skip"):
            msg = f"on_error must be 'raise' or 'skip', got {on_error!r}."
            raise ValueError(msg)
        if isinstance(max_file_bytes, bool) or not isinstance(max_file_bytes, int):
            msg = f"max_file_bytes must be an int, got {max_file_bytes!r}."
            raise TypeError(msg)
        if max_file_bytes <= 0:
            msg = f"max_file_bytes must be > 0, got {max_file_bytes}."
            raise ValueError(msg)
        check_seconds("max_convert_seconds", max_convert_seconds)
        _check_memory_limit(max_convert_memory_bytes)
        if isinstance(encoding_fallbacks, str):
            msg = (
                f"encoding_fallbacks must be a sequence of encodings, got the string "
                f"{encoding_fallbacks!r}; write ({encoding_fallbacks!r},)."
            )
            raise TypeError(msg)
        for name in encoding_fallbacks:
            check_encoding(name)
        self.source = source
        self.base_dir = base_dir
        self.on_error = on_error
        self.max_file_bytes = max_file_bytes
        self.max_convert_seconds = max_convert_seconds
        self.max_convert_memory_bytes = max_convert_memory_bytes
        self.encoding_fallbacks = tuple(encoding_fallbacks)
        self.exclude = tuple(exclude)
        self._walk_warnings: set[str] = set()
        self._read_warnings: set[str] = set()
        self.unreachable: tuple[str, ...] = ()
        """What the last walk could not reach: ``source_path``-style folders (ending in ``/``)
        it could not list and files it could not stat. Their files may still exist: a sync
        keeps what it stored of them (``IngestionPipeline``)."""
        self._walked_real: str | None = None
        """The real path of the folder last walked, which every file read must resolve
        inside (``open_inside``); ``None`` for a file source."""
        self._converters: dict[str, DocumentConverter] | None = None
        self._converters_lock = threading.Lock()

    # ------------------------------------------------------------------ public API
    def lazy_load(self) -> Iterator[Document]:
        """Yield one Document per loadable file, in ``source_path`` order.

        Raises:
            FileNotFoundError: The source does not exist.
            NoSupportedFilesError: The source holds no file of a supported type.
            DocumentLoadError: A file failed to read or convert and ``on_error="raise"``.
        """
        for file in self.iter_files():
            doc = self.load_file(file)
            if doc is not None:
                yield doc

    async def alazy_load(self) -> AsyncIterator[Document]:
        """Like ``lazy_load``; the directory walk and each file run in a worker thread."""
        files = await asyncio.to_thread(self._collect_files)
        for file in files:
            doc = await asyncio.to_thread(self.load_file, file)
            if doc is not None:
                yield doc

    def iter_files(self) -> Iterator[SourceFile]:
        """Yield the supported files in ``source_path`` order, reading no content.

        The walk finishes (and errors are raised) before the first file is yielded.

        Raises:
            FileNotFoundError: The source does not exist.
            NoSupportedFilesError: The source holds no file of a supported type.
        """
        yield from self._collect_files()

    def load_file(self, file: SourceFile) -> Document | None:
        """Read and convert one file; ``None`` when it is skipped (the reason is logged).

        Raises:
            DocumentLoadError: The file failed to read or convert and ``on_error="raise"``.
        """
        loaded = self.read_document(file)
        return loaded if isinstance(loaded, Document) else None

    def read_document(self, file: SourceFile) -> Document | Skipped:
        """:meth:`load_file`, telling why a skipped file was skipped (the reason is logged).

        ``Skipped.NO_TEXT``: the file holds nothing to index (empty, whitespace only, binary or
        undecodable, a zip archive expanding past ``max_file_bytes``). ``Skipped.FAILED``: it
        could not be converted (an error, a conversion limit), maybe only for now.
        ``Skipped.UNREADABLE``: it could not be opened or read (an ``OSError``: permissions,
        an I/O error).

        Raises:
            DocumentLoadError: The file failed to read or convert and ``on_error="raise"``.
        """
        try:
            text = self._read(file)
        except Exception as e:
            said = str(e) if isinstance(e, ConversionError) else f"{type(e).__name__}: {e}"
            reason = " ".join(said.split())[:500]
            if self.on_error == "raise":
                msg = f"Could not load {file.source_path!r}: {reason}"
                raise DocumentLoadError(msg) from e
            said = f"Skipping {file.source_path}: could not load it ({reason})."
            unreadable = isinstance(e, OSError)
            # an unreadable file is tried at every re-check (not remembered): said once
            repeated = unreadable and said in self._read_warnings
            logger.log(logging.DEBUG if repeated else logging.WARNING, "%s", said)
            if unreadable:
                self._read_warnings.add(said)
            return Skipped.UNREADABLE if unreadable else Skipped.FAILED
        if isinstance(text, Skipped):  # reported by _read
            return text
        text = without_lone_surrogates(text, file.source_path)
        if not text.strip():
            hint = _NO_TEXT_LAYER if file.file_type == "pdf" else ""
            logger.warning(
                "Skipping %s: no text content (whitespace only)%s.", file.source_path, hint
            )
            return Skipped.NO_TEXT
        return Document(
            page_content=text,
            metadata={
                "source": file.source_path,
                "source_path": file.source_path,
                "file_type": file.file_type,
                "mtime": file.mtime,
                "size_bytes": file.size_bytes,
            },
        )

    def listed_now(self, sources: Iterable[str]) -> set[str]:
        """Which of ``sources`` (``source_path`` values) a walk of the source lists now.

        For a cleanup about to delete the chunks of files its walk did not list: a file added
        since may be being written by a run that listed it later. One ``stat`` per source, and
        the source walked again only when one of them is there, so the walk's rules (hidden
        names, ``exclude``, links, supported types) decide; a source that cannot be walked now
        lists none of them.
        """
        root, shown = self._root()
        there = {
            source
            for source in sources
            if (path := self._path_of(source, root, shown)) is not None and os.path.exists(path)
        }
        if not there:
            return set()
        try:
            listed = {file.source_path for file in self._collect_files()}
        except (OSError, HolodeckError) as error:  # gone, emptied, unlistable: none listed
            logger.debug("could not walk %s again: %s", root, error)
            return set()
        return there & listed

    @staticmethod
    def _path_of(source: str, root: str, shown: str) -> str | None:
        """The path a walk of ``root`` (named ``shown``) finds ``source`` at; ``None``: not one."""
        if source == shown:  # a file source names itself
            return root
        if shown and not source.startswith(f"{shown}/"):
            return None
        return os.path.join(root, source[len(shown) + 1 :] if shown else source)

    @property
    def root(self) -> str:
        """The source's absolute path (``~`` expanded, a relative one joined to ``base_dir``).

        Links are not resolved: two loaders with one root name their files alike.
        """
        return self._root()[0]

    # ------------------------------------------------------------------ walking
    def _root(self) -> tuple[str, str]:
        """(absolute lexical path of the source, its name: what each ``source_path`` starts with).

        The name is the last component of the absolute path, whatever the spelling (``docs``,
        ``./docs/``, ``.`` inside it, ``/abs/docs``); ``""`` for a root without one (``/``).
        """
        raw = expand_home(self.source)
        absolute = os.path.abspath(os.path.join(self.base_dir or os.getcwd(), raw))
        return absolute, PurePath(absolute).name

    def _collect_files(self) -> list[SourceFile]:
        root, shown = self._root()
        refuse_system_directories(root, self.source)
        if not os.path.exists(root):
            msg = (
                f"source {os.fspath(self.source)!r} does not exist (looked at {root!r}); "
                "pass an existing file or directory."
            )
            if os.path.lexists(root):  # a link: to nothing, or a loop (ELOOP)
                try:
                    os.stat(root)
                except OSError as e:
                    msg = (
                        f"source {os.fspath(self.source)!r} is a symlink that cannot be "
                        f"resolved ({e.strerror or e}: a link loop, or a link to nothing; "
                        f"looked at {root!r}); point it at an existing file or directory."
                    )
            raise FileNotFoundError(msg)
        if os.path.isdir(root):
            excluded = {
                os.path.realpath(os.path.join(self.base_dir or os.getcwd(), expand_home(p)))
                for p in self.exclude
            }

            def named(rel: str) -> str:  # as source_path names files: under the source's name
                return rel if not shown else shown if rel == "." else f"{shown}/{rel}"

            def warn(message: str, rel: str, *args: object) -> None:
                self._warn_walk(message, named(rel), *args)

            unlisted: list[tuple[str, OSError]] = []
            found = [
                (named(rel), path)
                for rel, path in _source_walk.walk(root, excluded, warn, unlisted)
            ]
            if unlisted and unlisted[0][0] == "":  # the source itself: nothing is known
                reason = unlisted[0][1].strerror or unlisted[0][1]
                msg = (
                    f"source {os.fspath(self.source)!r} cannot be listed ({reason}); nothing "
                    "was changed: make it readable and run again."
                )
                raise SourceUnreadableError(msg) from unlisted[0][1]
            unreachable = [readable_name(named(prefix)) for prefix, _ in unlisted]
            self._walked_real = os.path.realpath(root)
        else:
            found = [(shown, root)]
            unreachable = []
            self._walked_real = None
        files: list[SourceFile] = []
        unsupported: Counter[str] = Counter()
        named_as: set[str] = set()
        for raw_source_path, path in found:
            source_path = readable_name(raw_source_path)
            if source_path in named_as:  # a byte not UTF-8 spelt \xNN, and a file named so
                self._warn_walk(
                    "Skipping a second file named %s: a byte that is not UTF-8 is spelt \\xNN "
                    "in names, and another file's name has these characters; rename one.",
                    source_path,
                )
                continue
            named_as.add(source_path)
            ext = os.path.splitext(path)[1].lower().lstrip(".")
            if ext not in SUPPORTED_FILE_TYPES:
                unsupported[f".{ext}" if ext else "(no extension)"] += 1
                logger.debug("Skipping %s: unsupported file type %r.", source_path, ext)
                continue
            try:
                st = os.stat(path)
            except OSError as e:
                self._warn_walk("Skipping %s: cannot stat it (%s).", source_path, e)
                unreachable.append(source_path)
                continue
            if not stat.S_ISREG(st.st_mode):
                self._warn_walk("Skipping %s: not a regular file.", source_path)
                continue
            files.append(SourceFile(Path(path), source_path, ext, st.st_mtime, st.st_size))
        self.unreachable = tuple(unreachable)
        if len(found) == sum(unsupported.values()):
            seen = ", ".join(f"{n} {ext}" for ext, n in sorted(unsupported.items())) or "no files"
            msg = (
                f"source {os.fspath(self.source)!r} has no supported file (found: {seen}); "
                f"supported types: {', '.join(sorted(SUPPORTED_FILE_TYPES))}."
            )
            raise NoSupportedFilesError(msg)
        if unsupported:
            self._report_skips(unsupported)
        files.sort(key=lambda f: f.source_path)
        return files

    def _warn_walk(self, message: str, *args: object) -> None:
        """A WARNING about what a walk skips, DEBUG when this loader said it before.

        A long-running tool walks its source at every re-check: a symlink loop is news once.
        The record is marked ``SKIP_SUMMARY``: a command re-checking a source an ingest
        reported on lowers it to DEBUG too.
        """
        text = message % args if args else message
        level = logging.DEBUG if text in self._walk_warnings else logging.WARNING
        self._walk_warnings.add(text)
        logger.log(level, "%s", text, extra={SKIP_SUMMARY: True})

    def _report_skips(self, unsupported: Counter[str]) -> None:
        """One WARNING counting the unsupported files by extension; DEBUG when repeated."""
        kinds = [(ext.lstrip("."), n) for ext, n in unsupported.most_common()]
        shown = ", ".join(f"{ext} {n}" for ext, n in kinds[:_SHOWN_KINDS])
        if len(kinds) > _SHOWN_KINDS:
            shown += ", ..."
        total = sum(unsupported.values())
        summary = (
            f"Skipping {total} file{'s' if total != 1 else ''} of unsupported types: {shown} "
            "(DEBUG logging lists them; holodeck-rag -v)."
        )
        self._warn_walk(summary)

    # ------------------------------------------------------------------ reading
    def _read(self, file: SourceFile) -> str | Skipped:
        """The file's text, or why it was skipped (reported with one WARNING)."""
        if file.size_bytes == 0:
            # an empty __init__.py marks a Python package: normal, and a repository has many
            level = logging.DEBUG if file.path.name in _PACKAGE_MARKERS else logging.WARNING
            logger.log(level, "Skipping %s: empty file (0 bytes).", file.source_path)
            return Skipped.NO_TEXT
        if file.size_bytes > self.max_file_bytes:
            estimate = (
                f" (as text, roughly {file.size_bytes // _BYTES_PER_CHUNK:,} chunks to embed)"
                if file.file_type in _TEXT_TYPES
                else ""
            )
            logger.warning(
                "%s is %d bytes, over max_file_bytes=%d; loading it anyway%s.",
                file.source_path,
                file.size_bytes,
                self.max_file_bytes,
                estimate,
            )
        # Opened here, never by path elsewhere (a converter's worker gets the bytes): a file
        # swapped for a symlink out of the source since the walk is refused, as the walk
        # refuses one, and is unreadable for this run (an OSError: its chunks are kept).
        with open_inside(file.path, self._walked_real) as fh:
            if file.file_type in _BINARY_CONVERTED_TYPES:
                data = fh.read()
            else:
                head = fh.read(_SNIFF_BYTES)
                if bom_encoding(head) is None and b"\x00" in head:  # binary: the rest unread
                    logger.warning("Skipping %s: binary content (NUL bytes).", file.source_path)
                    return Skipped.NO_TEXT
                data = head + fh.read()
        if file.file_type in _BINARY_CONVERTED_TYPES:
            expanded = _zip_expanded_bytes(data) if file.file_type in _ZIPPED_TYPES else None
            if expanded is not None and expanded > self.max_file_bytes:
                logger.warning(
                    "Skipping %s: it expands to %d bytes, over max_file_bytes=%d (a zip bomb?); "
                    "raise max_file_bytes to load it.",
                    file.source_path,
                    expanded,
                    self.max_file_bytes,
                )
                return Skipped.NO_TEXT
            return self._convert(file, data)
        text, encoding = decode(data, self.encoding_fallbacks)
        if text is not None and "\x00" in text:
            # One rule with or without a byte order mark: text holding a NUL is binary content
            # (UTF-16's zero bytes are not NULs; a NUL character in any encoding is).
            logger.warning("Skipping %s: binary content (NUL bytes).", file.source_path)
            return Skipped.NO_TEXT
        if encoding not in ("utf-8", "utf-8-sig"):  # a few bad bytes in UTF-8 text?
            mostly = mostly_utf8(data)
            if mostly is not None:
                text, encoding = mostly[0], "utf-8"
                logger.warning(
                    "%s: %d invalid UTF-8 byte sequence(s) replaced with U+FFFD; the rest "
                    "is read as UTF-8.",
                    file.source_path,
                    mostly[1],
                )
        if text is None:
            logger.warning(
                "Skipping %s: binary or undecodable content (not UTF-8, no BOM, no plausible "
                "encoding among detection and encoding_fallbacks=%s).",
                file.source_path,
                list(self.encoding_fallbacks),
            )
            return Skipped.NO_TEXT
        if encoding not in ("utf-8", "utf-8-sig"):
            logger.debug("Decoded %s as %s.", file.source_path, encoding)
        if file.file_type in _PROSE_TYPES:  # source code stays as written
            text = without_base64_data(text)
        if file.file_type == "json":
            return _json_code_block(text, file.source_path)
        if file.file_type in _JSON_LINES_TYPES:
            return _json_lines(text, file.source_path)
        if file.file_type in _NOTEBOOK_TYPES:
            try:
                return notebook_markdown(text)
            except ValueError as error:  # one WARNING (or DocumentLoadError) by read_document
                raise ConversionError(str(error)) from error
        if file.file_type in _TEXT_TYPES:
            return text.replace("\r\n", "\n").replace("\r", "\n")
        return self._convert(file, text.encode("utf-8"), charset="utf-8")

    def _convert(
        self, file: SourceFile, data: bytes, *, charset: str | None = None
    ) -> str | Skipped:
        """The markdown markitdown makes of ``data``, ``file``'s bytes, bounded.

        ``data`` is the file as read, or its decoded text encoded as ``charset``.
        ``Skipped.FAILED`` (with one WARNING) when a conversion limit stopped it.
        """
        request = ConversionRequest(
            file.file_type, file.path.name, str(file.path), data=data, charset=charset
        )
        seconds = self.max_convert_seconds
        if seconds is None:
            markdown = convert(request, self._converters_table())
        else:
            try:
                pool = shared_pool(
                    max_seconds=seconds, max_memory_bytes=self.max_convert_memory_bytes
                )
                markdown = pool.convert(request)
            except ConversionLimitError as error:
                logger.warning("Skipping %s: %s.", file.source_path, error)
                return Skipped.FAILED
        if file.file_type == "pptx":
            markdown = _NOTES_HEADING.sub("Notes:", without_slide_markers(markdown))
        elif file.file_type == "pdf":  # pdfminer ends each page with a form feed
            markdown = markdown.replace("\f", "\n\n")
        elif file.file_type in ("html", "htm"):
            markdown = without_permalinks(markdown)
        markdown = promote_empty_headers(markdown)
        # markitdown's own normalization (MarkItDown._convert): strip line ends, <= 1 blank line
        markdown = "\n".join(line.rstrip() for line in re.split(r"\r?\n", markdown))
        return re.sub(r"\n{3,}", "\n\n", markdown)

    def _converters_table(self) -> dict[str, DocumentConverter]:
        with self._converters_lock:
            if self._converters is None:
                self._converters = converters()
            return self._converters


_SLIDE_MARKER = re.compile(r"^<!-- Slide number: \d+ -->[ \t]*(?:\r?\n|\Z)", re.MULTILINE)
"""The comment markitdown writes above each slide of a ``.pptx``."""


_NOTES_HEADING = re.compile(r"^### Notes:[ \t]*$", re.MULTILINE)
"""The heading markitdown writes above a slide's speaker notes: made a plain ``Notes:`` line,
so the notes stay in their slide's chunk (a heading made them a tiny chunk of their own, apart
from the slide they explain, found by unrelated searches)."""


def without_slide_markers(markdown: str) -> str:
    """``markdown`` without markitdown's ``<!-- Slide number: N -->`` lines.

    Each stood before its slide's title heading, so the splitter made the first one a chunk
    of its own, found by searches, and left the others at the end of the previous slide.
    """
    return _SLIDE_MARKER.sub("", markdown)


def _check_memory_limit(value: object) -> None:
    """``max_convert_memory_bytes`` is ``None`` or an int from 1 to ``MAX_CONVERT_MEMORY_BYTES``."""
    name = "max_convert_memory_bytes"
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        msg = f"{name} must be a positive int or None, got {value!r}."
        raise TypeError(msg)
    if not 0 < value <= MAX_CONVERT_MEMORY_BYTES:
        msg = (
            f"{name} must be > 0 and at most {MAX_CONVERT_MEMORY_BYTES} (2**62), or None for "
            f"no limit, got {value!r}."
        )
        raise ValueError(msg)


def _json_code_block(text: str, source_path: str) -> str:
    """JSON indented (``json_text``: a record a line) in a fenced ``json`` code block.

    Invalid JSON is kept as written, in the same block, with a WARNING naming the file. The
    fence is longer than any backtick run in the content, so the block always closes.
    """
    body = text.replace("\r\n", "\n").replace("\r", "\n").strip()
    try:
        body = json_text(json.loads(body))
    except ValueError as error:
        logger.warning("%s is not valid JSON (%s); loading it as written.", source_path, error)
    except RecursionError:  # valid, but nested deeper than the parser's stack
        logger.warning("%s nests too deeply to pretty-print; loading it as written.", source_path)
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}json\n{body}\n{fence}\n"


def _json_lines(text: str, source_path: str) -> str:
    """A JSON Lines file as a fenced ``json`` block; one WARNING names its bad lines."""
    markdown, bad = json_lines_markdown(text)
    if bad:
        shown = ", ".join(str(n) for n in bad[:_SHOWN_BAD_LINES])
        logger.warning(
            "%s: %d line%s not valid JSON (line %s%s); loading %s as written.",
            source_path,
            len(bad),
            "s are" if len(bad) > 1 else " is",
            shown,
            ", ..." if len(bad) > _SHOWN_BAD_LINES else "",
            "them" if len(bad) > 1 else "it",
        )
    return markdown


def _zip_expanded_bytes(data: bytes) -> int | None:
    """The uncompressed size of the zip archive ``data`` (its directory's sum), or ``None``.

    Read from the central directory, without inflating anything; bytes that are not a zip
    give ``None`` (the converter then reports it).
    """
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            return sum(info.file_size for info in archive.infolist())
    except (zipfile.BadZipFile, OSError, ValueError):
        return None
