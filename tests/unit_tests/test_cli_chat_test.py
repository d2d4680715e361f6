"""``holodeck-rag chat`` (search mode), ``holodeck-rag test``, --version, --max-chars, pipes."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import langchain_holodeck
from langchain_holodeck.cli import main
from langchain_holodeck.cli._format import ProgressBars
from langchain_holodeck.config import load_agent_config
from langchain_holodeck.errors import ConfigError
from langchain_holodeck.ingestion import IngestProgress
from tests.helpers import DATA_DIR

ROOT = Path(__file__).resolve().parents[2]


def ingested(root: Path) -> Path:
    """``root`` once ``holodeck-rag ingest docs`` ran there (HOME too), quietly."""
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)
        patch.setenv("HOME", str(root))
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            assert main(["ingest", "docs"]) == 0
    return root


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the docs and legal corpora, ingested once by the default tool."""
    root = tmp_path_factory.mktemp("chat")
    shutil.copytree(DATA_DIR / "docs", root / "docs")
    shutil.copytree(DATA_DIR / "legal", root / "legal")
    return ingested(root)


@pytest.fixture(autouse=True)
def _in_workdir(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(workdir)
    monkeypatch.setenv("HOME", str(workdir))


def run(
    capsys: pytest.CaptureFixture[str], *argv: str, stdin: str | None = None
) -> tuple[int, str, str]:
    if stdin is not None:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(sys, "stdin", io.StringIO(stdin))
            code = main(list(argv))
    else:
        code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


AGENT = """\
tools:
  - type: hierarchical_document
    name: docs_tool
    description: The product documentation.
    source: docs
  - type: hierarchical_document
    name: legal_tool
    description: The Holodeck Safety Act.
    source: legal
"""


def write_agent(path: Path, extra: str = "") -> Path:
    path.write_text(AGENT + textwrap.dedent(extra), encoding="utf-8")
    return path


# -- version and metadata ----------------------------------------------------------------------
def test_version_flag_prints_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--version")
    assert code == 0
    assert out.strip() == f"holodeck-rag {langchain_holodeck.__version__}"
    assert langchain_holodeck.__version__.count(".") == 2


def test_pyproject_declares_an_spdx_license_urls_and_classifiers() -> None:
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "MIT"
    assert {"Homepage", "Source", "Issues"} <= set(project["urls"])
    assert "Programming Language :: Python :: 3.11" in project["classifiers"]
    assert project["dynamic"] == ["version"]
    heavy = [d for d in project["dependencies"] if "==" in d]
    assert heavy == []
    for extra, deps in project["optional-dependencies"].items():
        pinned = [d for d in deps if "==" in d and not d.startswith("langchain-tests")]
        assert pinned == [], extra
        assert not any(d.startswith("torch") for d in deps), extra


# -- chat, search mode -----------------------------------------------------------------------------
def test_chat_without_a_model_answers_each_line_with_a_search(
    capsys: pytest.CaptureFixture[str],
) -> None:
    lines = "how do I revoke a token?\n\n   \nSection 203(a)(1)\nexit\nnever asked\n"
    code, out, err = run(capsys, "chat", stdin=lines)
    assert code == 0, err
    assert out.count("Found ") == 2
    first = out.split("Found ")[1]
    assert "auth.md" in first.split("[2]")[0]
    assert "never asked" not in out
    assert "ready (search)" in err


def test_chat_skips_a_line_that_is_not_utf8_and_answers_the_next(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under a strict UTF-8 locale, a Latin-1 byte on stdin was a UnicodeDecodeError traceback
    that ended the session; under surrogateescape the query failed the dense leg quietly."""
    data = b"caf\xe9 token\nhow do I revoke a token?\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))
    code = main(["chat"])
    captured = capsys.readouterr()
    assert code == 1, captured.err  # a line went unanswered
    assert "error: this line is not UTF-8 text (byte 0xe9 at character 3); skipped.\n" in (
        captured.err
    )
    assert captured.out.count("Found ") == 1
    assert "> how do I revoke a token?" in captured.out


def test_chat_answers_a_question_without_words_as_search_does_and_goes_on(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The message says what is wrong; it read 'error: ValueError: ...' (search's does not)."""
    code, out, err = run(capsys, "chat", stdin="!!!\nhow do I revoke a token?\n")
    assert code == 1, err  # the session goes on, and its exit status says a question failed
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1
    assert lines[0].startswith("error: Search query has no letters or digits")
    assert out.count("Found ") == 1


def test_search_with_a_query_that_is_not_utf8_is_one_error_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(capsys, "search", "caf\udce9 token")  # argv bytes b"caf\xe9 token"
    assert (code, out) == (1, "")
    assert err == (
        "error: QUERY is not UTF-8 text (byte 0xe9 at character 3); set the terminal's "
        "encoding to UTF-8.\n"
    )


def test_chat_over_an_agent_yaml_searches_every_tool(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    agent = write_agent(workdir / "agent_chat.yaml")
    code, out, err = run(capsys, "chat", str(agent), "--max-chars", "40", stdin="Section 203\n")
    assert code == 0, err
    assert "## docs_tool\n" in out
    assert "## legal_tool\n" in out
    assert "more characters]" in out
    assert "docs_tool: " in err
    assert "chunks ready" in err


def test_chat_rejects_a_bad_model_section(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    agent = write_agent(workdir / "agent_bad_model.yaml", "model: {provider: openai}\n")
    code, _, err = run(capsys, "chat", str(agent), stdin="x\n")
    assert code == 1
    assert err.startswith("error: ")
    assert "model.name" in err


@pytest.mark.parametrize("provider", ["openai", "cohere"])
def test_chat_with_a_model_but_no_api_key_is_one_error_line_before_any_ingest(
    capsys: pytest.CaptureFixture[str],
    workdir: Path,
    monkeypatch: pytest.MonkeyPatch,
    provider: str,
) -> None:
    pytest.importorskip("langchain")
    pytest.importorskip(f"langchain_{provider}")
    for variable in ("OPENAI_API_KEY", "COHERE_API_KEY", "CO_API_KEY"):
        monkeypatch.delenv(variable, raising=False)
    agent = write_agent(
        workdir / f"agent_{provider}.yaml", f"model: {{provider: {provider}, name: m}}\n"
    )
    store = workdir / f"store_{provider}"
    code, out, err = run(capsys, "--store", str(store), "chat", str(agent), stdin="q\n")
    variable = f"{provider.upper()}_API_KEY"
    assert (code, out) == (1, "")
    assert err == (
        f"error: {agent}: model.api_key: not set, and {variable} is not in the environment; "
        f"export {variable}=... or set model.api_key: ${{YOUR_VARIABLE}} "
        f"(model.provider {provider!r}).\n"
    )
    assert not store.exists()  # nothing was ingested


def test_a_models_key_may_come_from_the_file_or_any_of_its_variables() -> None:
    from langchain_holodeck.cli.chat import missing_key
    from langchain_holodeck.config.models import ChatModelConfig

    claude = ChatModelConfig(provider="anthropic", name="claude")
    assert "ANTHROPIC_API_KEY is not in" in str(missing_key(claude, display="a", environ={}))
    assert missing_key(claude, display="a", environ={"ANTHROPIC_API_KEY": "k"}) is None
    keyed = ChatModelConfig(provider="anthropic", name="claude", api_key="k")
    assert missing_key(keyed, display="a", environ={}) is None
    cohere = ChatModelConfig(provider="cohere", name="command-r")
    assert missing_key(cohere, display="a", environ={"CO_API_KEY": "k"}) is None
    ollama = ChatModelConfig(provider="ollama", name="llama3")  # no key to check
    assert missing_key(ollama, display="a", environ={}) is None


# -- test ----------------------------------------------------------------------------------------
CASES = """\
tests:
  - query: how do I revoke a token?
    source: auth.md
    tool: docs_tool
    k: 3
  - query: Section 203(a)(1)
    source: holodeck_act.md
    section_id: 203(a)(1)
    tool: legal_tool
    k: 1
"""


def test_test_command_reports_hit_at_k_and_mrr_per_tool(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    agent = write_agent(workdir / "agent_tests.yaml", CASES)
    code, out, err = run(capsys, "test", str(agent))
    assert code == 0, out + err
    assert "PASS docs_tool: 'how do I revoke a token?' -> rank 1 (k=3)" in out
    assert "| docs_tool | 1 | 1 | 1.000 | 1.000 |" in out
    assert "| legal_tool | 1 | 1 | 1.000 | 1.000 |" in out


def test_test_command_fails_when_a_case_is_not_found_within_k(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    failing = CASES + "  - query: how do I revoke a token?\n    source: crew.json\n    k: 1\n"
    agent = write_agent(workdir / "agent_failing.yaml", failing)
    code, out, _ = run(capsys, "test", str(agent))
    assert code == 1
    assert "FAIL docs_tool: 'how do I revoke a token?': source=crew.json not in the first 1" in out
    assert "FAIL legal_tool:" in out  # no tool: the case runs on every tool
    assert "| docs_tool | 2 | 1 | 0.500 | 0.500 |" in out


def test_test_command_runs_without_the_key_of_the_model_it_never_calls(
    capsys: pytest.CaptureFixture[str], workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """README's shape, `model:` with `api_key: ${OPENAI_API_KEY}` beside `tests:`: `test` and
    `ingest --config` stopped at model.api_key without the key; only `chat` needs it."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    model = 'model: {provider: openai, name: gpt-4o-mini, api_key: "${OPENAI_API_KEY}"}\n'
    agent = workdir / "agent_model_unkeyed.yaml"
    agent.write_text(model + AGENT + CASES, encoding="utf-8")
    code, out, err = run(capsys, "test", str(agent))
    assert code == 0, err
    assert "PASS docs_tool:" in out
    code, _, err = run(capsys, "ingest", "--config", str(agent), "--tool", "docs_tool")
    assert code == 0, err
    code, out, err = run(capsys, "chat", str(agent), stdin="how do I revoke a token?\n")
    assert (code, out) == (1, "")
    assert err == (
        f"error: {agent}: model.api_key: environment variable OPENAI_API_KEY is not set; "
        "export it, or write $${OPENAI_API_KEY} for a literal '${OPENAI_API_KEY}'.\n"
    )


def test_test_command_without_tests_is_an_error(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    agent = write_agent(workdir / "agent_no_tests.yaml")
    code, out, err = run(capsys, "test", str(agent))
    assert (code, out) == (1, "")
    assert "has no tests: section" in err


def test_test_command_given_a_directory_says_so(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    (workdir / "agents").mkdir()
    code, out, err = run(capsys, "test", str(workdir / "agents"))
    assert (code, out) == (1, "")
    assert err == (
        f"error: AGENT_YAML {str(workdir / 'agents')!r} is a directory; "
        "pass the agent.yaml with the tests.\n"
    )


def test_a_case_must_name_a_known_tool_and_expect_something(workdir: Path) -> None:
    unknown = write_agent(workdir / "a1.yaml", "tests: [{query: q, source: a.md, tool: nope}]\n")
    with pytest.raises(ConfigError, match=r"tests\[0\]\.tool is 'nope'"):
        load_agent_config(unknown)
    empty = write_agent(workdir / "a2.yaml", "tests: [{query: q}]\n")
    with pytest.raises(ConfigError, match="expects nothing; give source, section_id or both"):
        load_agent_config(empty)


@pytest.mark.parametrize(
    ("query", "said"),
    [
        ("'?!'", "Search query has no letters or digits, got '?!'; ask with words, "),
        ("'   '", "Search query cannot be empty, got '   '."),
    ],
)
def test_a_case_whose_query_the_tools_refuse_is_refused_at_load(
    workdir: Path, query: str, said: str
) -> None:
    """Found 2026-12-07: a case querying '?!' passed (any nearest chunk was a hit) though
    search, chat and the tool refuse such a query; '   ' loaded, then FAILed as no results."""
    agent = write_agent(
        workdir / "a_punct.yaml",
        f"tests: [{{query: hi, source: a.md}}, {{query: {query}, source: auth.md}}]\n",
    )
    with pytest.raises(ConfigError) as error:
        load_agent_config(agent)
    assert str(error.value).startswith(f"{agent}: tests[1].query: {said}")


def test_test_command_whose_search_fails_is_one_error_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found 2026-12-07: with the query-embedding server answering 500, `test` printed the
    openai client's traceback (it called the retriever itself); now the tool's search."""
    from tests.embedding_server import EmbeddingServer

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    monkeypatch.delenv("OPENAI_API_BASE", raising=False)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "auth.md").write_text("# Auth\n\nTo revoke a token call DELETE.\n")
    agent = tmp_path / "agent.yaml"
    agent.write_text(
        "tools: [{type: vectorstore, name: flat, source: docs, "
        "embedding_model: text-embedding-3-small}]\n"
        "tests: [{query: revoke a token, source: auth.md}]\n",
        encoding="utf-8",
    )
    with EmbeddingServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        code, out, err = run(capsys, "test", str(agent))
        assert (code, err) == (0, ""), err
        assert out.startswith("PASS flat: 'revoke a token' -> rank 1 (k=5)")
        server.mode = "error_500"
        code, out, err = run(capsys, "test", str(agent))
    assert (code, out) == (1, "")
    assert err.splitlines()[-1] == (
        "error: Failed to generate query embedding: InternalServerError: Error code: 500 - "
        "The embedding server is overloaded."
    )  # as `search` says it; before: a traceback
    assert all(line.startswith(("warning: ", "error: ")) for line in err.splitlines())


# -- search details ---------------------------------------------------------------------------
def test_search_max_chars_cuts_each_text_at_a_word(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "search", "safety protocols", "--max-chars", "30")
    assert code == 0
    import re

    blocks = re.split(r"\n\n(?=\[\d+\] )", out.strip())[1:]
    texts = [block.split("\n", 1)[1] for block in blocks]
    assert len(texts) >= 2
    for text in texts:
        assert len(text.split("…")[0]) <= 30
    assert "more characters]" in out


def into_a_closed_pipe(
    workdir: Path, *argv: str, unbuffered: bool = False
) -> subprocess.CompletedProcess[str]:
    """The console script run with its stdout a pipe whose reader has gone (`| head -n 0`)."""
    read, write = os.pipe()
    os.close(read)  # like `| head` that has already exited
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(workdir)}
    env.pop("PYTHONUNBUFFERED", None)
    if unbuffered:  # each print writes at once: the pipe breaks inside the command
        env["PYTHONUNBUFFERED"] = "1"
    code = "from langchain_holodeck.cli import main; raise SystemExit(main())"
    try:
        return subprocess.run(
            [sys.executable, "-c", code, *argv],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            cwd=workdir,
            env=env,
            check=False,
            timeout=120,
        )
    finally:
        os.close(write)


@pytest.fixture(scope="module")
def japanese_docs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project whose one page holds Japanese text, ingested by the default tool."""
    root = tmp_path_factory.mktemp("latin1")
    (root / "docs").mkdir()
    (root / "docs" / "a.md").write_text(
        "# Guide\n\n## 1. Intro\n\nJapanese text: 日本語のテキスト.\n", encoding="utf-8"
    )
    return ingested(root)


def under_latin1(root: Path, *argv: str, stdin: str = "") -> subprocess.CompletedProcess[bytes]:
    """The console script run with stdout and stderr in Latin-1 (``PYTHONIOENCODING``)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(root)}
    env["PYTHONIOENCODING"] = "latin-1"
    code = "from langchain_holodeck.cli import main; raise SystemExit(main())"
    return subprocess.run(
        [sys.executable, "-c", code, *argv],
        input=stdin.encode(),
        capture_output=True,
        cwd=root,
        env=env,
        check=False,
        timeout=120,
    )


@pytest.mark.parametrize("argv", [["search", "japanese text"], ["chat"]], ids=["search", "chat"])
def test_a_stdout_that_cannot_hold_the_text_gets_escapes_not_a_traceback(
    japanese_docs: Path, argv: list[str]
) -> None:
    """Found 2026-12-07: under PYTHONIOENCODING=latin-1 (or a cp1252 redirect) search, chat
    and test died with UnicodeEncodeError: on the Japanese text, and on the breadcrumb's U+203A
    whatever the corpus."""
    result = under_latin1(japanese_docs, "-q", *argv, stdin="japanese text\n")
    assert (result.returncode, result.stderr) == (0, b"")
    out = result.stdout.decode("latin-1")
    assert "Section: Guide \\u203a 1" in out
    assert "Japanese text: \\u65e5\\u672c\\u8a9e\\u306e\\u30c6\\u30ad\\u30b9\\u30c8." in out


def test_search_json_on_a_stdout_that_cannot_hold_the_text_is_ascii_json(
    japanese_docs: Path,
) -> None:
    result = under_latin1(japanese_docs, "search", "--json", "-k", "1", "japanese text")
    assert (result.returncode, result.stderr) == (0, b"")
    assert result.stdout.isascii()  # \u escapes: valid JSON in any encoding, nothing lost
    (record,) = json.loads(result.stdout)
    assert record["text"].endswith("Japanese text: 日本語のテキスト.")


@pytest.mark.parametrize("top_k", ["1", "100"])  # output within the buffer, and beyond it
def test_search_into_a_closed_pipe_exits_zero_without_a_traceback(
    workdir: Path, top_k: str
) -> None:
    result = into_a_closed_pipe(workdir, "search", "holodeck", "--top-k", top_k)
    assert result.stderr == ""
    assert result.returncode == 0


@pytest.mark.parametrize("unbuffered", [False, True], ids=["buffered", "unbuffered"])
def test_a_failing_test_into_a_closed_pipe_still_exits_one(workdir: Path, unbuffered: bool) -> None:
    """`holodeck-rag test agent.yaml | head -n 1` exited 0 with a failing case: the closed
    pipe's BrokenPipeError, at the report's print or at the flush after the command had
    returned 1, was taken for the reader having had enough (exit 0)."""
    failing = CASES + "  - query: how do I revoke a token?\n    source: crew.json\n    k: 1\n"
    agent = write_agent(workdir / "agent_failing_piped.yaml", failing)
    result = into_a_closed_pipe(workdir, "test", str(agent), unbuffered=unbuffered)
    assert result.stderr == ""
    assert result.returncode == 1


@pytest.mark.parametrize("unbuffered", [False, True], ids=["buffered", "unbuffered"])
def test_an_ingest_with_failed_chunks_into_a_closed_pipe_still_exits_one_and_warns(
    workdir: Path, tmp_path: Path, unbuffered: bool
) -> None:
    """An ingest whose chunks partly failed exits 1 and warns per failure, its summary read
    or not: the closed pipe at the summary made it exit 0 (and skip the warnings)."""
    from tests.embedding_server import EmbeddingServer

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "dawn.md").write_text("# Dawn\n\nThe deck opens at dawn.\n", encoding="utf-8")
    (docs / "noon.md").write_text("# Noon\n\nThe deck closes at noon.\n", encoding="utf-8")
    model = ["--embedding-model", "text-embedding-3-small", "--store", str(tmp_path / "S")]
    with (
        EmbeddingServer(mode="fail_on", fail_on="noon", fail_status=400) as server,  # no retry
        pytest.MonkeyPatch.context() as patch,
    ):
        patch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
        patch.setenv("OPENAI_BASE_URL", server.url)
        patch.delenv("OPENAI_API_BASE", raising=False)
        result = into_a_closed_pipe(workdir, "ingest", str(docs), *model, unbuffered=unbuffered)
    assert result.returncode == 1, result.stderr
    assert "warning: sync: embedding batch of 2 from 'docs/dawn.md': BadRequest" in result.stderr
    assert "Traceback" not in result.stderr


def test_progress_chunks_bar_times_from_the_start_of_splitting() -> None:
    stream = io.StringIO()
    with ProgressBars(enabled=True, stream=stream) as bars:
        bars(IngestProgress("files", 1, 2))
        files = bars._bars["files"]
        bars(IngestProgress("files", 1, 2))
        bars(IngestProgress("chunks", 9, 9))
        assert bars._bars["chunks"].start_t == files.start_t
        assert bars._bars["embeddings"].start_t >= files.start_t


def test_the_example_agent_yaml_declares_retrieval_cases(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("REDIS_URL", "COHERE_API_KEY"):
        monkeypatch.setenv(name, "redis://127.0.0.1:1" if name == "REDIS_URL" else "k")
    agent = load_agent_config(ROOT / "examples" / "agent.yaml")
    assert [(c.tool, c.k) for c in agent.tests] == [("knowledge_base", 3), ("legal_docs", 1)]
    assert isinstance(agent.instructions, str)


@pytest.mark.parametrize(
    ("source_path", "wanted", "found"),
    [
        ("docs/.github/guide.md", ".github/guide.md", True),
        ("docs/github/guide.md", ".github/guide.md", False),
        ("docs/auth.md", "./auth.md", True),
        ("docs/auth.md", "auth.md", True),
        ("docs/oauth.md", "auth.md", False),
    ],
)
def test_a_case_source_names_a_file_by_its_trailing_path(
    source_path: str, wanted: str, found: bool
) -> None:
    from langchain_core.documents import Document

    from langchain_holodeck.cli.regression import matches
    from langchain_holodeck.config import RetrievalTestCase

    doc = Document(page_content="x", metadata={"source_path": source_path})
    assert matches(doc, RetrievalTestCase(query="q", source=wanted)) is found


def test_a_long_query_is_shown_cut_to_one_readable_line() -> None:
    """A 100,000-character query printed whole made a PASS line of 100,027 characters."""
    from langchain_holodeck.cli.regression import CaseResult, report
    from langchain_holodeck.config import RetrievalTestCase

    case = RetrievalTestCase(query="revoke " * 20_000, source="auth.md")
    passed = CaseResult(tool="docs", case=case, rank=1, got=("auth.md",))
    failed = CaseResult(tool="docs", case=case, rank=None, got=("crew.json",))

    lines = report([passed, failed]).splitlines()

    assert lines[0] == f"PASS docs: {repr(case.query)[:77]}... -> rank 1 (k={case.k})"
    assert lines[1].startswith(f"FAIL docs: {repr(case.query)[:77]}...: source=auth.md not in")
    assert max(len(line) for line in lines) < 200
