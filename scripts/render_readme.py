"""Regenerate the configuration reference (docs/configuration.md) from the pydantic models.

python scripts/render_readme.py          # rewrite docs/configuration.md in place
python scripts/render_readme.py --check  # exit 1 if docs/configuration.md is out of date
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from langchain_holodeck import config_reference_markdown

REFERENCE = Path(__file__).resolve().parents[1] / "docs" / "configuration.md"
START, END = "<!-- config-reference:start -->", "<!-- config-reference:end -->"


def rendered(text: str) -> str:
    """``text`` with the block between the markers replaced by the generated reference."""
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{START}\n{config_reference_markdown().strip()}\n{END}{tail}"


def main() -> int:
    """Rewrite the configuration reference; with ``--check``, exit 1 if it is stale."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    current = REFERENCE.read_text(encoding="utf-8")
    wanted = rendered(current)
    if args.check:
        if current != wanted:
            msg = "docs/configuration.md is out of date: run python scripts/render_readme.py"
            print(msg, file=sys.stderr)
            return 1
        return 0
    REFERENCE.write_text(wanted, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
