"""Safe reading of configuration YAML: size, alias and duplicate-key limits, ``${VAR}``.

Private: ``config.py`` is the only caller. Every failure is a ``ConfigError`` whose message starts
with the file name as the user gave it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from langchain_holodeck._redact import (
    is_secret_name,
    mask_connection_string,
    query_secrets,
    remember_secrets,
    url_password,
)
from langchain_holodeck.errors import ConfigError

MAX_FILE_BYTES = 1024 * 1024
"""Configuration files larger than this (1 MiB) are refused before parsing."""

MAX_ALIASED_NODES = 10_000
"""Budget of the YAML nodes aliases add once expanded (a scalar also counts 1 per KiB of its
text): each ``*name`` adds the size of what it refers to. Values written out count nothing
(the 1 MiB of ``MAX_FILE_BYTES`` bounds them): a file of 1,500 ``tests:`` cases is no bomb.

A 'billion laughs' document, or a long string aliased many times, exceeds it at once.
"""

MAX_DEPTH = 50
"""Deepest nesting of mappings and lists accepted."""

_MERGE_TAG = "tag:yaml.org,2002:merge"
_NULL_TAG = "tag:yaml.org,2002:null"
_INT_TAG = "tag:yaml.org,2002:int"
_FLOAT_TAG = "tag:yaml.org,2002:float"
# `$${...}` is an escape; `${NAME}` a reference; anything else starting with `${` is malformed.
_REFERENCE = re.compile(r"\$(?P<escape>\$)?\{(?P<body>[^}]*)(?P<close>\})?")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_URL_START = re.compile(r"\s*[A-Za-z][A-Za-z0-9+.-]*://")

AGENT_FILE_SHAPE = "a mapping with a 'tools:' list"
"""What an agent.yaml holds, as the messages about an empty or non-mapping file say it."""

JSONish = str | int | float | bool | None | list["JSONish"] | dict[str, "JSONish"]
"""What ``yaml.safe_load`` returns for a configuration file (dates aside)."""


class _Loader(yaml.SafeLoader):
    """``SafeLoader`` reading numbers as YAML 1.2 does.

    ``012`` is 12, while ``1:00`` and ``5_0`` are text (a config error naming them), not YAML
    1.1's 10, 60 and 50. Booleans stay YAML 1.1's (``yes``: an error for a number field).
    """


_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag not in (_INT_TAG, _FLOAT_TAG)]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(_INT_TAG, re.compile(r"^[-+]?[0-9]+$"), list("-+0123456789"))
_Loader.add_implicit_resolver(
    _FLOAT_TAG,
    re.compile(
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
    ),
    list("-+0123456789."),
)


def _decimal_int(loader: yaml.SafeLoader, node: Node) -> int:
    assert isinstance(node, ScalarNode)  # the int resolver tags scalars only
    return int(loader.construct_scalar(node), 10)


_Loader.add_constructor(_INT_TAG, _decimal_int)


def join_path(prefix: str, key: str | int) -> str:
    """Extend a display path: ``tools`` + 0 -> ``tools[0]``; + ``name`` -> ``tools[0].name``."""
    if isinstance(key, int):
        return f"{prefix}[{key}]"
    return f"{prefix}.{key}" if prefix else str(key)


def read_yaml_mapping(
    path: Path,
    *,
    display: str,
    expected: str = AGENT_FILE_SHAPE,
    empty_is_nothing: bool = False,
) -> dict[str, JSONish]:
    """Parse one YAML file that must hold a single mapping, within the limits above.

    Args:
        path: The file to read.
        display: How to name the file in error messages (usually the path as the user gave it).
        expected: What the file holds, for the message of an empty or non-mapping file: an
            agent.yaml's ``tools:`` list by default; the settings file names its own keys.
        empty_is_nothing: Read an empty or comment-only file as ``{}``: a settings file with
            nothing set yet (an agent.yaml without tools is an error instead).

    Returns:
        The parsed mapping (aliases, if any, point at shared objects: never mutate it).

    Raises:
        ConfigError: When the file is missing, unreadable, larger than ``MAX_FILE_BYTES``, not
            UTF-8, not valid YAML (with line and column), empty (unless ``empty_is_nothing``),
            not a single mapping, nested deeper than ``MAX_DEPTH``, its aliases adding more
            than ``MAX_ALIASED_NODES`` once expanded, recursive, or when a mapping repeats a
            key.
    """
    text = _read_text(path, display=display)
    try:
        loader = _Loader(text)  # checks every character up front
    except yaml.reader.ReaderError as exc:
        line = text.count("\n", 0, max(exc.position, 0)) + 1
        msg = (
            f"{display}: line {line}: character {exc.character!r} is not allowed in YAML; "
            'write it as an escape inside double quotes ("\\x0b").'
        )
        raise ConfigError(msg) from None
    try:
        node = loader.get_single_node()
        empty = isinstance(node, ScalarNode) and node.tag == _NULL_TAG and not node.value
        if node is None or empty:  # no document, or an empty one (`---` alone); not `null`
            if empty_is_nothing:
                return {}
            msg = f"{display}: the file is empty; expected {expected}."
            raise ConfigError(msg)
        if not isinstance(node, MappingNode):
            kind = "a list" if isinstance(node, SequenceNode) else "a single value"
            msg = (
                f"{display}: the document must be a mapping (key: value lines), got {kind}; "
                f"expected {expected}."
            )
            raise ConfigError(msg)
        _GraphCheck(display).visit(node, "", 0)
        data = loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        # `from None`: the YAML exception's text quotes the offending line, which may hold a secret.
        raise ConfigError(_describe_yaml_error(exc, display, text)) from None
    except yaml.YAMLError as exc:
        msg = f"{display}: could not parse YAML: {type(exc).__name__}."
        raise ConfigError(msg) from None
    except RecursionError:
        msg = f"{display}: the YAML is nested too deeply (limit {MAX_DEPTH} levels)."
        raise ConfigError(msg) from None
    finally:
        loader.dispose()
    if not isinstance(data, dict):  # pragma: no cover - a MappingNode always constructs a dict
        msg = f"{display}: the document must be a mapping."
        raise ConfigError(msg)
    return data


def _read_text(path: Path, *, display: str) -> str:
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError as exc:
        msg = f"{display}: file not found (looked for {path.absolute()})."
        raise ConfigError(msg) from exc
    except IsADirectoryError as exc:
        msg = f"{display}: is a directory; expected a YAML file."
        raise ConfigError(msg) from exc
    except OSError as exc:
        msg = f"{display}: cannot read the file: {exc.strerror or type(exc).__name__}."
        raise ConfigError(msg) from exc
    if len(raw) > MAX_FILE_BYTES:
        msg = (
            f"{display}: the file is larger than {MAX_FILE_BYTES} bytes (1 MiB); "
            "configuration files are small, check that this is the right file."
        )
        raise ConfigError(msg)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        msg = f"{display}: the file is not UTF-8 text (invalid byte at offset {exc.start})."
        raise ConfigError(msg) from None


def _describe_yaml_error(exc: yaml.MarkedYAMLError, display: str, text: str) -> str:
    mark = exc.problem_mark or exc.context_mark
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    problem = exc.problem or exc.context or "invalid YAML"
    context = f" ({exc.context})" if exc.context and exc.problem else ""
    hint = ""
    if (
        exc.problem_mark is not None
        and exc.context in ("while parsing a flow mapping", "while parsing a flow sequence")
        and text[exc.problem_mark.index - 1 : exc.problem_mark.index + 1] == "${"
    ):  # {url: ${URL}}: YAML reads the `{` of an unquoted ${VAR} as a mapping's start
        hint = '; inside {...} or [...] quote a ${VAR} value: "${VAR}"'
    return f"{display}: {where}could not parse YAML: {problem}{context}{hint}."


class _GraphCheck:
    """Walk the composed node graph once: duplicate keys, depth, alias expansion, recursion."""

    def __init__(self, display: str) -> None:
        self.display = display
        self.sizes: dict[int, int] = {}  # id(node) -> expanded size (aliases share node objects)
        self.active: set[int] = set()
        self.aliased = 0  # nodes the aliases met so far add once expanded

    def visit(self, node: Node, path: str, depth: int) -> int:
        key = id(node)
        if key in self.active:
            msg = (
                f"{self.display}: {path or 'document'}: a YAML alias refers to itself (recursive)."
            )
            raise ConfigError(msg)
        if key in self.sizes:
            size = self.sizes[key]  # an alias: its expansion counts again, without re-walking
            self.aliased += size
            if self.aliased > MAX_ALIASED_NODES:
                self._too_big(path, node)
        else:
            if depth > MAX_DEPTH:
                msg = f"{self.display}: {path}: nested deeper than {MAX_DEPTH} levels."
                raise ConfigError(msg)
            self.active.add(key)
            size = 1 + self._children(node, path, depth)
            if isinstance(node, ScalarNode):
                size += len(node.value) // 1024
            self.active.discard(key)
            self.sizes[key] = size
        return size

    def _children(self, node: Node, path: str, depth: int) -> int:
        size = 0
        if isinstance(node, SequenceNode):
            for index, item in enumerate(node.value):
                size += self.visit(item, join_path(path, index), depth + 1)
        elif isinstance(node, MappingNode):
            seen: dict[str, int] = {}
            for key_node, value_node in node.value:
                name = key_node.value if isinstance(key_node, ScalarNode) else "?"
                if key_node.tag != _MERGE_TAG and isinstance(key_node, ScalarNode):
                    line = key_node.start_mark.line + 1
                    if name in seen:
                        msg = (
                            f"{self.display}: {join_path(path, name)}: duplicate key "
                            f"(lines {seen[name]} and {line}); keep one."
                        )
                        raise ConfigError(msg)
                    seen[name] = line
                size += self.visit(key_node, path, depth + 1)
                size += self.visit(value_node, join_path(path, name), depth + 1)
        return size

    def _too_big(self, path: str, node: Node) -> None:
        line = node.start_mark.line + 1
        msg = (
            f"{self.display}: {path or 'document'} (line {line}): its YAML aliases add over "
            f"{MAX_ALIASED_NODES} values once expanded; refusing a possible alias bomb."
        )
        raise ConfigError(msg)


def substitute_env(
    value: JSONish,
    environ: Mapping[str, str],
    *,
    display: str,
    path: str = "",
    used: dict[str, str] | None = None,
) -> JSONish:
    """Replace ``${VAR}`` in every string scalar (never in keys); ``$${VAR}`` yields ``${VAR}``.

    The result is a fresh structure; substituted text is never parsed as YAML again, so a value
    holding YAML syntax stays a string.

    Args:
        value: Parsed YAML (a mapping, list or scalar).
        environ: Where variables are looked up.
        display: The file name for error messages.
        path: The field path of ``value`` (``tools[0].database``), for error messages.
        used: When given, receives each substituted variable's name and value.

    Raises:
        ConfigError: When a variable is unset or a ``${`` reference is malformed; the message
            names the file, the field path and the variable.
    """
    used = {} if used is None else used
    if isinstance(value, str):
        return _substitute(value, environ, display=display, path=path, used=used)
    if isinstance(value, list):
        return [
            substitute_env(item, environ, display=display, path=join_path(path, i), used=used)
            for i, item in enumerate(value)
        ]
    if isinstance(value, dict):
        return {
            key: substitute_env(
                item, environ, display=display, path=join_path(path, str(key)), used=used
            )
            for key, item in value.items()
        }
    return value


def _substitute(
    text: str, environ: Mapping[str, str], *, display: str, path: str, used: dict[str, str]
) -> str:
    if "${" not in text:
        return text

    def replace(match: re.Match[str]) -> str:
        body, closed = match["body"], match["close"] is not None
        if match["escape"]:
            return "${" + body + (match["close"] or "")
        if not closed or not _NAME.fullmatch(body):
            shown = match.group(0)[:40]
            msg = (
                f"{display}: {path}: malformed variable reference {shown!r}; write ${{NAME}} "
                "(letters, digits, underscores) or escape a literal dollar as $${...}."
            )
            raise ConfigError(msg)
        if body not in environ:
            msg = (
                f"{display}: {path}: environment variable {body} is not set; export it, "
                f"or write $${{{body}}} for a literal '${{{body}}}'."
            )
            raise ConfigError(msg)
        used[body] = environ[body]
        return environ[body]

    return _REFERENCE.sub(replace, text)


def has_reference(text: str) -> bool:
    """Whether ``text`` holds at least one (unescaped, well-formed) ``${VAR}`` reference."""
    return any(
        not m["escape"] and m["close"] and _NAME.fullmatch(m["body"])
        for m in _REFERENCE.finditer(text)
    )


def reject_literal_secrets(value: JSONish, *, display: str, path: str = "") -> None:
    """Secrets must come from the environment, as ``${VAR}`` references; refuse literal ones.

    A secret is the value of a key named like one (``api_key``, ``password``, ``token``...:
    ``is_secret_name``) or a URL embedding a password (``redis://:pw@host``,
    ``postgresql://u@h/db?password=pw``) that is not itself a reference. A URL without one
    (``redis://localhost:6379``) is no secret and may be written as it is. Run on the raw
    data, before ``substitute_env``.

    Raises:
        ConfigError: One line naming ``display`` and the field path; the value is not shown
            (a URL is, with its password masked).
    """
    if isinstance(value, list):
        for index, item in enumerate(value):
            reject_literal_secrets(item, display=display, path=join_path(path, index))
    elif isinstance(value, dict):
        for key, item in value.items():
            where = join_path(path, str(key))
            if is_secret_name(str(key)) and _is_literal(item):
                msg = (
                    f"{display}: {where}: secrets must come from the environment; write "
                    f"{key}: ${{YOUR_VARIABLE}} instead of the value itself, got '***'."
                )
                raise ConfigError(msg)
            reject_literal_secrets(item, display=display, path=where)
    elif isinstance(value, str) and _literal_url_password(value):
        msg = (
            f"{display}: {path}: a URL with a password must come from the environment; write "
            f"${{YOUR_VARIABLE}} (or the password as ${{YOUR_VARIABLE}}) instead of the value "
            f"itself, got {mask_connection_string(value)!r}."
        )
        raise ConfigError(msg)


def remember_configured_secrets(value: JSONish) -> None:
    """Have every message of the process mask the secret keys' values (``remember_secrets``).

    The values of keys named like a secret (``api_key``, ``password``: ``is_secret_name``),
    after ``substitute_env``: a server that repeats a configured key in its error (``401
    Invalid key: sk-...``) is masked in every warning and ``error:`` line.
    """
    found: list[str] = []

    def walk(item: JSONish, key: str = "") -> None:
        if isinstance(item, list):
            for member in item:
                walk(member, key)
        elif isinstance(item, dict):
            for name, member in item.items():
                walk(member, str(name))
        elif isinstance(item, str) and is_secret_name(key):
            found.append(item)

    walk(value)
    remember_secrets(found)


def _is_literal(value: JSONish) -> bool:
    """Whether a secret key's value is written out (not null, not a ``${VAR}`` reference)."""
    if isinstance(value, str):
        return bool(value) and not has_reference(value)
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _literal_url_password(text: str) -> bool:
    """Whether ``text`` is a URL whose password (user info or query) is written out."""
    if _URL_START.match(text) is None:
        return False
    passwords = [url_password(text), *query_secrets(text)]
    return any(password and not has_reference(password) for password in passwords)
