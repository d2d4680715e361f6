"""SourceLoader: normal behaviour (the bad-input cases live in tests/reliability)."""

from __future__ import annotations

import base64
import builtins
import datetime as dt
import json
import logging
import os
import shutil
import threading
import zipfile
from pathlib import Path
from typing import Any

import pytest
from langchain_core.documents import Document

from langchain_holodeck._converted import promote_empty_headers
from langchain_holodeck.errors import DocumentLoadError, NoSupportedFilesError
from langchain_holodeck.loaders import SUPPORTED_FILE_TYPES, Skipped, SourceFile, SourceLoader
from langchain_holodeck.splitters import StructuredMarkdownSplitter, default_text_splitter

REPO_ROOT = Path(__file__).resolve().parents[2]
LOGGER = "langchain_holodeck.loaders"
DOCS_ORDER = ["api.md", "auth.md", "crew.json", "guide/shifts.txt", "maintenance.csv"]


# ---------------------------------------------------------------- fixture builders
def write_pdf(path: Path, text: str, *more_pages: str) -> None:
    """A minimal valid PDF, one page per text, in Helvetica (pdfminer can read it)."""
    pages = (text, *more_pages)
    count = len(pages)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [%b] /Count %d >>"
        % (b" ".join(b"%d 0 R" % (4 + 2 * i) for i in range(count)), count),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    for i, page in enumerate(pages):
        lines = page.split("\n")
        content = " ".join(
            f"BT /F1 12 Tf 72 {720 - 30 * n} Td ({line}) Tj ET" for n, line in enumerate(lines)
        ).encode("latin-1")
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R"
            b" /Resources << /Font << /F1 3 0 R >> >> >>" % (5 + 2 * i)
        )
        objects.append(b"<< /Length %d >>\nstream\n%b\nendstream" % (len(content), content))
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%b\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    path.write_bytes(bytes(out))


def write_docx(path: Path, paragraphs: list[str]) -> None:
    """A minimal WordprocessingML package (what mammoth, markitdown's docx backend, reads)."""
    body = "".join(f"<w:p><w:r><w:t>{p}</w:t></w:r></w:p>" for p in paragraphs)
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(
            "[Content_Types].xml",
            '<?xml version="1.0" encoding="UTF-8"?>'
            '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
            '<Default Extension="rels" '
            'ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
            '<Default Extension="xml" ContentType="application/xml"/>'
            '<Override PartName="/word/document.xml" ContentType="application/'
            'vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>',
        )
        z.writestr(
            "_rels/.rels",
            '<?xml version="1.0" encoding="UTF-8"?>'
            '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
            '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/'
            '2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>',
        )
        z.writestr(
            "word/document.xml",
            '<?xml version="1.0" encoding="UTF-8"?>'
            '<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">'
            f"<w:body>{body}</w:body></w:document>",
        )


def write_xlsx(path: Path) -> None:
    openpyxl = pytest.importorskip("openpyxl")
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Roster"
    ws.append(["officer", "holodeck_hours"])
    ws.append(["Barclay", 412])
    wb.save(path)


def write_pptx(path: Path) -> None:
    pptx = pytest.importorskip("pptx")
    prs = pptx.Presentation()
    slide = prs.slides.add_slide(prs.slide_layouts[1])
    slide.shapes.title.text = "Holodeck briefing"
    slide.placeholders[1].text = "Safety protocols remain engaged"
    prs.save(path)


def warnings_for(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def below_root(docs: list[Document]) -> list[str]:
    """Each ``source_path`` without its first part, the source folder's name."""
    return [d.metadata["source_path"].split("/", 1)[1] for d in docs]


# ---------------------------------------------------------------- walking and metadata
def test_docstring_example_lists_docs_in_sorted_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO_ROOT)
    loader = SourceLoader("tests/data/docs")
    seen = [(d.metadata["source_path"], d.metadata["file_type"]) for d in loader.lazy_load()]
    assert seen == [
        ("docs/api.md", "md"),
        ("docs/auth.md", "md"),
        ("docs/crew.json", "json"),
        ("docs/guide/shifts.txt", "txt"),
        ("docs/maintenance.csv", "csv"),
    ]


def test_metadata_has_exactly_the_contract_keys_and_values(data_dir: Path) -> None:
    docs = SourceLoader("data/docs/", base_dir=data_dir.parent).load()
    assert [d.metadata["source_path"] for d in docs] == [f"docs/{p}" for p in DOCS_ORDER]
    for doc in docs:
        path = data_dir / "docs" / doc.metadata["source_path"].removeprefix("docs/")
        st = path.stat()
        assert set(doc.metadata) == {"source", "source_path", "file_type", "mtime", "size_bytes"}
        assert doc.metadata["source"] == doc.metadata["source_path"]
        assert doc.metadata["file_type"] == path.suffix.lstrip(".")
        assert isinstance(doc.metadata["mtime"], float)
        assert doc.metadata["mtime"] == st.st_mtime
        assert isinstance(doc.metadata["size_bytes"], int)
        assert doc.metadata["size_bytes"] == st.st_size
        assert json.loads(json.dumps(doc.metadata)) == doc.metadata
        assert doc.id is None  # ids are set by sync, not by the loader


def test_order_is_sorted_by_relative_posix_path(tmp_path: Path) -> None:
    for rel in ["b.md", "a/z.md", "a.md", "a-b.md", "A.md", "a/b/c.md", "c/a.md"]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(f"# {rel}\n", encoding="utf-8")
    rels = [f.source_path for f in SourceLoader(tmp_path, base_dir=tmp_path).iter_files()]
    assert rels == sorted(rels)
    named = ["A.md", "a-b.md", "a.md", "a/b/c.md", "a/z.md", "b.md", "c/a.md"]
    assert rels == [f"{tmp_path.name}/{rel}" for rel in named]
    again = [f.source_path for f in SourceLoader(tmp_path, base_dir=tmp_path).iter_files()]
    assert again == rels


@pytest.mark.parametrize(
    ("source", "base"),
    [
        ("docs", ""),
        ("docs/", ""),
        ("./docs", ""),
        ("data/docs", ".."),
        (".", "docs"),
        ("../docs", "other"),
        ("{tmp}/docs", "other"),
        ("~/docs", "other"),
    ],
)
def test_every_spelling_of_a_folder_names_its_files_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str, base: str
) -> None:
    # source_path (hence the chunk ids) followed the spelling: `ingest docs` from the project
    # and `ingest .` from docs/ deleted and re-added each other's chunks at every run
    project = tmp_path / "project"
    (project / "docs" / "guide").mkdir(parents=True)
    (project / "docs" / "guide" / "api.md").write_text("# API\n", encoding="utf-8")
    (project / "other").mkdir()
    (tmp_path / "data").symlink_to(project, target_is_directory=True)
    monkeypatch.setenv("HOME", str(project))
    base_dir = tmp_path if base == ".." else project / base
    loader = SourceLoader(source.format(tmp=project), base_dir=base_dir)
    assert [d.metadata["source_path"] for d in loader.load()] == ["docs/guide/api.md"]


def test_a_file_source_is_named_by_its_file_name(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "api.md").write_text("# API\n", encoding="utf-8")
    for source in ("docs/api.md", "./docs/api.md", tmp_path / "docs" / "api.md"):
        [doc] = SourceLoader(source, base_dir=tmp_path).load()
        assert doc.metadata["source_path"] == "api.md"


def test_relative_source_without_base_dir_uses_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "notes.txt").write_text("hello", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    [doc] = SourceLoader("notes.txt").load()
    assert doc.metadata["source_path"] == "notes.txt"
    assert doc.page_content == "hello"


def test_a_source_under_home_expands_its_tilde_like_a_shell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `source: ~/notes` was looked up at <agent.yaml's dir>/~/notes and not found
    home = tmp_path / "home"
    (home / "notes" / "old").mkdir(parents=True)
    (home / "notes" / "api.md").write_text("# API\n", encoding="utf-8")
    (home / "notes" / "old" / "v1.md").write_text("# Old\n", encoding="utf-8")
    monkeypatch.setenv("HOME", str(home))
    project = tmp_path / "project"
    docs = SourceLoader("~/notes", base_dir=project, exclude=["~/notes/old"]).load()
    assert [d.metadata["source_path"] for d in docs] == ["notes/api.md"]
    inside = SourceLoader("~/notes/api.md", base_dir=home).load()  # as an absolute path would
    assert [d.metadata["source_path"] for d in inside] == ["api.md"]


def test_hidden_files_and_directories_are_ignored(tmp_path: Path) -> None:
    (tmp_path / "visible.md").write_text("# Visible\n", encoding="utf-8")
    (tmp_path / ".secret.md").write_text("# Hidden\n", encoding="utf-8")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "notes.md").write_text("# Hidden dir\n", encoding="utf-8")
    docs = SourceLoader(tmp_path, base_dir=tmp_path).load()
    assert below_root(docs) == ["visible.md"]


def test_listed_now_holds_a_source_to_the_walks_rules_as_they_are_now(tmp_path: Path) -> None:
    """What an ingest's cleanup asks before deleting the chunks of a file its walk missed."""
    docs = tmp_path / "docs"
    (docs / "old").mkdir(parents=True)
    (docs / ".git").mkdir()
    for name in ("api.md", "old/v1.md", ".git/notes.md", "logo.png", ".draft.md"):
        (docs / name).write_text("# Text\n", encoding="utf-8")
    loader = SourceLoader("docs", base_dir=tmp_path, exclude=["docs/old"])
    asked = [
        "docs/api.md",  # there: listed
        "docs/later.md",  # not there (deleted, or of another folder named docs)
        "docs/old/v1.md",  # excluded
        "docs/.git/notes.md",  # hidden folder
        "docs/.draft.md",  # hidden file
        "docs/logo.png",  # unsupported
        "other/api.md",  # another source's
        "api.md",  # the name a file source gives it
    ]
    assert loader.listed_now(asked) == {"docs/api.md"}
    (docs / "later.md").write_text("# Added since\n", encoding="utf-8")
    assert loader.listed_now(asked) == {"docs/api.md", "docs/later.md"}
    assert SourceLoader("docs/api.md", base_dir=tmp_path).listed_now(asked) == {"api.md"}
    shutil.rmtree(docs)
    assert loader.listed_now(asked) == set()  # the source is gone: nothing is listed


def test_symlink_inside_source_is_followed_once(tmp_path: Path) -> None:
    (tmp_path / "v2").mkdir()
    (tmp_path / "v2" / "api.md").write_text("# API v2\n", encoding="utf-8")
    (tmp_path / "latest").symlink_to(tmp_path / "v2", target_is_directory=True)
    (tmp_path / "alias.md").symlink_to(tmp_path / "v2" / "api.md")
    (tmp_path / ".private").mkdir()
    (tmp_path / ".private" / "only.md").write_text("# Only via link\n", encoding="utf-8")
    (tmp_path / "shared.md").symlink_to(tmp_path / ".private" / "only.md")
    docs = SourceLoader(tmp_path, base_dir=tmp_path).load()
    # v2/api.md is reachable directly: its links add nothing; a link is the only path to .private
    assert below_root(docs) == ["shared.md", "v2/api.md"]


@pytest.mark.parametrize(
    ("name", "swapped"),
    [
        ("b.md", "b.md"),  # the file itself
        ("b.pdf", "b.pdf"),  # a converted format: its worker never opens it by name
        ("sub/b.md", "sub"),  # a folder above it
    ],
)
def test_a_file_swapped_for_a_symlink_out_of_the_source_after_the_walk_is_not_read(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, name: str, swapped: str
) -> None:
    """Found 2026-12-07 (a probe): the walk refused a symlink out of the source, but a file
    swapped for one after the walk, before its read, was read and indexed."""
    docs, outside = tmp_path / "docs", tmp_path / "outside"
    for folder in (docs, outside):
        (folder / "sub").mkdir(parents=True)
        (folder / "a.md").write_text("# A\n\nfirst\n", encoding="utf-8")
        if name.endswith(".pdf"):
            write_pdf(folder / name, "Quarterly TOPSECRET report")
        else:
            (folder / name).write_text("# B\n\nTOPSECRET\n", encoding="utf-8")
    (outside / "a.md").unlink()
    loader = SourceLoader(docs, max_convert_seconds=None)
    files = list(loader.iter_files())
    assert [f.source_path for f in files] == ["docs/a.md", f"docs/{name}"]
    raising = SourceLoader(docs, on_error="raise", max_convert_seconds=None)
    assert list(raising.iter_files()) == files
    target = docs / swapped  # another process, between the walk and the read
    if target.is_dir():
        shutil.rmtree(target)
    else:
        target.unlink()
    target.symlink_to(outside / swapped)

    with caplog.at_level(logging.WARNING, logger=LOGGER):
        loaded = [loader.read_document(f) for f in files]

    assert isinstance(loaded[0], Document)
    assert loaded[1] is Skipped.UNREADABLE  # its chunks are kept, as an unreadable file's
    [warning] = warnings_for(caplog)
    assert warning.startswith(f"Skipping docs/{name}: could not load it")
    assert f"outside the source {docs.resolve()}" in warning
    with pytest.raises(DocumentLoadError, match=f"Could not load 'docs/{name}'.*outside"):
        raising.read_document(files[1])


# ---------------------------------------------------------------- iter_files / load_file
def test_iter_files_stats_without_reading_content(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_open(*args: object, **kwargs: object) -> None:
        msg = "iter_files must not open files"
        raise AssertionError(msg)

    loader = SourceLoader(data_dir / "docs", base_dir=data_dir)
    monkeypatch.setattr(builtins, "open", no_open)
    monkeypatch.setattr(Path, "open", no_open)
    files = list(loader.iter_files())
    monkeypatch.undo()
    assert [f.source_path for f in files] == [f"docs/{p}" for p in DOCS_ORDER]
    api = files[0]
    st = (data_dir / "docs" / "api.md").stat()
    assert api == SourceFile(
        path=(data_dir / "docs" / "api.md").absolute(),
        source_path="docs/api.md",
        file_type="md",
        mtime=st.st_mtime,
        size_bytes=st.st_size,
    )
    with pytest.raises(AttributeError):
        api.mtime = 0.0  # type: ignore[misc]  # frozen: the test checks that it is


def test_lazy_load_is_iter_files_then_load_file(data_dir: Path) -> None:
    loader = SourceLoader(data_dir / "docs")
    halves = [loader.load_file(f) for f in loader.iter_files()]
    assert halves == loader.load()
    assert all(isinstance(d, Document) for d in halves)


async def test_alazy_load_equals_lazy_load_and_loads_off_the_event_loop(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loader = SourceLoader(data_dir / "docs", base_dir=data_dir)
    threads: list[int] = []
    original = SourceLoader.load_file

    def recording(self: SourceLoader, file: SourceFile) -> Document | None:
        threads.append(threading.get_ident())
        return original(self, file)

    monkeypatch.setattr(SourceLoader, "load_file", recording)
    adocs = [d async for d in loader.alazy_load()]
    assert threading.get_ident() not in threads
    assert len(threads) == len(DOCS_ORDER)
    assert adocs == loader.load()
    assert await loader.aload() == adocs


# ---------------------------------------------------------------- content
def test_markdown_and_text_are_read_verbatim(data_dir: Path) -> None:
    docs = {d.metadata["source_path"]: d for d in SourceLoader(data_dir / "docs").load()}
    for rel in ["api.md", "auth.md", "guide/shifts.txt"]:
        expected = (data_dir / "docs" / rel).read_text(encoding="utf-8")
        assert docs[f"docs/{rel}"].page_content == expected


def test_json_is_indented_as_a_json_code_block_short_values_on_one_line(data_dir: Path) -> None:
    [doc] = SourceLoader("docs/crew.json", base_dir=data_dir).load()
    raw = json.loads((data_dir / "docs" / "crew.json").read_text(encoding="utf-8"))
    lines = doc.page_content.splitlines()
    assert lines[:2] == ["```json", "{"]
    assert lines[2] == '  "crew": ' + json.dumps(raw["crew"], ensure_ascii=False)
    assert lines[3:] == ["}", "```"]
    assert json.loads("\n".join(lines[1:-1])) == raw


def test_a_json_arrays_records_are_a_line_each_and_no_chunk_cuts_one(tmp_path: Path) -> None:
    records = [
        {"id": i, "name": f"Widget {i}", "notes": "Rated for long shifts on the deck. " * 4}
        for i in range(60)
    ]
    nested = {"text": "x" * 1_200, "parts": [1, 2]}  # longer than a line holds: opened
    data = {"title": "Inventory", "items": records, "nested": nested}
    (tmp_path / "inventory.json").write_text(json.dumps(data, indent=4), encoding="utf-8")
    [doc] = SourceLoader(tmp_path, base_dir=tmp_path).load()
    body = doc.page_content.removeprefix("```json\n").removesuffix("\n```\n")
    assert json.loads(body) == data
    lines = {line.strip().removesuffix(",") for line in body.splitlines()}
    assert all(json.dumps(record, ensure_ascii=False) in lines for record in records)
    assert '"text": "' + "x" * 1_200 + '"' in lines
    assert '"parts": [1, 2]' in lines
    for splitter in (StructuredMarkdownSplitter(), default_text_splitter()):
        chunks = splitter.split_documents([doc])
        assert len(chunks) > 2
        cut = [r["id"] for r in records if not any(_whole(r, c.page_content) for c in chunks)]
        assert cut == [], f"{type(splitter).__name__} cut records {cut}"


def _whole(record: dict[str, object], text: str) -> bool:
    return json.dumps(record, ensure_ascii=False) in text


def test_invalid_json_is_kept_as_written_in_the_block(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "bad.json").write_text('{"a": 1,}\r\n', encoding="utf-8")
    (tmp_path / "ticks.json").write_text('{"code": "```sh\\nls\\n```"}', encoding="utf-8")
    bad, ticks = SourceLoader(tmp_path, base_dir=tmp_path).load()
    assert bad.page_content == '```json\n{"a": 1,}\n```\n'
    assert "bad.json is not valid JSON" in caplog.text
    assert ticks.page_content.startswith("````json\n{\n")
    assert ticks.page_content.endswith("\n````\n")


def test_csv_becomes_a_markdown_table(data_dir: Path) -> None:
    [doc] = SourceLoader("docs/maintenance.csv", base_dir=data_dir).load()
    assert doc.page_content.splitlines()[:3] == [
        "| component | interval_days | owner |",
        "| --- | --- | --- |",
        "| emitter array | 30 | engineering |",
    ]


def write_notebook(path: Path, cells: list[dict[str, Any]], language: str = "python") -> None:
    notebook = {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {"kernelspec": {"name": "k", "language": language}},
        "cells": cells,
    }
    path.write_text(json.dumps(notebook), encoding="utf-8")


def test_a_notebook_is_its_markdown_cells_and_fenced_code_cells(tmp_path: Path) -> None:
    pixels = "iVBORw0KGgo" * 2000  # a plot's base64 PNG: never in a chunk
    write_notebook(
        tmp_path / "tuning.ipynb",
        [
            {
                "cell_type": "markdown",
                "metadata": {},
                "source": [
                    "# Warp tuning\n",
                    "Set the field ",
                    f"![plot](data:image/png;base64,{pixels})",
                ],
            },
            {
                "cell_type": "code",
                "metadata": {},
                "execution_count": 1,
                "source": ["flux = 3\n", "print('```')"],
                "outputs": [
                    {
                        "output_type": "stream",
                        "name": "stdout",
                        "text": [f"step {i}\n" for i in range(200)],
                    },
                    {
                        "output_type": "display_data",
                        "metadata": {},
                        "data": {"image/png": pixels, "text/plain": ["<Figure>"]},
                    },
                ],
            },
            {"cell_type": "code", "metadata": {}, "source": "", "outputs": []},
        ],
        language="R",
    )
    [doc] = SourceLoader(tmp_path / "tuning.ipynb", base_dir=tmp_path).load()
    assert doc.metadata["file_type"] == "ipynb"
    assert doc.page_content.startswith("# Warp tuning\nSet the field ![plot](data:image/png;")
    assert "````r\nflux = 3\nprint('```')\n````\n\n```output\nstep 0\n" in doc.page_content
    assert "step 9\n...\n```" in doc.page_content
    assert "step 10" not in doc.page_content
    assert "iVBORw0KGgo" not in doc.page_content
    assert len(doc.page_content) < 300


def test_markdown_text_and_json_lose_inline_base64_payloads(tmp_path: Path) -> None:
    # a pasted 45 KB image in a .md file made ~55 chunks of base64 that filled the results
    pixels = base64.b64encode(bytes(range(256)) * 180).decode()
    wrapped = "\n".join(pixels[i : i + 76] for i in range(0, len(pixels), 76))
    (tmp_path / "notes.md").write_text(
        "# Release notes\n\nThe new dashboard:\n\n"
        f"![dashboard](data:image/png;base64,{pixels})\n\n## Fixes\n\nFixed the login timeout.\n",
        encoding="utf-8",
    )
    (tmp_path / "mail.txt").write_text(
        f"Logo: data:image/gif;charset=utf-8;base64,{wrapped}\nRegards,\nthe login team\n",
        encoding="utf-8",
    )
    (tmp_path / "page.md").write_text(  # found 2026-12-07: the payload on the next line
        f'<img src="data:image/png;base64,\n{wrapped}">\n\nA caption.\n', encoding="utf-8"
    )
    (tmp_path / "icons.json").write_text(
        json.dumps({"name": "logo", "src": f"data:image/png;base64,{pixels}"}), encoding="utf-8"
    )
    (tmp_path / "embed.py").write_text(f'LOGO = "data:image/png;base64,{pixels}"\n')
    loaded = SourceLoader(tmp_path, base_dir=tmp_path).load()
    docs = dict(zip(below_root(loaded), [d.page_content for d in loaded], strict=True))
    assert docs["notes.md"] == (
        "# Release notes\n\nThe new dashboard:\n\n![dashboard](data:image/png;base64,)\n\n"
        "## Fixes\n\nFixed the login timeout.\n"
    )
    assert docs["mail.txt"] == (
        "Logo: data:image/gif;charset=utf-8;base64,\nRegards,\nthe login team\n"
    )
    assert docs["page.md"] == '<img src="data:image/png;base64,">\n\nA caption.\n'
    assert '"src": "data:image/png;base64,"' in docs["icons.json"]
    assert pixels in docs["embed.py"]  # source code stays as written
    chunks = StructuredMarkdownSplitter().split_documents(
        SourceLoader(tmp_path / "notes.md").load()
    )
    assert len(chunks) == 2


def test_a_corrupt_notebook_is_one_warning_and_the_rest_load(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "a.md").write_text("# A\n", encoding="utf-8")
    (tmp_path / "broken.ipynb").write_text('{"cells": [{"cell_type": "co', encoding="utf-8")
    (tmp_path / "list.ipynb").write_text("[1, 2]", encoding="utf-8")
    write_notebook(tmp_path / "ok.ipynb", [{"cell_type": "markdown", "source": "# Fine"}])
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        docs = SourceLoader(tmp_path, base_dir=tmp_path).load()
    assert below_root(docs) == ["a.md", "ok.ipynb"]
    assert docs[1].page_content == "# Fine\n"
    [broken] = [w for w in warnings_for(caplog) if "broken.ipynb" in w]
    assert "not a Jupyter notebook: invalid JSON" in broken
    assert "\n" not in broken
    [listed] = [w for w in warnings_for(caplog) if "list.ipynb" in w]
    assert 'no "cells" list' in listed
    loader = SourceLoader(tmp_path / "broken.ipynb", base_dir=tmp_path, on_error="raise")
    with pytest.raises(DocumentLoadError, match=r"'broken\.ipynb': not a Jupyter notebook"):
        loader.load()


def test_json_lines_is_one_record_a_line_and_a_bad_line_is_kept(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "events.jsonl").write_text(
        '{"id": 1, "note": "caf\\u00e9"}\r\n\n{"id": 2,\n[3, {"k": "```"}]\n', encoding="utf-8"
    )
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        [doc] = SourceLoader(tmp_path, base_dir=tmp_path).load()
    assert doc.metadata["file_type"] == "jsonl"
    assert doc.page_content == (
        '````json\n{"id": 1, "note": "café"}\n{"id": 2,\n[3, {"k": "```"}]\n````\n'
    )
    [warning] = warnings_for(caplog)
    assert warning == (
        f"{tmp_path.name}/events.jsonl: 1 line is not valid JSON (line 3); loading it as written."
    )


def test_a_long_json_lines_file_is_split_between_records(tmp_path: Path) -> None:
    lines = [json.dumps({"id": i, "text": f"record {i} " + "warp " * 20}) for i in range(80)]
    (tmp_path / "r.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    [doc] = SourceLoader(tmp_path, base_dir=tmp_path).load()
    chunks = StructuredMarkdownSplitter().split_documents([doc])
    assert len(chunks) > 1
    body = [ln for c in chunks for ln in c.page_content.splitlines() if ln.startswith("{")]
    assert body == lines


def test_a_log_file_is_skipped_not_ingested(tmp_path: Path) -> None:
    # a stray app log of 60k lines would outweigh the documents: it stays out (rename to .txt)
    (tmp_path / "warp.log").write_text("12:00 INFO core online\n" * 3, "utf-8")
    (tmp_path / "guide.md").write_text("# Guide\n\nEngage.\n", "utf-8")
    docs = SourceLoader(tmp_path, base_dir=tmp_path).load()
    assert below_root(docs) == ["guide.md"]


def test_crlf_and_markdown_extensions(tmp_path: Path) -> None:
    (tmp_path / "a.markdown").write_bytes(b"# Title\r\n\r\nBody\r\n")
    (tmp_path / "b.rst").write_bytes(b"Title\n=====\n\nBody\n")
    (tmp_path / "C.MD").write_bytes(b"# Upper\n")
    docs = SourceLoader(tmp_path, base_dir=tmp_path).load()
    assert list(zip(below_root(docs), [d.metadata["file_type"] for d in docs], strict=True)) == [
        ("C.MD", "md"),
        ("a.markdown", "markdown"),
        ("b.rst", "rst"),
    ]
    assert docs[1].page_content == "# Title\n\nBody\n"


def test_html_is_converted_to_markdown_without_scripts(tmp_path: Path) -> None:
    (tmp_path / "page.html").write_text(
        "<html><head><title>T</title><script>alert('x')</script></head>"
        "<body><h1>Bridge</h1><p>Report to <b>deck 4</b>.</p></body></html>",
        encoding="utf-8",
    )
    (tmp_path / "old.htm").write_bytes("<p>Caf\xe9</p>".encode("cp1252"))
    docs = SourceLoader(tmp_path, base_dir=tmp_path).load()
    assert [d.metadata["file_type"] for d in docs] == ["htm", "html"]
    assert docs[0].page_content == "Café"
    assert docs[1].page_content == "# Bridge\n\nReport to **deck 4**."


def test_html_and_docx_keep_underscores_and_asterisks_as_written(tmp_path: Path) -> None:
    # markdownify escaped them (POOL\\_SIZE\\_LIMIT, \\*args): a quoted "POOL_SIZE_LIMIT"
    # had no exact hit and results showed the backslashes
    (tmp_path / "tuning.html").write_text(
        "<main><h1>Tuning_guide</h1><p>Raise POOL_SIZE_LIMIT; call f(*args, **kw) "
        "with <em>care</em>.</p><pre><code>path = r'C:\\new\\x_y' * 2</code></pre>"
        "<table><tr><th>max_retries</th><th>a*b</th></tr><tr><td>3</td><td>4</td></tr>"
        "</table></main>",
        encoding="utf-8",
    )
    write_docx(tmp_path / "tuning.docx", ["Set MAX_RETRIES to 3 and pass *args through."])
    docs = {d.metadata["file_type"]: d for d in SourceLoader(tmp_path, base_dir=tmp_path).load()}
    assert docs["html"].page_content == (
        "# Tuning_guide\n\nRaise POOL_SIZE_LIMIT; call f(*args, **kw) with *care*.\n\n"
        "```\npath = r'C:\\new\\x_y' * 2\n```\n\n"
        "| max_retries | a*b |\n| --- | --- |\n| 3 | 4 |"
    )
    assert docs["docx"].page_content == "Set MAX_RETRIES to 3 and pass *args through."
    [heading, *_] = StructuredMarkdownSplitter().split_documents([docs["html"]])
    assert heading.metadata["heading"] == "Tuning_guide"


def test_pdf_is_converted_by_markitdown(tmp_path: Path) -> None:
    write_pdf(tmp_path / "manual.pdf", "Holodeck safety manual")
    [doc] = SourceLoader(tmp_path / "manual.pdf").load()
    assert doc.metadata["file_type"] == "pdf"
    assert "Holodeck safety manual" in doc.page_content


def test_a_pdf_page_break_is_a_paragraph_break(tmp_path: Path) -> None:
    # pdfminer ends each page with a form feed: it began the next page's first line, so a
    # chunk's text (what a model reads) held "\x0c3.4 Maintenance windows"
    write_pdf(
        tmp_path / "spec.pdf",
        "3.3 Safety\nVent the plasma conduits first.",
        "3.4 Maintenance windows\nDuring gamma shift only.",
    )
    [doc] = SourceLoader(tmp_path / "spec.pdf").load()
    assert "\f" not in doc.page_content
    assert "\n\n3.4 Maintenance windows\n" in doc.page_content
    assert "\n\n\n" not in doc.page_content


def test_a_table_without_header_cells_keeps_its_column_names_in_each_piece(
    tmp_path: Path,
) -> None:
    # markitdown writes a table without <th> (or a Word table) under an empty header row
    # ("|  |  |"), the column names in the first row: each later piece of the cut table
    # repeated "|  |  |" above its rows instead of the names of its columns
    rows = "".join(f"<tr><td>Buffer {i}</td><td>every {i} days</td></tr>" for i in range(60))
    (tmp_path / "checks.html").write_text(
        f"<h1>Checks</h1><table><tr><td>Check</td><td>Frequency</td></tr>{rows}</table>",
        encoding="utf-8",
    )
    [doc] = SourceLoader(tmp_path / "checks.html").load()
    assert "| Check | Frequency |\n| --- | --- |\n| Buffer 0 | every 0 days |" in doc.page_content
    pieces = StructuredMarkdownSplitter(max_table_chunk_tokens=60).split_documents([doc])
    assert len(pieces) > 3
    assert all(p.page_content.count("| Check | Frequency |") == 1 for p in pieces)
    assert all("|  |" not in p.page_content for p in pieces)


def test_promote_empty_headers_changes_only_an_empty_header_row() -> None:
    empty = "|  |  |\n| --- | --- |\n| a \\| b | c |\n| d | e |"
    assert promote_empty_headers(empty) == "| a \\| b | c |\n| --- | --- |\n| d | e |"
    for unchanged in (
        "| x | y |\n| --- | --- |\n| a | b |",  # a header already
        "|  |  |\n| --- | --- |\n|  |  |",  # nothing to promote
        "|  |  |\n| --- | --- |\n| a | b | c |",  # another shape
        "|  |  |\nno table",
        "|\n|  |",  # an empty sheet of an .xlsx
    ):
        assert promote_empty_headers(unchanged) == unchanged


def test_an_xlsx_has_no_nan_cells_and_no_empty_sheet(tmp_path: Path) -> None:
    # pandas wrote an empty cell "NaN" and an empty sheet as "## Blank\n|\n|  |", a
    # garbage chunk of its own
    openpyxl = pytest.importorskip("openpyxl")
    wb = openpyxl.Workbook()
    wb.active.title = "Budget"
    for row in (["Quarter", "Medical"], ["Q1", 45000], ["Q2", None]):
        wb.active.append(row)
    wb.create_sheet("Blank")
    wb.save(tmp_path / "budget.xlsx")
    [doc] = SourceLoader(tmp_path / "budget.xlsx").load()
    assert doc.page_content.strip() == (
        "## Budget\n| Quarter | Medical |\n| --- | --- |\n| Q1 | 45000 |\n| Q2 |  |"
    )


def test_an_xlsx_keeps_each_cell_as_stored(tmp_path: Path) -> None:
    # markitdown read the workbook with pandas' defaults: NA, N/A, None, null, NULL, nan and
    # #N/A were empty cells, 001234 was 1234.0, 120 was 120.0, and a column with a gap was
    # floats in scientific notation (2.540000e+06)
    openpyxl = pytest.importorskip("openpyxl")
    wb = openpyxl.Workbook()
    wb.active.title = "Countries"
    for row in (
        ["Country", "ISO", "Capital", "Population", "Share", "Since"],
        ["Namibia", "NA", "Windhoek", 2540000, 0.25, dt.datetime(1990, 3, 21)],
        ["Unknown", "N/A", "None", None, 0.1 + 0.2, None],
        ["Placeholder", "null", "nan", 120.0, None, None],
        ["Errors", "#N/A", "NULL", 8, None, None],
        [None, None, None, None, None, None],
        ["Invoice", "001234", "a | b", 12345678901234567, True, None],
    ):
        wb.active.append(row)
    wb.active["E2"].number_format = "0%"
    wb.save(tmp_path / "countries.xlsx")
    [doc] = SourceLoader(tmp_path / "countries.xlsx").load()
    assert doc.page_content.strip() == (
        "## Countries\n"
        "| Country | ISO | Capital | Population | Share | Since |\n"
        "| --- | --- | --- | --- | --- | --- |\n"
        "| Namibia | NA | Windhoek | 2540000 | 25% | 1990-03-21 |\n"
        "| Unknown | N/A | None |  | 0.3 |  |\n"
        "| Placeholder | null | nan | 120 |  |  |\n"
        "| Errors | #N/A | NULL | 8 |  |  |\n"
        "| Invoice | 001234 | a \\| b | 1.234567890123457e+16 | TRUE |  |"
    )


def test_an_xlsx_spelling_show_zeros_the_legacy_way_converts(tmp_path: Path) -> None:
    # openpyxl refuses <sheetView showZeroes="0">, which some producers write
    write_xlsx(tmp_path / "plain.xlsx")
    with (
        zipfile.ZipFile(tmp_path / "plain.xlsx") as source,
        zipfile.ZipFile(tmp_path / "roster.xlsx", "w") as target,
    ):
        for item in source.infolist():
            part = source.read(item.filename)
            if item.filename.startswith("xl/worksheets/"):
                part = part.replace(b"<sheetView ", b'<sheetView showZeroes="0" ')
            target.writestr(item, part)
    (tmp_path / "plain.xlsx").unlink()
    [doc] = SourceLoader(tmp_path / "roster.xlsx").load()
    assert "| Barclay | 412 |" in doc.page_content


def test_html_headings_lose_their_permalinks(tmp_path: Path) -> None:
    # Sphinx and MkDocs end each heading with <a class="headerlink" href="#id">¶</a>: it was
    # kept as [¶](#id "...") in the headings ("3.2 Scope¶", "Requirements¶" in every parent
    # chain below it) and in the text
    link = '<a class="headerlink" href="#{0}" title="Link to this heading">¶</a>'
    (tmp_path / "spec.html").write_text(
        f"<h1>Requirements{link.format('req')}</h1>"
        f"<h2>3.2 Scope{link.format('scope')}</h2><p>Covers the injectors.</p>"
        '<p>See <a href="#scope">#</a> and <a href="other.html#x">¶</a>.</p>',
        encoding="utf-8",
    )
    [doc] = SourceLoader(tmp_path / "spec.html").load()
    [chunk] = StructuredMarkdownSplitter().split_documents([doc])
    assert chunk.metadata["heading"] == "3.2 Scope"
    assert chunk.metadata["parent_chain"] == ["Requirements"]
    assert chunk.metadata["section_id"] == "3.2"
    assert chunk.page_content == (
        "# Requirements\n\n## 3.2 Scope\n\nCovers the injectors.\n\nSee  and [¶](other.html#x)."
    )


SPHINX_PAGE = """<html><head><title>Quickstart - Flask</title></head><body>
<div class="related" role="navigation"><ul><li><a href="genindex.html">General Index</a></li>
<li><a href="tutorial.html">Tutorial</a> &raquo;</li></ul></div>
<div class="document"><div class="body" role="main">
<section id="quickstart"><h1>Quickstart</h1><p>Install the package, then run the app.</p>
</section></div>
<div class="sphinxsidebar" role="navigation"><h3>Contents</h3>
<ul><li><a href="api.html">API Reference</a></li><li><a href="license.html">BSD License</a></li>
</ul></div></div>
<div class="footer">&copy; Copyright 2010 Pallets.</div></body></html>"""

MKDOCS_PAGE = """<html><body><header class="md-header"><h1>Starlette</h1>
<nav class="md-tabs"><a href="/">Home</a> <a href="/routing/">Routing</a></nav></header>
<main class="md-main"><nav class="md-nav"><a href="/requests/">Requests</a></nav>
<article class="md-content"><h2>Middleware</h2><p>Add middleware to the app.</p></article>
</main><footer class="md-footer"><a href="/next/">Next: Lifespan</a></footer></body></html>"""


@pytest.mark.parametrize(
    ("page", "kept", "dropped"),
    [
        pytest.param(
            SPHINX_PAGE,
            "# Quickstart\n\nInstall the package, then run the app.",
            ["General Index", "API Reference", "Copyright"],
            id="sphinx: role=main, sidebars role=navigation",
        ),
        pytest.param(
            MKDOCS_PAGE,
            "# Starlette\n\n## Middleware\n\nAdd middleware to the app.",
            ["Home", "Requests", "Next: Lifespan"],
            id="mkdocs: <main> without the page's <h1>, <nav> inside and out",
        ),
    ],
)
def test_a_generated_html_page_is_its_main_content_without_the_site_around_it(
    tmp_path: Path, page: str, kept: str, dropped: list[str]
) -> None:
    # every page of a docs site gave chunks of the same sidebar links and footer
    (tmp_path / "page.html").write_text(page, encoding="utf-8")
    [doc] = SourceLoader(tmp_path / "page.html").load()
    assert doc.page_content == kept
    assert not [text for text in dropped if text in doc.page_content]


def test_an_html_page_without_a_main_element_loses_only_its_navigation(tmp_path: Path) -> None:
    (tmp_path / "page.html").write_text(
        '<body><nav><a href="/">Home</a></nav><h1>Bridge</h1><p>Report to deck 4.</p>'
        '<div role="navigation"><a href="/map">Map</a></div><p>Signed, the captain.</p></body>',
        encoding="utf-8",
    )
    [doc] = SourceLoader(tmp_path / "page.html").load()
    assert doc.page_content == "# Bridge\n\nReport to deck 4.\n\nSigned, the captain."


def test_a_pdf_without_text_says_to_run_ocr(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # a scanned PDF (pages, no text layer) was skipped as "whitespace only", no way out given
    write_pdf(tmp_path / "scan.pdf", "")
    caplog.set_level(logging.WARNING, logger=LOGGER)
    assert SourceLoader(tmp_path).load() == []
    [warning] = warnings_for(caplog)
    assert warning.endswith(
        "scan.pdf: no text content (whitespace only); a PDF of scanned pages "
        "has no text layer: run OCR on it first (e.g. ocrmypdf) to index it."
    )


def test_docx_is_converted_by_markitdown(tmp_path: Path) -> None:
    write_docx(tmp_path / "orders.docx", ["Standing orders", "Report to the bridge."])
    [doc] = SourceLoader(tmp_path / "orders.docx").load()
    assert doc.metadata["file_type"] == "docx"
    assert doc.page_content.split("\n\n") == ["Standing orders", "Report to the bridge."]


def test_xlsx_is_converted_to_a_table_per_sheet(tmp_path: Path) -> None:
    write_xlsx(tmp_path / "roster.xlsx")
    [doc] = SourceLoader(tmp_path / "roster.xlsx").load()
    assert doc.page_content.startswith("## Roster\n")
    assert "| officer | holodeck_hours |" in doc.page_content  # as written, not escaped
    assert "| Barclay | 412 |" in doc.page_content


def test_pptx_is_converted_by_markitdown(tmp_path: Path) -> None:
    write_pptx(tmp_path / "briefing.pptx")
    [doc] = SourceLoader(tmp_path / "briefing.pptx").load()
    assert "Holodeck briefing" in doc.page_content
    assert "Safety protocols remain engaged" in doc.page_content


def _two_slides(*, notes: bool) -> Any:
    """A deck of two titled slides ('Warp core', 'Shields'), with speaker notes if ``notes``."""
    pptx = pytest.importorskip("pptx")
    prs = pptx.Presentation()
    for title, body in [("Warp core", "Never vent plasma."), ("Shields", "Rotate every shift.")]:
        slide = prs.slides.add_slide(prs.slide_layouts[1])
        slide.shapes.title.text = title
        slide.placeholders[1].text = body
        if notes:
            slide.notes_slide.notes_text_frame.text = f"Remind the crew: {title.lower()} drill."
    return prs


def test_no_chunk_of_a_pptx_is_only_a_slide_number_marker(tmp_path: Path) -> None:
    from langchain_holodeck.splitters import StructuredMarkdownSplitter

    prs = _two_slides(notes=False)
    untitled = prs.slides.add_slide(prs.slide_layouts[6])
    untitled.shapes.add_textbox(0, 0, 100, 100).text_frame.text = "Dilithium crystals."
    prs.save(tmp_path / "deck.pptx")
    [doc] = SourceLoader(tmp_path / "deck.pptx").load()
    assert "Slide number" not in doc.page_content
    assert doc.page_content.startswith("# Warp core\nNever vent plasma.")
    assert "Rotate every shift.\n\nDilithium crystals." in doc.page_content
    chunks = StructuredMarkdownSplitter().split_documents([doc])
    assert [chunk.page_content.splitlines()[0] for chunk in chunks] == ["# Warp core", "# Shields"]


def test_speaker_notes_stay_in_their_slides_chunk(tmp_path: Path) -> None:
    # markitdown heads a slide's notes "### Notes:": each note became a tiny chunk of its
    # own, apart from its slide (and ranked for unrelated queries)
    from langchain_holodeck.splitters import StructuredMarkdownSplitter

    prs = _two_slides(notes=True)
    prs.save(tmp_path / "deck.pptx")
    [doc] = SourceLoader(tmp_path / "deck.pptx").load()
    chunks = StructuredMarkdownSplitter().split_documents([doc])
    assert [c.metadata["heading"] for c in chunks] == ["Warp core", "Shields"]
    assert chunks[0].page_content == (
        "# Warp core\nNever vent plasma.\n\nNotes:\nRemind the crew: warp core drill."
    )


def test_without_slide_markers_keeps_other_comments_and_text() -> None:
    from langchain_holodeck.loaders import without_slide_markers

    text = "<!-- Slide number: 12 -->\n# T\nBody <!-- Slide number: 3 --> inline\n<!-- note -->\n"
    assert (
        without_slide_markers(text) == "# T\nBody <!-- Slide number: 3 --> inline\n<!-- note -->\n"
    )
    assert without_slide_markers("a\n<!-- Slide number: 2 -->") == "a\n"


def test_every_supported_type_is_loadable(tmp_path: Path) -> None:
    builders = {
        "pdf": lambda p: write_pdf(p, "pdf text"),
        "docx": lambda p: write_docx(p, ["docx text"]),
        "xlsx": write_xlsx,
        "pptx": write_pptx,
        "csv": lambda p: p.write_text("a,b\n1,2\n", encoding="utf-8"),
        "html": lambda p: p.write_text("<p>html text</p>", encoding="utf-8"),
        "htm": lambda p: p.write_text("<p>htm text</p>", encoding="utf-8"),
        "ipynb": lambda p: write_notebook(p, [{"cell_type": "code", "source": "x = 1"}]),
    }
    for ext in SUPPORTED_FILE_TYPES:
        builders.get(ext, lambda p: p.write_text("plain text", encoding="utf-8"))(
            tmp_path / f"f.{ext}"
        )
    docs = SourceLoader(tmp_path).load()
    assert sorted(d.metadata["file_type"] for d in docs) == sorted(SUPPORTED_FILE_TYPES)


# ---------------------------------------------------------------- skips and errors
def test_unsupported_and_empty_files_are_skipped_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "keep.md").write_text("# Keep\n", encoding="utf-8")
    (tmp_path / "photo.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    (tmp_path / "empty.txt").write_bytes(b"")
    (tmp_path / "blank.md").write_text("  \n\t\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        docs = SourceLoader(tmp_path, base_dir=tmp_path).load()
    assert below_root(docs) == ["keep.md"]
    warnings = warnings_for(caplog)
    assert "Skipping 1 file of unsupported types: png 1 (DEBUG logging lists them; " in warnings[0]
    assert any("empty.txt" in w and "0 bytes" in w for w in warnings)
    assert any("blank.md" in w and "whitespace" in w for w in warnings)


def test_failed_conversion_is_skipped_and_the_rest_continue(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "a.md").write_text("# A\n", encoding="utf-8")
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4\n" + bytes(range(1, 256)) * 8)
    (tmp_path / "z.md").write_text("# Z\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        docs = SourceLoader(tmp_path, base_dir=tmp_path).load()
    assert below_root(docs) == ["a.md", "z.md"]
    [warning] = [w for w in warnings_for(caplog) if "broken.pdf" in w]
    assert "\n" not in warning
    assert "PDFSyntaxError" in warning


def test_on_error_raise_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4\n" + bytes(range(1, 256)) * 8)
    loader = SourceLoader(tmp_path, base_dir=tmp_path, on_error="raise")
    with pytest.raises(
        DocumentLoadError, match=r"Could not load '[^/']+/broken\.pdf': PDFSyntaxError"
    ):
        loader.load()


def test_file_over_max_file_bytes_is_warned_about_and_still_loaded(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "big.md").write_text("# Big\n" + "word " * 100, encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        [doc] = SourceLoader(tmp_path / "big.md", max_file_bytes=100).load()
    assert doc.page_content.startswith("# Big")
    assert any("big.md" in w and "max_file_bytes=100" in w for w in warnings_for(caplog))


def test_missing_source_raises_file_not_found_naming_it(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"source 'nowhere/docs' does not exist"):
        SourceLoader("nowhere/docs", base_dir=tmp_path).load()


def test_source_without_supported_files_says_what_it_found(tmp_path: Path) -> None:
    (tmp_path / "a.png").write_bytes(b"x")
    (tmp_path / "b.png").write_bytes(b"x")
    (tmp_path / "Makefile").write_text("all:\n", encoding="utf-8")
    with pytest.raises(NoSupportedFilesError, match=r"found: 1 \(no extension\), 2 \.png") as e:
        list(SourceLoader(tmp_path).iter_files())
    assert isinstance(e.value, FileNotFoundError)
    (tmp_path / "empty").mkdir()
    with pytest.raises(NoSupportedFilesError, match="found: no files"):
        SourceLoader(tmp_path / "empty").load()
    with pytest.raises(NoSupportedFilesError, match=r"found: 1 \.png"):
        SourceLoader(tmp_path / "a.png").load()


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"on_error": "ignore"}, ValueError, "on_error must be 'raise' or 'skip', got 'ignore'"),
        ({"max_file_bytes": 0}, ValueError, "max_file_bytes must be > 0, got 0"),
        ({"max_file_bytes": 1.5}, TypeError, "max_file_bytes must be an int, got 1.5"),
        ({"encoding_fallbacks": ("klingon",)}, ValueError, "unknown encoding 'klingon'"),
        ({"encoding_fallbacks": "cp1252"}, TypeError, r"write \('cp1252',\)"),
    ],
)
def test_invalid_arguments_are_rejected_before_any_io(
    kwargs: dict[str, object], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        SourceLoader("does/not/matter", **kwargs)  # type: ignore[arg-type]  # bad on purpose


def test_empty_source_string_is_rejected() -> None:
    with pytest.raises(ValueError, match="source must be a file or directory path, got ''"):
        SourceLoader("")


def test_constructor_does_no_io(tmp_path: Path) -> None:
    loader = SourceLoader(tmp_path / "missing")  # exists only at load time
    assert loader.source == tmp_path / "missing"
    os.mkdir(tmp_path / "missing")
    (tmp_path / "missing" / "late.md").write_text("# Late\n", encoding="utf-8")
    assert [d.page_content for d in loader.load()] == ["# Late\n"]
