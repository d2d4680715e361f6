"""Number fields of the components' pydantic models that refuse a bool.

Apart from ``_defaults`` (constants and checks every command reads), which the command line
imports at start-up without pydantic: only the components, which are pydantic models, import
these.
"""

from __future__ import annotations

from typing import Annotated, TypeAlias

from pydantic import BeforeValidator

__all__ = ["Float", "Int"]


def _not_a_bool(value: object) -> object:
    # a bool is an int in Python, and pydantic's lax mode takes it as one: timeout=True was a
    # timeout of 1 s, top_n=True kept one document, rrf_k=False set the RRF constant to 0
    if isinstance(value, bool):
        msg = f"must be a number, not a bool (it would be taken as {int(value)}), got {value!r}"
        raise ValueError(msg)
    return value


Int: TypeAlias = Annotated[int, BeforeValidator(_not_a_bool)]
"""``int`` for a component's pydantic field (a count, a size, ``k``): ``True`` is an error, not
1. Configuration fields have their own, ``config``'s ``Integer``, which speaks of YAML."""
Float: TypeAlias = Annotated[float, BeforeValidator(_not_a_bool)]
"""``float`` for a component's pydantic field (a timeout, a weight): ``True`` is an error, not
1.0."""
