"""A saved store that cannot be written: a read-only mount, a full disk (found 2026-12-07).

A baked image or a read-only share holds a store ``holodeck-rag`` searches; a disk fills up
during an ingest. Searching must not need to write, an ingest with nothing to change (a
file only touched included) must succeed, and an ingest that must write must say in one line
which directory, why, and that the previous save is kept (or that there was none). Each
scenario runs in a child in its own user and mount namespace (``unshare``), so the read-only
bind mount and the small tmpfs are real, need no root, and vanish with the child.
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

from tests.helpers import DATA_DIR

REPO_ROOT = Path(__file__).resolve().parents[2]
NO_MOUNT = 97  # the child's exit status when the namespace or the mount is refused

STEPS = textwrap.dedent(
    """
    import contextlib, io, json, sys
    from langchain_holodeck.cli import main

    def run(*argv):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(argv))
        return [code, out.getvalue(), err.getvalue()]
    """
)


def run_in_namespace(workdir: Path, mounts: str, script: str) -> dict[str, list]:
    """Run ``mounts`` (shell) then ``script`` (Python) in a new user and mount namespace."""
    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) is not installed")
    shell = f'{mounts} || exit {NO_MOUNT}; exec {sys.executable} -c "$STEPS"'
    child = subprocess.run(
        ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", shell],
        cwd=workdir,
        env={
            **os.environ,
            "PYTHONPATH": str(REPO_ROOT),
            "HOME": str(workdir),
            "STEPS": STEPS + textwrap.dedent(script),
        },
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if child.returncode == NO_MOUNT or "unshare failed" in child.stderr:
        pytest.skip(f"no user and mount namespace here: {child.stderr.strip()[-300:]}")
    assert child.returncode == 0, child.stderr[-3000:]
    return json.loads(child.stdout.strip().splitlines()[-1])


def on_a_read_only_mount(workdir: Path, script: str) -> dict[str, list]:
    """``run_in_namespace`` with the sample docs in ``workdir`` and ``st`` mounted read-only
    at ``mnt`` (``script`` ingests into ``st`` first, then reads ``mnt``)."""
    shutil.copytree(DATA_DIR / "docs", workdir / "docs")
    (workdir / "st").mkdir()
    (workdir / "mnt").mkdir()
    return run_in_namespace(workdir, "mount --bind st mnt && mount -o remount,ro,bind mnt", script)


def files_of(directory: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(directory)): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file() and p.name != ".lock"
    }


def test_a_read_only_store_is_searched_and_an_ingest_that_must_write_says_so(
    tmp_path: Path,
) -> None:
    steps = on_a_read_only_mount(
        tmp_path,
        """
        from pathlib import Path
        steps = {"ingest": run("--store", "st", "ingest", "docs")}
        steps["search unchanged"] = run("--store", "mnt", "search", "token")
        steps["ingest unchanged"] = run("--store", "mnt", "ingest", "docs")
        with open("docs/api.md", "a", encoding="utf-8") as f:
            f.write("\\nOne more paragraph about rotating a token.\\n")
        steps["search changed"] = run("--store", "mnt", "search", "rotating a token")
        steps["ingest changed"] = run("--store", "mnt", "ingest", "docs")
        print(json.dumps(steps))
        """,
    )
    assert steps["ingest"][0] == 0, steps["ingest"]
    saved = files_of(tmp_path / "st")
    code, out, err = steps["search unchanged"]
    assert (code, err) == (0, ""), err
    assert out.startswith("Found ")
    code, out, err = steps["ingest unchanged"]  # ingest.json records it already: no error
    assert (code, err) == (0, ""), err
    assert "0 added, 0 updated" in out
    code, out, err = steps["search changed"]  # synced in memory, searched, nothing saved
    assert code == 0, err
    assert "rotating a token" in out
    lines = err.splitlines()
    unsaved = [line for line in lines if "could not save the store" in line]
    assert unsaved == [
        "warning: default: could not save the store in mnt/default: its file system is "
        "read-only ([Errno 30] Read-only file system); this run searches what it synced in "
        "memory and the saved store stays as it was, so the next run syncs the changed files "
        "again (mount it read-write to keep them)."
    ], err
    assert "0 failed" in lines[-1]  # a cache that cannot be written fails no chunk
    assert not any("sync:" in line for line in lines), err
    code, out, err = steps["ingest changed"]
    assert (code, out) == (1, ""), out
    assert err.splitlines()[-1] == (
        "error: default: could not save the store in mnt/default: its file system is "
        "read-only ([Errno 30] Read-only file system); the previous save is kept, without "
        "this run's changes: mount it read-write and run again."
    ), err
    assert files_of(tmp_path / "st") == saved  # not a byte of the store changed


def test_a_file_only_touched_on_a_read_only_store_is_nothing_to_change(
    tmp_path: Path,
) -> None:
    """A source file touched, its bytes the same (git checkout, cp): every ingest of the
    read-only store failed ('could not save the store ... the previous save is kept') and
    every search warned, for a new mtime in the file record (found 2026-12-07). A sync that
    changed no chunk has nothing to save: exit 0, no warning, the file re-checked by hash.
    So does the same source spelt another way (``./docs/``: one resolved root), which exited
    1 for an ingest.json naming ``docs`` (found 2026-12-07, third round)."""
    steps = on_a_read_only_mount(
        tmp_path,
        """
        import os
        steps = {"ingest": run("--store", "st", "ingest", "docs")}
        os.utime("docs/api.md", (2e9, 2e9))  # touched: same bytes, another mtime
        steps["ingest touched"] = run("--store", "mnt", "ingest", "docs")
        steps["search touched"] = run("--store", "mnt", "search", "token")
        steps["ingest again"] = run("--store", "mnt", "ingest", "docs")
        steps["ingest respelt"] = run("--store", "mnt", "ingest", "./docs/")  # one root
        print(json.dumps(steps))
        """,
    )
    assert steps["ingest"][0] == 0, steps["ingest"]
    saved = files_of(tmp_path / "st")
    for step in ("ingest touched", "search touched", "ingest again", "ingest respelt"):
        code, _, err = steps[step]
        assert (code, err) == (0, ""), (step, err)
    assert "0 added, 0 updated" in steps["ingest touched"][1]
    assert steps["search touched"][1].startswith("Found ")
    assert files_of(tmp_path / "st") == saved


def test_a_first_ingest_into_a_read_only_store_says_nothing_is_saved(tmp_path: Path) -> None:
    """A first ingest into a read-only --store said 'the previous save is kept', when there
    was none (found 2026-12-07)."""
    shutil.copytree(DATA_DIR / "docs", tmp_path / "docs")
    (tmp_path / "mnt").mkdir()
    steps = run_in_namespace(
        tmp_path,
        "mount --bind mnt mnt && mount -o remount,ro,bind mnt",
        """
        print(json.dumps({"ingest": run("--store", "mnt/st", "ingest", "docs")}))
        """,
    )
    code, out, err = steps["ingest"]
    assert (code, out) == (1, ""), out
    assert err.splitlines()[-1] == (
        "error: default: could not save the store in mnt/st/default: its file system is "
        "read-only ([Errno 30] Read-only file system); nothing is saved (the store had no "
        "previous save): mount it read-write and run again."
    ), err


def test_a_full_disk_names_the_store_keeps_the_save_and_the_next_run_converges(
    tmp_path: Path,
) -> None:
    shutil.copytree(DATA_DIR / "docs", tmp_path / "docs")
    (tmp_path / "disk").mkdir()
    steps = run_in_namespace(
        tmp_path,
        "mount -t tmpfs -o size=4m tmpfs disk",
        """
        import errno, os
        steps = {"ingest": run("--store", "disk/st", "ingest", "docs")}
        with open("disk/filler", "wb", buffering=0) as filler:  # every page of the disk
            for block in (1 << 16, 1 << 12, 1):
                try:
                    while True:
                        filler.write(b"\\0" * block)
                except OSError as error:
                    assert error.errno == errno.ENOSPC, error
        with open("docs/api.md", "a", encoding="utf-8") as f:
            f.write("\\nOne more paragraph about rotating a token.\\n")
        steps["disk full"] = run("--store", "disk/st", "ingest", "docs")
        steps["search full"] = run("--store", "disk/st", "search", "rotating a token")
        os.unlink("disk/filler")
        steps["space freed"] = run("--store", "disk/st", "ingest", "docs")
        steps["again"] = run("--store", "disk/st", "ingest", "docs")
        print(json.dumps(steps))
        """,
    )
    assert steps["ingest"][0] == 0, steps["ingest"]
    code, out, err = steps["disk full"]
    assert (code, out) == (1, ""), out
    assert err.splitlines()[-1] == (
        "error: default: could not save the store in disk/st/default: no space is left on "
        "its disk ([Errno 28] No space left on device); the previous save is kept, without "
        "this run's changes: free space and run again."
    ), err
    code, out, err = steps["search full"]  # the previous save answers, synced in memory
    assert code == 0, err
    assert "rotating a token" in out
    assert "could not save the store in disk/st/default: no space is left" in err
    code, out, err = steps["space freed"]
    assert code == 0, err
    assert "0 added, 1 updated" in out
    assert "0 added, 0 updated" in steps["again"][1]  # converged
