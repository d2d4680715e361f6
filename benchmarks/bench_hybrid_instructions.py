"""Instructions per hybrid query, counted by valgrind: a load-independent speed comparison.

    python benchmarks/bench_hybrid_instructions.py              # floor, ours, ours without feedback
    python benchmarks/bench_hybrid_instructions.py --queries 20 --systems ours

On the shared 2-core machine wall and CPU times move with the other work (a paired run at load
10 inflates every system by 2-4x, and the memory-bound parts more than the rest), so a change of
10% hides in the noise. Callgrind counts the instructions each query executes, the same at any
load: each system runs in its own process under ``valgrind --tool=callgrind``, and only the
query loop is counted (a tiny C helper issues callgrind's start/stop client requests around it).
Instructions are not time (the floor's matrix product and partial sorts retire more instructions
per nanosecond than the interpreter), so report these next to a ``bench_hybrid_speed.py`` row.
Same synthetic 10k corpus, queries and systems as ``bench_hybrid_speed.py`` (floor at 50 per
leg). Needs valgrind, its headers (``valgrind/callgrind.h``) and a C compiler.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HELPER = r"""
#include <valgrind/callgrind.h>
void start(void) { CALLGRIND_ZERO_STATS; CALLGRIND_START_INSTRUMENTATION; }
void stop(void) { CALLGRIND_STOP_INSTRUMENTATION; CALLGRIND_DUMP_STATS_AT("queries"); }
"""
WARMUP = 5


def worker(system: str, n: int, helper: str) -> None:
    """Build the system, warm it up, and run ``n`` queries between start and stop."""
    import ctypes

    sys.path.insert(0, str(ROOT))
    import numpy as np
    from synthetic import corpus, default_retriever, floor_query_tokens, floor_search

    texts, vecs, queries, qvecs = corpus(10_000)
    qv = {q: qvecs[i] for i, q in enumerate(queries)}
    if system == "floor":
        import bm25s
        import Stemmer

        stemmer = Stemmer.Stemmer("english")
        index = bm25s.BM25()
        index.index(
            bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False),
            show_progress=False,
        )
        matrix, q_tokens = np.ascontiguousarray(vecs), floor_query_tokens(queries, stemmer)

        def run(q: str) -> object:
            return floor_search(matrix, index, qv[q], q_tokens[q], 50)
    else:
        retriever = default_retriever(texts, vecs, qv)
        if system == "ours_no_feedback":
            retriever = retriever.model_copy(update={"feedback_docs": 0})
        run = retriever.invoke
    for q in queries[:WARMUP]:
        run(q)
    control = ctypes.CDLL(helper)
    control.start()
    for q in queries[WARMUP : WARMUP + n]:
        run(q)
    control.stop()


def count(system: str, n: int, helper: str, out_dir: Path) -> float:
    """Millions of instructions per query of ``system`` (its own valgrind process)."""
    out = out_dir / f"callgrind.{system}.out"
    subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            "--instr-atstart=no",
            f"--callgrind-out-file={out}",
            sys.executable,
            __file__,
            "--worker",
            system,
            str(n),
            helper,
        ],
        check=True,
        capture_output=True,
        env=os.environ
        | {"PYTHONHASHSEED": "0", "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"},
    )
    for part in sorted(out_dir.glob(f"callgrind.{system}.out*")):
        text = part.read_text(errors="replace")
        if "queries" in text.split("\npositions:", 1)[0]:  # the dump the helper asked for
            totals = next(line for line in text.splitlines() if line.startswith("totals:"))
            return int(totals.split()[1]) / n / 1e6
    msg = f"no callgrind dump of the query loop for {system} in {out_dir}"
    raise RuntimeError(msg)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", type=int, default=10)
    parser.add_argument("--systems", nargs="+", default=["floor", "ours", "ours_no_feedback"])
    parser.add_argument("--worker", nargs=3, metavar=("SYSTEM", "N", "HELPER"))
    args = parser.parse_args()
    if args.worker:
        worker(args.worker[0], int(args.worker[1]), args.worker[2])
        return
    missing = [tool for tool in ("valgrind", "cc") if shutil.which(tool) is None]
    if missing or not Path("/usr/include/valgrind/callgrind.h").exists():
        print("needs valgrind, its headers (valgrind/callgrind.h) and a C compiler")
        sys.exit(1)
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT
    ).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        helper = Path(tmp) / "callgrind_control.so"
        source = Path(tmp) / "callgrind_control.c"
        source.write_text(HELPER)
        subprocess.run(["cc", "-O1", "-shared", "-fPIC", "-o", helper, source], check=True)
        counts = {s: count(s, args.queries, str(helper), Path(tmp)) for s in args.systems}
    print(f"\ncommit {commit}; 10,000 chunks; {args.queries} queries each; callgrind")
    print("\n| system | M instructions per query |\n|---|---:|")
    for system, millions in counts.items():
        print(f"| {system} | {millions:.2f} |")
    if "floor" in counts:
        for system in [s for s in counts if s != "floor"]:
            print(f"{system} / floor: {counts[system] / counts['floor']:.2f}x (instructions)")


if __name__ == "__main__":
    main()
