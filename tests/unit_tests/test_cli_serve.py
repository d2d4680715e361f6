"""``holodeck-rag serve`` without a server running: lazy import, install hint, argument checks."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from langchain_holodeck.cli import main

if sys.version_info < (3, 11):
    from exceptiongroup import ExceptionGroup

REPO = Path(__file__).resolve().parents[2]
DATA_DIR = REPO / "tests" / "data"


def main_command(argv: list[str]) -> list[str]:
    """``holodeck-rag ARGV`` as this checkout's package runs it, in a process of its own."""
    code = f"import sys; from langchain_holodeck.cli import main; sys.exit(main({argv!r}))"
    return [sys.executable, "-c", code]


def serve_env(home: Path) -> dict[str, str]:
    """A bare environment: this checkout's package, a system PATH, ``home`` as HOME."""
    return {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "HOME": str(home)}


def stdio_server(ingested: Path, *, stderr: int = subprocess.PIPE) -> subprocess.Popen[bytes]:
    """``holodeck-rag --store INGESTED serve`` over stdio, its pipes open, a process of its own."""
    server = subprocess.Popen(
        main_command(["--store", str(ingested), "serve"]),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr,
        cwd=ingested.parent,
        env=serve_env(ingested.parent),
    )
    assert server.stdin is not None
    assert server.stdout is not None
    return server


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "HOME": str(REPO)},
    )


def test_the_cli_imports_no_mcp_until_serve_runs() -> None:
    out = _run(
        "import sys; from langchain_holodeck.cli import build_parser; build_parser(); "
        "print(sorted(m for m in ('mcp', 'uvicorn', 'starlette') if m in sys.modules))"
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_serve_without_the_mcp_package_prints_the_install_hint() -> None:
    out = _run(
        "import sys; sys.modules['mcp'] = None  # as if not installed\n"
        "from langchain_holodeck.cli import main; sys.exit(main(['serve']))"
    )
    assert out.returncode == 1
    assert out.stderr.strip() == (
        'error: holodeck-rag serve needs the MCP SDK: pip install "langchain-holodeck[mcp]"'
    )


@pytest.mark.parametrize("port", ["-1", "65536", "http"])
def test_serve_rejects_a_port_out_of_range(port: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--transport", "http", "--port", port]) == 2
    assert f"must be a port number from 0 to 65535, got {port!r}" in capsys.readouterr().err


def test_serve_rejects_an_unknown_transport(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--transport", "sse"]) == 2
    assert "invalid choice: 'sse'" in capsys.readouterr().err


def test_serve_on_a_busy_port_is_one_line_naming_host_and_port_before_loading(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    pytest.importorskip("mcp")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        # no ingest into the store: the port is checked before any tool is loaded
        code = main(["--store", str(tmp_path), "serve", "--transport", "http", "--port", str(port)])
    captured = capsys.readouterr()
    assert (code, captured.out) == (1, "")
    assert captured.err == (
        f"error: cannot listen on 127.0.0.1:{port}: the port is already in use (another "
        "server?); choose another --port, or --port 0 for any free one\n"
    )


def test_serve_on_an_unknown_host_is_one_line_naming_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("mcp")
    monkeypatch.setenv("HOLODECK_MCP_TOKEN", "secret")  # a non-loopback host needs one
    host = "no-such-host.invalid"
    code = main(["--store", str(tmp_path), "serve", "--transport", "http", "--host", host])
    err = capsys.readouterr().err
    assert code == 1
    assert err.startswith(f"error: cannot listen on {host}:")
    assert f"host {host!r} is not known (" in err
    assert err.count("\n") == 1


def test_a_non_loopback_host_without_a_token_is_refused_in_the_words_written(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CLI's secret scrubber read the placeholder 'Bearer <token>)' as a token: the line
    said 'Bearer ***, or bind to 127.0.0.1.' (found 2026-12-07)."""
    pytest.importorskip("mcp")
    monkeypatch.delenv("HOLODECK_MCP_TOKEN", raising=False)
    code = main(["--store", str(tmp_path), "serve", "--transport", "http", "--host", "0.0.0.0"])
    assert code == 1
    assert capsys.readouterr().err == (
        "error: --host '0.0.0.0' is not a loopback address, so clients must authenticate: set "
        "HOLODECK_MCP_TOKEN to a secret token (clients send Authorization: Bearer <token>), "
        "or bind to 127.0.0.1.\n"
    )


# -- serve opens the store read-only ---------------------------------------------------------
@pytest.fixture
def ingested(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``holodeck-rag ingest gdocs`` in a directory of its own; returns the store."""
    shutil.copytree(DATA_DIR / "docs", tmp_path / "gdocs")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    store = tmp_path / "S"
    assert main(["-q", "--store", str(store), "ingest", "gdocs"]) == 0
    return store


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


@pytest.mark.parametrize("gone", ["emptied", "deleted"])
def test_serve_over_an_emptied_source_keeps_the_store_and_answers(
    ingested: Path, gone: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from langchain_holodeck.cli.serve import served_tools

    source = ingested.parent / "gdocs"
    for path in list(source.iterdir()):
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    if gone == "deleted":
        source.rmdir()
    before = _files(ingested)
    capsys.readouterr()
    (served,) = served_tools(None, ingested, quiet=False)
    count = served.tool.document_count
    assert count > 0
    assert capsys.readouterr().err == f"default: {count} chunks ready\n"
    text, structured = served.search("safety interlock", 2)
    assert text.startswith("Found 2 result(s):")
    assert structured["results"][0]["source_path"] == "gdocs/maintenance.csv"
    assert _files(ingested) == before  # not a byte written


def test_a_tool_never_ingested_into_the_store_answers_an_error_not_no_results(
    ingested: Path,
) -> None:
    """``serve agent.yaml`` over a store its tool was never ingested into (the docs' stdio
    example run from another directory: the default --store) answered every call 'No
    relevant results', which a model reads as 'the documents do not say' (found 2026-12-07).
    Once it is ingested there, and after its source is emptied, it answers as search does."""
    from langchain_holodeck.cli.serve import served_tools

    agent = ingested.parent / "agent.yaml"
    agent.write_text(
        "tools:\n  - {type: hierarchical_document, name: kb, description: Docs., source: gdocs}\n",
        encoding="utf-8",
    )
    (served,) = served_tools(agent, ingested, quiet=True)
    with pytest.raises(RuntimeError) as raised:
        served.search("safety interlock", 1)
    assert str(raised.value) == (
        f"{ingested} holds no chunk of kb (it was not ingested there?): run holodeck-rag "
        f"--store {ingested} ingest --config {agent} --tool kb, or serve with the --store it "
        "was ingested into."
    )
    assert main(["-q", "--store", str(ingested), "ingest", "--config", str(agent)]) == 0
    text, _ = served.search("safety interlock", 1)  # reloaded: the manifest changed
    assert text.startswith("Found 1 result(s):")
    for path in (ingested.parent / "gdocs").rglob("*"):
        if path.is_file():
            path.unlink()
    assert main(["-q", "--store", str(ingested), "ingest", "--config", str(agent)]) == 0
    text, _ = served.search("safety interlock", 1)
    assert text == "No relevant results found for query: safety interlock"


# -- over HTTP, in process ----------------------------------------------------------------------
class _Echo:
    """A served tool that answers with the query (no store, no model)."""

    name = "echo"
    description = "Echoes the query."

    def search(self, query: str, top_k: int | None) -> tuple[str, dict[str, object]]:
        return f"echo: {query}", {"tool": self.name, "query": query, "results": []}


_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"},
    },
}
_ACCEPT = {"accept": "application/json, text/event-stream"}


def _post_initialize(host: str, header_host: str, **headers: str) -> int:
    """Status of an MCP ``initialize`` POSTed with ``Host: header_host`` to a server on ``host``."""
    pytest.importorskip("mcp")
    from starlette.testclient import TestClient

    from langchain_holodeck.cli import _mcp
    from langchain_holodeck.cli._http_guard import HttpLimits

    server = _mcp.build_server([_Echo()], max_concurrency=1, host=host)
    app = _mcp.http_app(server, host, token=headers.pop("token", None), limits=HttpLimits())
    with TestClient(app, base_url=f"http://{header_host}:8765") as client:
        response = client.post("/mcp", json=_INITIALIZE, headers={**_ACCEPT, **headers})
    return response.status_code


def test_initialize_names_holodeck_rag_and_its_version() -> None:
    # serverInfo.version was the MCP SDK's (1.30.0), not the package's
    pytest.importorskip("mcp")
    from starlette.testclient import TestClient

    from langchain_holodeck import __version__
    from langchain_holodeck.cli import _mcp
    from langchain_holodeck.cli._http_guard import HttpLimits

    server = _mcp.build_server([_Echo()], max_concurrency=1)
    app = _mcp.http_app(server, "127.0.0.1", token=None, limits=HttpLimits())
    with TestClient(app, base_url="http://127.0.0.1:8765") as client:
        reply = client.post("/mcp", json=_INITIALIZE, headers=_ACCEPT).json()
    info = reply["result"]["serverInfo"]
    assert (info["name"], info["version"]) == ("holodeck-rag", __version__)


@pytest.mark.parametrize("host", ["127.0.0.2", "127.0.0.1", "localhost"])
def test_http_on_any_loopback_address_accepts_its_own_host_header(host: str) -> None:
    assert _post_initialize(host, host) == 200


def test_http_on_loopback_still_refuses_a_foreign_host_header() -> None:
    assert _post_initialize("127.0.0.2", "attacker.example") == 421


def _call_over_http(tools: list[object], name: str, arguments: dict[str, object] | bytes) -> dict:
    """The ``tools/call`` result of ``name`` from a server on 127.0.0.1 serving ``tools``.

    ``arguments`` as bytes: the JSON object as the client writes it (``{"top_k": 1e400}``).
    """
    pytest.importorskip("mcp")
    from starlette.testclient import TestClient

    from langchain_holodeck.cli import _mcp
    from langchain_holodeck.cli._http_guard import HttpLimits

    server = _mcp.build_server(tools, max_concurrency=1)  # type: ignore[arg-type]  # Searchable
    app = _mcp.http_app(server, "127.0.0.1", token=None, limits=HttpLimits())
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call"}
    with TestClient(app, base_url="http://127.0.0.1:8765") as client:
        started = client.post("/mcp", json=_INITIALIZE, headers=_ACCEPT)
        session = {**_ACCEPT, "mcp-session-id": started.headers["mcp-session-id"]}
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        client.post("/mcp", json=initialized, headers=session)
        params = {"name": name, "arguments": {} if isinstance(arguments, bytes) else arguments}
        body = json.dumps({**call, "params": params}).encode()  # a lone surrogate as \\udce9
        if isinstance(arguments, bytes):
            body = body.replace(b'"arguments": {}', b'"arguments": ' + arguments)
        headers = {**session, "content-type": "application/json"}
        answer = client.post("/mcp", content=body, headers=headers)
    return dict(answer.json()["result"])


_TOP_K_RULE = "top_k must be an integer from 1 to 100, or null for the tool's default"


@pytest.mark.parametrize(
    ("arguments", "text"),
    [
        ({"query": "x", "top_k": 0}, f"{_TOP_K_RULE}, got 0."),
        ({"query": "x", "top_k": -3}, f"{_TOP_K_RULE}, got -3."),
        ({"query": "x", "top_k": 10**30}, f"{_TOP_K_RULE}, got {10**30}."),
        ({"query": "x", "top_k": "3"}, f'{_TOP_K_RULE}, got "3".'),
        ({"query": "x", "top_k": True}, f"{_TOP_K_RULE}, got true."),
        ({"query": "x", "top_k": "\udce9"}, f'{_TOP_K_RULE}, got "\\udce9".'),
        ({"query": ["a"]}, 'query must be a string of at most 2000 characters, got ["a"].'),
        (
            {"query": "x" * 2001},
            "query must be a string of at most 2000 characters, got a string of 2001 characters.",
        ),
        ({}, "query is required: pass the words to look for, e.g. 'revoke a token'."),
        (
            {"query": 5, "top_k": 0},
            f"query must be a string of at most 2000 characters, got 5. {_TOP_K_RULE}, got 0.",
        ),
    ],
)
def test_a_bad_argument_is_one_line_naming_it_and_its_value(
    arguments: dict[str, object], text: str
) -> None:
    """The SDK answered pydantic's report: '1 validation error for echoArguments', the field
    on a line of its own, '[type=..., input_value=...]' and a link to errors.pydantic.dev."""
    result = _call_over_http([_Echo()], "echo", arguments)
    assert result["isError"] is True
    assert [block["text"] for block in result["content"]] == [text]


@pytest.mark.parametrize("number", ["1e400", "-1e400", "NaN", "Infinity", "-Infinity"])
def test_a_top_k_no_float_can_hold_is_a_tool_error_naming_it_as_written(number: str) -> None:
    """1e400 (valid JSON), NaN and Infinity: the SDK parses them as a float and rebuilds the
    request as JSON, which writes inf and nan as null, so the call was served with the
    tool's default top_k (found 2026-12-07)."""
    body = b'{"query": "x", "top_k": %s}' % number.encode()
    result = _call_over_http([_Echo()], "echo", body)
    assert result["isError"] is True
    assert [block["text"] for block in result["content"]] == [f"{_TOP_K_RULE}, got {number}."]


def test_a_non_finite_query_is_a_tool_error_and_finite_numbers_pass_as_they_were() -> None:
    assert _call_over_http([_Echo()], "echo", b'{"query": NaN}')["content"][0]["text"] == (
        "query must be a string of at most 2000 characters, got NaN."
    )
    answer = _call_over_http([_Echo()], "echo", b'{"query": "x", "top_k": 1e1}')
    assert answer["content"][0]["text"] == f"{_TOP_K_RULE}, got 10.0."  # a float: no count


@pytest.mark.parametrize(
    ("arguments", "text"),
    [
        (
            {"query": "x", "k": 1},
            "unknown argument k (got 1): echo takes query and, optionally, top_k.",
        ),
        (
            {"qeury": "x", "limit": 3},
            'unknown arguments qeury (got "x"), limit (got 3): echo takes query and, '
            "optionally, top_k.",
        ),
        (  # found 2026-12-07: only k was named, not the bad top_k
            b'{"query": "x", "top_k": -Infinity, "k": NaN}',
            "unknown argument k (got NaN): echo takes query and, optionally, top_k. "
            f"{_TOP_K_RULE}, got -Infinity.",
        ),
        (
            {"query": 5, "top_k": 0, "k": 1},
            "unknown argument k (got 1): echo takes query and, optionally, top_k. query must "
            f"be a string of at most 2000 characters, got 5. {_TOP_K_RULE}, got 0.",
        ),
        (  # found 2026-12-07 (third round): only k was named, not the empty query
            {"query": "   ", "k": 1},
            "unknown argument k (got 1): echo takes query and, optionally, top_k. query is "
            "empty; pass the words to look for, e.g. 'revoke a token'.",
        ),
    ],
)
def test_an_argument_the_tool_does_not_take_is_a_tool_error_naming_it(
    arguments: dict[str, object] | bytes, text: str
) -> None:
    """An argument the tool does not take (k, top_K, limit, a misspelt qeury) was dropped
    without a word and the call served with the defaults (found 2026-12-07)."""
    result = _call_over_http([_Echo()], "echo", arguments)
    assert result["isError"] is True
    assert [block["text"] for block in result["content"]] == [text]


def test_the_input_schema_says_no_other_argument() -> None:
    pytest.importorskip("mcp")
    import anyio

    from langchain_holodeck.cli import _mcp

    server = _mcp.build_server([_Echo()], max_concurrency=1)
    (listed,) = anyio.run(server.list_tools)
    assert listed.inputSchema["additionalProperties"] is False
    assert set(listed.inputSchema["properties"]) == {"query", "top_k"}


def test_a_body_that_is_not_utf8_is_read_with_the_replacement_character_as_over_stdio() -> None:
    """Over HTTP a query holding the byte 0xe9 got HTTP 500 'Error handling POST request'
    and two error lines in the server's log; stdio reads it as U+FFFD (found 2026-12-07)."""
    result = _call_over_http([_Echo()], "echo", b'{"query": "caf\xe9 token"}')
    assert result.get("isError") is not True
    assert result["structuredContent"]["query"] == "caf\ufffd token"


def test_a_query_with_a_lone_surrogate_is_a_tool_error_naming_it(ingested: Path) -> None:
    """JSON may carry a lone surrogate ("\\udce9"); the SDK refuses it as no string, and
    echoing it back raw made the answer unsendable (HTTP 500 'Error processing request')."""
    from langchain_holodeck.cli.serve import served_tools

    tools = served_tools(None, ingested, quiet=True)
    result = _call_over_http(tools, "default", {"query": "caf\udce9 safety interlock"})
    assert result["isError"] is True
    assert [block["text"] for block in result["content"]] == [
        "query is not UTF-8 text (byte 0xe9 at character 3); send the words as UTF-8."
    ]


def test_a_query_without_letters_or_digits_is_the_tool_error_search_gives(
    ingested: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from langchain_holodeck.cli.serve import served_tools

    assert main(["--store", str(ingested), "search", "!!!"]) == 1
    assert "has no letters or digits" in capsys.readouterr().err  # the CLI's own wording
    tools = served_tools(None, ingested, quiet=True)
    said = tools[0].tool.as_tool().invoke({"query": "!!!"})  # what an agent reads in process
    assert said.startswith("Search query has no letters or digits, got '!!!'")
    result = _call_over_http(tools, "default", {"query": "!!!"})
    assert result["isError"] is True
    assert [c["text"] for c in result["content"]] == [said]


def test_no_results_above_the_threshold_says_it_as_search_does(
    ingested: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from langchain_holodeck.cli.serve import served_tools

    agent = ingested.parent / "agent.yaml"
    agent.write_text(
        "tools:\n  - type: hierarchical_document\n    name: docs\n    description: The docs.\n"
        "    source: gdocs\n    min_similarity_score: 0.99\n",
        encoding="utf-8",
    )
    assert main(["-q", "--store", str(ingested), "ingest", "--config", str(agent)]) == 0
    capsys.readouterr()
    argv = ["--store", str(ingested), "search", "--config", str(agent), "refunds"]
    assert main(["-q", *argv]) == 0
    printed = capsys.readouterr().out.strip()
    assert printed == "No results above similarity threshold 0.99"
    tools = served_tools(agent, ingested, quiet=True)
    result = _call_over_http(tools, "docs", {"query": "refunds"})
    assert [c["text"] for c in result["content"]] == [printed]


def test_a_stdio_client_leaving_after_malformed_messages_ends_without_a_traceback(
    ingested: Path,
) -> None:
    """Malformed lines, then end of input: the SDK was still sending the error notification
    for the last one when stdin closed, and serve died with an ExceptionGroup traceback of
    anyio.ClosedResourceError (exit 1)."""
    pytest.importorskip("mcp")
    argv = ["--store", str(ingested), "serve"]
    done = subprocess.run(
        main_command(argv),
        input=b'garbage\n{"jsonrpc": "2.0"}\n\xff\xfe\n',
        capture_output=True,
        timeout=120,
        check=False,
        cwd=ingested.parent,
        env=serve_env(ingested.parent),
    )
    err = done.stderr.decode("utf-8", "replace")
    assert "Traceback" not in err
    assert done.returncode == 0, err
    assert err.splitlines()[1] == "serving 1 tool(s) over stdio"


def test_a_stdio_call_whose_query_holds_a_lone_surrogate_escape_is_answered(
    ingested: Path,
) -> None:
    """``"safety interlock\\udce9"`` is valid JSON (JavaScript writes it for half a pair): the
    SDK's stdio reader refused the line and the client waited for an answer for good (found
    2026-12-07). It is read as U+FFFD now, as undecodable bytes are."""
    pytest.importorskip("mcp")
    server = stdio_server(ingested)
    assert server.stdin is not None
    assert server.stdout is not None
    arguments = {"query": "safety interlock\udce9"}
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "default", "arguments": arguments}}  # fmt: skip
    lines = [_INITIALIZE, {"jsonrpc": "2.0", "method": "notifications/initialized"}, call]
    server.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in lines))
    server.stdin.flush()
    try:
        answers = [json.loads(server.stdout.readline()) for _ in range(2)]
    finally:
        server.stdin.close()
        server.wait(60)
    assert [a.get("id") for a in answers] == [1, 2]
    result = answers[1]["result"]
    assert result["isError"] is False
    assert result["structuredContent"]["query"] == "safety interlock\ufffd"
    assert result["content"][0]["text"].startswith("Found ")


def test_a_stdio_call_with_a_non_finite_top_k_is_answered_with_the_error(
    ingested: Path,
) -> None:
    """Over stdio too: top_k 1e400, NaN or Infinity was served with the tool's default."""
    pytest.importorskip("mcp")
    server = stdio_server(ingested)
    assert server.stdin is not None
    assert server.stdout is not None
    lines = [
        json.dumps(m).encode()
        for m in (_INITIALIZE, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    ]
    numbers = [b"1e400", b"NaN", b"-Infinity"]
    lines += [
        b'{"jsonrpc": "2.0", "id": %d, "method": "tools/call", "params": {"name": "default", '
        b'"arguments": {"query": "safety interlock", "top_k": %s}}}' % (n, number)
        for n, number in enumerate(numbers, 2)
    ]
    server.stdin.write(b"".join(line + b"\n" for line in lines))
    server.stdin.flush()
    try:
        read = [json.loads(server.stdout.readline()) for _ in range(4)]
    finally:
        server.stdin.close()
        server.wait(60)
    answers = sorted(read, key=lambda answer: int(answer["id"]))  # calls answer in any order
    assert [a["result"]["content"][0]["text"] for a in answers[1:]] == [
        f"{_TOP_K_RULE}, got {number.decode()}." for number in numbers
    ]


def test_readable_lines_mark_only_a_calls_non_finite_arguments() -> None:
    from langchain_holodeck.cli._mcp_wire import NON_FINITE, readable_body, readable_line

    call = b'{"method": "tools/call", "params": {"arguments": {"top_k": 1e400, "q": [NaN]}}}\n'
    assert json.loads(readable_line(call)) == {
        "method": "tools/call",
        "params": {"arguments": {"top_k": {NON_FINITE: "1e400"}, "q": [{NON_FINITE: "NaN"}]}},
    }
    assert readable_line(call).endswith(b"}\n")
    for line in (
        b'{"method": "tools/call", "params": {"arguments": {"top_k": 1e300}}}\n',  # finite
        b'{"method": "ping", "params": {"x": 1e400}}\n',  # not a call: as the SDK reads it
        b'{"method": "tools/call", "params": {"_meta": {"x": NaN}, "arguments": {}}}\n',
        b'not json "tools/call" NaN\n',
    ):
        assert readable_line(line) == line
    assert readable_body(b'{"q": "caf\xe9"}') == '{"q": "caf\ufffd"}'.encode()
    assert readable_body(b'{"q": "caf\\udce9"}') == b'{"q": "caf\\udce9"}'  # as it came


def test_lone_surrogate_escapes_are_read_as_the_replacement_character() -> None:
    import io

    from langchain_holodeck.cli._mcp_wire import ReadableLines

    lines = [
        b'{"q": "caf\\udce9", "pair": "\\ud83d\\ude00"}\n',
        b'{"q": "a literal \\\\udce9, no escape"}\n',
        b'{"q": "plain"}\n',
        b"garbage \\ud800 not json\n",
        b'{"q": "no newline at the end \\udc80"}',
    ]
    read = io.BufferedReader(ReadableLines(io.BytesIO(b"".join(lines)))).read()
    assert [json.loads(line) for line in read.splitlines()[:3]] == [
        {"q": "caf\ufffd", "pair": "\U0001f600"},
        {"q": "a literal \\udce9, no escape"},
        {"q": "plain"},
    ]
    assert read.splitlines()[1:4] == [line.rstrip(b"\n") for line in lines[1:4]]  # as sent
    assert json.loads(read.splitlines()[4]) == {"q": "no newline at the end \ufffd"}


def test_ctrl_c_stops_serving_quietly_with_130(ingested: Path) -> None:
    pytest.importorskip("mcp")
    argv = ["--store", str(ingested), "serve", "--transport", "http", "--port", "0"]
    server = subprocess.Popen(
        main_command(argv),
        stderr=subprocess.PIPE,
        text=True,
        cwd=ingested.parent,
        env=serve_env(ingested.parent),
        # a terminal's Ctrl-C: a suite started in the background (`cmd &`, nohup) hands its
        # children SIGINT ignored, and an ignored SIGINT is what the user asked for there
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert server.stderr is not None
    lines = []
    try:
        for line in server.stderr:  # up to "serving on http://..."
            lines.append(line)
            if line.startswith("serving on "):
                break
        server.send_signal(signal.SIGINT)
        rest = server.stderr.read()
        code = server.wait(timeout=30)
    finally:
        if server.poll() is None:
            server.kill()
    assert lines[-1].startswith("serving on http://127.0.0.1:"), lines
    assert (code, rest) == (130, "")


@pytest.mark.parametrize(
    ("authorization", "status"),
    [
        ("Bearer s3cret", 200),
        ("bearer s3cret", 200),  # the scheme is case-insensitive (RFC 7235)
        ("BEARER s3cret", 200),
        ("bearer wrong", 401),
        ("Basic s3cret", 401),
        ("s3cret", 401),
        ("", 401),
    ],
)
def test_http_token_scheme_in_any_case(authorization: str, status: int) -> None:
    assert (
        _post_initialize("127.0.0.1", "127.0.0.1", token="s3cret", authorization=authorization)
        == status
    )


def test_a_search_that_synced_changes_makes_a_running_server_reload(
    ingested: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from langchain_holodeck.cli.serve import served_tools

    (served,) = served_tools(None, ingested, quiet=True)
    manifest = (ingested / "ingest.json").read_bytes()
    (ingested.parent / "gdocs" / "ferry.md").write_text(
        "# Ferry\n\nThe zanzibarquux ferry leaves at dawn.\n", encoding="utf-8"
    )
    assert main(["-q", "--store", str(ingested), "search", "zanzibarquux"]) == 0
    assert "gdocs/ferry.md" in capsys.readouterr().out
    text, structured = served.search("zanzibarquux", 1)
    assert structured["results"][0]["source_path"] == "gdocs/ferry.md", text
    assert served.reloads == 1
    assert (ingested / "ingest.json").read_bytes() == manifest  # rewritten as it was
    served.search("zanzibarquux", 1)
    assert main(["-q", "--store", str(ingested), "search", "zanzibarquux"]) == 0  # no change
    served.search("zanzibarquux", 1)
    assert served.reloads == 1


def test_serving_a_tool_never_ingested_says_to_ingest_it(
    ingested: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """serve no longer ingests: a tool of the agent.yaml that was never ingested is served
    empty, with one warning naming the command that fills it."""
    import logging

    from langchain_holodeck.cli.serve import served_tools

    agent = ingested.parent / "agent.yaml"
    agent.write_text(
        "tools:\n  - type: hierarchical_document\n    name: fresh\n    description: The docs.\n"
        "    source: gdocs\n",
        encoding="utf-8",
    )
    with caplog.at_level(logging.WARNING, logger="langchain_holodeck.cli.serve"):
        (served,) = served_tools(agent, ingested, quiet=True)
    assert served.tool.document_count == 0
    assert [r.getMessage() for r in caplog.records] == [
        f"fresh: its store holds no chunk; serve opens the store as the last ingest left it: "
        f"run holodeck-rag --store {ingested} ingest --config {agent} --tool fresh first."
    ]


def test_serves_log_says_what_happened_to_an_emptied_source_and_a_damaged_manifest(
    ingested: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """After its source was emptied and ingested, a reload logged 'its store holds no chunk;
    ... run holodeck-rag ingest --config agent.yaml --tool kb first' (that ingest had just
    run; no --store; the agent.yaml as given, relative); an ingest.json that no longer reads
    was logged 'note: kb: re-ingested; reloaded from the store.' (found 2026-12-07)."""
    import logging

    from langchain_holodeck.cli.serve import served_tools

    agent = ingested.parent / "agent.yaml"  # the fixture's working directory
    agent.write_text(
        "tools:\n  - {type: hierarchical_document, name: kb, source: gdocs}\n", encoding="utf-8"
    )
    ingest = ["-q", "--store", str(ingested), "ingest", "--config", "agent.yaml"]
    with caplog.at_level(logging.WARNING, logger="langchain_holodeck.cli.serve"):
        (fresh,) = served_tools(Path("agent.yaml"), ingested, quiet=True)  # relative
        with pytest.raises(RuntimeError, match=re.escape(f"--config {agent} --tool kb, or serve")):
            fresh.search("safety interlock", 1)  # never ingested into this store
    assert [r.getMessage() for r in caplog.records] == [
        f"kb: its store holds no chunk; serve opens the store as the last ingest left it: "
        f"run holodeck-rag --store {ingested} ingest --config {agent} --tool kb first."
    ]
    assert main(ingest) == 0
    for path in (ingested.parent / "gdocs").rglob("*"):
        if path.is_file():
            path.unlink()
    assert main(ingest) == 0
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="langchain_holodeck.cli.serve"):
        (served,) = served_tools(Path("agent.yaml"), ingested, quiet=True)
        assert main(ingest) == 0  # nothing to do: the manifest is written again
        text, _ = served.search("safety interlock", 1)
        assert text == "No relevant results found for query: safety interlock"
        (ingested / "ingest.json").write_text("{ not json", encoding="utf-8")
        assert served.search("safety interlock", 1)[0] == text  # the data loaded, kept
    said = [r.getMessage() for r in caplog.records]
    assert said[0] == "note: kb: re-ingested; reloaded from the store."
    assert said[1].startswith(
        f"kb: reload failed ({ingested / 'ingest.json'} is not a valid ingest manifest ("
    )
    assert said[1].endswith("; run `holodeck-rag ingest` again); serving the previous data.")
    assert len(said) == 2


def test_an_ingest_that_changed_no_chunk_reloads_the_edited_tool_settings(
    ingested: Path,
) -> None:
    """Served without AGENT_YAML, the agent.yaml's description and top_k edited, then
    `ingest --config agent.yaml` (nothing skipped but every chunk): search followed the new
    top_k and serve kept the old one and the old description, since that ingest no longer
    rewrote ingest.json, the file serve watches (found 2026-12-07). Every ingest rewrites it."""
    from langchain_holodeck.cli.serve import served_tools

    agent = ingested.parent / "agent.yaml"
    ingest = ["-q", "--store", str(ingested), "ingest", "--config", "agent.yaml"]

    def configure(description: str, top_k: int) -> None:
        agent.write_text(
            "tools:\n  - type: hierarchical_document\n    name: kb\n    source: gdocs\n"
            f"    description: {description}\n    top_k: {top_k}\n",
            encoding="utf-8",
        )

    configure("The old manuals.", 5)
    assert main(ingest) == 0
    (served,) = served_tools(None, ingested, quiet=True)
    assert served.search("safety", None)[0].count("Score:") == 5
    configure("The new manuals.", 2)
    assert main(ingest) == 0  # the same chunks: 0 added, 0 updated
    assert served.search("safety", None)[0].count("Score:") == 2
    assert served.description == "The new manuals."


def test_serve_agent_yaml_follows_the_edited_settings_after_an_ingest(
    ingested: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Served with AGENT_YAML, the description and top_k edited and ingested: serve kept the
    reading it started with, the old description and top_k, until a restart (found
    2026-12-07). The file is read again after each ingest; one that no longer reads leaves the
    settings last read, with one warning."""
    import logging

    from langchain_holodeck.cli.serve import served_tools

    agent = ingested.parent / "agent.yaml"
    ingest = ["-q", "--store", str(ingested), "ingest", "--config", str(agent)]

    def configure(description: str, top_k: int) -> None:
        agent.write_text(
            "tools:\n  - type: hierarchical_document\n    name: kb\n    source: gdocs\n"
            f"    description: {description}\n    top_k: {top_k}\n",
            encoding="utf-8",
        )

    configure("The old manuals.", 5)
    assert main(ingest) == 0
    (served,) = served_tools(agent, ingested, quiet=True)
    assert served.search("safety", None)[0].count("Score:") == 5
    configure("The new manuals.", 2)
    assert main(ingest) == 0
    assert served.description == "The new manuals."
    assert served.search("safety", None)[0].count("Score:") == 2
    configure("The third manuals.", 3)
    assert main(ingest) == 0
    agent.write_text("tools: [{type: hierarchical_document, name: kb, top_k: 0}]\n")
    with caplog.at_level(logging.WARNING, logger="langchain_holodeck.cli"):
        assert served.search("safety", None)[0].count("Score:") == 2  # the last good reading
        assert main(ingest) == 1  # the broken file: no ingest, nothing rewritten
        (ingested / "ingest.json").touch()  # an ingest of another agent.yaml, say
        os.utime(ingested / "ingest.json", ns=(1, 1))
        assert served.description == "The new manuals."
    said = [r.getMessage() for r in caplog.records if "does not read now" in r.getMessage()]
    assert len(said) == 1
    assert said[0].startswith(f"{agent} does not read now (")


@pytest.mark.parametrize("edit", ["source", "database"])
def test_serve_agent_yaml_keeps_a_tools_store_until_that_tool_is_ingested(
    ingested: Path, edit: str, caplog: pytest.LogCaptureFixture
) -> None:
    """kb's source (or database) edited in agent.yaml but not ingested, then `ingest --tool
    other`: serve read every tool again and opened kb over a store holding none of it (each
    call the error 'holds no chunk of kb (it was not ingested there?)'), and logged 'note: kb:
    re-ingested' (found 2026-12-07). What decides a tool's store follows an ingest of that tool;
    its description follows any."""
    import logging

    from langchain_holodeck.cli.serve import served_tools

    ferries = ingested.parent / "ferries"
    ferries.mkdir()
    (ferries / "ferry.md").write_text("# Ferry\n\nThe zanzibarquux ferry.\n", encoding="utf-8")
    agent = ingested.parent / "agent.yaml"
    edits = {  # nothing listens on 8779: connection refused
        "source": "source: ferries",
        "database": "source: gdocs, "
        "database: {provider: redis, connection_string: 'redis://127.0.0.1:8779'}",
    }

    def configure(kb: str, description: str) -> None:
        agent.write_text(
            f"tools:\n  - {{type: vectorstore, name: kb, {kb}, description: {description}}}\n"
            "  - {type: vectorstore, name: other, source: gdocs}\n",
            encoding="utf-8",
        )

    def ingest(tool: str) -> None:
        argv = ["-q", "--store", str(ingested), "ingest", "--config", str(agent), "--tool", tool]
        assert main(argv) == 0

    configure("source: gdocs", "The manuals.")
    ingest("kb")
    ingest("other")
    kb, other = served_tools(agent, ingested, quiet=True)
    configure(edits[edit], "The edited manuals.")  # not ingested
    ingest("other")
    with caplog.at_level(logging.WARNING, logger="langchain_holodeck.cli"):
        text, structured = kb.search("safety interlock", 1)
        other.search("safety interlock", 1)
    assert structured["results"][0]["source_path"].startswith("gdocs/"), text
    assert kb.description == "The edited manuals."
    assert [r.getMessage() for r in caplog.records] == [
        "note: other: re-ingested; reloaded from the store."
    ]
    if edit == "database":
        return  # a database that is down: nothing to ingest it into
    ingest("kb")
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="langchain_holodeck.cli"):
        text, structured = kb.search("zanzibarquux", 1)
    assert structured["results"][0]["source_path"] == "ferries/ferry.md", text
    assert [r.getMessage() for r in caplog.records] == [
        "note: kb: re-ingested; reloaded from the store."
    ]


def test_a_tool_added_to_agent_yaml_is_said_once_not_to_be_served(
    ingested: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A tool added to AGENT_YAML and ingested was never served and nothing said so, where a
    renamed or removed one is said to need a restart (found 2026-12-07)."""
    import logging

    from langchain_holodeck.cli.serve import served_tools

    agent = ingested.parent / "agent.yaml"
    kb = "tools:\n  - {type: vectorstore, name: kb, source: gdocs}\n"
    agent.write_text(kb, encoding="utf-8")
    ingest = ["-q", "--store", str(ingested), "ingest", "--config", str(agent), "--tool"]
    assert main([*ingest, "kb"]) == 0
    (served,) = served_tools(agent, ingested, quiet=True)
    agent.write_text(kb + "  - {type: vectorstore, name: extra, source: gdocs}\n")
    with caplog.at_level(logging.WARNING, logger="langchain_holodeck.cli"):
        assert main([*ingest, "extra"]) == 0
        served.search("safety interlock", 1)
        assert main([*ingest, "extra"]) == 0
        served.search("safety interlock", 1)
    said = [r.getMessage() for r in caplog.records if r.name.endswith("_served_yaml")]
    assert said == [
        f"extra: added to {agent} since serve started; not served (restart serve to serve "
        "the file's tools)."
    ]


def test_a_tool_gone_from_agent_yaml_is_said_once_per_disappearance(
    ingested: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Found 2026-12-07: 'other: no longer in agent.yaml' was logged again at every reload
    (each ingest of kb), not once; back in the file and gone again, it is said again."""
    import logging

    from langchain_holodeck.cli.serve import served_tools

    agent = ingested.parent / "agent.yaml"
    kb = "tools:\n  - {type: vectorstore, name: kb, source: gdocs}\n"
    both = kb + "  - {type: vectorstore, name: other, source: gdocs}\n"
    agent.write_text(both, encoding="utf-8")
    ingest = ["-q", "--store", str(ingested), "ingest", "--config", str(agent), "--tool"]
    assert main([*ingest, "kb"]) == 0
    assert main([*ingest, "other"]) == 0
    served = served_tools(agent, ingested, quiet=True)
    other = next(tool for tool in served if tool.name == "other")
    gone = (
        f"other: no longer in {agent}; serving it as last configured (restart serve to serve "
        "the file's tools)."
    )
    with caplog.at_level(logging.WARNING, logger="langchain_holodeck.cli"):
        agent.write_text(kb, encoding="utf-8")
        for _ in range(3):  # three reloads while it is gone
            assert main([*ingest, "kb"]) == 0
            other.search("safety interlock", 1)
        agent.write_text(both, encoding="utf-8")
        assert main([*ingest, "kb"]) == 0
        other.search("safety interlock", 1)  # back: nothing to say
        agent.write_text(kb, encoding="utf-8")
        assert main([*ingest, "kb"]) == 0
        other.search("safety interlock", 1)  # gone again: said again
    said = [r.getMessage() for r in caplog.records if "no longer in" in r.getMessage()]
    assert said == [gone, gone]


def test_a_manifest_written_before_ingests_were_recorded_still_reads(ingested: Path) -> None:
    """ingest.json now records each tool's last ingest (``ingests``); one written before
    knows its own tool's only, and the next ingest keeps what it knows."""
    from langchain_holodeck.cli._targets import last_ingest_of, read_manifest

    path = ingested / "ingest.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    assert set(data["ingests"]) == {"default"}
    del data["ingests"]
    path.write_text(json.dumps(data), encoding="utf-8")
    manifest = read_manifest(ingested)
    assert last_ingest_of(manifest, "default") == data["ingested_at"]
    assert last_ingest_of(manifest, "kb") is None
    (ingested.parent / "agent.yaml").write_text(
        "tools:\n  - {type: vectorstore, name: kb, source: gdocs}\n", encoding="utf-8"
    )
    assert main(["-q", "--store", str(ingested), "ingest", "--config", "agent.yaml"]) == 0
    ingests = read_manifest(ingested).ingests
    # the old manifest's own ingest is kept: serve must not take 'default' for re-ingested
    assert ingests["default"] == data["ingested_at"]
    assert set(ingests) == {"kb", "default"}
    assert main(["-q", "--store", str(ingested), "ingest", "gdocs"]) == 0
    assert read_manifest(ingested).ingests.keys() == {"kb", "default"}
    assert read_manifest(ingested).ingests["kb"] == ingests["kb"]
    assert read_manifest(ingested).ingests["default"] != data["ingested_at"]


def test_a_tool_whose_model_cannot_load_answers_its_error_and_the_others_are_served(
    ingested: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One tool of AGENT_YAML whose embedding_model could not load stopped serve for every
    tool, with an error naming neither the tool nor the field (found 2026-12-07)."""
    import logging

    from langchain_holodeck.cli.serve import served_tools
    from langchain_holodeck.errors import ConfigError

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # the model cannot be made
    agent = ingested.parent / "agent.yaml"
    agent.write_text(
        "tools:\n  - {type: hierarchical_document, name: kb, source: gdocs}\n"
        "  - {type: vectorstore, name: other, source: gdocs, "
        "embedding_model: text-embedding-3-small}\n",
        encoding="utf-8",
    )
    assert main(["-q", "--store", str(ingested), "ingest", "--config", str(agent), "--tool",
                 "kb"]) == 0  # fmt: skip
    with caplog.at_level(logging.WARNING, logger="langchain_holodeck.cli.serve"):
        tools = served_tools(agent, ingested, quiet=True)
    said = f"tool other is not served: {agent} tools[1].embedding_model 'text-embedding-3-small'"
    (warning,) = [r.getMessage() for r in caplog.records]
    assert warning.startswith(f"{said} cannot be loaded (")
    assert warning.endswith("); fix it and ingest: serve opens it again after the next ingest.")
    assert [tool.name for tool in tools] == ["kb", "other"]
    result = _call_over_http(tools, "other", {"query": "safety interlock"})
    assert result["isError"] is True
    assert [block["text"] for block in result["content"]] == [warning]
    result = _call_over_http(tools, "kb", {"query": "safety interlock"})
    assert result["structuredContent"]["results"][0]["source_path"].startswith("gdocs/")
    agent.write_text(  # fixed as the error says, and ingested: serve opens it (it said restart)
        "tools:\n  - {type: hierarchical_document, name: kb, source: gdocs}\n"
        "  - {type: vectorstore, name: other, source: gdocs}\n",
        encoding="utf-8",
    )
    assert main(["-q", "--store", str(ingested), "ingest", "--config", str(agent), "--tool",
                 "other"]) == 0  # fmt: skip
    result = _call_over_http(tools, "other", {"query": "safety interlock"})
    assert result["structuredContent"]["results"][0]["source_path"].startswith("gdocs/")
    agent.write_text(  # no tool can be served: the error, as before
        "tools:\n  - {type: vectorstore, name: other, source: gdocs, "
        "embedding_model: text-embedding-3-small}\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError, match=r"^tool other is not served: "):
        served_tools(agent, ingested, quiet=True)


@pytest.mark.parametrize("top_k", [True, 2.5, "3"])
def test_a_top_k_that_is_no_count_is_a_tool_error(ingested: Path, top_k: object) -> None:
    from langchain_holodeck.cli.serve import served_tools

    tools = served_tools(None, ingested, quiet=True)
    result = _call_over_http(tools, "default", {"query": "safety interlock", "top_k": top_k})
    assert result["isError"] is True
    assert (
        _call_over_http(tools, "default", {"query": "safety interlock", "top_k": 2})[
            "structuredContent"
        ]["results"][1]["rank"]
        == 2
    )


def test_a_client_leaving_is_no_error_in_the_servers_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The SDK logs a client's ended stream as ERROR with a traceback; serve lowers it."""
    pytest.importorskip("mcp")
    import logging

    import anyio

    from langchain_holodeck.cli import _mcp
    from langchain_holodeck.cli._http_guard import HttpLimits

    _mcp.http_app(_mcp.build_server([], max_concurrency=1), "127.0.0.1", token=None,
                  limits=HttpLimits())  # fmt: skip
    streams = logging.getLogger("mcp.server.streamable_http")
    with caplog.at_level(logging.DEBUG, logger="mcp.server.streamable_http"):
        for error in (anyio.ClosedResourceError(), ValueError("a real fault")):
            try:
                raise error
            except Exception:
                streams.exception("Error in standalone SSE writer")
    assert [r.levelname for r in caplog.records] == ["DEBUG", "ERROR"]
    # a client leaving with calls in flight: uvicorn's line per call, the error in a group
    # (found 2026-12-07: 'error: Exception in ASGI application' on the server's stderr)
    caplog.clear()
    asgi = logging.getLogger("uvicorn.error")
    with caplog.at_level(logging.DEBUG, logger="uvicorn.error"):
        for error in (
            ExceptionGroup("tasks", [anyio.ClosedResourceError(), anyio.BrokenResourceError()]),
            ExceptionGroup("tasks", [anyio.ClosedResourceError(), ValueError("a real fault")]),
        ):
            try:
                raise error
            except Exception:
                asgi.exception("Exception in ASGI application")
    assert [r.levelname for r in caplog.records] == ["DEBUG", "ERROR"]


@pytest.mark.parametrize("command", ["serve", "chat"])
def test_nothing_ingested_names_the_agent_yaml_argument_this_command_takes(
    command: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    if command == "serve":
        pytest.importorskip("mcp")
    code = main(["--store", str(tmp_path), command])
    captured = capsys.readouterr()
    assert code == 1
    assert captured.err.startswith("error: nothing ingested in ")
    assert f"holodeck-rag {command} AGENT_YAML" in captured.err
    assert "--config" not in captured.err  # chat and serve have no --config


def test_an_ingest_of_another_tool_does_not_answer_under_the_served_tools_name(
    ingested: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """serve without AGENT_YAML serves the last ingest's tool; when the next ingest builds
    another tool, 'default' must not start answering from that other corpus."""
    import logging

    from langchain_holodeck.cli.serve import served_tools

    (served,) = served_tools(None, ingested, quiet=True)
    before, _ = served.search("safety interlock", 1)
    other = ingested.parent / "other"
    other.mkdir()
    (other / "ferry.md").write_text("# Ferry\n\nThe zanzibarquux ferry.\n", encoding="utf-8")
    (ingested.parent / "agent.yaml").write_text(
        "tools:\n  - {type: vectorstore, name: ferries, source: other}\n", encoding="utf-8"
    )
    args = ["-q", "--store", str(ingested), "ingest", "--config", "agent.yaml"]
    assert main(args) == 0
    with caplog.at_level(logging.WARNING, logger="langchain_holodeck.cli.serve"):
        text, structured = served.search("safety interlock", 1)
    assert (served.name, served.tool.name, served.reloads) == ("default", "default", 0)
    assert text == before
    assert "ferry.md" not in str(structured)
    assert [r.getMessage() for r in caplog.records] == [
        "default: the last ingest built another tool, 'ferries'; still serving default as "
        "it was loaded (restart serve to serve 'ferries')."
    ]


def test_an_ingest_of_another_source_updates_the_description_and_tells_the_client(
    ingested: Path,
) -> None:
    """Served without AGENT_YAML, an ingest of another SOURCE moves the tool there: calls
    searched the new corpus while tools/list still said 'Search the structured documents in
    gdocs' (found 2026-12-07). Now tools/list says the new source, and the session that
    listed the tools is sent notifications/tools/list_changed (capability listChanged)."""
    pytest.importorskip("mcp")
    server = stdio_server(ingested, stderr=subprocess.DEVNULL)
    assert server.stdin is not None
    assert server.stdout is not None

    def send(message: dict[str, object]) -> None:
        assert server.stdin is not None
        server.stdin.write(json.dumps(message).encode() + b"\n")
        server.stdin.flush()

    def until(answer_id: int) -> list[dict]:
        assert server.stdout is not None
        read = [json.loads(server.stdout.readline())]
        while read[-1].get("id") != answer_id:
            read.append(json.loads(server.stdout.readline()))
        return read

    def listed(answer_id: int) -> str:
        send({"jsonrpc": "2.0", "id": answer_id, "method": "tools/list"})
        (answer,) = until(answer_id)
        return str(answer["result"]["tools"][0]["description"])

    call = {"name": "default", "arguments": {"query": "zanzibarquux ferry"}}
    try:
        send(_INITIALIZE)
        (started,) = until(1)
        assert started["result"]["capabilities"]["tools"]["listChanged"] is True
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert " gdocs " in listed(2)
        other = ingested.parent / "other"
        other.mkdir()
        (other / "ferry.md").write_text("# Ferry\n\nThe zanzibarquux ferry.\n", encoding="utf-8")
        assert main(["-q", "--store", str(ingested), "ingest", "other"]) == 0
        send({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call})
        *told, answer = until(3)
        sources = [r["source_path"] for r in answer["result"]["structuredContent"]["results"]]
        assert sources == ["other/ferry.md"]
        assert [m["method"] for m in told] == ["notifications/tools/list_changed"]
        assert " other " in listed(4)
        send({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": call})
        assert len(until(5)) == 1  # told once
    finally:
        server.stdin.close()
        server.wait(60)


def test_a_malformed_request_is_one_short_line_in_the_servers_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A tools/call whose arguments is a string: the SDK logged pydantic's report against
    every request type (30 errors, ~5,000 characters) as one warning per request."""
    pytest.importorskip("mcp")
    import logging
    from importlib.metadata import version

    from starlette.testclient import TestClient

    from langchain_holodeck.cli import _mcp
    from langchain_holodeck.cli._http_guard import HttpLimits

    app = _mcp.http_app(_mcp.build_server([], max_concurrency=1), "127.0.0.1", token=None,
                        limits=HttpLimits())  # fmt: skip
    with TestClient(app, base_url="http://127.0.0.1:8765") as client:
        started = client.post("/mcp", json=_INITIALIZE, headers=_ACCEPT)
        session = {**_ACCEPT, "mcp-session-id": started.headers["mcp-session-id"]}
        client.post("/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                    headers=session)  # fmt: skip
        bad = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
               "params": {"name": "kb", "arguments": "oops"}}  # fmt: skip
        with caplog.at_level(logging.WARNING):
            answer = client.post("/mcp", json=bad, headers=session)
    assert answer.json()["error"]["message"] == "Invalid request parameters"
    said = [r.getMessage() for r in caplog.records if "validate request" in r.getMessage()]
    assert len(said) <= 1  # mcp 2.x answers without this warning
    for line in said:
        assert re.fullmatch(
            r"Failed to validate request: \d+ validation errors for ClientRequest "
            r"\(answered with a JSON-RPC error\)",
            line,
        ), line[:300]
    if version("mcp").startswith("1."):  # 1.x warns (2.x answers without it): one short line
        assert said


def test_a_database_down_at_start_is_an_error_not_an_empty_answer(
    ingested: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Redis unreachable when serve starts (fallback_to_memory: true, the default): serve,
    which never writes, served an empty in-memory store, so every call answered 'No relevant
    results found' (a model reads: the documents do not say), with a warning to run ingest."""
    import logging

    from langchain_holodeck.cli.serve import served_tools

    agent = ingested.parent / "agent.yaml"
    agent.write_text(  # nothing listens on 8779: connection refused
        "tools:\n  - type: vectorstore\n    name: kb\n    source: gdocs\n"
        "    database: {provider: redis, connection_string: 'redis://127.0.0.1:8779'}\n",
        encoding="utf-8",
    )
    with caplog.at_level(logging.WARNING, logger="langchain_holodeck.cli.serve"):
        (served,) = served_tools(agent, ingested, quiet=True)
    said = [r.getMessage() for r in caplog.records if r.name == "langchain_holodeck.cli.serve"]
    assert said == [
        "kb: serve fell back to an empty in-memory store; calls answer an error until the "
        "database is back (each call tries it again)."
    ]
    with pytest.raises(RuntimeError) as info:
        served.search("safety interlock", 1)
    assert str(info.value).startswith("Redis at redis://127.0.0.1:8779 is unavailable (")
    assert str(info.value).endswith(
        "; serve fell back to an empty in-memory store, so there is nothing to search until "
        "it is back (each call tries it again)."
    )


def test_a_database_back_after_a_fallback_is_served_without_a_restart(
    ingested: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Each call while the tool sits on an empty fallback builds it again: once the database
    answers, the call is served from it."""
    import logging

    from langchain_holodeck.cli.serve import ServedTool
    from langchain_holodeck.config import VectorStoreToolConfig
    from langchain_holodeck.tools import VectorStoreTool

    root = ingested.parent

    def opened(database: dict[str, str] | None) -> VectorStoreTool:
        config = VectorStoreToolConfig(type="vectorstore", name="kb", source="gdocs",
                                       database=database)  # fmt: skip
        tool = VectorStoreTool(config, base_dir=root, project_dir=root, home_dir=root,
                               store_dir=root / "S2" / "kb")  # fmt: skip
        if database is None:
            tool.initialize_sync()  # the database, back: it holds the corpus
        tool.open_sync()
        return tool

    down = {"provider": "redis", "connection_string": "redis://127.0.0.1:8779"}
    builds = iter([opened(down), opened(down), opened(None)])
    served = ServedTool(lambda: next(builds))
    with pytest.raises(RuntimeError, match="fell back to an empty in-memory store"):
        served.search("safety interlock", 1)  # built again: still down
    with caplog.at_level(logging.WARNING, logger="langchain_holodeck.cli.serve"):
        text, structured = served.search("safety interlock", 1)  # built again: back
    assert structured["results"][0]["source_path"].startswith("gdocs/"), text
    notes = [r.getMessage() for r in caplog.records if r.name == "langchain_holodeck.cli.serve"]
    assert notes == ["note: kb: in-memory is back; serving it."]
    assert served.search("safety interlock", 1) == (text, structured)  # no further build


def test_tools_list_before_any_call_says_the_source_the_last_ingest_moved_the_tool_to(
    ingested: Path,
) -> None:
    """Served without AGENT_YAML, after an ingest of another SOURCE a tools/list before any
    call still said 'Search the structured documents in gdocs': the description was the
    tool loaded at start until a call reloaded it (found 2026-12-07)."""
    pytest.importorskip("mcp")
    from starlette.testclient import TestClient

    from langchain_holodeck.cli import _mcp
    from langchain_holodeck.cli._http_guard import HttpLimits
    from langchain_holodeck.cli.serve import served_tools

    (served,) = served_tools(None, ingested, quiet=True)
    server = _mcp.build_server([served], max_concurrency=1)
    app = _mcp.http_app(server, "127.0.0.1", token=None, limits=HttpLimits())
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    with TestClient(app, base_url="http://127.0.0.1:8765") as client:
        started = client.post("/mcp", json=_INITIALIZE, headers=_ACCEPT)
        session = {**_ACCEPT, "mcp-session-id": started.headers["mcp-session-id"]}
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        client.post("/mcp", json=initialized, headers=session)
        other = ingested.parent / "other"
        other.mkdir()
        (other / "ferry.md").write_text("# Ferry\n\nThe zanzibarquux ferry.\n", encoding="utf-8")
        assert main(["-q", "--store", str(ingested), "ingest", "other"]) == 0
        (tool,) = client.post("/mcp", json=listing, headers=session).json()["result"]["tools"]
    assert " other " in tool["description"]
    assert " gdocs " not in tool["description"]
    assert served.reloads == 1


def test_a_tool_whose_store_was_damaged_is_served_once_it_is_ingested_again(
    ingested: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A tool whose saved store was damaged answered 'the store saved in ... is damaged ...
    Delete the directory ... and run the ingestion again', and still did after the user had
    done so while serve ran: it was never opened again (found 2026-12-07)."""
    import logging

    from langchain_holodeck.cli.serve import served_tools

    agent = ingested.parent / "agent.yaml"
    agent.write_text(
        "tools:\n  - {type: hierarchical_document, name: kb, source: gdocs}\n"
        "  - {type: hierarchical_document, name: third, source: gdocs}\n",
        encoding="utf-8",
    )
    ingest = ["-q", "--store", str(ingested), "ingest", "--config", str(agent), "--tool"]
    assert main([*ingest, "kb"]) == 0
    assert main([*ingest, "third"]) == 0
    (saved,) = (ingested / "third").glob("documents-*.jsonl")
    saved.write_text("{not json\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="langchain_holodeck.cli.serve"):
        kb, third = served_tools(agent, ingested, quiet=True)
    (damaged,) = [r.getMessage() for r in caplog.records]
    assert "is damaged" in damaged
    with pytest.raises(RuntimeError) as raised:
        third.search("safety interlock", 1)
    assert str(raised.value) == damaged
    shutil.rmtree(ingested / "third")  # what the error says to do
    assert main([*ingest, "third"]) == 0
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="langchain_holodeck.cli.serve"):
        text, structured = third.search("safety interlock", 1)
    assert text.startswith("Found 1 result(s):")
    assert structured["tool"] == "third"
    assert [r.getMessage() for r in caplog.records] == [
        "note: third: re-ingested; it opens now and is served."
    ]
    assert kb.search("safety interlock", 1)[0].startswith("Found 1 result(s):")
