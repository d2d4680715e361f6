"""A file whose conversion runs too long or needs too much memory is stopped and skipped.

Issue 25, item 8: ``max_file_bytes`` bounds a file's size (and a zip's unpacked size), but not
the work markitdown does on it: a small file can keep a converter busy for minutes and take
gigabytes. The input here is real: a one-page PDF of 800 KB whose 20 000 text lines pdfminer
lays out for minutes while its memory grows by the second. The conversion runs in a child
process (``langchain_holodeck._conversion``) that is killed at ``max_convert_seconds`` and runs
under an address-space limit of ``max_convert_memory_bytes``; the rest of the folder loads.
"""

from __future__ import annotations

import logging
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from langchain_holodeck import HierarchicalDocumentTool, HierarchicalDocumentToolConfig
from langchain_holodeck._conversion import ConversionPool, ConversionRequest
from langchain_holodeck.loaders import SourceLoader
from tests.helpers import HashingEmbeddings

SLOW_LINES = 20_000
"""Text lines on the slow PDF's one page: pdfminer needs minutes (and gigabytes) for them."""


def write_pdf(path: Path, lines: int) -> None:
    """A valid one-page PDF showing ``lines`` lines of text."""
    ops = ["BT /F1 6 Tf 10 780 Td 8 TL"]
    ops += [f"(line{i} alpha beta gamma delta) Tj T*" for i in range(lines)]
    stream = "\n".join([*ops, "ET"]).encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    path.write_bytes(bytes(out))


def folder(root: Path) -> Path:
    root.mkdir()
    (root / "a.md").write_text("# Alpha\n\nThe alpha procedure.\n", encoding="utf-8")
    write_pdf(root / "quick.pdf", lines=3)
    write_pdf(root / "slow.pdf", lines=SLOW_LINES)
    (root / "z.txt").write_text("The zulu procedure.\n", encoding="utf-8")
    return root


def conversion_workers(parent: int | None = None) -> list[int]:
    """Pids of the live conversion workers of ``parent`` (default: this process; ``/proc``)."""
    parent = os.getpid() if parent is None else parent
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if int(stat[1]) == parent and stat[0] != "Z" and b"_conversion" in cmdline:
            found.append(int(entry.name))
    return found


def dead(pid: int) -> bool:
    """Whether ``pid`` has ended (a zombie waiting for its parent, or gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def skip_warnings(caplog: pytest.LogCaptureFixture, name: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if name in r.getMessage()]


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_a_conversion_past_max_convert_seconds_is_killed_and_the_folder_loads(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = folder(tmp_path / "docs")
    loader = SourceLoader(root, max_convert_seconds=3)
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="langchain_holodeck"):
        docs = loader.load()
    assert time.monotonic() - started < 60  # not the minutes the conversion needs
    assert [Path(d.metadata["source_path"]).name for d in docs] == ["a.md", "quick.pdf", "z.txt"]
    assert "line2 alpha" in docs[1].page_content
    (warning,) = skip_warnings(caplog, "slow.pdf")
    assert "max_convert_seconds=3" in warning
    assert "stopped" in warning
    # the worker converting slow.pdf was killed, not left running: one idle worker remains
    assert len(conversion_workers()) <= 1


def test_a_conversion_past_max_convert_memory_bytes_is_skipped(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    pytest.importorskip("resource")  # no address-space limit without rlimits (Windows)
    root = folder(tmp_path / "docs")
    limit = 700 * 1024**2  # the idle worker maps about 310 MB; pdfminer grows past the rest
    loader = SourceLoader(root, max_convert_seconds=600, max_convert_memory_bytes=limit)
    with caplog.at_level(logging.WARNING, logger="langchain_holodeck"):
        docs = loader.load()
    assert sorted(d.metadata["file_type"] for d in docs) == ["md", "pdf", "txt"]
    (warning,) = skip_warnings(caplog, "slow.pdf")
    assert f"max_convert_memory_bytes={limit}" in warning


def test_the_tool_config_bounds_conversion_and_remembers_the_stopped_file(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``max_convert_seconds`` in the tool's config; a later search re-sync skips the file."""
    monkeypatch.chdir(tmp_path)
    folder(tmp_path / "src")
    config = HierarchicalDocumentToolConfig(
        type="hierarchical_document", name="kb", source="src", max_convert_seconds=3
    )

    def run() -> list[str]:
        caplog.clear()
        tool = HierarchicalDocumentTool(
            config, embeddings=HashingEmbeddings(), base_dir=tmp_path, store_dir=tmp_path / "s"
        )
        with caplog.at_level(logging.WARNING, logger="langchain_holodeck"):
            tool.initialize_sync()
        assert "zulu procedure" in tool.search_sync("zulu procedure")
        return skip_warnings(caplog, "slow.pdf")

    (warning,) = run()
    assert "max_convert_seconds=3" in warning
    assert run() == []  # remembered by mtime and size: not converted (nor stopped) again


@pytest.mark.parametrize("kwargs", [{"max_convert_seconds": 0}, {"max_convert_memory_bytes": -1}])
def test_conversion_limits_must_be_positive(kwargs: dict[str, float]) -> None:
    name, value = next(iter(kwargs.items()))
    with pytest.raises(ValueError, match=f"{name} must be > 0 .*got {value}"):
        SourceLoader("docs", **kwargs)  # type: ignore[arg-type]  # the values under test


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_convert_seconds": float("inf")}, "at most 604800 seconds (a week)"),
        ({"max_convert_seconds": 1e12}, "at most 604800 seconds (a week)"),
        ({"max_convert_memory_bytes": 2**63}, f"at most {2**62} (2**62)"),
    ],
)
def test_conversion_limits_past_their_bound_are_refused(
    kwargs: dict[str, float], message: str
) -> None:
    """Found 2026-12-07: accepted, then every conversion failed (OverflowError past the
    clock's range; an RLIMIT_AS past 2**63 killed each worker as it started)."""
    (name,) = kwargs
    with pytest.raises(ValueError, match=re.escape(f"{name} must be > 0 and {message}")):
        SourceLoader("docs", **kwargs)  # type: ignore[arg-type]  # the values under test


def test_the_largest_limits_taken_convert(tmp_path: Path) -> None:
    """A week and 2**62 bytes, the bounds: the file converts (no overflow, the worker starts)."""
    root = tmp_path / "docs"
    root.mkdir()
    write_pdf(root / "quick.pdf", lines=3)
    loader = SourceLoader(root, max_convert_seconds=604_800, max_convert_memory_bytes=2**62)
    (doc,) = loader.load()
    assert "line2 alpha" in doc.page_content


def test_a_worker_given_an_address_space_past_rlimit_as_still_starts(tmp_path: Path) -> None:
    """The pool itself (no loader check before it): an RLIMIT_AS the C type cannot hold is no
    limit, as where the OS refuses one; the time limit holds."""
    pytest.importorskip("resource")
    write_pdf(tmp_path / "quick.pdf", lines=3)
    pool = ConversionPool(max_seconds=120, max_memory_bytes=2**64)
    try:
        markdown = pool.convert(ConversionRequest("pdf", "quick.pdf", str(tmp_path / "quick.pdf")))
    finally:
        pool.close()
    assert "line2 alpha" in markdown


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_a_worker_killed_while_idle_is_replaced(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    write_pdf(root / "one.pdf", lines=3)
    loader = SourceLoader(root, max_convert_seconds=60)
    assert "line1 alpha" in loader.load()[0].page_content
    workers = conversion_workers()
    assert workers  # the worker stays up for the next file
    for pid in workers:
        os.kill(pid, signal.SIGKILL)  # the OOM killer, an operator
    # At once: a worker that is dying can still look alive (its threads are exiting)
    assert "line1 alpha" in loader.load()[0].page_content
    deadline = time.monotonic() + 30
    while not all(map(dead, workers)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "line1 alpha" in loader.load()[0].page_content


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_a_busy_worker_ends_when_its_parent_is_killed(tmp_path: Path) -> None:
    """A SIGKILLed ingest leaves no conversion running on as an orphan."""
    root = folder(tmp_path / "docs")
    script = (
        "import sys; from langchain_holodeck.loaders import SourceLoader; "
        "SourceLoader(sys.argv[1], max_convert_seconds=600).load()"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    ingest = subprocess.Popen([sys.executable, "-c", script, str(root)], env=env)
    try:
        deadline = time.monotonic() + 120
        workers: list[int] = []
        while not workers and time.monotonic() < deadline:
            time.sleep(0.2)
            workers = conversion_workers(ingest.pid)
        assert workers, "the ingest never started a conversion worker"
        time.sleep(3)  # well into slow.pdf (quick.pdf takes milliseconds)
    finally:
        ingest.kill()
        ingest.wait()
    deadline = time.monotonic() + 30
    while not all(map(dead, workers)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert all(map(dead, workers))
