"""Markdown tables that converters write: a header row left empty takes the first row's cells.

markitdown writes an HTML or Word table without header cells (``<th>``, a Word header row)
as a Markdown table whose header row is empty (``|  |  |``), its real column names in the
first body row. The splitter repeats a cut table's header row above each later piece, so
those pieces carried ``|  |  |`` instead of the names of their columns.
"""

from __future__ import annotations

import re

__all__ = ["promote_empty_headers"]

_CELL_BREAK = re.compile(r"(?<!\\)\|")
_SEPARATOR_CELL = re.compile(r"\s*:?-+:?\s*")


def _cells(line: str) -> list[str] | None:
    r"""The cells of a ``| a | b |`` table row (escaped ``\|`` kept), else ``None``."""
    stripped = line.strip()
    if len(stripped) < 2 or not stripped.startswith("|") or not stripped.endswith("|"):
        return None
    return _CELL_BREAK.split(stripped[1:-1])


def promote_empty_headers(markdown: str) -> str:
    """``markdown`` with each table's empty header row replaced by its first body row.

    A table qualifies when its header row has only empty cells, the separator row below it
    (``| --- | --- |``) and then a row with the same number of cells and some text follow.
    Other tables and all other lines are returned unchanged.
    """
    lines = markdown.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        header = _cells(lines[i])
        if header is not None and i + 2 < len(lines) and not any(c.strip() for c in header):
            separator, first = _cells(lines[i + 1]), _cells(lines[i + 2])
            if (
                separator is not None
                and first is not None
                and len(separator) == len(header) == len(first)
                and all(_SEPARATOR_CELL.fullmatch(c) for c in separator)
                and any(c.strip() for c in first)
            ):
                out += [lines[i + 2], lines[i + 1]]
                i += 3
                continue
        out.append(lines[i])
        i += 1
    return "\n".join(out)
