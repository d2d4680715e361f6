"""``holodeck-rag test``: the retrieval regression cases of an agent.yaml, hit@k and MRR per tool.

Each case (``tests:`` in the agent.yaml: ``query``, ``source`` and/or ``section_id``, ``k``,
``tool``) passes when one of the tool's first ``k`` results matches. The command prints one line
per case and a table per tool, and exits 1 when any case fails, so a team's CI keeps its
retrieval honest.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from langchain_holodeck._redact import clipped
from langchain_holodeck.cli._drift import sync_known
from langchain_holodeck.cli._output import print_result
from langchain_holodeck.cli._targets import (
    agent_yaml_path,
    as_ingested,
    build_tool,
    config_tool_target,
)
from langchain_holodeck.errors import ConfigError

if TYPE_CHECKING:
    from langchain_core.documents import Document

    from langchain_holodeck.config.models import RetrievalTestCase

DEFAULT_AGENT_YAML = Path("agent.yaml")
_TEST_HELP = """\
Runs the `tests:` cases of AGENT_YAML (default: ./agent.yaml), each a query with the `source`
file and/or `section_id` it must find within the first `k` results (default 5) of `tool`
(default: every tool). Prints PASS/FAIL per case, then per tool: cases, hit@k (share of cases
found within their k) and MRR (mean of 1/rank, 0 when not found within k). Exit status 1 when
a case fails, 0 when all pass. A search that fails (the store or the embedding model down)
stops the run with one `error: ...` line, as `search` prints it, exit 1."""


def add_test_parser(
    verbs: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    """Register ``test`` on the ``holodeck-rag`` parser."""
    test = verbs.add_parser(
        "test",
        parents=[common],
        help="run the retrieval regression cases of an agent.yaml (hit@k, MRR)",
        description=_TEST_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    test.add_argument("agent_yaml", nargs="?", type=agent_yaml_path, metavar="AGENT_YAML")
    test.add_argument(
        "--force-ingest", action="store_true", help="re-embed every file before testing"
    )
    test.set_defaults(run=run_test)


@dataclass(frozen=True)
class CaseResult:
    """One case run against one tool: the rank of the first match (None: not within k)."""

    tool: str
    case: RetrievalTestCase
    rank: int | None
    got: tuple[str, ...]
    """What the first results were (``source`` or ``source#section``), for a failure."""

    @property
    def passed(self) -> bool:
        return self.rank is not None


def matches(document: Document, case: RetrievalTestCase) -> bool:
    """Whether ``document`` is what ``case`` expects (its source file and/or section id)."""
    meta = document.metadata
    if case.source is not None:
        actual = str(meta.get("source_path", meta.get("source", ""))).replace("\\", "/")
        wanted = case.source.replace("\\", "/")
        while wanted.startswith("./"):  # "./auth.md" is auth.md; ".github/x.md" stays itself
            wanted = wanted[2:]
        if actual != wanted and not actual.endswith("/" + wanted):
            return False
    if case.section_id is not None:
        section = str(meta.get("section_id") or "")
        if not section or _section(section) != _section(case.section_id):
            return False
    return True


def _section(text: str) -> str:
    from langchain_holodeck.definitions import normalize_section_ref

    return normalize_section_ref(text) or text.strip()


def run_case(documents: list[Document], case: RetrievalTestCase, tool: str) -> CaseResult:
    """Score ``case`` on a tool's results (best first)."""
    top = documents[: case.k]
    rank = next((n for n, doc in enumerate(top, start=1) if matches(doc, case)), None)
    got = tuple(_label(doc) for doc in top[:3])
    return CaseResult(tool=tool, case=case, rank=rank, got=got)


def _label(document: Document) -> str:
    meta = document.metadata
    source = str(meta.get("source_path", meta.get("source", "?")))
    section = meta.get("section_id")
    return f"{source}#{section}" if section else source


def report(results: list[CaseResult]) -> str:
    """PASS/FAIL lines, then a table per tool: cases, passed, hit@k, MRR."""
    lines = []
    for r in results:
        want = " ".join(
            part
            for part in (
                f"source={r.case.source}" if r.case.source else "",
                f"section_id={r.case.section_id}" if r.case.section_id else "",
            )
            if part
        )
        query = clipped(repr(r.case.query))  # a long query stays one readable line
        if r.passed:
            lines.append(f"PASS {r.tool}: {query} -> rank {r.rank} (k={r.case.k})")
        else:
            got = ", ".join(r.got) or "no results"
            lines.append(f"FAIL {r.tool}: {query}: {want} not in the first {r.case.k} (got {got})")
    lines += ["", "| tool | cases | passed | hit@k | MRR |", "|---|---|---|---|---|"]
    for tool in dict.fromkeys(r.tool for r in results):
        mine = [r for r in results if r.tool == tool]
        passed = sum(r.passed for r in mine)
        mrr = sum(1 / r.rank for r in mine if r.rank) / len(mine)
        lines.append(f"| {tool} | {len(mine)} | {passed} | {passed / len(mine):.3f} | {mrr:.3f} |")
    return "\n".join(lines)


def run_test(args: argparse.Namespace) -> int:
    """``holodeck-rag test``: exit 0 when every case passes, 1 otherwise."""
    from langchain_holodeck.config.models import load_agent_config

    path: Path = args.agent_yaml or DEFAULT_AGENT_YAML
    if not path.is_file():
        what = "is a directory" if path.is_dir() else "does not exist"
        msg = f"AGENT_YAML {str(path)!r} {what}; pass the agent.yaml with the tests."
        raise ConfigError(msg)
    agent = load_agent_config(path)
    if not agent.tests:
        msg = (
            f"{path} has no tests: section; add cases such as "
            "tests: [{query: 'how do I revoke a token?', source: auth.md}]"
        )
        raise ConfigError(msg)
    results: list[CaseResult] = []
    for config in agent.tools:
        cases = [c for c in agent.tests if c.tool in (None, config.name)]
        if not cases:
            continue
        target = as_ingested(config_tool_target(config, path, Path.cwd()), args.store)
        tool = build_tool(target, args.store, top_k=max(c.k for c in cases))
        sync_known(target, tool, args.store, force_ingest=args.force_ingest)
        # the tool's own search: a failing one (the embedding model down) is its one line
        # (EmbeddingError, SearchError), as `search` prints it, not the client's traceback
        results += [run_case(tool.retrieve_sync(c.query), c, tool.name) for c in cases]
    print_result(report(results))  # a reader gone (`| head -n 1`) keeps a failure's exit 1
    return 0 if all(r.passed for r in results) else 1
