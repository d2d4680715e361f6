"""What bounded conversion costs: SourceLoader with the child-process converter vs in-process.

    python benchmarks/bench_convert_overhead.py FOLDER [FOLDER ...] [--rounds 3]

For each folder, loads every file with ``SourceLoader(folder)`` (the default: markitdown's
formats converted in a child process under ``max_convert_seconds``) and with
``SourceLoader(folder, max_convert_seconds=None)`` (converted in this process, unbounded: the
behaviour before the limit), alternating, ``--rounds`` times each, each in a fresh Python
process (so the worker's start-up and markitdown's import are counted every time). Prints the
median wall seconds, the CPU seconds of the loading process and of its children (the
worker), the files of each kind, the conversion workers started, and the load average.
Markdown, text and code never reach a worker, so a folder of them starts none.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = """
import json, os, resource, sys, time
from langchain_holodeck.loaders import SourceLoader
from langchain_holodeck import _conversion
folder, bounded = sys.argv[1], sys.argv[2] == "bounded"
started = []
real = _conversion._Worker.__init__
def counted(self, *args):
    started.append(1)
    real(self, *args)
_conversion._Worker.__init__ = counted
wall, cpu = time.perf_counter(), time.process_time()
kwargs = {} if bounded else {"max_convert_seconds": None}
docs = SourceLoader(folder, **kwargs).load()
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
_conversion._close_pools()
children = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"wall": wall, "cpu": cpu, "child_cpu": children.ru_utime + children.ru_stime,
                  "docs": len(docs), "workers": len(started),
                  "kinds": sorted({d.metadata["file_type"] for d in docs})}))
"""


def run(folder: str, mode: str) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, folder, mode],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return dict(json.loads(out.strip().splitlines()[-1]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    for folder in args.folders:
        kinds = Counter(p.suffix.lstrip(".").lower() for p in Path(folder).rglob("*.*"))
        print(f"\n{folder}: {dict(kinds.most_common(6))}")
        runs: dict[str, list[dict[str, object]]] = {"bounded": [], "in-process": []}
        for _ in range(args.rounds):
            for mode in runs:
                runs[mode].append(run(folder, mode))
        print(f"{'mode':<12}{'wall s':>9}{'cpu s':>9}{'child cpu s':>13}{'docs':>7}{'workers':>9}")
        for mode, results in runs.items():

            def median(key: str, results: list[dict[str, object]] = results) -> float:
                return statistics.median(float(r[key]) for r in results)  # type: ignore[arg-type]

            print(
                f"{mode:<12}{median('wall'):>9.2f}{median('cpu'):>9.2f}"
                f"{median('child_cpu'):>13.2f}{int(median('docs')):>7}"
                f"{int(median('workers')):>9}"
            )
    print(f"\nload average: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
