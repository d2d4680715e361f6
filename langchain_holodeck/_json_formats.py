"""JSON-based formats as markdown: JSON, JSON Lines (``.jsonl``) and notebooks (``.ipynb``).

A JSON file is indented, but every nested value that fits ``RECORD_CHARS`` is written on one
line (``json_text``), and a JSON Lines file becomes one fenced ``json`` block, one record a
line: the splitters cut a long block between lines, so a record stays whole. A notebook
becomes its markdown cells as markdown and its code cells as fenced code blocks, each followed
by a short excerpt of its text output; images, HTML and inline base64 data are left out, so
they never bloat a chunk. All three are plain JSON parsing, done in the loader's process.
markitdown's notebook converter is not used: it fences every code cell as ``python`` with
three backticks, so an R notebook's cells were labelled Python and a cell holding three
backticks broke out of its block.
"""

from __future__ import annotations

import json
import re
from typing import Any

from langchain_holodeck._inline_data import without_base64_data

__all__ = ["json_lines_markdown", "json_text", "notebook_markdown"]

RECORD_CHARS = 1_000
"""Longest one-line JSON of a nested value ``json_text`` keeps on one line (~250 tokens: an
array's record, an object's entry). A longer one is opened, one member a line."""

MAX_OUTPUT_LINES = 10
"""Lines of a code cell's text output kept (the rest is summarized as ``...``)."""
MAX_OUTPUT_CHARS = 500
"""Characters of a code cell's text output kept."""
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _fenced(body: str, info: str) -> str:
    """``body`` in a fenced code block longer than any backtick run in it."""
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{body}\n{fence}"


def json_text(value: Any) -> str:
    """``value`` as indented JSON whose nested values stay on one line when they fit.

    The top level is opened one member a line (2-space indent, as ``json.dumps(indent=2)``),
    and so is every nested object or array whose one-line JSON is longer than
    ``RECORD_CHARS``; any other nested value is written on one line. So the records of an
    array (``[{...}, {...}]``, or ``{"items": [{...}, ...]}``) are a line each, and a splitter
    that cuts between lines never cuts one in two. Non-ASCII characters stay as they are.

    Raises:
        RecursionError: When ``value`` nests deeper than Python's recursion limit.
    """
    return _indented(value, 0)


def _indented(value: Any, depth: int) -> str:
    if not isinstance(value, dict | list) or not value:
        return json.dumps(value, ensure_ascii=False)
    if depth:
        line = json.dumps(value, ensure_ascii=False)
        if len(line) <= RECORD_CHARS:
            return line
    pad = "  " * (depth + 1)
    if isinstance(value, dict):
        members = [
            f"{pad}{json.dumps(key, ensure_ascii=False)}: {_indented(item, depth + 1)}"
            for key, item in value.items()
        ]
        opening, closing = "{", "}"
    else:
        members = [f"{pad}{_indented(item, depth + 1)}" for item in value]
        opening, closing = "[", "]"
    return f"{opening}\n" + ",\n".join(members) + f"\n{'  ' * depth}{closing}"


def json_lines_markdown(text: str) -> tuple[str, list[int]]:
    r"""A JSON Lines file as one fenced ``json`` block, one record a line, blank lines dropped.

    Each valid record is written compact with its non-ASCII characters as they are (``\u00e9``
    reads ``é``); a line that is not JSON is kept as written. No line is lost.

    Returns:
        The markdown (``""`` for blank text) and the numbers (from 1) of the lines that are not
        JSON.
    """
    records: list[str] = []
    bad: list[int] = []
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    for number, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line:
            continue
        try:
            records.append(json.dumps(json.loads(line), ensure_ascii=False))
        except (ValueError, RecursionError):
            bad.append(number)
            records.append(line)
    return (_fenced("\n".join(records), "json") + "\n" if records else ""), bad


def notebook_markdown(text: str) -> str:
    """A Jupyter notebook's cells as markdown (nbformat 4, and the ``worksheets`` of 3).

    Markdown cells are kept as written (inline base64 images shortened to their ``data:``
    prefix); code cells become fenced blocks in the kernel's language, each followed by at
    most ``MAX_OUTPUT_LINES`` lines / ``MAX_OUTPUT_CHARS`` characters of its text output (in an
    ``output`` block; images and HTML left out); raw cells become plain fenced blocks. Empty
    cells and cells of an unknown shape are left out.

    Raises:
        ValueError: ``text`` is not a notebook (not JSON, or no list of cells).
    """
    try:
        notebook = json.loads(text.lstrip("\ufeff"))
    except RecursionError as error:
        msg = "not a Jupyter notebook: its JSON nests too deeply"
        raise ValueError(msg) from error
    except ValueError as error:
        msg = f"not a Jupyter notebook: invalid JSON ({error})"
        raise ValueError(msg) from error
    cells = _cells(notebook)
    if cells is None:
        msg = 'not a Jupyter notebook: no "cells" list (save it again from Jupyter)'
        raise ValueError(msg)
    language = _language(notebook)
    parts: list[str] = []
    for cell in cells:
        if not isinstance(cell, dict):
            continue
        kind = cell.get("cell_type")
        source = _text(cell.get("source", cell.get("input")))
        if not source.strip():
            continue
        if kind in ("markdown", "heading"):
            if kind == "heading":  # nbformat 3
                level = cell.get("level", 1)
                source = f"{'#' * (level if isinstance(level, int) else 1)} {source.strip()}"
            parts.append(without_base64_data(source.strip("\n")))
        elif kind == "code":
            parts.append(_fenced(source.strip("\n"), language))
            output = _output_excerpt(cell.get("outputs"))
            if output:
                parts.append(_fenced(output, "output"))
        elif kind == "raw":
            parts.append(_fenced(source.strip("\n"), ""))
    return "\n\n".join(parts) + "\n" if parts else ""


def _cells(notebook: object) -> list[Any] | None:
    if not isinstance(notebook, dict):
        return None
    cells = notebook.get("cells")
    if isinstance(cells, list):
        return cells
    worksheets = notebook.get("worksheets")  # nbformat 3
    if isinstance(worksheets, list):
        return [
            cell
            for sheet in worksheets
            if isinstance(sheet, dict) and isinstance(sheet.get("cells"), list)
            for cell in sheet["cells"]
        ]
    return None


def _language(notebook: dict[str, Any]) -> str:
    """The kernel's language (``python`` when the notebook does not say)."""
    metadata = notebook.get("metadata")
    if isinstance(metadata, dict):
        for key in ("kernelspec", "language_info"):
            section = metadata.get(key)
            if isinstance(section, dict):
                name = section.get("language") or section.get("name")
                if isinstance(name, str) and re.fullmatch(r"[\w+#.-]+", name):
                    return name.lower()
    return "python"


def _text(value: object) -> str:
    """A notebook string: one string, or a list of lines."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(part for part in value if isinstance(part, str))
    return ""


def _output_excerpt(outputs: object) -> str:
    """The start of a code cell's text outputs: stream text, ``text/plain`` results, errors."""
    if not isinstance(outputs, list):
        return ""
    texts: list[str] = []
    for output in outputs:
        if not isinstance(output, dict):
            continue
        kind = output.get("output_type")
        if kind == "stream":
            texts.append(_text(output.get("text")))
        elif kind in ("execute_result", "display_data", "pyout"):
            data = output.get("data")
            plain = data.get("text/plain") if isinstance(data, dict) else output.get("text")
            texts.append(_text(plain))
        elif kind in ("error", "pyerr"):
            texts.append(f"{output.get('ename', 'Error')}: {output.get('evalue', '')}")
    text = without_base64_data(_ANSI.sub("", "\n".join(t.strip("\n") for t in texts)))
    lines = [line.rstrip() for line in text.strip("\n").split("\n")]
    kept: list[str] = []
    size = 0
    for line in lines[:MAX_OUTPUT_LINES]:
        if size + len(line) > MAX_OUTPUT_CHARS:
            kept.append(line[: max(0, MAX_OUTPUT_CHARS - size)])
            break
        kept.append(line)
        size += len(line) + 1
    if len(kept) < len(lines) or len("\n".join(kept)) < len("\n".join(lines)):
        kept.append("...")
    return "\n".join(kept).strip()
