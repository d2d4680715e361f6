"""Re-execute the notebooks in place, so that their committed outputs come from a real run.

    HF_HUB_OFFLINE=1 python scripts/run_notebooks.py              # every notebooks/*.ipynb
    HF_HUB_OFFLINE=1 python scripts/run_notebooks.py --check      # exit 1 if a re-run differs

Each notebook runs top to bottom in a fresh ``python3`` kernel from ``notebooks/`` (as nbmake
runs them in CI); per-cell execution timestamps are dropped so that a re-run that prints the
same thing leaves the file unchanged.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def executed(path: Path) -> nbformat.NotebookNode:
    """``path`` run top to bottom, without per-cell timing metadata."""
    notebook = nbformat.read(path, as_version=4)
    NotebookClient(
        notebook, timeout=900, kernel_name="python3", resources={"metadata": {"path": NOTEBOOKS}}
    ).execute()
    for cell in notebook.cells:
        cell.metadata.pop("execution", None)
        if cell.get("outputs"):
            cell.outputs = merged_streams(cell.outputs)
    return notebook


def merged_streams(outputs: list) -> list:
    """``outputs`` with consecutive prints to one stream joined.

    Where the kernel flushed in between depends on timing, so a re-run that prints the same
    thing would otherwise differ.
    """
    merged: list = []
    for output in outputs:
        last = merged[-1] if merged else None
        if (
            output.get("output_type") == "stream"
            and last is not None
            and last.get("output_type") == "stream"
            and last.get("name") == output.get("name")
        ):
            last["text"] = "".join(last["text"]) + "".join(output["text"])
        else:
            merged.append(output)
    return merged


def outputs(notebook: nbformat.NotebookNode) -> str:
    """The cells' outputs, as comparable text."""
    return json.dumps(
        [merged_streams(cell.get("outputs", [])) for cell in notebook.cells], sort_keys=True
    )


def main() -> int:
    """Run every notebook; with ``--check``, report the ones whose outputs a re-run changes."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    stale = []
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        fresh = nbformat.reads(nbformat.writes(executed(path)), as_version=4)  # as saved
        if args.check:
            if outputs(fresh) != outputs(nbformat.read(path, as_version=4)):
                stale.append(path.name)
        else:
            nbformat.write(fresh, path)
        print(f"{path.name}: {'checked' if args.check else 'executed'}")
    if stale:
        print("outputs differ from a re-run: " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
