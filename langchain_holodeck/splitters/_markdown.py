"""Segment a span of text into blocks, sentences, lines and words, and pack them under a limit.

Every segmentation returns ``(start, end)`` spans that tile the input span exactly (whitespace
goes with the unit before it), so packed chunks lose nothing.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable

Span = tuple[int, int]

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_SENTENCE_END = re.compile(r"[.!?][\"'”\u2019)\]]*\s+|\n\s*")
_WORD = re.compile(r"\s*\S+\s*")


def _tile(start: int, end: int, cuts: list[int]) -> list[Span]:
    points = [start, *sorted({c for c in cuts if start < c < end}), end]
    return [(a, b) for a, b in itertools.pairwise(points) if a < b]


def blocks(text: str, start: int, end: int, *, body_start: int | None = None) -> list[Span]:
    """Paragraphs, fenced code blocks and tables of ``text[start:end]``.

    A fence (with any blank lines inside) or a run of ``|`` table lines is one block; the
    heading line (``start`` .. ``body_start``) is its own block.
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
        elif (match := _FENCE.match(line)) is not None:
            fence = match.group(1)
            cuts.append(pos)
        elif not stripped:
            prev_blank = True
            prev_table = False
            pos = line_end
            continue
        else:
            table = stripped.startswith("|")
            if prev_blank or table != prev_table:
                cuts.append(pos)
            prev_table = table
        prev_blank = False
        pos = line_end
    return _tile(start, end, cuts)


def sentences(text: str, start: int, end: int) -> list[Span]:
    """Sentences (and lines) of ``text[start:end]``."""
    return _tile(start, end, [m.end() for m in _SENTENCE_END.finditer(text, start, end)])


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

    Levels: 0 blocks, 1 sentences (lines inside a fence or table), 2 words, 3 characters.
    A unit is only cut into finer units when it alone exceeds the limit.
    """

    def __init__(self, length_function: Callable[[str], int], limit: int) -> None:
        self.length = length_function
        self.limit = limit

    def size(self, text: str, start: int, end: int) -> int:
        return self.length(text[start:end].strip())

    def fit(self, text: str, start: int, end: int, *, body_start: int | None = None) -> list[Span]:
        """Split ``text[start:end]`` into spans that tile it, each within the limit."""
        return self._fit(text, start, end, 0, body_start)

    def _fit(
        self, text: str, start: int, end: int, level: int, body_start: int | None = None
    ) -> list[Span]:
        if self.size(text, start, end) <= self.limit:
            return [(start, end)]
        if level >= 3:
            return self._chars(text, start, end)
        units = self._units(text, start, end, level, body_start)
        if len(units) <= 1:
            return self._fit(text, start, end, level + 1)
        return self._pack(text, units, level)

    @staticmethod
    def _units(text: str, start: int, end: int, level: int, body_start: int | None) -> list[Span]:
        if level == 0:
            return blocks(text, start, end, body_start=body_start)
        if level == 1:
            head = text[start:end].lstrip()
            if _FENCE.match(head) or head.startswith("|"):
                return lines(text, start, end)
            return sentences(text, start, end)
        return words(text, start, end)

    def _pack(self, text: str, units: list[Span], level: int) -> list[Span]:
        out: list[Span] = []
        current: list[Span] = []
        total = 0
        for unit in units:
            size = self.length(text[unit[0] : unit[1]])
            if size > self.limit and self.size(text, *unit) > self.limit:
                start = unit[0]
                if current and not self._has_atomic(text, current[0][0], unit[0]):
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

    @staticmethod
    def _has_atomic(text: str, start: int, end: int) -> bool:
        """Whether ``text[start:end]`` holds a fence or table line (never re-split finer)."""
        return any(
            _FENCE.match(line) or line.lstrip().startswith("|")
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
