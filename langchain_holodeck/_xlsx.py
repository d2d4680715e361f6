"""An ``.xlsx`` workbook as Markdown: a ``## sheet`` heading over a table per sheet, cells as shown.

markitdown reads a workbook with pandas' defaults, which change what the cells say: a cell
reading ``NA``, ``N/A``, ``None``, ``null``, ``NULL``, ``nan`` or ``#N/A`` is missing data to
pandas (an empty cell), the text ``001234`` a number (``1234.0``), a whole number ``120.0``, and
a column holding an empty cell or a wide number is floats in scientific notation
(``2.540000e+06``, ``12345678901234567`` as ``1.234568e+16``). ``SheetTableConverter`` reads the
cells with openpyxl (markitdown's ``xlsx`` extra) and writes each as it is stored: text as
written, a whole number without ``.0``, a fraction with Excel's 15 significant digits, a percentage
format as a percentage, a date as ``YYYY-MM-DD``, a formula as its last computed value.

The shape is markitdown's: a sheet's first row is its table's header row, sheets follow each
other, separated by a blank line. Rows and columns with no value are left out, and so is a sheet
with none.
"""

from __future__ import annotations

import datetime as dt
import io
import re
import zipfile
from collections.abc import Iterable, Sequence
from typing import Any, BinaryIO

from markitdown import DocumentConverter, DocumentConverterResult, StreamInfo

__all__ = ["SheetTableConverter", "cell_text", "sheet_table"]


def cell_text(value: object, number_format: str = "General") -> str:
    """The text a cell shows for ``value`` (openpyxl's), one line, ``|`` escaped for a table.

    ``None`` is empty; ``True`` / ``False`` are ``TRUE`` / ``FALSE``, as Excel shows them.
    """
    if value is None:
        return ""
    if isinstance(value, bool):
        text = "TRUE" if value else "FALSE"
    elif isinstance(value, int):
        text = f"{value * 100}%" if number_format.endswith("%") else str(value)
    elif isinstance(value, float):
        text = _number(value * 100) + "%" if number_format.endswith("%") else _number(value)
    elif isinstance(value, dt.datetime):
        text = value.date().isoformat() if value.time() == dt.time() else value.isoformat(" ")
    elif isinstance(value, dt.date | dt.time):
        text = value.isoformat()
    else:
        text = str(value)
    return " ".join(text.split()).replace("|", "\\|")


def _number(value: float) -> str:
    """A float as a cell shows it: whole ones bare, fractions to Excel's 15 significant digits.

    A whole one past 15 digits keeps every digit the file holds (``1.234567890123457e+16``).
    """
    if value.is_integer():
        return str(int(value)) if abs(value) < 1e15 else repr(value)
    return f"{value:.15g}"


def sheet_table(rows: Iterable[Sequence[str]]) -> str:
    """A Markdown table of ``rows`` (the first is the header), without empty rows and columns.

    ``""`` when no cell has text.
    """
    kept = [list(row) for row in rows if any(cell for cell in row)]
    if not kept:
        return ""
    width = max(len(row) for row in kept)
    kept = [row + [""] * (width - len(row)) for row in kept]
    columns = [i for i in range(width) if any(row[i] for row in kept)]
    lines = ["| " + " | ".join(row[i] for i in columns) + " |" for row in kept]
    lines.insert(1, "| " + " | ".join("---" for _ in columns) + " |")
    return "\n".join(lines)


_SHEET_VIEW = re.compile(rb"<sheetView(?=[\s/>])[^>]*>")
_SHOW_ZEROES = re.compile(rb"(?<=\s)showZeroes(?=\s*=)")


def _show_zeros_spelt_right(data: bytes) -> bytes:
    """The workbook ``data`` with ``<sheetView showZeroes=...>`` spelt ``showZeros``.

    Some producers write the legacy spelling, which openpyxl refuses (``TypeError``), as
    markitdown's own converter repairs it.
    """
    source = zipfile.ZipFile(io.BytesIO(data))
    repaired = io.BytesIO()
    with source, zipfile.ZipFile(repaired, "w", zipfile.ZIP_DEFLATED) as target:
        for item in source.infolist():
            part = source.read(item.filename)
            if item.filename.startswith("xl/worksheets/") and b"showZeroes" in part:
                part = _SHEET_VIEW.sub(lambda m: _SHOW_ZEROES.sub(b"showZeros", m[0]), part)
            target.writestr(item, part)
    return repaired.getvalue()


def _workbook_markdown(data: bytes) -> str:
    import openpyxl  # markitdown[xlsx]; imported in the conversion worker only

    workbook = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    try:
        parts = []
        for sheet in workbook.worksheets:
            rows = (
                [cell_text(c.value, getattr(c, "number_format", "General")) for c in row]
                for row in sheet.iter_rows()
            )
            table = sheet_table(rows)
            if table:
                parts.append(f"## {sheet.title}\n{table}")
    finally:
        workbook.close()
    return "\n\n".join(parts)


class SheetTableConverter(DocumentConverter):
    """An ``.xlsx`` as ``## sheet`` headings over tables of the cells as shown (not pandas')."""

    def accepts(self, file_stream: BinaryIO, stream_info: StreamInfo, **kwargs: Any) -> bool:
        return (stream_info.extension or "").lower() == ".xlsx"

    def convert(
        self, file_stream: BinaryIO, stream_info: StreamInfo, **kwargs: Any
    ) -> DocumentConverterResult:
        data = file_stream.read()
        try:
            markdown = _workbook_markdown(data)
        except TypeError as error:
            if "showZeroes" not in str(error):
                raise
            markdown = _workbook_markdown(_show_zeros_spelt_right(data))
        return DocumentConverterResult(markdown=markdown)
