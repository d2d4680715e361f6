"""A generated docs site's HTML pages: what markitdown's converter keeps against ours.

    python benchmarks/bench_html_pages.py DIR [DIR ...]

Each DIR is a folder of HTML pages of one site (e.g. the mdBook books a Rust toolchain
installs under ``share/doc/rust/html/``: ``book``, ``cargo``, ``rustc``, ``rustdoc``).
Every ``.html`` file under it is converted twice, in this process: by markitdown's
``HtmlConverter`` (the whole ``<body>``, what the loader did before) and by ours
(``PageHtmlConverter``: the main element, without the site's navigation), then split by
the default ``StructuredMarkdownSplitter``. Printed per site: pages, chunks, the characters
they hold, and the **boilerplate chunks**: chunks holding a line that repeats on at least
half of the site's pages (a sidebar, a header, a footer: text no page is about). Lines that
hold only markup (``---``, fences, list bullets) do not count. And **content lines lost**:
lines of markitdown's page that ours lacks, not counting those repeated lines.
"""

from __future__ import annotations

import argparse
import io
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from langchain_core.documents import Document
from markitdown import StreamInfo
from markitdown.converters import HtmlConverter

from langchain_holodeck._html import PageHtmlConverter
from langchain_holodeck.splitters import StructuredMarkdownSplitter


def markdown_pages(pages: list[Path], converter: HtmlConverter) -> list[str]:
    info = StreamInfo(extension=".html", charset="utf-8")
    return [converter.convert(io.BytesIO(p.read_bytes()), info).markdown for p in pages]


def lines_of(markdown: str) -> set[str]:
    """The page's lines that hold words (not markup alone)."""
    return {line.strip() for line in markdown.splitlines() if any(c.isalnum() for c in line)}


def site_row(site: Path) -> list[str]:
    pages = sorted(site.rglob("*.html"))
    before = markdown_pages(pages, HtmlConverter())
    after = markdown_pages(pages, PageHtmlConverter())
    seen = Counter(line for page in before for line in lines_of(page))
    repeated = {line for line, n in seen.items() if n >= max(2, len(pages) / 2)}
    pairs = zip(before, after, strict=True)
    lost = sum(len(lines_of(old) - lines_of(new) - repeated) for old, new in pairs)
    splitter = StructuredMarkdownSplitter()
    cells = [site.name, str(len(pages))]
    for texts in (before, after):
        chunks = splitter.split_documents([Document(page_content=t) for t in texts if t.strip()])
        boiler = sum(bool(lines_of(c.page_content) & repeated) for c in chunks)
        size = sum(len(c.page_content) for c in chunks)
        cells += [f"{len(chunks):,}", f"{boiler:,}", f"{size:,}"]
    return [*cells, str(lost)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sites", nargs="+", type=Path)
    args = parser.parse_args()
    print(
        "| site | pages | markitdown: chunks | boilerplate chunks | characters "
        "| ours: chunks | boilerplate chunks | characters | content lines lost |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    )
    for site in args.sites:
        print("| " + " | ".join(site_row(site)) + " |", flush=True)


if __name__ == "__main__":
    main()
