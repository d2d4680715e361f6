r"""What ``serve`` reads off the wire before the MCP SDK does: each stdio line, each HTTP body.

Plain Python, no MCP import. Three things the SDK would lose or refuse are made readable:

- a lone surrogate escape in a JSON string (``"caf\udce9"``, stdio): read as U+FFFD;
- bytes that are not UTF-8 (HTTP; the SDK's stdio reader already reads them as U+FFFD):
  read as U+FFFD, as over stdio;
- a non-finite number in a call's arguments (``1e400``, ``NaN``, ``Infinity``): the SDK
  parses it as a float and rebuilds the request as JSON, which writes ``inf`` and ``nan`` as
  ``null``, so ``top_k: 1e400`` reached the tool as ``top_k: null`` (the tool's default). It is
  passed on as ``{NON_FINITE: "1e400"}``, which no argument takes: the call is answered with
  one line naming the argument and the number as the client wrote it (``non_finite_text``).
"""

from __future__ import annotations

import io
import json
import math
import re
from typing import Any, BinaryIO

NON_FINITE = "non-finite JSON number"
"""The key of the object standing for a non-finite number in a call's arguments."""

_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_SURROGATE = re.compile("[\ud800-\udfff]")
# a number JSON may write and a float cannot hold: NaN, Infinity, an exponent of 3 digits or
# more, 300 digits in a row (a cheap test: most lines are not parsed twice)
_MAYBE_NON_FINITE = re.compile(rb"NaN|Infinity|[eE][+]?[0-9]{3}|[0-9]{300}")
_TOOLS_CALL = b'"tools/call"'


def readable_line(line: bytes) -> bytes:
    """One stdio line (a JSON message) as the SDK can read it without losing anything."""
    return _with_finite_arguments(_without_lone_surrogates(line))


def readable_body(body: bytes) -> bytes:
    """One HTTP request body as the SDK can read it: UTF-8, finite numbers in arguments.

    Lone surrogate escapes are left as they are: the call is answered with a tool error
    naming the character (``query is not UTF-8 text``).
    """
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:  # the SDK answered HTTP 500 'Error handling POST request'
        body = body.decode("utf-8", "replace").encode("utf-8")
    return _with_finite_arguments(body)


def non_finite_text(value: object) -> str | None:
    """The number as the client wrote it (``1e400``) when ``value`` stands for one, else None."""
    if isinstance(value, dict) and len(value) == 1 and isinstance(value.get(NON_FINITE), str):
        return str(value[NON_FINITE])
    return None


class ReadableLines(io.RawIOBase):
    r"""A client's stdin, each line as ``readable_line`` makes it.

    JSON allows a lone surrogate escape (``"caf\udce9"``: JavaScript writes one for a string
    holding half a pair) and UTF-8 cannot carry it: the SDK's stdio reader refused the line
    and answered its request with nothing the client could match, so the client waited for
    good. Undecodable bytes are read as U+FFFD already (the SDK decodes with
    ``errors="replace"``); such a line is now read the same way. A call's non-finite
    arguments are marked (``readable_line``). Other lines pass as they are.
    """

    def __init__(self, raw: BinaryIO) -> None:
        self._raw = raw
        self._pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if not self._pending:
            line = self._raw.readline()
            if not line:
                return 0
            self._pending = readable_line(line)
        n = min(len(buffer), len(self._pending))
        buffer[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        return n


def _without_lone_surrogates(line: bytes) -> bytes:
    """``line`` (a JSON message) with each lone surrogate of its strings spelt U+FFFD."""
    if not _SURROGATE_ESCAPE.search(line):
        return line
    try:
        message = json.loads(line)
    except ValueError:  # not JSON: the SDK reports it as it does
        return line
    fixed = _replace_surrogates(message)  # json.loads joined each pair: what is left is lone
    if fixed == message:
        return line
    return _dumped(fixed, line)


def _replace_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_replace_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {_replace_surrogates(k): _replace_surrogates(v) for k, v in value.items()}
    return value


class _NonFinite(str):
    """A non-finite number as written (``1e400``, ``-Infinity``), while a message is read."""

    __slots__ = ()


def _number(text: str) -> float | _NonFinite:
    value = float(text)
    return value if math.isfinite(value) else _NonFinite(text)


def _with_finite_arguments(data: bytes) -> bytes:
    """``data`` (a JSON message) with a ``tools/call``'s non-finite arguments marked."""
    if _TOOLS_CALL not in data or not _MAYBE_NON_FINITE.search(data):
        return data
    try:
        message = json.loads(data, parse_float=_number, parse_constant=_NonFinite)
    except (ValueError, RecursionError):  # not JSON: the SDK reports it as it does
        return data
    if not isinstance(message, dict) or message.get("method") != "tools/call":
        return data
    params = message.get("params")
    arguments = params.get("arguments") if isinstance(params, dict) else None
    if not isinstance(arguments, dict) or not _holds_non_finite(arguments):
        return data  # none, or elsewhere: the SDK reads those as before
    marked = {**_restored(params), "arguments": _marked(arguments)}
    return _dumped({**_restored(message), "params": marked}, data)


def _holds_non_finite(value: Any) -> bool:
    if isinstance(value, list):
        return any(_holds_non_finite(v) for v in value)
    if isinstance(value, dict):
        return any(_holds_non_finite(v) for v in value.values())
    return isinstance(value, _NonFinite)


def _marked(value: Any) -> Any:
    if isinstance(value, _NonFinite):
        return {NON_FINITE: str(value)}
    if isinstance(value, list):
        return [_marked(v) for v in value]
    if isinstance(value, dict):
        return {k: _marked(v) for k, v in value.items()}
    return value


def _restored(value: Any) -> Any:
    """``value`` with each non-finite number a float again (JSON: ``Infinity``, ``NaN``)."""
    if isinstance(value, _NonFinite):
        return float(value)
    if isinstance(value, list):
        return [_restored(v) for v in value]
    if isinstance(value, dict):
        return {k: _restored(v) for k, v in value.items()}
    return value


def _dumped(message: Any, line: bytes) -> bytes:
    r"""``message`` as one line of UTF-8 JSON, ending as ``line`` did.

    A lone surrogate left in a string is written as its escape (``\udce9``), as it came.
    """
    end = b"\n" if line.endswith(b"\n") else b""
    try:
        return json.dumps(message, ensure_ascii=False).encode("utf-8") + end
    except UnicodeEncodeError:
        return json.dumps(message).encode("ascii") + end
