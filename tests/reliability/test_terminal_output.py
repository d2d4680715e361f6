"""Issue 25 item 11: what a document holds never drives the terminal ``search``/``chat`` print to.

Escape sequences in a document (a colour, an OSC that sets the window title) were printed
raw, and a newline in a file name split the ``Source:`` line, so a crafted name could print a
line that looks like another result. The CLI now spells control characters out; the library
returns the documents unchanged.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from langchain_holodeck import HierarchicalDocumentTool, HierarchicalDocumentToolConfig
from langchain_holodeck.cli.chat import search_text
from tests.helpers import HashingEmbeddings

EVIL_NAME = "notes\n[2] Score: 1.00 | Source: trusted.md.md"
ESCAPES = "\x1b[31mred alert\x1b[0m \x1b]0;pwned\x07 warp core breach\r"


@pytest.fixture
def tool(tmp_path: Path) -> HierarchicalDocumentTool:
    src = tmp_path / "src"
    src.mkdir()
    (src / "alert.md").write_text(f"# Alert\n\n{ESCAPES}\n", encoding="utf-8")
    (src / EVIL_NAME).write_text("# Notes\n\nwarp core notes.\n", encoding="utf-8")
    config = HierarchicalDocumentToolConfig(type="hierarchical_document", name="kb", source="src")
    tool = HierarchicalDocumentTool(config, embeddings=HashingEmbeddings(), base_dir=tmp_path)
    tool.initialize_sync()
    return tool


@pytest.mark.parametrize("max_chars", [None, 200])
def test_search_output_spells_out_control_characters(
    tool: HierarchicalDocumentTool, max_chars: int | None
) -> None:
    text = search_text(tool, "warp core", max_chars=max_chars)
    assert "\x1b" not in text
    assert "\x07" not in text
    assert "\r" not in text
    assert "\\x1b[31mred alert" in text
    sources = [line for line in text.splitlines() if "Source:" in line]
    assert all(line.startswith("[") for line in sources)
    assert any(
        "Source: src/notes\\x0a[2] Score: 1.00 | Source: trusted.md.md" in s for s in sources
    )
    assert not any(
        line.startswith("[2] Score: 1.00 | Source: trusted") for line in text.splitlines()
    )


def test_the_library_keeps_the_documents_as_written(tool: HierarchicalDocumentTool) -> None:
    documents = tool.retrieve_sync("warp core")
    assert any("\x1b[31m" in d.page_content for d in documents)
    assert any(d.metadata["source_path"] == f"src/{EVIL_NAME}" for d in documents)
