"""Render pydantic models as Markdown reference tables (field, type, default, rule, description).

Private: ``config.config_reference_markdown()`` is the public entry point.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Sequence
from typing import Annotated, Literal, Union, get_args, get_origin

from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from langchain_holodeck.config._backends import family_members

_SCALARS = {str: "string", int: "integer", float: "number", bool: "boolean"}


def render_models_markdown(models: Sequence[type[BaseModel]]) -> str:
    """One ``### Model`` section per model: its docstring, then a table of its fields."""
    return "\n".join(_section(model) for model in models)


def _section(model: type[BaseModel]) -> str:
    doc = inspect.cleandoc(model.__doc__ or "")
    lines = [
        f"### {model.__name__}",
        "",
        *([doc, ""] if doc else []),
        "| field | type | default | rule | description |",
        "|---|---|---|---|---|",
    ]
    for name, field in model.model_fields.items():
        cells = [
            f"`{name}`",
            _type_name(field.annotation),
            _default(field),
            _rule(field),
            " ".join((field.description or "").split()),
        ]
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join([*lines, ""])


def _type_name(annotation: object) -> str:
    origin = get_origin(annotation)
    args = get_args(annotation)
    if origin is Annotated:
        return _type_name(args[0])
    if origin is Literal:
        return " or ".join(f"`{value}`" for value in args)
    if origin in (Union, types.UnionType):
        names = [_type_name(arg) for arg in args if arg is not type(None)]
        if type(None) in args:
            names.append("null")
        return " or ".join(names)
    if origin is list:
        return f"list of {_type_name(args[0])}"
    if origin is tuple and args and Ellipsis not in args and len(set(args)) == 1:
        return f"list of {len(args)} {_type_name(args[0])}s"  # YAML writes a tuple as a list
    members = family_members(annotation)
    if members is not None:
        return " or ".join(_type_name(member) for member in members)
    if annotation is SecretStr:
        return "secret string"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return f"[{annotation.__name__}](#{annotation.__name__.lower()})"
    if isinstance(annotation, type) and annotation in _SCALARS:
        return _SCALARS[annotation]
    return "any"


def _default(field: FieldInfo) -> str:
    extra = field.json_schema_extra
    if isinstance(extra, dict) and isinstance(extra.get("default_text"), str):
        return str(extra["default_text"])  # a default computed from other fields, described
    if field.default_factory is not None:
        value = field.default_factory()  # type: ignore[call-arg]  # no validated-data factories here
    elif field.default is PydanticUndefined:
        return "required"
    else:
        value = field.default
    if isinstance(value, BaseModel):
        shown = _yaml_flow(value.model_dump(mode="json"))
        return f"`{shown}`" if len(shown) <= 60 else "see its table"
    return f"`{_yaml_flow(value)}`" if value is not None else "null"


def _yaml_flow(value: object) -> str:
    """``value`` as YAML flow style writes it: ``true``, ``[0.5, 0.5]``, ``{provider: redis}``."""
    if isinstance(value, bool):
        return str(value).lower()
    if value is None:
        return "null"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_yaml_flow(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{key}: {_yaml_flow(item)}" for key, item in value.items()) + "}"
    return str(value)


def _rule(field: FieldInfo) -> str:
    bounds: dict[str, object] = {}
    for item in field.metadata:
        for attr in ("ge", "le", "gt", "lt", "min_length", "max_length", "pattern"):
            value = getattr(item, attr, None)
            if value is not None:
                bounds[attr] = value
    rules = []
    if "ge" in bounds and "le" in bounds:
        rules.append(f"{bounds.pop('ge')}..{bounds.pop('le')}")
    symbols = {"ge": ">=", "le": "<=", "gt": ">", "lt": "<"}
    rules += [f"{symbols[key]} {bounds[key]}" for key in symbols if key in bounds]
    if bounds.get("min_length") == 1:
        rules.append("non-empty")
    if "max_length" in bounds:
        rules.append(f"at most {bounds['max_length']} characters")
    if "pattern" in bounds:
        rules.append(f"matches `{bounds['pattern']}`")
    extra = field.json_schema_extra
    if isinstance(extra, dict) and isinstance(extra.get("rule"), str):
        rules.append(str(extra["rule"]))
    return "; ".join(rules)
