"""Segment a span of text into blocks, sentences, lines and words, and pack them under a limit.

Every segmentation returns ``(start, end)`` spans that tile the input span exactly (whitespace
goes with the unit before it), so packed chunks lose nothing.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable

from langchain_holodeck._sections import Markup

Span = tuple[int, int]

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_SEPARATOR_CELL = re.compile(r":?-+:?")
_SENTENCE_END = re.compile(r"[.!?][\"'”\u2019)\]]*\s+|\n\s*")
_WORD = re.compile(r"\s*\S+\s*")
_ITEM = re.compile(r"^[ \t]*(?:[-*+]|\d{1,9}[.)]|#\.)[ \t]+\S", re.MULTILINE)
"""A line starting a list item: ``- ``, ``* ``, ``+ ``, ``1. ``, ``1) `` or rst's ``#. ``."""

_MARKDOWN_LEVELS = ("blocks", "items", "sentences", "words")
_RST_LEVELS = ("blocks", "paragraphs", "items", "sentences", "words")
_SENTENCES = _MARKDOWN_LEVELS.index("sentences")
_TINY_TAIL = 24
"""A section's last chunk shorter than this (and a tenth of the limit) takes what precedes it."""


def _tile(start: int, end: int, cuts: list[int]) -> list[Span]:
    points = [start, *sorted({c for c in cuts if start < c < end}), end]
    return [(a, b) for a, b in itertools.pairwise(points) if a < b]


def blocks(
    text: str,
    start: int,
    end: int,
    *,
    body_start: int | None = None,
    fences: bool = True,
    join_indented: bool = False,
) -> list[Span]:
    """Paragraphs, fenced code blocks and tables of ``text[start:end]``.

    A fence (with any blank lines inside) or a run of ``|`` table lines is one block; the
    heading line (``start`` .. ``body_start``) is its own block. ``fences=False`` reads
    ```````` and ``~~~`` lines as text (reStructuredText has no fences: they underline titles);
    ``join_indented=True`` keeps indented lines after a blank line in the block above them
    (a reStructuredText code block, directive body or definition with what introduces it).
    """
    cuts: list[int] = []
    if body_start is not None:
        cuts.append(body_start)
    pos = start
    fence: str | None = None
    prev_blank = False
    prev_table = False
    while pos < end:
        newline = text.find("\n", pos, end)
        line_end = end if newline == -1 else newline + 1
        line = text[pos:line_end]
        stripped = line.strip()
        if fence is not None:
            match = _FENCE.match(line)
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence):
                fence = None
                cuts.append(line_end)
        elif fences and (match := _FENCE.match(line)) is not None:
            fence = match.group(1)
            cuts.append(pos)
        elif not stripped:
            prev_blank = True
            prev_table = False
            pos = line_end
            continue
        else:
            table = stripped.startswith("|")
            joined = prev_blank and join_indented and line[:1].isspace()
            if (prev_blank and not joined) or table != prev_table:
                cuts.append(pos)
            prev_table = table
        prev_blank = False
        pos = line_end
    return _tile(start, end, cuts)


def _is_separator(line: str) -> bool:
    """Whether ``line`` is a Markdown table's separator row (``|---|:--:|``)."""
    stripped = line.strip()
    cells = stripped[1:].removesuffix("|").split("|") if stripped.startswith("|") else []
    return bool(cells) and all(_SEPARATOR_CELL.fullmatch(cell.strip()) for cell in cells)


def table_header(text: str, start: int, end: int) -> Span | None:
    """The header row and separator of the table that ``text[start:end]`` is, if it has them.

    ``text[start:end]`` is one block of ``blocks`` (a run of ``|`` lines). The header is its
    first line, when the second is a separator row (``|---|---|``) and the first is not.
    """
    first_end = text.find("\n", start, end)
    if first_end == -1:
        return None
    second_end = text.find("\n", first_end + 1, end)
    second_end = end if second_end == -1 else second_end
    first, second = text[start:first_end], text[first_end + 1 : second_end]
    if not first.lstrip().startswith("|") or _is_separator(first) or not _is_separator(second):
        return None
    return (start, second_end)


def table_runs(text: str) -> list[tuple[int, int, int]]:
    """``(header start, body start, end)`` of every table of ``text`` with a header row.

    The tables are the ``|`` blocks of ``blocks`` (so none inside a code fence); a table's body
    starts after its separator row.
    """
    runs: list[tuple[int, int, int]] = []
    for block in blocks(text, 0, len(text)):
        start, end = _strip_span(text, *block)
        header = table_header(text, start, end) if text.startswith("|", start) else None
        if header is not None:
            runs.append((start, header[1], end))
    return runs


def _strip_span(text: str, start: int, end: int) -> Span:
    """``(start, end)`` without the whitespace at either end of ``text[start:end]``."""
    piece = text[start:end]
    return start + len(piece) - len(piece.lstrip()), end - len(piece) + len(piece.rstrip())


def sentences(text: str, start: int, end: int) -> list[Span]:
    """Sentences (and lines) of ``text[start:end]``."""
    return _tile(start, end, [m.end() for m in _SENTENCE_END.finditer(text, start, end)])


def items(text: str, start: int, end: int) -> list[Span]:
    """List items of ``text[start:end]``, cut before each line starting one (``- ``, ``1. ``).

    Fewer than two such lines: the whole span, so text without a list is cut as before.
    """
    cuts = [match.start() for match in _ITEM.finditer(text, start, end)]
    return _tile(start, end, cuts) if len(cuts) >= 2 else [(start, end)]


def _is_item(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` starts a list item (a unit of ``items``)."""
    return _ITEM.match(text[start:end].lstrip("\n")) is not None


def lines(text: str, start: int, end: int) -> list[Span]:
    """Lines of ``text[start:end]``."""
    cuts = []
    pos = text.find("\n", start, end)
    while pos != -1:
        cuts.append(pos + 1)
        pos = text.find("\n", pos + 1, end)
    return _tile(start, end, cuts)


def words(text: str, start: int, end: int) -> list[Span]:
    """Words with their trailing whitespace (leading whitespace goes with the first)."""
    return _tile(start, end, [m.start() for m in _WORD.finditer(text, start, end)][1:])


class Packer:
    """Pack the units of a span greedily into chunks of at most ``limit`` (stripped) length.

    Levels: 0 blocks, 1 list items (a list's lines without blank lines between items: cut
    between items before inside one), 2 sentences (lines inside a fence or table), 3 words,
    4 characters. A unit is only cut into finer units when it alone exceeds the limit.

    With ``table_limit``, a table with a header row (``table_header``) longer than
    ``table_limit`` is cut at rows into pieces of at most ``table_limit`` minus its header's
    length, so that each piece with the header repeated before it fits ``table_limit`` (the
    splitter repeats it: ``repeated_header``). A header longer than half of ``table_limit`` is
    not repeated, and such a table is cut like any block.
    """

    def __init__(
        self,
        length_function: Callable[[str], int],
        limit: int,
        table_limit: int | None = None,
        *,
        markup: Markup = "markdown",
    ) -> None:
        self.rst = markup == "rst"
        """reStructuredText: no fences; level 0 keeps indented blocks with the line introducing
        them, and an extra level 1 cuts such a block at its paragraphs (items are level 2)."""
        self.levels = _RST_LEVELS if self.rst else _MARKDOWN_LEVELS
        self.length = length_function
        self.limit = limit
        self.table_limit = None if table_limit is None else min(table_limit, limit)
        self._headers: dict[Span, Span | None] = {}  # a table's repeated header, by its span
        self._headers_of: str | None = None  # ... in this text

    def size(self, text: str, start: int, end: int) -> int:
        return self.length(text[start:end].strip())

    def fit(self, text: str, start: int, end: int, *, body_start: int | None = None) -> list[Span]:
        """Split ``text[start:end]`` into spans that tile it, each within the limit.

        A tiny last span (a link target, a closing line) takes the last list item or block
        of the span before it, when the two then still fit (see ``_balance_tail``).
        """
        return self._balance_tail(text, self._fit(text, start, end, 0, body_start), body_start)

    def _balance_tail(self, text: str, spans: list[Span], body_start: int | None) -> list[Span]:
        """Move the last cut back to the latest block or item start leaving a non-tiny tail.

        Chunks stay within the limit (a tiny tail never joins a chunk that is full: it takes
        that chunk's end instead); spans with fences or tables are left as packed.
        """
        if len(spans) < 2:
            return spans
        (head, cut), (_, end) = spans[-2], spans[-1]
        tiny = min(_TINY_TAIL, self.limit // 10)
        if self.size(text, cut, end) >= tiny or self._has_atomic(text, head, end):
            return spans
        starts: set[int] = set()
        for block in blocks(
            text, head, cut, body_start=body_start, fences=not self.rst, join_indented=self.rst
        ):
            starts.update(unit[0] for unit in items(text, *block))
            starts.add(block[0])
        floor = head if body_start is None else max(head, body_start)  # never a heading alone
        for start in sorted((s for s in starts if s > floor), reverse=True):
            if self.size(text, start, end) > self.limit:
                break
            if self.size(text, start, end) >= tiny and self.size(text, head, start) <= self.limit:
                return [*spans[:-2], (head, start), (start, end)]
        return spans

    def repeated_header(self, text: str, start: int, end: int) -> Span | None:
        """The header this packer repeats before pieces of the table ``text[start:end]``.

        ``None`` unless ``table_limit`` is set, the block is a table with a header row, the
        header fits half of ``table_limit`` and the table does not fit ``table_limit`` whole.
        """
        if self.table_limit is None or not text[start:end].lstrip().startswith("|"):
            return None
        if text is not self._headers_of:
            self._headers, self._headers_of = {}, text
        span = _strip_span(text, start, end)
        if span not in self._headers:  # asked by _fit, _pack and the splitter: measured once
            header = table_header(text, *span)
            repeated = (
                header is not None
                and self.size(text, *header) * 2 <= self.table_limit
                and self.size(text, *span) > self.table_limit
            )
            self._headers[span] = header if repeated else None
        return self._headers[span]

    def _fit(
        self, text: str, start: int, end: int, level: int, body_start: int | None = None
    ) -> list[Span]:
        if level == 0 and self.table_limit is not None and "|" in text[start:end]:
            units = self._units(text, start, end, level, body_start)
            if any(self.repeated_header(text, *unit) for unit in units):
                return self._pack(text, units, level)
        if self.size(text, start, end) <= self.limit:
            return [(start, end)]
        if level >= len(self.levels):
            return self._chars(text, start, end)
        units = self._units(text, start, end, level, body_start)
        if len(units) <= 1:
            return self._fit(text, start, end, level + 1)
        return self._pack(text, units, level)

    def _cut_table(self, text: str, start: int, end: int, header: Span) -> list[Span]:
        """Rows of the table ``text[start:end]``, packed to fit ``table_limit`` with ``header``."""
        assert self.table_limit is not None  # only called with a table limit
        budget = self.table_limit - self.size(text, *header) - 1  # the header's line break
        return Packer(self.length, budget)._pack(text, lines(text, start, end), _SENTENCES)

    def _units(
        self, text: str, start: int, end: int, level: int, body_start: int | None
    ) -> list[Span]:
        kind = self.levels[level]
        if self.rst:
            if kind in {"blocks", "paragraphs"}:  # blocks with their indented lines, then without
                return blocks(
                    text, start, end, body_start=body_start, fences=False, join_indented=level == 0
                )
            if kind == "sentences":
                first = text[start:end].lstrip("\n")
                indented = first[:1].isspace()  # a literal block: cut at lines
                return lines(text, start, end) if indented else sentences(text, start, end)
        elif kind == "blocks":
            return blocks(text, start, end, body_start=body_start)
        head = text[start:end].lstrip()
        atomic = not self.rst and (_FENCE.match(head) or head.startswith("|"))
        if kind == "items":  # a fence or table is cut at lines, never at items
            return [(start, end)] if atomic else items(text, start, end)
        if kind == "sentences":
            return lines(text, start, end) if atomic else sentences(text, start, end)
        return words(text, start, end)

    def _pack(self, text: str, units: list[Span], level: int) -> list[Span]:
        out: list[Span] = []
        current: list[Span] = []
        total = 0
        for unit in units:
            header = self.repeated_header(text, *unit) if level == 0 else None
            if header is not None and self.table_limit is not None:
                pieces = self._cut_table(text, *unit, header)
                # what came before (a heading, an introduction) opens the first piece if it fits
                if current and self.size(text, current[0][0], pieces[0][1]) <= self.table_limit:
                    pieces[0] = (current[0][0], pieces[0][1])
                else:
                    self._flush(text, current, level, out)
                current, total = [], 0
                out.extend(pieces)
                continue
            size = self.length(text[unit[0] : unit[1]])
            if size > self.limit and self.size(text, *unit) > self.limit:
                start = unit[0]
                if (
                    current
                    and not self._has_atomic(text, current[0][0], unit[0])
                    and not (
                        self.levels[level] == "items" and any(_is_item(text, *u) for u in current)
                    )
                ):
                    start = current[0][0]  # keep e.g. the heading with the first sentences
                else:
                    self._flush(text, current, level, out)
                current, total = [], 0
                out.extend(self._fit(text, start, unit[1], level + 1))
                continue
            if current and total + size > self.limit:
                self._flush(text, current, level, out)
                current, total = [], 0
            current.append(unit)
            total += size
        self._flush(text, current, level, out)
        return out

    def _has_atomic(self, text: str, start: int, end: int) -> bool:
        """Whether ``text[start:end]`` holds a fence or table line (never re-split finer)."""
        return any(
            (not self.rst and _FENCE.match(line)) or line.lstrip().startswith("|")
            for line in text[start:end].splitlines()
        )

    def _flush(self, text: str, units: list[Span], level: int, out: list[Span]) -> None:
        """Emit ``units`` as few chunks as possible (token counts are not quite additive)."""
        i = 0
        while i < len(units):
            j = len(units)
            while j - i > 1 and self.size(text, units[i][0], units[j - 1][1]) > self.limit:
                j -= 1
            if j - i == 1 and self.size(text, *units[i]) > self.limit:
                out.extend(self._fit(text, units[i][0], units[i][1], level + 1))
            else:
                out.append((units[i][0], units[j - 1][1]))
            i = j

    def _chars(self, text: str, start: int, end: int) -> list[Span]:
        out: list[Span] = []
        pos = start
        while pos < end:
            low, high = pos + 1, end
            while low < high:  # largest prefix end that fits; at least one character
                mid = (low + high + 1) // 2
                if self.size(text, pos, mid) <= self.limit:
                    low = mid
                else:
                    high = mid - 1
            out.append((pos, low))
            pos = low
        return out
