"""The MCP side of ``holodeck-rag serve``: served tools as MCP tools, over stdio or HTTP.

Imported only by ``serve`` once the ``mcp`` package is known to be installed. Works with the
``mcp`` SDK 1.x (``FastMCP``, what ``langchain-mcp-adapters`` requires) and 2.x (``MCPServer``).
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import socket
import sys
import weakref
from collections.abc import Sequence
from typing import Annotated, Any, Protocol

import anyio
import anyio.to_thread
import mcp.types as mcp_types
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import BaseModel, Field, ValidationError

from langchain_holodeck._version import __version__
from langchain_holodeck.cli._http_guard import HttpGuard, HttpLimits
from langchain_holodeck.cli._mcp_wire import ReadableLines, non_finite_text, readable_body
from langchain_holodeck.tools.document import SearchInput, undecoded_byte

try:  # mcp 2.x
    from mcp.server.mcpserver import MCPServer as _SDKServer
    from mcp.server.mcpserver.exceptions import ToolError
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import FastMCP as _SDKServer  # type: ignore[no-redef]  # same surface
    from mcp.server.fastmcp.exceptions import ToolError  # type: ignore[no-redef]  # same class

logger = logging.getLogger(__name__)

MAX_QUERY_CHARS = 2000
"""Longest query a client may send (characters); longer ones get a tool error."""
MAX_TOP_K = 100
LOOPBACK_HOSTS = ("127.0.0.1:*", "localhost:*", "[::1]:*")
_QUERY_HELP = str(SearchInput.model_fields["query"].description)
_TOP_K_HELP = f"How many results to return, 1-{MAX_TOP_K} (default: the tool's top_k)."
ARGUMENTS = ("query", "top_k")
"""The arguments a served tool takes (``_tool_function``'s); any other is refused."""
_CLOSED = {"additionalProperties": False}
_QUERY = Annotated[str, Field(description=_QUERY_HELP, max_length=MAX_QUERY_CHARS)]
_TOP_K = Annotated[  # strict: true or "3" is no count (lax pydantic read them as 1 and 3)
    int | None, Field(description=_TOP_K_HELP, ge=1, le=MAX_TOP_K, strict=True)
]


_EMPTY_QUERY = "query is empty; pass the words to look for, e.g. 'revoke a token'."


class _Arguments(BaseModel):
    """A call's arguments as ``_tool_function`` takes them (to check them beside unknown ones)."""

    query: _QUERY
    top_k: _TOP_K = None


class Searchable(Protocol):
    """What ``serve`` exposes per tool: a name, a description and a search returning both forms."""

    name: str

    @property
    def description(self) -> str:
        """What the tool searches, as the model reads it (it may change: ``tools/list``)."""
        ...

    def search(self, query: str, top_k: int | None) -> tuple[str, dict[str, Any]]:
        """The tool's text for ``query`` and its structured results; raises on failure."""
        ...


class _Server(_SDKServer):  # type: ignore[misc,valid-type]  # either SDK's server class
    """The SDK's server, answering a bad argument with one line naming it and its value.

    The SDK validates a call's arguments against the tool's signature and answers a failure
    with pydantic's multi-line report (``1 validation error for kbArguments`` ...). It drops
    an argument the tool does not take (``k``, a misspelt ``qeury``) without a word, and its
    input schema allowed any: the schemas say ``additionalProperties: false`` and such a call
    is answered with one line naming them.

    A served tool's description may change (served without AGENT_YAML, an ingest of another
    SOURCE moves the tool there): ``tools/list`` checks the store and says the current one
    (also before any call), and a session that listed the tools is sent
    ``notifications/tools/list_changed`` after the call that saw the change.
    """

    served: dict[str, Searchable]
    """The tools by name (``build_server`` sets it)."""

    def told(self) -> weakref.WeakKeyDictionary[Any, dict[str, str]]:
        """Per session, the descriptions it was last given."""
        if not hasattr(self, "_told"):
            self._told: weakref.WeakKeyDictionary[Any, dict[str, str]] = weakref.WeakKeyDictionary()
        return self._told

    async def list_tools(self, *args: Any, **kwargs: Any) -> Any:
        listed = await super().list_tools(*args, **kwargs)
        described = await anyio.to_thread.run_sync(self._descriptions)  # may reload: not here
        session = self._session()
        if session is not None:
            self.told()[session] = described
        return [
            tool.model_copy(
                update={
                    "inputSchema": {**tool.inputSchema, **_CLOSED},
                    "description": described.get(tool.name, tool.description),
                }
            )
            for tool in listed
        ]

    async def call_tool(
        self, name: str, arguments: dict[str, Any], *args: Any, **kwargs: Any
    ) -> Any:  # 1.x: (name, arguments); 2.x: (name, arguments, context=None)
        unknown = [key for key in arguments or {} if key not in ARGUMENTS]
        if unknown:
            said = unknown_arguments(name, {k: arguments[k] for k in unknown})
            given = {k: v for k, v in arguments.items() if k in ARGUMENTS}
            try:  # those it takes, checked as the SDK would (a missing query: "takes query")
                checked = _Arguments.model_validate({"query": "", **given})
            except ValidationError as error:
                said = f"{said} {bad_arguments(error)}"
            else:
                if "query" in given and not checked.query.strip():  # as search() says it
                    said = f"{said} {_EMPTY_QUERY}"
            raise ToolError(said)
        try:
            result = await super().call_tool(name, arguments, *args, **kwargs)
        except ToolError as error:
            if not isinstance(error.__cause__, ValidationError):
                raise
            raise ToolError(bad_arguments(error.__cause__)) from error
        await self._tell_changes(kwargs.get("context", args[0] if args else None))
        return result

    async def _tell_changes(self, context: Any) -> None:
        """``tools/list_changed`` to this session when a description it was given changed."""
        session = self._session(context)
        given = self.told().get(session) if session is not None else None
        if given is None:  # it never listed the tools: nothing it holds is stale
            return
        described = await anyio.to_thread.run_sync(self._descriptions)
        if described != given:
            self.told()[session] = described
            await session.send_tool_list_changed()

    def _descriptions(self) -> dict[str, str]:
        """Each tool's current description (a served tool checks its store first)."""
        return {name: tool.description for name, tool in self.served.items()}

    def _session(self, context: Any = None) -> Any:
        """The session of the request being handled (None when the SDK does not say)."""
        try:
            return (context or self.get_context()).session
        except (AttributeError, LookupError, ValueError):  # outside a request, another SDK
            return None


def unknown_arguments(tool: str, unknown: dict[str, Any]) -> str:
    """One line naming each argument ``tool`` does not take, its value, and those it takes."""
    given = ", ".join(f"{name} (got {_shown(value)})" for name, value in unknown.items())
    return (
        f"unknown argument{'s' if len(unknown) > 1 else ''} {given}: {tool} takes query and, "
        "optionally, top_k."
    )


def bad_arguments(error: ValidationError) -> str:
    """One line naming each bad argument of a call, the value it got, and what it takes."""
    problems: dict[str, str] = {}
    for detail in error.errors():
        name = ".".join(str(part) for part in detail["loc"]) or "arguments"
        problems.setdefault(name, _argument_problem(name, detail))
    return " ".join(problems.values())


def _argument_problem(name: str, detail: Any) -> str:
    if name == "query" and detail["type"] == "missing":
        return "query is required: pass the words to look for, e.g. 'revoke a token'."
    value = detail.get("input")
    where = undecoded_byte(value) if isinstance(value, str) else None
    if name == "query" and where is not None:  # pydantic: 'unable to parse raw data as unicode'
        return f"query is not UTF-8 text ({where}); send the words as UTF-8."
    got = _shown(value)
    if name == "query":
        return f"query must be a string of at most {MAX_QUERY_CHARS} characters, got {got}."
    if name == "top_k":
        return (
            f"top_k must be an integer from 1 to {MAX_TOP_K}, or null for the tool's "
            f"default, got {got}."
        )
    return f"{name}: {detail['msg']}, got {got}."


def _shown(value: object) -> str:
    """``value`` as the client wrote it (JSON), cut to 60 characters."""
    written = non_finite_text(value)  # 1e400, NaN: the SDK would have passed null
    if written is not None:
        return written
    if isinstance(value, str) and len(value) > 60:
        return f"a string of {len(value)} characters"
    try:
        text = json.dumps(value, ensure_ascii=False)
        text.encode("utf-8")  # a lone surrogate would make the whole answer unsendable
    except UnicodeEncodeError:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = ascii(value)
    return text if len(text) <= 60 else f"{text[:57]}..."


def build_server(
    tools: Sequence[Searchable], *, max_concurrency: int, host: str = "127.0.0.1"
) -> Any:
    """An MCP server (``MCPServer`` or ``FastMCP``) serving each tool as a read-only MCP tool.

    Each call runs in a worker thread, at most ``max_concurrency`` at once (the rest wait):
    the event loop keeps answering other requests while a search runs.
    """
    options: dict[str, Any] = {"instructions": _instructions(tools), "log_level": "WARNING"}
    if _SDKServer.__name__ == "FastMCP":  # 1.x: HTTP settings are constructor arguments
        options.update(
            host=host,
            transport_security=_transport_security(host),
            json_response=True,  # a call's answer as one JSON body, not an SSE stream
        )
    else:  # 2.x: the version the initialize reply names (serverInfo.version)
        options["version"] = __version__
    server = _Server("holodeck-rag", **options)
    if _SDKServer.__name__ == "FastMCP":  # 1.x takes none: its low-level server's, else mcp's
        server._mcp_server.version = __version__
    server.served = {tool.name: tool for tool in tools}
    _announce_list_changes(server)
    root = logging.getLogger()  # where the SDK logs a request it could not validate
    if invalid_request_summary not in root.filters:
        root.addFilter(invalid_request_summary)
    limiter = anyio.CapacityLimiter(max_concurrency)
    for tool in tools:
        server.add_tool(
            _tool_function(tool, limiter),
            name=tool.name,
            title=tool.name,
            description=tool.description,
            annotations=mcp_types.ToolAnnotations(
                readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False
            ),
        )
    return server


def _announce_list_changes(server: Any) -> None:
    """Declare the ``tools.listChanged`` capability at initialization (SDK 1.x)."""
    lowlevel = getattr(server, "_mcp_server", None)  # FastMCP's low-level server
    if lowlevel is None:
        return
    create = lowlevel.create_initialization_options

    def options(notification_options: Any = None, *args: Any, **kwargs: Any) -> Any:
        told = notification_options or NotificationOptions(tools_changed=True)
        return create(told, *args, **kwargs)

    lowlevel.create_initialization_options = options


def _instructions(tools: Sequence[Searchable]) -> str:
    names = ", ".join(tool.name for tool in tools)
    return (
        f"Search tools over a team's own documents ({names}); each result names its source "
        "file and section: cite them. Read-only."
    )


def _tool_function(tool: Searchable, limiter: anyio.CapacityLimiter) -> Any:
    async def search(query: _QUERY, top_k: _TOP_K = None) -> mcp_types.CallToolResult:
        if not query.strip():
            return _error(_EMPTY_QUERY)
        try:
            text, structured = await anyio.to_thread.run_sync(
                tool.search, query, top_k, limiter=limiter
            )
        except Exception as error:  # the client gets one line; the server keeps serving
            logger.warning("%s: %s", tool.name, _first_line(error))
            return _error(_first_line(error))
        return mcp_types.CallToolResult(
            content=[mcp_types.TextContent(type="text", text=text)],
            structuredContent=structured,
        )

    search.__name__ = tool.name
    search.__doc__ = tool.description
    return search


def _error(text: str) -> mcp_types.CallToolResult:
    return mcp_types.CallToolResult(
        content=[mcp_types.TextContent(type="text", text=text)], isError=True
    )


def _first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return lines[0] if lines else type(error).__name__


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine's loopback interface (``localhost``, 127.x, ::1)."""
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _transport_security(host: str) -> TransportSecuritySettings:
    """On loopback, only loopback Host/Origin headers (DNS rebinding); elsewhere the token.

    The loopback names allowed are ``LOOPBACK_HOSTS`` and ``host`` itself (any of 127/8).
    """
    if not is_loopback(host):
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    shown = f"[{host.strip('[]')}]" if ":" in host else host
    hosts = list(dict.fromkeys([*LOOPBACK_HOSTS, f"{shown}:*"]))
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=hosts,
        allowed_origins=[f"http://{h}" for h in hosts],
    )


def run_stdio(server: Any) -> None:
    """Serve over stdin/stdout until the client closes stdin.

    The SDK closes the stream it writes to when done; it gets a duplicate of stdout, so the
    CLI's own stdout stays open for its exit. It reads ``sys.stdin.buffer``: here, lines
    made readable (``ReadableLines``: lone surrogates spelt U+FFFD, a call's non-finite
    numbers kept).
    """
    import io
    import os

    saved, saved_in = sys.stdout, sys.stdin
    sys.stdout = io.TextIOWrapper(os.fdopen(os.dup(saved.fileno()), "wb"), encoding="utf-8")
    sys.stdin = io.TextIOWrapper(
        io.BufferedReader(ReadableLines(saved_in.buffer)), encoding="utf-8", errors="replace"
    )
    try:
        anyio.run(server.run_stdio_async)
    except Exception as error:
        if not _only_closed_streams(error):
            raise
        # the client closed stdin while the server still answered (an error notification for
        # its last, malformed message): the SDK's task groups raised ClosedResourceError
        logger.debug("the stdio client left while the server was answering", exc_info=True)
    finally:
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.close()
        sys.stdout, sys.stdin = saved, saved_in


def _only_closed_streams(error: BaseException) -> bool:
    """Whether ``error`` (an exception group or not) holds only closed or broken streams."""
    inner = getattr(error, "exceptions", None)  # an ExceptionGroup (the backport on 3.10)
    if isinstance(inner, Sequence) and inner:
        return all(_only_closed_streams(e) for e in inner)
    return isinstance(error, (anyio.ClosedResourceError, anyio.BrokenResourceError))


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (port 0: any free port).

    Raises:
        OSError: When the address cannot be bound (in use, not an address of this machine); the
            message names ``host:port``, why, and what to change.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on such sockets' connections;
    # without it Nagle + delayed ACK hold each response for ~40 ms
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as error:
        sock.close()
        failure = OSError(_bind_problem(host, port, error))  # str(): the message, no [Errno]
        failure.errno = error.errno
        raise failure from error
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def _bind_problem(host: str, port: int, error: OSError) -> str:
    """``cannot listen on host:port: why; what to change`` for a failed ``bind``."""
    where = f"cannot listen on {host}:{port}"
    if isinstance(error, socket.gaierror):
        return (
            f"{where}: host {host!r} is not known ({error.strerror}); give a name or address "
            "of this machine, e.g. --host 127.0.0.1"
        )
    if error.errno == errno.EADDRINUSE:
        return (
            f"{where}: the port is already in use (another server?); choose another --port, "
            "or --port 0 for any free one"
        )
    if error.errno == errno.EADDRNOTAVAIL:
        return f"{where}: {host!r} is not an address of this machine; e.g. --host 127.0.0.1"
    if error.errno == errno.EACCES:
        return (
            f"{where}: permission denied (ports below 1024 need privileges); choose another --port"
        )
    return f"{where}: {error.strerror or error}"


def client_gone(record: logging.LogRecord) -> bool:
    """A logging filter: a stream to a client that left is DEBUG, not an error.

    The SDK logs ``Error in standalone SSE writer`` with the traceback of
    ``anyio.ClosedResourceError`` whenever an HTTP client ends its session, a normal event;
    ``serve`` printed it as ``error:``. A client leaving with calls in flight makes uvicorn
    log ``Exception in ASGI application`` with the same error (maybe in an exception group)
    once per call. Other records pass as they are.
    """
    error = record.exc_info[1] if record.exc_info else None
    if error is not None and _only_closed_streams(error):
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
    return True


def invalid_request_summary(record: logging.LogRecord) -> bool:
    """A logging filter: the SDK's warning for a request it could not validate, in short.

    For one malformed request (``tools/call`` whose ``arguments`` is a string, an unknown
    method) the SDK logs ``Failed to validate request:`` and pydantic's report against every
    request type: 28-30 errors, some 5,000 characters on the server's stderr, per request.
    The client is answered with a JSON-RPC error either way; the log keeps the report's first
    line (``... 30 validation errors for ClientRequest``). Other records pass as they are.
    """
    message = record.getMessage() if record.name == "root" else ""
    if message.startswith("Failed to validate request: "):
        first = message.splitlines()[0]
        record.msg, record.args = f"{first} (answered with a JSON-RPC error)", None
    return True


def http_app(server: Any, host: str, *, token: str | None, limits: HttpLimits) -> HttpGuard:
    """The ASGI app ``run_http`` serves: the server's streamable HTTP app behind the guard."""
    for name in ("mcp.server.streamable_http", "uvicorn.error"):
        streams = logging.getLogger(name)
        if client_gone not in streams.filters:
            streams.addFilter(client_gone)
    if _SDKServer.__name__ == "FastMCP":
        app = server.streamable_http_app()
    else:
        app = server.streamable_http_app(
            transport_security=_transport_security(host),
            host=host,
            json_response=True,
            max_request_body_size=limits.max_body_bytes,
        )
    return HttpGuard(app, token=token, limits=limits, rewrite=readable_body)


def run_http(server: Any, sock: socket.socket, *, token: str | None, limits: HttpLimits) -> None:
    """Serve streamable HTTP at ``/mcp`` on ``sock`` until interrupted."""
    import uvicorn

    guarded = http_app(server, sock.getsockname()[0], token=token, limits=limits)
    config = uvicorn.Config(
        guarded,
        log_level="warning",
        log_config=None,  # uvicorn logs through the CLI's handler: one line, traceback with -v
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=2,
    )
    address = sock.getsockname()
    shown = f"[{address[0]}]" if ":" in address[0] else address[0]
    print(f"serving on http://{shown}:{address[1]}/mcp", file=sys.stderr, flush=True)
    uvicorn.Server(config).run(sockets=[sock])
