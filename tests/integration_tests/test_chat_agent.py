"""``holodeck-rag chat`` with a ``model:``: a real agent, an OpenAI-compatible loopback server."""

from __future__ import annotations

import io
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from langchain_holodeck.cli import main
from tests.helpers import DATA_DIR
from tests.openai_server import chat_server


def test_chat_agent_calls_the_tool_and_prints_its_answer_with_sources(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copytree(DATA_DIR / "docs", tmp_path / "docs")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("FAKE_LLM_KEY", "sk-loopback")
    with chat_server() as server:
        (tmp_path / "agent.yaml").write_text(
            "instructions: Answer from the documentation only.\n"
            "model:\n"
            "  provider: openai\n"
            "  name: loopback-model\n"
            f"  base_url: {server.base_url}\n"
            "  api_key: ${FAKE_LLM_KEY}\n"
            "tools:\n"
            "  - type: hierarchical_document\n"
            "    name: docs_tool\n"
            "    description: The product documentation.\n"
            "    source: docs\n",
            encoding="utf-8",
        )
        questions = "How do I revoke an access token?\nWhat is the rate limit?\n"
        monkeypatch.setattr(sys, "stdin", io.StringIO(questions))
        code = main(["chat", "agent.yaml"])
    out, err = capsys.readouterr()
    assert code == 0, err
    answers = out.split("The answer is in ")[1:]
    assert len(answers) == 2
    assert answers[0].startswith("docs/auth.md.")
    sources = answers[0].split("Sources:\n")[1].splitlines()
    assert sources[0].startswith("  - docs_tool: docs/auth.md (Authentication")
    assert len(sources) == len(set(sources))
    assert "ready (agent openai:loopback-model)" in err
    # 2 questions x (tool call + answer); the tool ran and the model read its contract text.
    assert len(server.requests) == 4
    first = server.requests[0]
    assert first["model"] == "loopback-model"
    assert first["messages"][0] == {
        "role": "system",
        "content": "Answer from the documentation only.",
    }
    assert [t["function"]["name"] for t in first["tools"]] == ["docs_tool"]
    tool_result = server.requests[1]["messages"][-1]
    assert tool_result["role"] == "tool"
    assert tool_result["content"].startswith("Found ")
    assert "DELETE to /tokens/{id}" in tool_result["content"]
    # the conversation is kept: the second question carries the first exchange
    assert len(server.requests[2]["messages"]) > len(server.requests[0]["messages"])


def test_chat_agent_survives_an_unreachable_model_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copytree(DATA_DIR / "docs", tmp_path / "docs")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    with chat_server() as server:
        url = server.base_url
    (tmp_path / "agent.yaml").write_text(
        f"model: {{provider: openai, name: m, base_url: '{url}', api_key: '${{K}}'}}\n"
        "tools: [{type: vectorstore, name: kb, description: Docs., source: docs}]\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("K", "sk-x")
    monkeypatch.setenv("OPENAI_MAX_RETRIES", "0")
    monkeypatch.setattr(sys, "stdin", io.StringIO("first?\nsecond?\n"))
    code = main(["chat", "agent.yaml"])
    out, err = capsys.readouterr()
    assert code == 1  # it was 0: a script could not tell that no question was answered
    assert out == "> first?\n> second?\n"  # the transcript: questions, no answer
    failed = [line for line in err.splitlines() if line.startswith("error: ")]
    assert failed == 2 * [  # each question fails, naming the server; the session goes on
        f"error: OpenAIConnectionError: Connection error. (no answer from {url}/chat/completions)"
    ]


def test_chat_answers_the_questions_after_a_failed_one_and_exits_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copytree(DATA_DIR / "docs", tmp_path / "docs")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("K", "sk-x")
    with chat_server() as server:
        (tmp_path / "agent.yaml").write_text(
            f"model: {{provider: openai, name: m, base_url: '{server.base_url}', "
            "api_key: '${K}'}\n" + DOCS_TOOL,
            encoding="utf-8",
        )
        questions = "MODEL-DOWN first?\nHow do I revoke an access token?\n"
        monkeypatch.setattr(sys, "stdin", io.StringIO(questions))
        code = main(["chat", "agent.yaml"])
    out, err = capsys.readouterr()
    assert code == 1
    (failed,) = [line for line in err.splitlines() if line.startswith("error: ")]
    assert failed.endswith("Error code: 400 - the model is unavailable")
    # the server answered: its status says what went wrong, no "no answer from"
    assert out.count("The answer is in docs/auth.md.") == 1  # the next question is answered


@pytest.mark.timeout(60)  # before the fix the question waited for ever: fail, do not hang
def test_a_model_server_that_never_answers_fails_the_question_after_model_timeout(
    run_chat: Callable[..., Chat],
) -> None:
    """Found 2026-12-07: init_chat_model got no timeout, so a server that accepts and never
    answers hung the session (the openai client's default: 600 s a try, 3 tries)."""
    questions = "MODEL-SILENT first?\nHow do I revoke an access token?\n"
    chat = run_chat(questions, model=", timeout: 0.3")
    assert chat.code == 1
    (failed,) = [line for line in chat.err.splitlines() if line.startswith("error: ")]
    assert failed.startswith("error: OpenAITimeoutError: Request timed out. (no answer from http")
    assert failed.endswith("/v1/chat/completions)")
    # the session went on: the next question was answered
    assert chat.out.count("The answer is in docs/auth.md.") == 1
    silent = [r for r in chat.requests if r["messages"][-1]["content"] == "MODEL-SILENT first?"]
    assert 1 <= len(silent) <= 3  # the client's own retries, each given up after 0.3 s


@pytest.mark.timeout(60)  # before the fix the question waited for the whole body: hours
@pytest.mark.parametrize("question", ["MODEL-TRICKLE first?", "TRICKLE-AFTER-TOOL first?"])
def test_a_model_server_sending_its_answer_slowly_fails_the_question_at_the_deadline(
    run_chat: Callable[..., Chat], question: str
) -> None:
    """Found 2026-12-07 (late probe): the client's timeout bounded each network read, so a
    server sending a byte every 0.1 s (every second in the probe, ``timeout: 2``) held the
    session until it had sent its whole body. Each model call (the first, and the one after a
    tool's result) is now given up at (retries + 1) x timeout, the client's pauses and 1 s."""
    chat = run_chat(f"{question}\nHow do I revoke an access token?\n", model=", timeout: 0.3")
    assert chat.code == 1
    (failed,) = [line for line in chat.err.splitlines() if line.startswith("error: ")]
    assert failed == (  # 3 tries x 0.3 s, pauses of 0.5 and 1 s, 1 s of grace
        f"error: the model server {chat.base_url} (model 'm') gave no complete answer within "
        "3.4 s (model.timeout: 0.3 s for each of the client's 3 tries, and its pauses between "
        "them); ask again, or check the server."
    )
    assert chat.out.count("The answer is in docs/auth.md.") == 1  # the session went on
    took = chat.read_at[1] - chat.read_at[0]
    assert 3.4 <= took < 3.4 + 3  # the deadline; then the first question is given up


@pytest.mark.timeout(60)
def test_a_rate_limited_question_is_answered_after_the_retry_after_the_server_asks_for(
    run_chat: Callable[..., Chat],
) -> None:
    """Found 2026-12-07 (late probe): the deadline allowed the client's own pauses (0.5, 1 s)
    only, but a 429 with ``Retry-After: 12`` makes the openai client wait 12 s (it honours up
    to 120): a question it would have answered failed at 8.5 s (``timeout: 2``) with "gave no
    complete answer". Here the pause (4 s) is longer than the deadline (3.4 s)."""
    chat = run_chat("RATE-LIMITED first?\n", model=", timeout: 0.3")
    assert chat.code == 0, chat.err
    assert chat.out.count("The answer is in docs/") == 1
    first = [r for r in chat.requests if r["messages"][-1]["content"] == "RATE-LIMITED first?"]
    assert len(first) == 2  # the 429, then the retry 4 s later, answered


@pytest.mark.timeout(60)
def test_a_rate_limited_question_given_up_at_the_deadline_says_the_server_rate_limited_it(
    run_chat: Callable[..., Chat],
) -> None:
    """After a 429 (Retry-After: 4) the retry trickles: the deadline (3.4 s) grew by the 4 s
    the server asked for, and the line says the server rate-limited the call."""
    chat = run_chat(
        "RATE-LIMITED-TRICKLE first?\nHow do I revoke an access token?\n", model=", timeout: 0.3"
    )
    assert chat.code == 1
    (failed,) = [line for line in chat.err.splitlines() if line.startswith("error: ")]
    assert failed == (
        f"error: the model server {chat.base_url} (model 'm') rate-limited the call (HTTP 429, "
        "Retry-After: 4 s) and gave no complete answer to its retries within 7.4 s "
        "(model.timeout: 0.3 s for each of the client's 3 tries, and its pauses between them, "
        "with the 4 s the server asked for in Retry-After); ask again once the rate limit "
        "allows, or raise the limit on the server."
    )
    assert chat.out.count("The answer is in docs/auth.md.") == 1  # the session went on
    took = chat.read_at[1] - chat.read_at[0]
    assert 7.4 <= took < 7.4 + 3


@pytest.mark.parametrize("encoding", ["utf-8", "latin-1"])
def test_a_model_answer_with_a_lone_surrogate_is_printed_and_kept_with_u_fffd(
    run_chat: Callable[..., Chat], monkeypatch: pytest.MonkeyPatch, encoding: str
) -> None:
    """Found 2026-12-07 (late probe): an answer holding "\\ud800" (valid JSON) ended chat with a
    UnicodeEncodeError traceback on a UTF-8 stdout; on a Latin-1 one it was printed, then sent
    back with the history, and every later question failed (`'utf-8' codec can't encode`)."""
    stdout = io.TextIOWrapper(io.BytesIO(), encoding=encoding)
    monkeypatch.setattr(sys, "stdout", stdout)
    chat = run_chat("LONE-SURROGATE first?\nHow do I revoke an access token?\n")
    stdout.flush()
    out = stdout.buffer.getvalue().decode(encoding)  # type: ignore[attr-defined]  # a BytesIO
    assert chat.code == 0, chat.err
    replacement = "\ufffd" if encoding == "utf-8" else "\\ufffd"  # Latin-1: its escape
    first, second = out.split("> How do I revoke an access token?\n")
    assert first.startswith(
        f"> LONE-SURROGATE first?\na context {replacement} cut mid-character\n\nSources:\n"
    )
    assert second.startswith("The answer is in docs/auth.md.")  # the session went on
    said = [m["content"] for m in chat.requests[-1]["messages"] if m["role"] == "assistant"]
    assert "a context \ufffd cut mid-character" in said  # the history holds the cleaned text
    (warning,) = [line for line in chat.err.splitlines() if "surrogate" in line]
    assert warning == (
        f"warning: the model server {chat.base_url} (model 'm') answered 1 lone surrogate "
        "escape(s) (half of a UTF-16 pair, not text); replaced with U+FFFD."
    )
    assert "error" not in chat.err


DOCS_TOOL = "tools:\n  - {type: vectorstore, name: docs_tool, source: docs}\n"


@dataclass
class Chat:
    """What one ``chat agent.yaml`` session printed, and the requests its model received."""

    code: int
    out: str
    err: str
    requests: list[dict[str, Any]]
    base_url: str
    """The model server's ``base_url``."""
    read_at: list[float]
    """When chat read each line of its input (``time.monotonic``): a question took from its
    line's time to the next's."""


class _TimedLines(io.StringIO):
    """Standard input that notes when each line is read."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.read_at: list[float] = []

    def readline(self, size: int | None = -1, /) -> str:
        self.read_at.append(time.monotonic())
        return super().readline(size)


@pytest.fixture
def run_chat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Callable[..., Chat]:
    """``chat agent.yaml`` over a copy of the test docs, its model the loopback server.

    The call takes the questions (one a line), the ``tools:`` (and other) sections of the file,
    and ``model`` keys besides provider, name, base_url and api_key (``", history_tokens: 1000"``).
    """
    shutil.copytree(DATA_DIR / "docs", tmp_path / "docs")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("FAKE_LLM_KEY", "sk-loopback")

    def run(questions: str, *, tools: str = DOCS_TOOL, model: str = "") -> Chat:
        with chat_server() as server:
            (tmp_path / "agent.yaml").write_text(
                f"model: {{provider: openai, name: m, base_url: {server.base_url}, "
                f"api_key: '${{FAKE_LLM_KEY}}'{model}}}\n{tools}",
                encoding="utf-8",
            )
            stdin = _TimedLines(questions)
            monkeypatch.setattr(sys, "stdin", stdin)
            code = main(["chat", "agent.yaml"])
        out, err = capsys.readouterr()
        return Chat(code, out, err, server.requests, server.base_url, stdin.read_at)

    return run


def test_chat_agent_tool_rejects_a_query_without_words_as_the_tool_does(
    run_chat: Callable[..., Chat],
) -> None:
    """The model's call with query '?!' gets as_tool's one-line error, not the nearest noise."""
    chat = run_chat("?!\nrate limit\n")
    assert chat.code == 0, chat.err
    said = [r["messages"][-1] for r in chat.requests if r["messages"][-1]["role"] == "tool"]
    assert [m["content"][:50].split("\n")[0] for m in said] == [
        "Search query has no letters or digits, got '?!'; a",
        "Found 5 result(s):",
    ]
    assert "The answer is in nowhere." in chat.out  # the session went on to the next question
    assert "The answer is in docs/" in chat.out


def test_chat_agent_says_its_tool_call_failed_not_that_it_called_no_tool(
    run_chat: Callable[..., Chat],
) -> None:
    chat = run_chat("?!\n")
    assert chat.code == 0, chat.err
    assert len(chat.requests) == 2  # the model called the tool, then answered
    assert "Sources: none (its tool calls failed)" in chat.out


def test_chat_agent_says_why_there_is_no_answer_when_the_tool_call_is_not_json(
    run_chat: Callable[..., Chat],
) -> None:
    """create_agent stops at a tool call whose arguments are not JSON (invalid_tool_calls):
    chat printed an empty answer and 'the model called no tool'."""
    chat = run_chat("BAD-JSON rate limit\nrate limit\n")
    assert chat.code == 0, chat.err
    first = chat.out.split("> rate limit")[0]
    assert first.startswith("> BAD-JSON rate limit\n(no answer: the model called docs_tool with ")
    assert 'arguments that are not JSON: \'{"query": "unterminated\'' in first
    assert "Sources: none (its tool call could not be read)" in first


def test_chat_agent_says_why_there_is_no_answer_when_the_tool_call_is_no_object(
    run_chat: Callable[..., Chat],
) -> None:
    """Arguments that are JSON but not an object: langchain-openai's AIMessage refused the
    reply and chat printed pydantic's report (found 2026-12-07)."""
    chat = run_chat("LIST-ARGS rate limit\nrate limit\n")
    assert chat.code == 0, chat.err
    first = chat.out.split("> rate limit")[0]
    assert first == (
        "> LIST-ARGS rate limit\n(no answer: the model called a tool with arguments that are "
        "not a JSON object: '[1, 2]')\n\nSources: none (its tool call could not be read)\n\n"
    )
    assert "validation error" not in chat.err
    assert "The answer is in docs/" in chat.out  # the session went on to the next question
    assert "The answer is in docs/" in chat.out  # the next question is answered


def test_a_long_chat_sends_the_older_tool_results_cleared(run_chat: Callable[..., Chat]) -> None:
    # the history grew by every tool result, re-sent with each question: a long session
    # passed the model's context window and every later question failed
    questions = ["revoke a token", "rate limit", "warp core", "shields", "replicator"]
    chat = run_chat(
        "".join(f"{q}\n" for q in questions),
        tools="tools:\n  - {type: hierarchical_document, name: docs_tool, source: docs}\n",
        model=", history_tokens: 1000",
    )
    assert chat.code == 0, chat.err
    assert chat.out.count("Sources:") == len(questions)
    last = [m["content"] for m in chat.requests[-1]["messages"] if m["role"] == "tool"]
    assert len(last) == len(questions)
    assert last[:2] == ["[cleared]", "[cleared]"]  # over 1,000 tokens: all but the 3 latest
    assert all(content.startswith("Found ") for content in last[2:])
    first = [m["content"] for m in chat.requests[1]["messages"] if m["role"] == "tool"]
    assert first[0].startswith("Found ")  # under the limit, nothing was cleared


def test_chat_offers_the_model_the_tools_tool_selection_picks(
    run_chat: Callable[..., Chat], tmp_path: Path
) -> None:
    # chat offered every tool on each call: the agent.yaml's tool_selection: was ignored
    shutil.copytree(DATA_DIR / "legal", tmp_path / "legal")
    chat = run_chat(
        "Which legislation section sets the penalties?\nHow do I revoke a token?\n",
        tools="tools:\n"
        "  - {type: vectorstore, name: product_docs, source: docs,\n"
        "     description: 'The product documentation: API, authentication, tokens.'}\n"
        "  - {type: vectorstore, name: holodeck_act, source: legal,\n"
        "     description: 'The Holodeck Safety Act: legislation, sections, penalties.'}\n"
        "tool_selection: {max_tools: 1}\n",
    )
    assert chat.code == 0, chat.err
    offered = [[t["function"]["name"] for t in r.get("tools", [])] for r in chat.requests]
    assert offered[0] == ["holodeck_act"]
    assert offered[2] == ["product_docs"]
    assert chat.out.count("Sources:") == 2


def test_chat_over_non_finite_tool_selection_weights_is_one_error_line(
    run_chat: Callable[..., Chat],
) -> None:
    """Found 2026-12-07: tool_selection.weights [.nan, 1] (or [.inf, 1]) loaded, then chat
    died with fusion's ValueError and its traceback. Refused at load, in one line."""
    chat = run_chat("hello\n", tools=DOCS_TOOL + "tool_selection: {weights: [.nan, 1]}\n")
    assert chat.code == 1
    assert chat.err == (
        "error: agent.yaml: tool_selection.weights[0]: must be a finite number, got nan.\n"
    )
    assert chat.requests == []


def test_a_tool_selection_the_selector_refuses_is_a_config_error_in_chat() -> None:
    """A section built in code skips the file's checks; the selector still refuses it, and chat
    says so as a ConfigError (one ``error:`` line), not a ValueError's traceback."""
    from langchain_holodeck.cli.chat import agent_answerer
    from langchain_holodeck.config import ChatModelConfig, ToolSelectionConfig
    from langchain_holodeck.errors import ConfigError

    selection = ToolSelectionConfig.model_construct(weights=(float("inf"), 1.0))
    model = ChatModelConfig(provider="openai", name="m")
    with pytest.raises(ConfigError, match=r"^tool_selection: weights\[0\] must be a finite"):
        agent_answerer(model, [], llm=None, instructions=None, max_chars=None, selection=selection)


def test_a_model_answer_without_choices_or_json_is_one_line_naming_server_and_model(
    run_chat: Callable[..., Chat],
) -> None:
    """Found 2026-12-07: HTTP 200 with "choices": [] printed `error: IndexError: list index
    out of range`; an HTML body `error: Unexpected response type ... got str`, no URL."""
    chat = run_chat("NO-CHOICES first?\nNOT-JSON second?\nHow do I revoke an access token?\n")
    assert chat.code == 1
    failed = [line for line in chat.err.splitlines() if line.startswith("error: ")]
    server = f"the model server {chat.base_url} (model 'm')"
    assert failed == [
        f"error: {server} answered with no choices (an empty answer); ask again, or check "
        "the server.",
        f"error: {server} answered with a body that is not JSON: "
        "'<html><body>502 Bad Gateway</body></html>'",
    ]
    assert chat.out.count("The answer is in docs/auth.md.") == 1  # the session went on


def test_a_model_refusal_is_printed_as_the_answer(run_chat: Callable[..., Chat]) -> None:
    """Found 2026-12-07: a refusal (content null, "refusal": "...") printed an empty answer."""
    chat = run_chat("REFUSAL make a weapon\n")
    assert chat.code == 0, chat.err
    assert chat.out == (
        "> REFUSAL make a weapon\n(the model refused: I can't help with that.)\n\n"
        "Sources: none (the model called no tool)\n\n"
    )
