import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_config_reference_is_generated_from_the_models() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "render_readme.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr


def test_quick_start_has_exactly_two_commands_and_ci_runs_the_second() -> None:
    section = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```bash\n(.*?)\n```", section, flags=re.S)
    assert len(commands) == 2
    assert all("\n" not in c for c in commands)
    assert commands[0] == "pip install -e . && python examples/quickstart.py"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert commands[1].replace('"', "") in ci.replace('"', "").replace("-q ", "")
    for variable in re.findall(r"^export (\w+_URL|HOLODECK_\w+)=", ci, flags=re.M):  # servers
        assert variable in section, variable


def test_every_error_table_row_names_a_test_that_exists() -> None:
    table = README.split("<!-- error-table:start -->", 1)[1].split("<!-- error-table:end -->")[0]
    rows = [line for line in table.strip().splitlines()[2:] if line.startswith("|")]
    assert len(rows) >= 10
    for row in rows:
        (node,) = re.findall(r"`(tests/[\w/]+\.py)::(\w+)`", row)
        path, name = node
        source = (ROOT / path).read_text(encoding="utf-8")
        assert re.search(rf"^(async )?def {name}\(", source, flags=re.M), f"{path}::{name}"


def test_tool_selection_example_runs_and_its_results_hold() -> None:
    from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
    from langchain_core.messages import AIMessage

    class Model(FakeMessagesListChatModel):
        bound: list = []  # noqa: RUF012 - one instance per test

        def bind_tools(self, tools, **kwargs):
            self.bound.append([t.name for t in tools])
            return self

    section = README.split("## Tool selection for agents", 1)[1].split("\n## ", 1)[0]
    (code,) = re.findall(r"```python\n(.*?)\n```", section, flags=re.S)
    checked = re.sub(r"^(.+?)  # -> (.+)$", r"assert (\1) == \2", code, flags=re.M)
    assert checked.count("assert (") == 2
    model = Model(responses=[AIMessage("It will rain.")])
    namespace: dict = {"model": model}
    exec(compile(checked, "README.md", "exec"), namespace)
    namespace["agent"].invoke({"messages": [{"role": "user", "content": "rain in Oslo?"}]})
    assert model.bound == [["get_weather"]]


def _anchor(heading: str) -> str:
    """GitHub's anchor of a Markdown heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_the_readme_is_a_guide_and_its_links_into_docs_resolve() -> None:
    assert len(README.splitlines()) <= 400
    pages = {"README.md": README}
    pages.update(
        {f"docs/{p.name}": p.read_text(encoding="utf-8") for p in (ROOT / "docs").glob("*.md")}
    )
    for page in ("configuration", "benchmarks", "reliability"):
        assert f"docs/{page}.md" in pages
    for name, text in pages.items():
        base = (ROOT / name).parent
        for target, anchor in re.findall(r"\]\(([\w./-]+)#?([\w-]*)\)", text):
            path = (base / target).resolve()
            assert path.exists(), f"{name} links to a missing {target}"
            if anchor and target.endswith(".md"):
                headings = re.findall(r"^#+ (.+)$", path.read_text(encoding="utf-8"), flags=re.M)
                anchors = {_anchor(heading) for heading in headings}
                assert anchor in anchors, f"{name} links to {target}#{anchor}, which is no heading"


def test_the_reliability_and_benchmark_pages_keep_their_tables() -> None:
    for page, marker in (("reliability", "reliability"), ("benchmarks", "benchmarks")):
        text = (ROOT / "docs" / f"{page}.md").read_text(encoding="utf-8")
        table = text.split(f"<!-- {marker}:start -->", 1)[1].split(f"<!-- {marker}:end -->")[0]
        assert table.count("\n|") >= 5


def test_the_code_in_the_readme_and_docs_passes_the_documented_format_check() -> None:
    """README's Development runs ``ruff format --check .``, which formats Markdown code too."""
    pytest.importorskip("ruff")
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--check", "README.md", "docs"],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stdout + result.stderr
