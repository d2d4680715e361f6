"""``holodeck-rag serve``: the official MCP client over stdio and streamable HTTP, for real.

Each server is a ``holodeck-rag serve`` subprocess over a folder ingested by the CLI; the
results are compared with what ``holodeck-rag search`` prints for the same query.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager, redirect_stderr, redirect_stdout
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

mcp = pytest.importorskip("mcp", reason='needs pip install "langchain-holodeck[mcp]"')
import httpx  # noqa: E402  # after the skip: comes with mcp
from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

from langchain_holodeck.cli import main  # noqa: E402
from tests.helpers import DATA_DIR  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
TOKEN = "s3cret-token-for-tests"  # a test value, asserted never to be printed
QUERY = "How do I revoke an access token?"
_SERVE = "import sys; from langchain_holodeck.cli import main; sys.exit(main())"


def _env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", **extra}
    env.pop("HOLODECK_MCP_TOKEN", None)
    env.update(extra)
    return env


async def call(session: ClientSession, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """``tools/call`` and its result as on the wire (camelCase keys), for the 1.x and 2.x SDKs."""
    result: Any = await session.call_tool(name, arguments)
    return dict(result.model_dump(by_alias=True, exclude_none=True))


def text_of(result: dict[str, Any]) -> str:
    return str(result["content"][0]["text"])


def sources(result: dict[str, Any]) -> list[str]:
    return [r["source_path"] for r in result["structuredContent"]["results"]]


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with ``docs/`` ingested by ``holodeck-rag ingest`` (store in .holodeck/)."""
    root = tmp_path_factory.mktemp("served")
    shutil.copytree(DATA_DIR / "docs", root / "docs")
    cwd = Path.cwd()
    os.chdir(root)
    try:
        code, _, err = _cli("-q", "ingest", "docs")
    finally:
        os.chdir(cwd)
    assert code == 0, err
    return root


def _search_cli(root: Path, *argv: str) -> str:
    cwd = Path.cwd()
    os.chdir(root)
    try:
        code, out, err = _cli("-q", "search", *argv)
    finally:
        os.chdir(cwd)
    assert code == 0, err
    return out


# -- stdio ----------------------------------------------------------------------------------
@asynccontextmanager
async def stdio_session(root: Path) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=sys.executable, args=["-c", _SERVE, "serve"], env=_env(), cwd=str(root)
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def test_stdio_lists_the_tool_and_answers_like_the_search_command(corpus: Path) -> None:
    async with stdio_session(corpus) as session:
        listed = (await session.list_tools()).tools
        result = await call(session, "default", {"query": QUERY})
        top2 = await call(session, "default", {"query": QUERY, "top_k": 2})
    assert [t.name for t in listed] == ["default"]
    tool = listed[0]
    assert "docs" in (tool.description or "")
    schema = tool.model_dump(by_alias=True)
    assert schema["inputSchema"]["required"] == ["query"]
    assert set(schema["inputSchema"]["properties"]) == {"query", "top_k"}
    assert schema["annotations"]["readOnlyHint"] is True
    assert not result["isError"]
    text = text_of(result)
    assert text == _search_cli(corpus, QUERY).rstrip("\n")
    records = json.loads(_search_cli(corpus, QUERY, "--json"))
    served = result["structuredContent"]
    assert served["tool"] == "default"
    assert [r["source_path"] for r in served["results"]] == [r["source_path"] for r in records]
    assert [r["section_id"] for r in served["results"]] == [r["section_id"] for r in records]
    assert served["results"][0]["source_path"] == "docs/auth.md"
    assert served["results"][0]["fused_score"] == pytest.approx(records[0]["fused_score"])
    assert len(top2["structuredContent"]["results"]) == 2
    assert text_of(top2).startswith("Found 2 result(s):")


TOP_K_RULE = "top_k must be an integer from 1 to 100, or null for the tool's default"


async def test_stdio_bad_input_gets_tool_errors_and_the_next_call_is_answered(
    corpus: Path,
) -> None:
    bad: list[tuple[str, dict[str, Any], str]] = [
        ("no_such_tool", {"query": "token"}, "Unknown tool"),
        ("default", {"query": "   "}, "query is empty"),
        (
            "default",
            {"query": "token " * 1000},
            "query must be a string of at most 2000 characters, got a string of 6000 characters.",
        ),
        ("default", {"query": 42}, "query must be a string of at most 2000 characters, got 42."),
        ("default", {"query": "token", "top_k": "many"}, f'{TOP_K_RULE}, got "many".'),
        ("default", {"query": "token", "top_k": 0}, f"{TOP_K_RULE}, got 0."),
        ("default", {"query": "token", "top_k": 1000}, f"{TOP_K_RULE}, got 1000."),
        ("default", {}, "query is required: pass the words to look for, e.g. 'revoke a token'."),
    ]
    async with stdio_session(corpus) as session:
        for name, arguments, expected in bad:
            result = await call(session, name, arguments)
            text = text_of(result)
            assert result["isError"], (name, arguments)
            assert expected in text, text
            assert "Traceback" not in text
            assert "\n" not in text, text  # one line, not pydantic's report
        after = await call(session, "default", {"query": QUERY, "top_k": 1})
    assert not after["isError"]
    assert sources(after) == ["docs/auth.md"]


# -- streamable HTTP --------------------------------------------------------------------------
@dataclass
class HttpServer:
    url: str
    process: subprocess.Popen[str]
    stderr: list[str] = field(default_factory=list)


@contextmanager
def http_server(root: Path, *argv: str, token: str | None = None) -> Iterator[HttpServer]:
    """``serve --transport http --port 0`` in ``root``; yields once the address is printed."""
    extra = {"HOLODECK_MCP_TOKEN": token} if token else {}
    process = subprocess.Popen(
        [sys.executable, "-c", _SERVE, "serve", "--transport", "http", "--port", "0", *argv],
        cwd=root,
        env=_env(**extra),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    server = HttpServer(url="", process=process)
    ready = threading.Event()

    def drain() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            server.stderr.append(line)
            if line.startswith("serving on "):
                server.url = line.split()[-1]
                ready.set()
        ready.set()

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        assert ready.wait(180), "server did not start"
        assert server.url, "".join(server.stderr)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        reader.join(timeout=5)


@asynccontextmanager
async def http_session(url: str, token: str | None = None) -> AsyncIterator[ClientSession]:
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"} if token else None
    async with (
        httpx.AsyncClient(headers=headers, timeout=60) as http,
        streamable_http_client(url, http_client=http) as streams,  # 2 or 3 (mcp 1.x) items
        ClientSession(streams[0], streams[1]) as session,
    ):
        await session.initialize()
        yield session


@pytest.fixture(scope="module")
def served(corpus: Path) -> Iterator[HttpServer]:
    with http_server(corpus, token=TOKEN) as server:
        yield server


async def test_http_answers_like_the_search_command(corpus: Path, served: HttpServer) -> None:
    async with http_session(served.url, TOKEN) as session:
        listed = (await session.list_tools()).tools
        result = await call(session, "default", {"query": QUERY})
    assert [t.name for t in listed] == ["default"]
    assert text_of(result) == _search_cli(corpus, QUERY).rstrip("\n")
    assert sources(result)[0] == "docs/auth.md"


def _post(url: str, body: bytes, **headers: str) -> httpx.Response:
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        **headers,
    }
    return httpx.post(url, content=body, headers=headers, timeout=30)


def test_http_requires_the_token_and_never_prints_it(served: HttpServer) -> None:
    hello = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        }
    ).encode()
    missing = _post(served.url, hello)
    wrong = _post(served.url, hello, authorization="Bearer nope")
    right = _post(served.url, hello, authorization=f"Bearer {TOKEN}")
    assert missing.status_code == 401
    assert wrong.status_code == 401
    assert missing.json()["error"]["message"].startswith("unauthorized")
    assert TOKEN not in missing.text
    assert right.status_code == 200
    assert TOKEN not in "".join(served.stderr)


def test_http_bad_requests_get_protocol_errors_not_tracebacks(served: HttpServer) -> None:
    auth = {"authorization": f"Bearer {TOKEN}"}
    garbage = _post(served.url, b"{not json", **auth)
    wrong_shape = _post(served.url, b'{"jsonrpc": "2.0", "method": 7}', **auth)
    huge = _post(served.url, b'{"x": "' + b"a" * 2_000_000 + b'"}', **auth)
    for response in (garbage, wrong_shape):
        assert 400 <= response.status_code < 500, response.text
        assert "error" in response.json()
        assert "Traceback" not in response.text
    assert huge.status_code == 413
    assert huge.json()["error"]["message"] == "request body larger than 1000000 bytes"
    assert served.process.poll() is None


async def test_http_client_leaving_mid_call_and_concurrent_clients(served: HttpServer) -> None:
    async def leave_mid_call() -> None:
        # What the leaving client itself sees is not asserted: the SDK's transport may answer
        # its abandoned request with a 500 after it hung up. The server must stay up (below).
        with contextlib.suppress(Exception):
            async with http_session(served.url, TOKEN) as session:
                pending = asyncio.ensure_future(call(session, "default", {"query": QUERY}))
                await asyncio.sleep(0.01)
                pending.cancel()

    for _ in range(3):  # the request is sent, then the client cancels it and hangs up
        await leave_mid_call()

    async def one_client(top_k: int) -> list[str]:
        async with http_session(served.url, TOKEN) as session:
            result = await call(session, "default", {"query": QUERY, "top_k": top_k})
        assert not result["isError"]
        return sources(result)

    answers = await asyncio.gather(*(one_client(3) for _ in range(6)))
    assert all(answer == answers[0] for answer in answers)
    assert answers[0][0] == "docs/auth.md"
    assert served.process.poll() is None
    assert "Traceback" not in "".join(served.stderr)


async def test_reingest_from_another_process_is_served_without_restart(
    corpus: Path, tmp_path: Path
) -> None:
    root = tmp_path / "live"
    shutil.copytree(corpus / "docs", root / "docs")
    cwd = Path.cwd()
    os.chdir(root)
    try:
        assert _cli("-q", "ingest", "docs")[0] == 0
        with http_server(root) as server:
            query = "quokka migration schedule"
            async with http_session(server.url) as session:
                before = await call(session, "default", {"query": query, "top_k": 1})
                (root / "docs" / "quokka.md").write_text(
                    "# Quokka migration\n\nThe quokka migration schedule runs every spring.\n",
                    encoding="utf-8",
                )
                time.sleep(0.01)
                code, _, err = _cli("-q", "ingest", "docs")  # another writer: this process
                assert code == 0, err
                after = await call(session, "default", {"query": query, "top_k": 1})
    finally:
        os.chdir(cwd)
    assert sources(before) != ["docs/quokka.md"]
    assert sources(after) == ["docs/quokka.md"]
    assert "reloaded from the store" in "".join(server.stderr)


def test_non_loopback_host_without_token_is_refused_before_loading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("HOLODECK_MCP_TOKEN", raising=False)
    code, out, err = _cli("serve", "--transport", "http", "--host", "0.0.0.0")
    assert code == 1
    assert out == ""
    assert "set HOLODECK_MCP_TOKEN" in err
    assert "--host '0.0.0.0' is not a loopback address" in err


def test_host_with_stdio_is_a_usage_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = _cli("serve", "--port", "9000")
    assert code == 1
    assert "--host and --port apply to --transport http" in err


# -- langchain-mcp-adapters + create_agent ----------------------------------------------------
async def test_agent_loads_the_served_tools_and_cites_the_served_sources(
    served: HttpServer,
) -> None:
    adapters = pytest.importorskip("langchain_mcp_adapters.client", exc_type=ImportError)
    from langchain.agents import create_agent
    from langchain_openai import ChatOpenAI
    from pydantic import SecretStr

    from tests.openai_server import chat_server

    client = adapters.MultiServerMCPClient(
        {
            "holodeck": {
                "transport": "streamable_http",
                "url": served.url,
                "headers": {"Authorization": f"Bearer {TOKEN}"},
            }
        }
    )
    tools = await client.get_tools()
    assert [t.name for t in tools] == ["default"]
    with chat_server() as llm:
        key = SecretStr("sk-loopback")
        model = ChatOpenAI(model="loopback", base_url=llm.base_url, api_key=key)
        agent = create_agent(model, tools, system_prompt="Answer from the documents; cite them.")
        state = await agent.ainvoke({"messages": [{"role": "user", "content": QUERY}]})
    answer = state["messages"][-1].content
    assert answer == "The answer is in docs/auth.md."
    tool_message = state["messages"][-2]
    assert tool_message.type == "tool"
    assert "Source: docs/auth.md | Section: Authentication" in str(tool_message.content)
    # the model's tool call went through MCP: the model's second request carries the result
    assert len(llm.requests) == 2
    assert "Found " in json.dumps(llm.requests[1]["messages"][-1])


# -- a search that fails ----------------------------------------------------------------------
REDIS_SCRIPT = REPO / "scripts" / "redis-stack.sh"
FAULT_PORT = os.environ.get("HOLODECK_MCP_REDIS_PORT", "6396")
"""A Redis Stack of this test's own, stopped mid-session (never the shared one at REDIS_URL)."""


def _redis(command: str) -> None:
    subprocess.run(
        ["bash", str(REDIS_SCRIPT), command, FAULT_PORT],
        check=True,
        capture_output=True,
        timeout=600,
    )


@pytest.mark.redis
async def test_store_down_is_a_tool_error_and_the_server_keeps_serving(tmp_path: Path) -> None:
    shutil.copytree(DATA_DIR / "docs", tmp_path / "docs")
    (tmp_path / "agent.yaml").write_text(
        "tools:\n"
        "  - type: vectorstore\n"
        "    name: redis_docs\n"
        "    description: The docs, in Redis.\n"
        "    source: docs\n"
        "    database:\n"
        "      provider: redis\n"
        f"      connection_string: redis://127.0.0.1:{FAULT_PORT}\n"
        "      index_name: mcp_store_down\n"
        "      fallback_to_memory: false\n",
        encoding="utf-8",
    )
    _redis("start")
    cwd = Path.cwd()
    os.chdir(tmp_path)
    try:
        code, _, err = _cli("-q", "ingest", "--config", "agent.yaml")  # serve only reads
        assert code == 0, err
        params = StdioServerParameters(
            command=sys.executable,
            args=["-c", _SERVE, "serve", "agent.yaml"],
            env=_env(),
            cwd=str(tmp_path),
        )
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            first = await call(session, "redis_docs", {"query": QUERY, "top_k": 1})
            _redis("stop")  # the store goes away mid-session
            failed = await call(session, "redis_docs", {"query": QUERY, "top_k": 1})
            listed = await session.list_tools()
            _redis("start")  # back, empty (no persistence): re-ingested by another process
            code, _, err = _cli("-q", "ingest", "--config", "agent.yaml")
            assert code == 0, err
            again = await call(session, "redis_docs", {"query": QUERY, "top_k": 1})
    finally:
        os.chdir(cwd)
        _redis("stop")
    assert not first["isError"]
    assert failed["isError"]
    text = text_of(failed)
    assert text.startswith("Search failed: "), text
    assert "Traceback" not in text
    assert [t.name for t in listed.tools] == ["redis_docs"]
    assert not again["isError"]
    assert again["structuredContent"] == first["structuredContent"]
