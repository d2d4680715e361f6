"""What the CLI says when the present differs from ``STORE/ingest.json``: a moved project.

Runs the real local model (all-MiniLM-L6-v2, offline) on one small file per source.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from langchain_holodeck.cli import main
from langchain_holodeck.cli.chat import session_tools
from langchain_holodeck.errors import HolodeckError

TOKENS = "# Tokens\n\nA token is revoked by sending DELETE to /tokens/{id}.\n"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``tmp_path/proj`` holding ``docs/tokens.md``; the test runs there, HOME in tmp_path."""
    (tmp_path / "proj" / "docs").mkdir(parents=True)
    (tmp_path / "proj" / "docs" / "tokens.md").write_text(TOKENS, encoding="utf-8")
    monkeypatch.chdir(tmp_path / "proj")
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path / "proj"


def moved(project: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``mv proj proj2 && cd proj2``."""
    monkeypatch.chdir(project.parent)
    project.rename(project.parent / "proj2")
    monkeypatch.chdir(project.parent / "proj2")
    return project.parent / "proj2"


def test_a_search_after_the_project_moved_names_the_manifest_and_the_ingest_to_run(
    capsys: pytest.CaptureFixture[str], project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``ingest docs``, ``mv proj proj2``, ``search``: the source is rebuilt from
    ingest.json's base_dir, gone (found 2026-12-07: ``error: source 'docs' does not exist
    (looked at '/x/proj/docs'); pass an existing file or directory.``, an argument search
    does not take). The folder here is not followed: another root is another corpus."""
    assert run(capsys, "-q", "ingest", "docs")[0] == 0
    here = moved(project, monkeypatch)
    store = Path(".holodeck/store")
    before = sorted(p.name for p in (store / "default").iterdir())
    said = (
        f"error: .holodeck/store/ingest.json records the last ingest as 'docs' in {project}, "
        f"and {project} is gone (the project moved or was renamed?); run `holodeck-rag ingest "
        "docs` where docs is now (a folder at another path is another corpus: its files are "
        "embedded anew; an agent.yaml tool with corpus_id keeps one corpus across moves).\n"
    )
    assert run(capsys, "search", "revoke a token") == (1, "", said)
    with pytest.raises(HolodeckError, match="records the last ingest as 'docs'"):
        session_tools(None, None, store, force_ingest=False, quiet=True)  # chat's
    assert sorted(p.name for p in (store / "default").iterdir()) == before  # nothing written
    # another --store names it; a source deleted in place is said so
    code, _, err = run(capsys, "--store", str(here / ".holodeck/store"), "search", "revoke")
    assert code == 1
    assert f"run `holodeck-rag --store {here}/.holodeck/store ingest docs` where" in err
    # the ingest it names works, and search then answers from the moved folder
    assert run(capsys, "-q", "ingest", "docs")[0] == 0
    code, out, err = run(capsys, "search", "revoke a token")
    assert (code, err) == (0, "")
    assert "docs/tokens.md" in out
    (here / "docs" / "tokens.md").unlink()
    (here / "docs").rmdir()
    code, _, err = run(capsys, "search", "revoke a token")
    assert code == 1
    assert f"and {here / 'docs'} is gone (moved, renamed or deleted?)" in err
