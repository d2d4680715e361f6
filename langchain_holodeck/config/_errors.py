"""Turn a pydantic ``ValidationError`` into ``ConfigError`` text: one line per problem, no secrets.

Private: used by ``config.py``. A line: ``agent.yaml: tools[0].top_k: must be <= 100, got 500.``
"""

from __future__ import annotations

import re
import types
from collections.abc import Iterable, Mapping, Sequence
from typing import Annotated, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from langchain_holodeck._redact import (
    clipped,
    is_secret_name,
    mask_url_password,
    scrub,
    url_passwords,
)
from langchain_holodeck.config._backends import family_members
from langchain_holodeck.config._yaml import JSONish, join_path

_SECRET_VARIABLE = re.compile(r"KEY|PASSWORD|PASSWD|SECRET|TOKEN|CREDENTIAL", re.IGNORECASE)
_MIN_SCRUB = 4  # shorter "secrets" would blank out ordinary words in the message

_TEMPLATES = {
    "less_than_equal": "must be <= {le}",
    "less_than": "must be < {lt}",
    "greater_than_equal": "must be >= {ge}",
    "greater_than": "must be > {gt}",
    "string_pattern_mismatch": "must match the pattern {pattern}",
    "string_too_short": "must not be empty",
    "string_too_long": "must be at most {max_length} characters",
    "literal_error": "must be {expected}",
    "missing": "required, but missing",
    "int_type": "must be an integer",
    "int_parsing": "must be an integer",
    "int_from_float": "must be a whole number",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "string_type": "must be a string",
    "list_type": "must be a list",
    "dict_type": "must be a mapping",
    "model_type": "must be a mapping",
    "model_attributes_type": "must be a mapping",
    "finite_number": "must be a finite number",
}


def is_secret_key(key: str) -> bool:
    """Whether a configuration key names a secret whose value must never be shown."""
    return is_secret_name(key)


def collect_secrets(data: JSONish) -> set[str]:
    """Every secret string in parsed configuration: secret-named values, URL passwords."""
    found: set[str] = set()

    def walk(value: JSONish, key: str) -> None:
        if isinstance(value, dict):
            for sub_key, item in value.items():
                walk(item, str(sub_key))
        elif isinstance(value, list):
            for item in value:
                walk(item, key)
        elif isinstance(value, str):
            if is_secret_key(key):
                found.add(value)
            found.update(url_passwords(value))

    walk(data, "")
    return {secret for secret in found if len(secret) >= _MIN_SCRUB}


def secret_variable_values(used: Mapping[str, str]) -> set[str]:
    """Values of substituted environment variables whose names look secret (``*_API_KEY``...).

    Wherever such a value lands (even in a non-secret field), messages mask it.
    """
    return {
        value
        for name, value in used.items()
        if _SECRET_VARIABLE.search(name) and len(value) >= _MIN_SCRUB
    }


def format_validation_error(
    exc: ValidationError,
    model: type[BaseModel],
    *,
    display: str,
    prefix: str = "",
    secrets: Iterable[str] = (),
) -> str:
    """One line per error: ``{display}: {field path}: {problem}, got {value}.``.

    Args:
        exc: The pydantic error.
        model: The model that was validated (to translate locations into field paths).
        display: The file name as the user gave it.
        prefix: Field path of the validated data inside the file (``vectorstore``).
        secrets: Secret strings to mask wherever they appear.
    """
    lines = [_line(error, model, display=display, prefix=prefix) for error in exc.errors()]
    return scrub("\n".join(dict.fromkeys(lines)), secrets)


def _line(error: ErrorDetails, model: type[BaseModel], *, display: str, prefix: str) -> str:
    path, owner, current = _field_path(model, error["loc"], prefix)
    kind = error["type"]
    ctx = {key: _plain_number(value) for key, value in (error.get("ctx") or {}).items()}
    show_value = True
    if kind == "extra_forbidden":
        allowed = ", ".join(owner.model_fields) if owner is not None else "see the reference"
        problem, show_value = f"unknown key; allowed keys: {allowed}", False
    elif kind in ("union_tag_invalid", "union_tag_not_found"):
        key = str(ctx.get("discriminator", "type")).strip("'\"")
        path = join_path(path, key)
        expected = _tags(current, key)
        problem = f"must be one of {expected}"
        if kind == "union_tag_not_found":
            problem, show_value = f"required, but missing (one of {expected})", False
        else:
            error = {**error, "input": ctx.get("tag")}
    elif kind == "value_error":
        problem = str(ctx.get("error", error["msg"]))
        show_value = ", got " not in problem  # a validator naming the value: not twice
    elif kind == "int_parsing_size":  # 1e30 for an integer: pydantic's own words are raw
        bound = _upper_bound(owner, error["loc"])
        problem = "is too large a number" if bound is None else f"must be <= {bound}"
    elif kind in _TEMPLATES:
        problem = _TEMPLATES[kind].format(**ctx)
    else:
        problem = error["msg"]
    problem = problem.rstrip(".")
    value = error.get("input")
    if kind == "string_type" and isinstance(value, int | float) and not isinstance(value, bool):
        # section_id: 1.10 arrives as 1.1: the text as written is gone, so say how to keep it
        problem += " (write it in quotes: YAML reads an unquoted 1.10 as the number 1.1)"
    if isinstance(value, (dict, list)) and kind.endswith(("_type", "_parsing")):
        where = f"{path}: " if path else ""
        return f"{display}: {where}{problem}, got {_kind(value)}."  # a forgotten `- `
    if kind == "missing" or isinstance(value, (dict, list, BaseModel)):
        show_value = False
    elif isinstance(value, str) and f"got {mask_url_password(value)!r}" in problem:
        show_value = False  # the validator named the value already (masked): once is enough
    where = f"{path}: " if path else ""
    if not show_value:
        return f"{display}: {where}{problem}."
    return f"{display}: {where}{problem}, got {_render(value, path)}."


def _upper_bound(owner: type[BaseModel] | None, loc: Sequence[int | str]) -> object | None:
    """The ``le`` bound of the field at ``loc`` (its last key, a field of ``owner``), if any."""
    field = owner.model_fields.get(str(loc[-1])) if owner is not None and loc else None
    bounds = [getattr(item, "le", None) for item in (field.metadata if field else ())]
    return next((bound for bound in bounds if bound is not None), None)


def _kind(value: dict[object, object] | list[object]) -> str:
    """What a mapping or list given for another kind is (its keys, not its values: secrets)."""
    if isinstance(value, list):
        return f"a list of {len(value)} item(s)"
    keys = ", ".join(repr(str(key)) for key in list(value)[:5])
    return f"a mapping with keys {keys}" if keys else "an empty mapping"


def _plain_number(value: object) -> object:
    """``1.0`` -> ``1`` so bounds read as written (``must be > 0``, not ``> 0.0``)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _render(value: object, path: str) -> str:
    last = path.rsplit(".", 1)[-1]
    if isinstance(value, str) and value and is_secret_key(last):
        return "'***'"
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, str):
        shown = mask_url_password(value)
        return repr(clipped(shown))
    if isinstance(value, (int, float)):
        return repr(value)
    return f"a {type(value).__name__}"


def _field_path(
    model: type[BaseModel], loc: Sequence[int | str], prefix: str
) -> tuple[str, type[BaseModel] | None, object]:
    """Map a pydantic location to a display path, dropping union tags.

    Returns:
        The path, the model owning the last key, and the annotation found at the location.
    """
    path, current, owner = prefix, _strip(model), None
    for item in loc:
        members = _union_models(current)
        if members:
            chosen = _pick(members, item)
            if chosen is not None:
                current = chosen
                continue
        if isinstance(current, type) and issubclass(current, BaseModel):
            owner = current
            field = current.model_fields.get(str(item))
            current = _strip(field.annotation) if field is not None else None
        elif get_origin(current) is list and isinstance(item, int):
            (current,) = (_strip(arg) for arg in get_args(current))
        else:
            current = None
        path = join_path(path, item)
    if isinstance(current, type) and issubclass(current, BaseModel):
        owner = current
    return path, owner, current


def _tags(union: object, key: str) -> str:
    """``'a', 'b'``: the values the discriminator ``key`` takes across the union's members."""
    values = [
        repr(value)
        for member in _union_models(union)
        if key in member.model_fields
        for value in get_args(member.model_fields[key].annotation)
    ]
    return ", ".join(values) or "the documented values"


def _strip(annotation: object) -> object:
    """Unwrap ``Annotated`` and ``X | None``."""
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            annotation = get_args(annotation)[0]
        elif origin in (Union, types.UnionType):
            args = [arg for arg in get_args(annotation) if arg is not type(None)]
            if len(args) != 1:
                return annotation
            annotation = args[0]
        else:
            return annotation


def _union_models(annotation: object) -> list[type[BaseModel]]:
    members = family_members(annotation)
    if members is not None:
        return members
    if get_origin(annotation) not in (Union, types.UnionType):
        return []
    args = [_strip(arg) for arg in get_args(annotation) if arg is not type(None)]
    return [arg for arg in args if isinstance(arg, type) and issubclass(arg, BaseModel)]


def _pick(members: list[type[BaseModel]], item: int | str) -> type[BaseModel] | None:
    """The union member a location item (a tag value or class name) selects, if any."""
    for member in members:
        if item == member.__name__:
            return member
        for field in member.model_fields.values():
            if item in get_args(field.annotation) and field.is_required():
                return member
    return None
