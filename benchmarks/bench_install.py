"""What a new user installs and waits for: the quick start's install in a fresh venv, then timings.

    python benchmarks/bench_install.py               # venv under /tmp, from a copy of this repo
    python benchmarks/bench_install.py --keep DIR    # keep the venv (and repo copy) in DIR

1. Resolution: ``pip install --dry-run --report`` of the quick start's install command
   (``pip install -e .``) in a fresh venv on this CPU machine: wheels, total download size, and
   any CUDA / torch wheel (there must be none).
2. Size: the same install for real; ``du`` of the venv's site-packages (target <= 600 MB).
3. Time, in that venv, each a new process: ``python examples/quickstart.py`` end to end
   (target <= 5 s; the first run also compiles bytecode, so both first and median of the next
   3 are shown), and 3 more runs each on an empty cache directory (``HOLODECK_CACHE_DIR``: the
   int8 graph is built, as on a new machine); ``holodeck-rag search`` cold after an ingest
   (target <= 1.5 s, median of 5).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "nvidia-", "triton", "cuda")


def sh(*cmd: str | Path, cwd: Path | None = None, env: dict | None = None) -> str:
    out = subprocess.run(
        [str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, check=True
    )
    return out.stdout


def timed(*cmd: str | Path, cwd: Path, env: dict[str, str] | None = None) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system) of one run of ``cmd``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def median_pair(runs: list[tuple[float, float]]) -> tuple[float, float]:
    return statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs)


def du_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--keep", type=Path, help="build in this directory and keep it")
    parser.add_argument(
        "--timings-only", action="store_true", help="reuse the venv in --keep: only time start-up"
    )
    args = parser.parse_args()
    if args.timings_only and args.keep is None:
        parser.error("--timings-only needs --keep DIR (the venv of an earlier run)")
    base = args.keep or Path(tempfile.mkdtemp(prefix="holodeck-install-"))
    base.mkdir(parents=True, exist_ok=True)
    repo = base / "repo"
    if not repo.exists():
        ignore = shutil.ignore_patterns(".git", ".holodeck", ".cache", "__pycache__", "*.egg-info")
        shutil.copytree(ROOT, repo, ignore=ignore)
    venv = base / "venv"
    if not args.timings_only:
        install(base, repo, venv)
    start_up(base, repo, venv)
    if args.keep is None:
        shutil.rmtree(base, ignore_errors=True)


def install(base: Path, repo: Path, venv: Path) -> None:
    sh(sys.executable, "-m", "venv", "--clear", venv)
    py = venv / "bin" / "python"
    sh(py, "-m", "pip", "install", "-q", "--upgrade", "pip")

    report_path = base / "report.json"
    sh(py, "-m", "pip", "install", "--dry-run", "--report", report_path, "-e", ".", cwd=repo)
    report = json.loads(report_path.read_text())
    names = sorted(item["metadata"]["name"].lower() for item in report["install"])
    heavy = [n for n in names if n.startswith(HEAVY)]
    print("### Install (fresh venv, `pip install -e .`, this CPU machine)\n")
    print(f"- resolution: {len(names)} distributions; CUDA / torch wheels: {heavy or 'none'}")

    start = time.perf_counter()
    sh(py, "-m", "pip", "install", "-q", "-e", ".", cwd=repo)
    install_s = time.perf_counter() - start
    site = Path(sh(py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").strip())
    biggest = sorted(((du_mb(p), p.name) for p in site.iterdir() if p.is_dir()), reverse=True)[:6]
    print(f"- site-packages: {du_mb(site):.0f} MB (install took {install_s:.0f} s)")
    print("- largest: " + ", ".join(f"{name} {mb:.0f} MB" for mb, name in biggest))


def start_up(base: Path, repo: Path, venv: Path) -> None:
    py = venv / "bin" / "python"

    quick = [timed(py, "examples/quickstart.py", cwd=repo) for _ in range(4)]
    empty = []  # a new machine: no int8 graph built yet, no embeddings cached
    for _ in range(3):
        with tempfile.TemporaryDirectory() as cache:
            env = {**os.environ, "HOLODECK_CACHE_DIR": cache}
            empty.append(timed(py, "examples/quickstart.py", cwd=repo, env=env))
    work = base / "work"
    work.mkdir(exist_ok=True)
    cli = venv / "bin" / "holodeck-rag"
    sh(cli, "-q", "ingest", repo / "examples" / "sample_docs", cwd=work)
    searches = [timed(cli, "search", "revoke a token", cwd=work) for _ in range(5)]
    imports = [
        timed(py, "-c", "import langchain_holodeck", cwd=work),
        timed(py, "-c", "import langchain_holodeck", cwd=work),
        timed(py, "-c", "import langchain_holodeck", cwd=work),
    ]
    load = Path("/proc/loadavg").read_text().split()[0] if Path("/proc/loadavg").exists() else "?"
    print(f"\n### Start-up, each a new process in that venv (load average {load})\n")
    print("| what | wall s | CPU s (user + sys) | target (wall) |")
    print("|---|---|---|---|")
    rows = [
        ("`python examples/quickstart.py`, first run", quick[0], ""),
        ("`python examples/quickstart.py`, median of next 3", median_pair(quick[1:]), "<= 5"),
        (
            "`python examples/quickstart.py`, empty cache (`HOLODECK_CACHE_DIR`), median of 3",
            median_pair(empty),
            "<= 5",
        ),
        ('`holodeck-rag search "revoke a token"`, median of 5', median_pair(searches), "<= 1.5"),
        ('`python -c "import langchain_holodeck"`, median of 3', median_pair(imports), ""),
    ]
    for what, (wall, cpu), target in rows:
        print(f"| {what} | {wall:.2f} | {cpu:.2f} | {target} |")


if __name__ == "__main__":
    main()
