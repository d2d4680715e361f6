"""Symbol names: ``find_symbols`` (regular expressions + indentation) vs Python's own parser.

    python benchmarks/bench_symbols.py [--package sympy]

Ground truth: the qualified names of every function, method and class that ``ast`` finds in
the package's ``.py`` files (nested ones qualified by their enclosing definitions, the way
``find_symbols`` qualifies them). Counted per file as multisets, so a name defined twice must
be found twice.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from langchain_holodeck.splitters.code import find_symbols

_BLOCKS = (ast.If, ast.Try, ast.With, ast.For, ast.While)
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def ast_names(tree: ast.AST) -> list[str]:
    names: list[str] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, _DEFS):
                names.append(prefix + child.name)
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, _BLOCKS):
                visit(child, prefix)

    visit(tree, "")
    return names


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--package", default="sympy")
    args = parser.parse_args()
    root = Path(importlib.import_module(args.package).__file__ or "").parent
    found = extra = missed = files = 0
    for path in sorted(root.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        try:
            truth = Counter(ast_names(ast.parse(source)))
        except SyntaxError:
            continue
        files += 1
        got = Counter(s.qualified_name for s in find_symbols(source, "python"))
        found += sum((truth & got).values())
        extra += sum((got - truth).values())
        missed += sum((truth - got).values())
    print(f"{args.package}: {files} files, {found + missed} definitions\n")
    print("| symbol finder | precision | recall |\n|---|---:|---:|")
    precision, recall = found / (found + extra), found / (found + missed)
    print(f"| find_symbols (python) vs ast | {precision:.4f} | {recall:.4f} |")


if __name__ == "__main__":
    main()
