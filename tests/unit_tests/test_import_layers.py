"""The package's modules import each other in floors, never in circles.

Every ``import`` of the package's own code counts, wherever it stands (module top, function
body, ``TYPE_CHECKING`` block): a circle hidden in a function is still a circle. Contracts
(``langchain_holodeck.contracts``) import nothing of the package.
"""

from __future__ import annotations

import ast
from pathlib import Path

import langchain_holodeck

PACKAGE = Path(langchain_holodeck.__file__).parent
NAME = "langchain_holodeck"


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _imports(module: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package modules ``module`` imports (a name that is a submodule counts as it)."""
    is_package = path.name == "__init__.py"
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")
                if not is_package:
                    anchor = anchor[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                targets.add(sub if sub in modules else base)
    return {t for t in targets if t in modules and t != module}


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_package_has_no_import_circle() -> None:
    graph = _graph()
    assert len(graph) > 50  # the walk found the package
    circles = _circles(graph)
    assert circles == [], "import circles: " + "; ".join(" <-> ".join(c) for c in circles)


def test_the_circle_check_finds_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _circles(graph) == [["a", "b", "c"]]


def test_contracts_import_nothing_of_the_package() -> None:
    assert _graph()[f"{NAME}.contracts"] == set()


def test_relative_and_submodule_imports_resolve() -> None:
    graph = _graph()
    assert f"{NAME}.contracts" in graph[f"{NAME}.search_strategy"]
    assert f"{NAME}.backends._registry" in graph[f"{NAME}.backends"]


def test_a_module_imported_first_finds_its_floors_loaded() -> None:
    import subprocess
    import sys

    first = (
        "langchain_holodeck.keyword_index.bm25",
        "langchain_holodeck.vectorstores.matrix",
        "langchain_holodeck.backends.memory",
        "langchain_holodeck.tools",
    )
    code = "; ".join(
        [
            f"import importlib, subprocess, sys; mods = {first!r}",
            "bad = [m for m in mods if subprocess.run([sys.executable, '-c', 'import ' + m])"
            ".returncode]",
            "print(', '.join(bad), file=sys.stderr)",
            "sys.exit(1 if bad else 0)",
        ]
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
