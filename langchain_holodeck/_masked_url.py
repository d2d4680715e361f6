"""``MaskedUrlStr``: the pydantic field type of a URL that may embed a password.

Apart from ``_redact`` (which the command line imports at start-up) because it needs
pydantic: ``holodeck-rag --version`` imports no library.
"""

from __future__ import annotations

from typing import Annotated, TypeAlias

from pydantic import AfterValidator, PlainSerializer, SerializationInfo

from langchain_holodeck._redact import MaskedUrl, mask_url_password

__all__ = ["MaskedUrlStr"]


def _dump_url(value: str, info: SerializationInfo) -> str:
    # like a SecretStr: the Python dump keeps the value (a MaskedUrl), JSON writes it masked
    return mask_url_password(str(value)) if info.mode_is_json() else MaskedUrl(value)


MaskedUrlStr: TypeAlias = Annotated[
    str, AfterValidator(MaskedUrl), PlainSerializer(_dump_url, return_type=str)
]
"""A pydantic field type for a URL that may embed a password (``${VAR}`` in YAML).

The field holds a ``MaskedUrl``: ``repr(model)`` and ``model_dump()`` show ``***`` for the
password and a client reading the field gets the URL; ``model_dump_json()`` and
``model_dump(mode="json")`` write it masked, as they write a ``SecretStr``. A validator that
returns a new string (a normalized URL) wraps it in ``MaskedUrl`` itself.
"""
