"""The README's first command: the quick start runs offline with the real local model."""

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_quickstart_ingests_twice_and_finds_the_section() -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "quickstart.py")],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT.parent,  # any directory: paths resolve against the script
        env=env,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    out = result.stdout
    assert "SyncResult(" not in out
    assert re.search(
        r"^ingest: (\d+) chunks from sample_docs/ in [\d.]+ s: \1 embedded, "
        r"0 skipped, 0 failed$",
        out,
        flags=re.M,
    ), out
    assert re.search(r"^again:  0 embedded, \d+ skipped \(nothing re-embedded\)$", out, re.M)
    assert result.stderr == ""  # no model-loading bar, no warning
    assert out.count("Found 3 result(s):") == 3
    section = out.split(">>> Section 203(a)(1)")[1]
    first = section.split("[1] ", 1)[1].split("\n", 1)[0]
    assert "holodeck_act.md" in first
    assert first.endswith("203(a)(1)")
    revoke = out.split(">>> How do I revoke an access token?")[1].split("[2] ")[0]
    assert "sample_docs/auth.md" in revoke
    assert "DELETE to /tokens/{id}" in revoke


def test_quickstart_stays_in_memory_whatever_the_holodeck_config_says(tmp_path: Path) -> None:
    """README: "into the in-memory store", also where .holodeck/config.yaml names a database."""
    config = (
        "vectorstore:\n  provider: redis\n  connection_string: redis://127.0.0.1:1\n"
        "  fallback_to_memory: false\n"
    )
    for home in (tmp_path, tmp_path / "project"):  # the user's and the project's config
        (home / ".holodeck").mkdir(parents=True)
        (home / ".holodeck" / "config.yaml").write_text(config, encoding="utf-8")
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "quickstart.py")],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path / "project",
        env={**os.environ, "HF_HUB_OFFLINE": "1", "HOME": str(tmp_path)},
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stderr == ""
    assert "again:  0 embedded" in result.stdout
