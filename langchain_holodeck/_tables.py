"""Markdown tables that converters write, tidied: empty header rows, empty sheets, NaN cells.

markitdown writes an HTML or Word table without header cells (``<th>``, a Word header row)
as a Markdown table whose header row is empty (``|  |  |``), its real column names in the
first body row. The splitter repeats a cut table's header row above each later piece, so
those pieces carried ``|  |  |`` instead of the names of their columns.

Its ``.xlsx`` tables come from pandas: an empty cell reads ``NaN``, and an empty sheet is a
table of bare ``|`` lines under the sheet's heading.
"""

from __future__ import annotations

import re

__all__ = ["promote_empty_headers", "tidy_sheet_tables"]

_CELL_BREAK = re.compile(r"(?<!\\)\|")
_SEPARATOR_CELL = re.compile(r"\s*:?-+:?\s*")
_NAN_CELL = re.compile(r"(?<=\|) NaN(?= \|)")
_EMPTY_SHEET = re.compile(r"^## [^\n]*\n(?:\|(?:[ \t]*\|)*[ \t]*(?:\n|\Z))+", re.MULTILINE)
"""A sheet's ``## name`` heading over a table of bare ``|`` rows only: an empty sheet."""


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


def tidy_sheet_tables(markdown: str) -> str:
    """An ``.xlsx``'s markdown with empty cells empty (not ``NaN``) and empty sheets left out.

    pandas reads a cell holding the text ``NaN`` as empty too, so no cell text is lost. An
    empty sheet (its heading over bare ``|`` rows) is removed, heading and all.
    """
    return _EMPTY_SHEET.sub("", _NAN_CELL.sub(" ", markdown))
