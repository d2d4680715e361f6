"""Inline ``data:`` URIs without their base64 payload: a pasted image is not text.

Markdown exports (Typora, Obsidian, Notion), notebooks' markdown cells and some JSON records
embed images as ``![plot](data:image/png;base64,iVBORw0KGgo...)``: tens of kilobytes of letters
that made dozens of chunks of noise, found by ordinary queries and crowding out real results.
``without_base64_data`` keeps the URI's head (``data:image/png;base64,``), so the text still
says an image was there, and drops the payload. markitdown's HTML conversion shortens them too.
"""

from __future__ import annotations

import re

__all__ = ["BASE64_DATA", "without_base64_data"]

BASE64_DATA = re.compile(
    r"(data:[\w.+-]+/[\w.+-]+(?:;[\w.+-]+=[\w.+-]+)*;base64,)"
    r"(?:[A-Za-z0-9+/]+={0,2}|(?=[ \t]*\r?\n[ \t]*[A-Za-z0-9+/]{16,}))"
    r"(?:[ \t]*\r?\n[ \t]*[A-Za-z0-9+/]{16,}={0,2}(?=[ \t]*(?:\r?\n|$|[)\"'>])))*"
)
"""A ``data:`` URI's head (group 1) and its base64 payload: one run, or lines of 16 or more
base64 characters each (a payload wrapped at 76, its first line after the comma or on the
next), never the words on the lines after it."""


def without_base64_data(text: str) -> str:
    """``text`` with each inline ``data:...;base64,`` URI's payload removed (its head kept)."""
    return BASE64_DATA.sub(r"\1", text)
