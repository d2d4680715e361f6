"""A source the walk cannot fully reach for one run keeps what the store holds of it.

A folder that cannot be listed, a file that cannot be stat'ed or opened, is not a deleted
file: permissions fixed (or a network mount back), the next run must find the corpus whole
and the file read again. The kernel checks the modes: root bypasses them, so as root each
scenario runs in a child that drops the two capabilities that let it (``setpriv``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
MAIN = "import sys; from langchain_holodeck.cli import main; sys.exit(main())"
NO_MODE_BYPASS = [
    "setpriv",
    "--inh-caps=-dac_override,-dac_read_search",
    "--bounding-set=-dac_override,-dac_read_search",
]


def run_checked_by_modes(code: str, *argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python -c code ARGV`` in ``cwd``, in a process the file modes hold to."""
    prefix: list[str] = []
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("root reads every file and setpriv (util-linux) is not installed")
        prefix = NO_MODE_BYPASS
    return subprocess.run(
        [*prefix, sys.executable, "-c", code, *argv],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT), "HOME": str(cwd)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


PIPELINE = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    from langchain_holodeck import (
        IngestionPipeline, MatrixVectorStore, SourceLoader, SourceUnreadableError
    )
    from langchain_holodeck.vectorstores import scan_documents
    from tests.helpers import HashingEmbeddings

    docs = Path("docs")
    store = MatrixVectorStore(HashingEmbeddings())
    pipeline = IngestionPipeline(store, namespace="kb")
    loader = SourceLoader("docs")  # one per corpus, as a tool keeps it: says a thing once
    out = {}

    def run(step):
        try:
            r = pipeline.invoke(loader)
            out[step] = [r.added, r.updated, r.skipped, r.failed, r.deleted]
        except SourceUnreadableError as error:
            out[step] = str(error)
        out[step + " stored"] = sorted(
            {d.metadata["source_path"] for d in scan_documents(store, namespace="kb")}
        )

    run("first")
    (docs / "team").chmod(0)  # cannot be listed
    run("team unlisted")
    (docs / "team").chmod(0o644)  # listed, but its files cannot be stat'ed
    run("team unsearchable")
    (docs / "team").chmod(0o755)
    run("team back")
    docs.chmod(0)  # the source itself
    run("source unlisted")
    docs.chmod(0o755)
    run("source back")
    (docs / "new.md").write_text("# New\\n\\nnewword\\n", encoding="utf-8")
    (docs / "new.md").chmod(0)  # cannot be opened
    run("new unreadable")
    run("new still unreadable")  # tried again, not warned about again
    (docs / "new.md").chmod(0o644)  # its mtime and size as they were
    run("new readable")
    print(json.dumps(out))
    """
)


def write_docs(root: Path) -> None:
    (root / "docs" / "team").mkdir(parents=True)
    (root / "docs" / "top.md").write_text("# Top\n\ntopword\n", encoding="utf-8")
    for i in range(3):
        (root / "docs" / "team" / f"t{i}.md").write_text(
            f"# Team {i}\n\nteamword{i}\n", encoding="utf-8"
        )


def test_a_folder_or_file_the_walk_cannot_reach_keeps_its_chunks(tmp_path: Path) -> None:
    write_docs(tmp_path)
    proc = run_checked_by_modes(PIPELINE, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    everything = ["docs/team/t0.md", "docs/team/t1.md", "docs/team/t2.md", "docs/top.md"]
    assert out["first"] == [4, 0, 0, 0, 0]
    # added, updated, skipped, failed, deleted: the team's 3 files are kept, not deleted
    assert out["team unlisted"] == [0, 0, 4, 0, 0]
    assert out["team unlisted stored"] == everything
    assert out["team unsearchable"] == [0, 0, 4, 0, 0]
    assert out["team unsearchable stored"] == everything
    assert out["team back"] == [0, 0, 4, 0, 0]
    assert out["source unlisted"] == (
        "source 'docs' cannot be listed (Permission denied); nothing was changed: make it "
        "readable and run again."
    )
    assert out["source unlisted stored"] == everything
    assert out["source back"] == [0, 0, 4, 0, 0]
    assert out["new unreadable"] == [0, 0, 4, 0, 0]
    assert out["new readable"] == [1, 0, 4, 0, 0]  # read again though mtime and size held
    assert "docs/new.md" in out["new readable stored"]
    assert "Skipping directory docs/team/: cannot list it" in proc.stderr
    assert "Skipping docs/team/t0.md: cannot stat it" in proc.stderr
    assert proc.stderr.count("Skipping docs/new.md: could not load it (PermissionError") == 1
    assert out["new still unreadable"] == [0, 0, 4, 0, 0]


def test_ingest_of_a_source_that_cannot_be_listed_is_one_error_line(tmp_path: Path) -> None:
    write_docs(tmp_path)
    first = run_checked_by_modes(MAIN, "--store", "st", "ingest", "docs", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    (tmp_path / "docs").chmod(0)
    try:
        refused = run_checked_by_modes(MAIN, "--store", "st", "ingest", "docs", cwd=tmp_path)
    finally:
        (tmp_path / "docs").chmod(0o755)
    assert refused.returncode == 1
    assert refused.stderr.strip().splitlines() == [
        "error: source 'docs' cannot be listed (Permission denied); nothing was changed: make "
        "it readable and run again."
    ]
    again = run_checked_by_modes(MAIN, "--store", "st", "ingest", "docs", cwd=tmp_path)
    assert "0 added, 0 updated, 4 skipped, 0 failed, 0 deleted" in again.stdout, again.stdout
