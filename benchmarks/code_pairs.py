"""Docstring -> function pairs from an installed package: the code-retrieval benchmark's data.

    python benchmarks/code_pairs.py   # writes ~/.cache/holodeck-bench/code/{dev,test}.jsonl

For every function and method of the package (its ``.py`` files under site-packages, tests
excluded) that has a docstring whose first line has at least three words: the query is that
first line, the document is the function's source without its docstring (dedented). Pairs
whose query or document is not unique are dropped (they have no single right answer). The
split is by file: a file's functions are all dev or all test (30% / 70% of files, by a hash
of the file's path), so tuning on dev never sees a test function's neighbours.

No third-party code is committed: the package's source is read at run time.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import importlib
import importlib.metadata
import json
import textwrap
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

PACKAGE = "sympy"
CACHE = Path.home() / ".cache" / "holodeck-bench" / "code"
DEV_SHARE = 0.3


@dataclass(frozen=True)
class Pair:
    """One query and the function it describes."""

    id: str
    """``<file path in the package>::<Class.method or function>``."""
    query: str
    """The docstring's first line."""
    document: str
    """The function's source without its docstring."""
    split: str
    """``dev`` or ``test``."""


def _split_of(path: str) -> str:
    bucket = int(hashlib.sha1(path.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
    return "dev" if bucket < DEV_SHARE else "test"


def _functions(tree: ast.Module) -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    out: list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                out.append((prefix + child.name, child))
                visit(child, f"{prefix}{child.name}.")

    visit(tree, "")
    return out


def _without_docstring(lines: list[str], fn: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    doc = fn.body[0]
    start, end = fn.lineno - 1, fn.end_lineno or fn.lineno
    keep = [
        line
        for number, line in enumerate(lines[start:end], start=start + 1)
        if not (doc.lineno <= number <= (doc.end_lineno or doc.lineno))
    ]
    return textwrap.dedent("".join(keep)).strip()


def extract_pairs(package: str = PACKAGE) -> list[Pair]:
    """Every unique (first docstring line, function without docstring) pair of ``package``."""
    root = Path(importlib.import_module(package).__file__ or "").parent
    raw: list[tuple[str, str, str]] = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent).as_posix()
        parts = rel.split("/")
        if "tests" in parts or "testing" in parts or parts[-1].startswith(("test_", "conftest")):
            continue
        source = path.read_text(encoding="utf-8")
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        lines = source.splitlines(keepends=True)
        for qualname, fn in _functions(tree):
            doc = ast.get_docstring(fn)
            if not doc or not doc.strip():
                continue
            query = " ".join(doc.strip().splitlines()[0].split())
            if len(query.split()) < 3:
                continue
            document = _without_docstring(lines, fn)
            if document:
                raw.append((f"{rel}::{qualname}", query, document))
    queries = Counter(q for _, q, _ in raw)
    documents = Counter(d for _, _, d in raw)
    return [
        Pair(pair_id, query, document, _split_of(pair_id.split("::")[0]))
        for pair_id, query, document in raw
        if queries[query] == 1 and documents[document] == 1
    ]


def load_pairs(split: str, *, package: str = PACKAGE, cache: Path = CACHE) -> list[Pair]:
    """The ``dev`` or ``test`` pairs, from the cache (written on first use)."""
    path = cache / f"{split}.jsonl"
    version = importlib.metadata.version(package)
    meta = cache / "meta.json"
    if not path.exists() or json.loads(meta.read_text())["version"] != version:
        write_split(package=package, cache=cache)
    return [Pair(**json.loads(line)) for line in path.open(encoding="utf-8")]


def write_split(*, package: str = PACKAGE, cache: Path = CACHE) -> dict[str, int]:
    """Write ``dev.jsonl``, ``test.jsonl`` and ``meta.json`` (package, version, counts)."""
    pairs = extract_pairs(package)
    cache.mkdir(parents=True, exist_ok=True)
    counts: dict[str, int] = {}
    for split in ("dev", "test"):
        rows = [p for p in pairs if p.split == split]
        counts[split] = len(rows)
        with (cache / f"{split}.jsonl").open("w", encoding="utf-8") as fh:
            for pair in rows:
                fh.write(json.dumps(asdict(pair)) + "\n")
    meta = {"package": package, "version": importlib.metadata.version(package), **counts}
    (cache / "meta.json").write_text(json.dumps(meta, indent=1), encoding="utf-8")
    return counts


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--package", default=PACKAGE)
    parser.add_argument("--out", type=Path, default=CACHE)
    args = parser.parse_args()
    found = write_split(package=args.package, cache=args.out)
    print(f"{args.package}: {found} pairs written to {args.out}")
