"""What a model passes to a search tool (``SearchInput``) and the one line a bad call gets."""

from __future__ import annotations

import json

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from langchain_holodeck.tools.formatting import snippet


class SearchInput(BaseModel):
    """The single argument a model passes to a search tool; any other is refused."""

    # an argument the tool does not take (k, top_k, a misspelt qeury) was dropped without a
    # word: the model never learnt it had no effect (bad_search_arguments names it now)
    model_config = ConfigDict(extra="forbid")
    query: str = Field(
        description="What to look for, in natural language; keywords, identifiers and "
        "section numbers (e.g. 'Section 4.2') also work."
    )


def bad_search_arguments(error: ValidationError) -> str:
    """One line naming each bad argument of a tool call and the value it got.

    What ``as_tool`` answers (a ``ToolMessage`` with ``status="error"``) instead of raising
    pydantic's multi-line report, so an agent loop without its own handler goes on and the
    model can call again.
    """
    problems: dict[str, str] = {}
    unknown: list[str] = []
    for detail in error.errors():
        name = ".".join(str(part) for part in detail["loc"]) or "arguments"
        got = snippet(json.dumps(detail.get("input"), ensure_ascii=False, default=repr), 60)
        if detail["type"] == "extra_forbidden":
            unknown.append(f"{name} (got {got})")
        elif detail["type"] == "missing":
            problem = f"{name} is required: pass the words to look for, e.g. 'revoke a token'."
            problems.setdefault(name, problem)
        else:
            problem = f"{name} must be a string of words to look for, got {got}."
            problems.setdefault(name, problem)
    if unknown:
        plural = "s" if len(unknown) > 1 else ""
        problems[""] = f"unknown argument{plural} {', '.join(unknown)}: the tool takes query only."
    return " ".join(problems.values())
