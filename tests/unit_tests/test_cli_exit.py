"""The console script skips the last garbage collections at exit; an in-process call does not."""

from __future__ import annotations

import subprocess
import sys

import pytest

# An exit handler registered before ``main`` runs after main's own (handlers run last in,
# first out): it sees whether main froze the collector's objects.
PROGRAM = """
import atexit, gc, sys
atexit.register(lambda: print("frozen at exit:", gc.get_freeze_count() > 0))
from langchain_holodeck.cli import main
sys.exit(main({argv}))
"""


def _run(argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", PROGRAM.format(argv=argv), "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    ("argv", "frozen"),
    [
        pytest.param("", True, id="console script: main()"),
        pytest.param("['--help']", False, id="in process: main(argv)"),
    ],
)
def test_only_the_console_script_freezes_the_collector_at_exit(argv: str, frozen: bool) -> None:
    done = _run(argv)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: holodeck-rag")
    assert done.stdout.strip().splitlines()[-1] == f"frozen at exit: {frozen}"
