"""Issue 7, bad input: the loader on hostile files. Each is skipped or read as specified,
with a WARNING naming the file, and never stops the other files from loading.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from langchain_holodeck.loaders import SourceLoader
from tests.unit_tests.test_loaders import write_docx, write_pdf

LOGGER = "langchain_holodeck.loaders"
REPO_ROOT = Path(__file__).resolve().parents[2]


def load(root: Path, caplog: pytest.LogCaptureFixture, **kwargs: object) -> dict[str, str]:
    """Path below ``root`` -> page_content for everything loaded from it; captures warnings.

    Each ``source_path`` starts with the root's name (``src/good.md``), checked here.
    """
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        docs = SourceLoader(root, base_dir=root, **kwargs).load()  # type: ignore[arg-type]
    named = [d.metadata["source_path"] for d in docs]
    assert all(path.startswith(f"{root.name}/") for path in named), named
    prefix = f"{root.name}/"
    return {path.removeprefix(prefix): d.page_content for path, d in zip(named, docs, strict=True)}


def warnings_naming(caplog: pytest.LogCaptureFixture, name: str) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and name in r.getMessage()
    ]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A source directory holding one good file, so 'the rest continue' is always checked."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "good.md").write_text("# Good\n\nStill loaded.\n", encoding="utf-8")
    return src


# ---------------------------------------------------------------- empty and binary
@pytest.mark.parametrize("name", ["empty.md", "empty.txt", "empty.pdf", "empty.csv"])
def test_zero_byte_file_is_skipped_with_warning(
    root: Path, caplog: pytest.LogCaptureFixture, name: str
) -> None:
    (root / name).write_bytes(b"")
    assert load(root, caplog) == {"good.md": "# Good\n\nStill loaded.\n"}
    [warning] = warnings_naming(caplog, name)
    assert "empty file (0 bytes)" in warning


def test_an_empty_init_py_is_skipped_without_a_warning(
    root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # a Python package marker: a repository has dozens, and each printed a warning line
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_bytes(b"")
    (root / "pkg" / "empty.py").write_bytes(b"")
    assert load(root, caplog) == {"good.md": "# Good\n\nStill loaded.\n"}
    assert not warnings_naming(caplog, "__init__.py")
    [warning] = warnings_naming(caplog, "empty.py")  # any other empty file is still news
    assert "empty file (0 bytes)" in warning


def test_whitespace_only_after_conversion_is_skipped(
    root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (root / "blank.txt").write_bytes(b" \r\n\t\n\n")
    (root / "blank.html").write_text("<html><body> <p> </p> </body></html>", encoding="utf-8")
    assert list(load(root, caplog)) == ["good.md"]
    assert warnings_naming(caplog, "blank.txt")
    assert warnings_naming(caplog, "blank.html")


def test_binary_file_with_md_name_is_skipped(root: Path, caplog: pytest.LogCaptureFixture) -> None:
    (root / "image.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    (root / "late_nul.md").write_bytes(b"# Looks like text\n" * 1000 + b"\x00\x01\x02")
    assert list(load(root, caplog)) == ["good.md"]
    assert "binary content" in warnings_naming(caplog, "image.md")[0]
    assert "binary or undecodable" in warnings_naming(caplog, "late_nul.md")[0]


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16"])
def test_a_nul_in_a_file_with_a_byte_order_mark_is_binary_as_without_one(
    root: Path, caplog: pytest.LogCaptureFixture, encoding: str
) -> None:
    # the NUL check was skipped when a BOM was present: the NUL reached a chunk, and
    # PostgreSQL refused the batch holding it (other files' chunks with it)
    text = "Hello before\x00after the nul byte.\n"
    (root / "bom.txt").write_bytes(text.encode(encoding))
    (root / "plain.txt").write_bytes(text.encode("utf-8"))
    assert list(load(root, caplog)) == ["good.md"]
    assert "binary content (NUL bytes)" in warnings_naming(caplog, "bom.txt")[0]
    assert "binary content (NUL bytes)" in warnings_naming(caplog, "plain.txt")[0]


# ---------------------------------------------------------------- encodings
@pytest.mark.parametrize(
    ("text", "encoding"),
    [
        ("Café naïve \u2013 “quoted” résumé, señor. Déjà vu: 5 €.\n", "cp1252"),
        ("Straße über Öl — fünf Äpfel\n", "cp1252"),
        ("Zażółć gęślą jaźń. Příliš žluťoučký kůň úpěl ďábelské ódy.\n" * 3, "cp1250"),
        ("Съешь же ещё этих мягких французских булок, да выпей чаю. ЭТО ВАЖНО.\n", "cp1251"),
    ],
)
def test_invalid_utf8_is_decoded_with_the_detected_encoding(
    root: Path, caplog: pytest.LogCaptureFixture, text: str, encoding: str
) -> None:
    (root / "legacy.txt").write_bytes(text.encode(encoding))
    with pytest.raises(UnicodeDecodeError):
        text.encode(encoding).decode("utf-8")
    assert load(root, caplog)["legacy.txt"] == text
    assert not warnings_naming(caplog, "legacy.txt")


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-8-sig", "utf-32"])
def test_byte_order_marks_are_honoured(
    root: Path, caplog: pytest.LogCaptureFixture, encoding: str
) -> None:
    text = "# Holodeck ✨\n\nUnicode: Ωμέγα, 日本語, emoji 🖖.\n"
    data = text.encode(encoding)
    if encoding in ("utf-16-le", "utf-16-be"):  # these codecs write no BOM: add it
        data = "\ufeff".encode(encoding) + data
    (root / "bom.md").write_bytes(data)
    (root / "bom.csv").write_bytes("name,rank\nTroi,commander\n".encode("utf-16"))
    docs = load(root, caplog)
    assert docs["bom.md"] == text  # BOM removed, NUL bytes of UTF-16 not mistaken for binary
    assert docs["bom.csv"].splitlines()[0] == "| name | rank |"


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.binary(min_size=1, max_size=2048), ext=st.sampled_from(["md", "txt", "csv", "html"]))
def test_arbitrary_bytes_never_crash_and_valid_text_is_kept(
    tmp_path: Path, data: bytes, ext: str
) -> None:
    path = tmp_path / f"fuzz.{ext}"
    path.write_bytes(data)
    loader = SourceLoader(path)
    [file] = loader.iter_files()
    doc = loader.load_file(file)
    if doc is not None:
        assert doc.page_content.strip()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return
    if ext in ("md", "txt") and "\x00" not in text and text.strip():
        assert doc is not None
        assert doc.page_content == text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")


# ---------------------------------------------------------------- corrupt documents
@pytest.mark.parametrize(
    ("name", "payload"),
    [
        ("random.pdf", b"%PDF-1.4\n" + bytes(range(1, 256)) * 16),
        ("text_looking.pdf", b"%PDF-1.4\nthis is not really a pdf\n"),  # markitdown's
        # MarkItDown.convert() would re-route this to its plain-text converter
        ("zip_garbage.docx", b"PK\x03\x04 not a zip archive"),
        ("not_a_workbook.xlsx", b"col1,col2\n1,2\n"),
        ("not_slides.pptx", b"\x00\x01\x02 garbage"),
    ],
)
def test_corrupt_document_is_skipped_with_one_line_warning(
    root: Path, caplog: pytest.LogCaptureFixture, name: str, payload: bytes
) -> None:
    (root / name).write_bytes(payload)
    assert list(load(root, caplog)) == ["good.md"]
    [warning] = warnings_naming(caplog, name)
    assert "could not load it" in warning
    assert "\n" not in warning


def test_truncated_pdf_is_read_or_skipped_never_raised(
    root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write_pdf(root / "full.pdf", "Truncated manual")
    data = (root / "full.pdf").read_bytes()
    (root / "full.pdf").unlink()
    (root / "half.pdf").write_bytes(data[: len(data) // 2])
    docs = load(root, caplog)
    assert "good.md" in docs
    assert ("half.pdf" in docs) != bool(warnings_naming(caplog, "half.pdf"))


def test_corrupt_file_with_on_error_raise_stops_with_its_path(root: Path) -> None:
    write_docx(root / "ok.docx", ["fine"])
    (root / "bad.pdf").write_bytes(b"%PDF-1.4\n" + bytes(range(1, 256)) * 16)
    with pytest.raises(Exception, match=r"Could not load 'src/bad\.pdf'"):
        SourceLoader(root, base_dir=root, on_error="raise").load()


# ---------------------------------------------------------------- symlinks
def test_symlink_loops_terminate(root: Path, caplog: pytest.LogCaptureFixture) -> None:
    (root / "sub").mkdir()
    (root / "sub" / "deep.md").write_text("# Deep\n", encoding="utf-8")
    (root / "sub" / "back").symlink_to("..", target_is_directory=True)  # loops to the root
    (root / "itself").symlink_to(root, target_is_directory=True)
    (root / "self.md").symlink_to("self.md")  # ELOOP
    (root / "ping.md").symlink_to("pong.md")
    (root / "pong.md").symlink_to("ping.md")
    assert list(load(root, caplog)) == ["good.md", "sub/deep.md"]
    assert "loops back" in warnings_naming(caplog, "sub/back")[0]
    assert "loops back" in warnings_naming(caplog, "itself")[0]
    for name in ("self.md", "ping.md", "pong.md"):
        assert "cannot resolve" in warnings_naming(caplog, name)[0]


def test_a_loader_warns_about_a_symlink_loop_once_however_often_it_walks(
    root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An ingest walks twice (the legacy-chunk check, then the ingest): one WARNING."""
    (root / "sub").mkdir()
    (root / "sub" / "back").symlink_to("..", target_is_directory=True)
    (root / "dangling.md").symlink_to("nowhere.md")
    loader = SourceLoader(root, base_dir=root)
    with caplog.at_level(logging.DEBUG, logger="langchain_holodeck"):
        for _ in range(3):
            assert [f.source_path for f in loader.iter_files()] == ["src/good.md"]
    for name in ("sub/back", "dangling.md"):
        said = [r for r in caplog.records if name in r.getMessage()]
        assert [r.levelno for r in said] == [logging.WARNING, logging.DEBUG, logging.DEBUG]


def test_symlink_escaping_the_source_is_refused(
    root: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("# TOP SECRET\n", encoding="utf-8")
    (root / "leak.md").symlink_to(outside / "secret.md")
    (root / "relative_leak.md").symlink_to("../outside/secret.md")
    (root / "leak_dir").symlink_to(outside, target_is_directory=True)
    (root / "passwd.txt").symlink_to("/etc/passwd")
    (root / "sub").mkdir()
    (root / "sub" / "roundtrip.md").symlink_to("../../src/good.md")  # out and back in: inside
    docs = load(root, caplog)
    assert list(docs) == ["good.md"]
    assert not any("SECRET" in text or "root:" in text for text in docs.values())
    for name in ("leak.md", "relative_leak.md", "leak_dir", "passwd.txt"):
        prefix = f"Refusing symlink src/{name}: it resolves to "
        assert len([w for w in warnings_naming(caplog, name) if w.startswith(prefix)]) == 1
    assert not warnings_naming(caplog, "roundtrip.md")  # a duplicate of good.md, not an escape


def test_symlinked_source_root_is_allowed(tmp_path: Path, root: Path) -> None:
    (tmp_path / "link_to_src").symlink_to(root, target_is_directory=True)
    docs = SourceLoader("link_to_src", base_dir=tmp_path).load()
    assert [d.metadata["source_path"] for d in docs] == ["link_to_src/good.md"]


# ---------------------------------------------------------------- special and unreadable files
@pytest.mark.timeout(30)
def test_fifo_is_skipped_without_blocking(root: Path, caplog: pytest.LogCaptureFixture) -> None:
    os.mkfifo(root / "pipe.md")
    assert list(load(root, caplog)) == ["good.md"]
    assert "not a regular file" in warnings_naming(caplog, "pipe.md")[0]


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads mode-000 files; see the root variant")
def test_unreadable_file_and_directory_are_skipped_as_user(
    root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (root / "secret.md").write_text("# Secret\n", encoding="utf-8")
    (root / "locked").mkdir()
    (root / "locked" / "inner.md").write_text("# Inner\n", encoding="utf-8")
    (root / "secret.md").chmod(0)
    (root / "locked").chmod(0)
    try:
        assert list(load(root, caplog)) == ["good.md"]
    finally:
        (root / "locked").chmod(0o755)
    assert "PermissionError" in warnings_naming(caplog, "secret.md")[0]
    assert warnings_naming(caplog, "locked")


@pytest.fixture
def world_readable_dir() -> Iterator[Path]:
    """A directory an unprivileged user can traverse (pytest's tmp_path is root-only)."""
    path = Path(tempfile.mkdtemp(prefix="holodeck-perm-"))
    path.chmod(0o755)
    yield path
    for sub in path.rglob("*"):
        if sub.is_dir() and not sub.is_symlink():
            sub.chmod(0o755)
    shutil.rmtree(path)


@pytest.mark.skipif(os.geteuid() != 0, reason="the non-root variant covers this")
def test_unreadable_file_and_directory_are_skipped_as_root(world_readable_dir: Path) -> None:
    """Root bypasses file modes, so the load runs in a child that drops to uid/gid 65534.

    The child imports everything while still root (the interpreter lives under /root),
    then ``setgid``/``setuid``, then loads: the permission checks are the kernel's.
    """
    src = world_readable_dir
    (src / "good.md").write_text("# Good\n", encoding="utf-8")
    (src / "secret.md").write_text("# Secret\n", encoding="utf-8")
    (src / "locked").mkdir()
    (src / "locked" / "inner.md").write_text("# Inner\n", encoding="utf-8")
    (src / "secret.md").chmod(0)
    (src / "locked").chmod(0)
    script = textwrap.dedent(
        """
        import json, logging, os, sys
        from langchain_holodeck.loaders import SourceLoader
        logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(message)s")
        try:
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
        except PermissionError as e:
            print(json.dumps({"skip": str(e)}))
            sys.exit(0)
        try:  # what the load imports lazily: the fallback codec, the encoding detector
            import codecs
            codecs.lookup("cp1252")
            import charset_normalizer
        except (LookupError, ImportError, OSError) as e:
            print(json.dumps({"skip": f"uid 65534 cannot import from the interpreter at "
                              f"{sys.prefix} ({type(e).__name__}: {e})"}))
            sys.exit(0)
        docs = SourceLoader(sys.argv[1]).load()
        print(json.dumps({"loaded": [d.metadata["source_path"] for d in docs]}))
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script, str(src)],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        timeout=120,
        check=True,
    )
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    if "skip" in result:
        pytest.skip(f"cannot run as an unprivileged user here: {result['skip']}")
    assert result["loaded"] == [f"{src.name}/good.md"]
    warnings = [line for line in proc.stderr.splitlines() if line.startswith("WARNING")]
    assert any("secret.md" in w and "PermissionError" in w for w in warnings), proc.stderr
    assert any("locked" in w and "cannot list it" in w for w in warnings), proc.stderr


# ---------------------------------------------------------------- large files
def test_sparse_100mb_binary_md_is_warned_twice_and_skipped_quickly(
    root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with (root / "huge.md").open("wb") as fh:
        fh.truncate(101 * 1024**2)  # sparse: no disk writes; all NUL bytes
    assert list(load(root, caplog)) == ["good.md"]
    warnings = warnings_naming(caplog, "huge.md")
    assert any("over max_file_bytes=20971520; loading it anyway" in w for w in warnings)
    assert any("binary content (NUL bytes)" in w for w in warnings)


@pytest.mark.slow
def test_real_100mb_text_file_is_warned_about_and_loaded(
    root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    line = b"The holodeck safety protocols are engaged at all times.\n"
    chunk = line * (1024**2 // len(line) + 1)
    with (root / "big.md").open("wb") as fh:
        for _ in range(101):
            fh.write(chunk)
    size = (root / "big.md").stat().st_size
    assert size > 100 * 1024**2
    docs = load(root, caplog)
    assert len(docs["big.md"]) == size  # ASCII: one character per byte, nothing lost
    assert docs["big.md"].startswith(line.decode())
    assert len(warnings_naming(caplog, "big.md")) == 1
    assert "loading it anyway" in warnings_naming(caplog, "big.md")[0]


# ---------------------------------------------------------------- names
def test_unicode_and_space_names_keep_their_source_path(
    root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (root / "naïve notes").mkdir()
    (root / "naïve notes" / "ünïcode file 🖖.md").write_text("# Vulcan\n", encoding="utf-8")
    docs = load(root, caplog)
    assert docs["naïve notes/ünïcode file 🖖.md"] == "# Vulcan\n"


def test_a_codec_that_cannot_be_imported_is_not_called_unknown() -> None:
    """An interpreter this user cannot read: the message says so, not 'unknown encoding'."""
    script = (
        "import sys; sys.modules['encodings.cp1252'] = None\n"
        "from langchain_holodeck.loaders import SourceLoader\n"
        "try:\n    SourceLoader('.')\nexcept ValueError as e:\n    print(e)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        timeout=120,
        check=True,
    )
    assert "unknown encoding" not in proc.stdout
    assert "the codec 'cp1252' exists but its module encodings.cp1252 could not be loaded" in (
        proc.stdout
    )
    assert "can read the Python installation" in proc.stdout
