"""``holodeck-rag serve``: the configured tools as an MCP server (stdio or streamable HTTP).

The tools are opened once, as the last ingest left the store (``open_sync``: the source is not
read, nothing is synced or written; model and indexes stay loaded); each becomes a read-only MCP
tool with its name, description and input schema (``query``, optional ``top_k``) that returns
the tool's text plus structured results (the ``search --json`` records). Before each call the
store's ``ingest.json`` is stat-ed: after an ``ingest`` from another process the tool is
rebuilt (same embedding model object, nothing reloaded from disk but the store), so the next
call sees the new data without a restart.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from langchain_holodeck.cli._drift import warn_if_moved
from langchain_holodeck.cli._interrupt import interrupt_says
from langchain_holodeck.cli._targets import (
    MANIFEST_NAME,
    Target,
    agent_yaml_path,
    as_ingested,
    build_tool,
    ingested_before,
    last_ingest_of,
    read_manifest,
    target_from_manifest,
)
from langchain_holodeck.cli.chat import is_hybrid, positive_int
from langchain_holodeck.errors import ConfigError, HolodeckError

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

    from langchain_holodeck._embedding_settings import LongTextMode
    from langchain_holodeck.tools.document import _DocumentTool

logger = logging.getLogger(__name__)

TOKEN_ENV = "HOLODECK_MCP_TOKEN"
"""Environment variable holding the bearer token HTTP clients must send."""
DEFAULT_PORT = 8765
INSTALL_HINT = 'holodeck-rag serve needs the MCP SDK: pip install "langchain-holodeck[mcp]"'
_SERVE_HELP = f"""\
Opens every tool of AGENT_YAML once (or, without it, the tool the last `ingest` into STORE
built), as the last ingest left the store, and serves each as an MCP tool: its name, its
description, arguments `query` (string) and optional `top_k` (1-100); the result is the
tool's text (as `search` prints it) plus structured content {{tool, query, results: [the
`search --json` records]}}.
Read-only: the source is not read; nothing writes, deletes or re-ingests (run `ingest`).

--transport stdio (default): speak MCP on stdin/stdout (a client spawns this command).
--transport http: streamable HTTP at http://HOST:PORT/mcp (default 127.0.0.1:{DEFAULT_PORT};
--port 0 picks a free port; the address is printed on stderr). When {TOKEN_ENV} is set,
every request must send `Authorization: Bearer <token>`; binding to a non-loopback HOST
requires it. Bodies over --max-body-bytes get 413, requests beyond --max-in-flight get 503,
at most --max-concurrency searches run at once (the rest wait).

After `holodeck-rag ingest` into the same STORE (another process), or a `search`, `test` or
`chat` that synced changes into it, the next call reopens the tool from the store: no restart
needed."""


def add_serve_parser(
    verbs: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    """Register ``serve`` on the ``holodeck-rag`` parser."""
    serve = verbs.add_parser(
        "serve",
        parents=[common],
        help="serve the tools to any agent over MCP (stdio or streamable HTTP)",
        description=_SERVE_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    serve.add_argument("agent_yaml", nargs="?", type=agent_yaml_path, metavar="AGENT_YAML")
    serve.add_argument(
        "--transport",
        choices=("stdio", "http"),
        default="stdio",
        help="stdio (default): a client spawns this command; http: streamable HTTP at /mcp",
    )
    serve.add_argument("--host", help="http: address to bind (default: 127.0.0.1)")
    serve.add_argument("--port", type=_port, help=f"http: port (default: {DEFAULT_PORT})")
    serve.add_argument(
        "--max-concurrency",
        type=positive_int,
        default=4,
        metavar="N",
        help="searches run at once; the rest wait (default: %(default)s)",
    )
    serve.add_argument(
        "--max-in-flight",
        type=positive_int,
        default=32,
        metavar="N",
        help="http: requests handled at once; more get 503 (default: %(default)s)",
    )
    serve.add_argument(
        "--max-body-bytes",
        type=positive_int,
        default=1_000_000,
        metavar="N",
        help="http: largest request body in bytes; larger get 413 (default: %(default)s)",
    )
    serve.set_defaults(run=run_serve)


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= 65535:
        msg = f"must be a port number from 0 to 65535, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return value


def run_serve(args: argparse.Namespace) -> int:
    """Load the tools, then serve them until the client leaves (stdio) or an interrupt (http)."""
    if args.transport == "stdio" and (args.host is not None or args.port is not None):
        msg = "--host and --port apply to --transport http; stdio needs neither."
        raise ConfigError(msg)
    host = args.host or "127.0.0.1"
    port = DEFAULT_PORT if args.port is None else args.port
    _check_serving(args.transport, host)  # before loading anything
    with interrupt_says(""):  # nothing to resume: Ctrl-C stops serving quietly (exit 130)
        return _serve(args, host, port)


def _serve(args: argparse.Namespace, host: str, port: int) -> int:
    if args.transport == "http":  # a busy port or unknown host: said now, not after loading
        from langchain_holodeck.cli import _mcp

        _mcp.bind(host, port).close()
    with contextlib.redirect_stdout(sys.stderr):  # stdout is the protocol's (stdio)
        tools = served_tools(args.agent_yaml, args.store, quiet=args.quiet)
    if args.transport == "stdio" and not args.quiet:
        print(f"serving {len(tools)} tool(s) over stdio", file=sys.stderr, flush=True)
    serve_tools(
        tools,
        transport=args.transport,
        host=host,
        port=port,
        max_concurrency=args.max_concurrency,
        max_in_flight=args.max_in_flight,
        max_body_bytes=args.max_body_bytes,
    )
    return 0


def serve_tools(
    tools: Sequence[ServedTool | _DocumentTool],
    *,
    transport: Literal["stdio", "http"] = "stdio",
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    max_concurrency: int = 4,
    max_in_flight: int = 32,
    max_body_bytes: int = 1_000_000,
) -> None:
    """Serve initialized tools over MCP until the client leaves (stdio) or an interrupt (http).

    Over HTTP the bearer token is read from ``HOLODECK_MCP_TOKEN``; a non-loopback ``host``
    requires one. The address (``port`` 0 picks a free one) is printed on stderr.

    Raises:
        ConfigError: When ``host`` is not loopback and ``HOLODECK_MCP_TOKEN`` is unset.
        ImportError: When the ``mcp`` package is not installed (the message says how).
        OSError: When ``host:port`` cannot be bound.
    """
    _check_serving(transport, host)
    from langchain_holodeck.cli import _mcp
    from langchain_holodeck.cli._http_guard import HttpLimits

    served = [t if isinstance(t, ServedTool) else ServedTool(_given(t)) for t in tools]
    server = _mcp.build_server(served, max_concurrency=max_concurrency, host=host)
    if transport == "stdio":
        _mcp.run_stdio(server)
        return
    limits = HttpLimits(max_body_bytes=max_body_bytes, max_in_flight=max_in_flight)
    with _mcp.bind(host, port) as sock:
        _mcp.run_http(server, sock, token=os.environ.get(TOKEN_ENV) or None, limits=limits)


def _given(tool: _DocumentTool) -> Callable[[], _DocumentTool]:
    return lambda: tool


def _check_serving(transport: str, host: str) -> None:
    """The SDK is importable; a non-loopback HTTP host has a token."""
    try:
        from langchain_holodeck.cli import _mcp
    except ImportError as error:
        if (error.name or "").split(".")[0] in {"mcp", "uvicorn", "starlette", "anyio"}:
            raise ImportError(INSTALL_HINT) from error
        raise
    if transport == "http" and not _mcp.is_loopback(host) and not os.environ.get(TOKEN_ENV):
        msg = (
            f"--host {host!r} is not a loopback address, so clients must authenticate: set "
            f"{TOKEN_ENV} to a secret token (clients send Authorization: Bearer <token>), "
            "or bind to 127.0.0.1."
        )
        raise ConfigError(msg)


# -- the served tools ---------------------------------------------------------------------
class ServedTool:
    """One tool as ``serve`` exposes it: searched with an optional ``top_k``, rebuilt on re-ingest.

    Key init args:
        build: Returns the tool, initialized (called now, and again after each re-ingest).
        generation: Returns a value that changes when the store was re-ingested (None: never).
        unserved: Returns why a tool holding no chunk cannot be searched (None: it can, its
            source is empty): calls then answer that error, not "No relevant results".
        last_ingest: Returns a value that changes when the tool named was ingested (None: each
            change of ``generation`` is one): a reload says "re-ingested" only then.
    """

    def __init__(
        self,
        build: Callable[[], _DocumentTool],
        *,
        generation: Callable[[], object] | None = None,
        unserved: Callable[[_DocumentTool], str | None] | None = None,
        last_ingest: Callable[[str], object] | None = None,
    ) -> None:
        self._build = build
        self._unserved = unserved or (lambda tool: None)
        self._generation = generation or (lambda: None)
        self._last_ingest = last_ingest or (lambda name: self._generation())
        self._seen = self._generation()
        self._tool = build()
        self._lock = threading.Lock()
        self.name = self._tool.name
        self._ingested = self._last_ingest(self.name)
        self.reloads = 0
        """How many times the tool was rebuilt after ``ingest.json`` changed."""

    @property
    def description(self) -> str:
        """The served tool's description: after an ingest of another SOURCE, the new one's.

        The store is checked first (as before a call), so ``tools/list`` before any call
        already says the source the last ingest moved the tool to.
        """
        return self._fresh().config.description

    @property
    def tool(self) -> _DocumentTool:
        """The tool currently served."""
        return self._tool

    def search(self, query: str, top_k: int | None) -> tuple[str, dict[str, Any]]:
        """The tool's text for ``query`` and ``{tool, query, results}`` (``search --json``).

        The text is the tool's own (``search`` prints it), also when nothing is found (``No
        results above similarity threshold ...`` under ``min_similarity_score``).

        Raises:
            ValueError: When ``query`` is empty or has no letter or digit (the tool's message).
            RuntimeError: ``Search failed: ...`` when the store fails, ``Failed to generate
                query embedding: ...`` when the model does; while the configured database is
                unreachable and the in-memory fallback holds nothing.
        """
        # imported on use: the other commands' start-up does not pay for the formatting
        from langchain_holodeck.cli._format import result_record

        tool = self._fresh()
        if fell_back_empty(tool):
            msg = (
                f"{tool.fallback_reason}; serve fell back to an empty in-memory store, so "
                "there is nothing to search until it is back (each call tries it again)."
            )
            raise RuntimeError(msg)
        reason = None if tool.document_count else self._unserved(tool)
        if reason is not None:
            raise RuntimeError(reason)
        documents = tool.retrieve_sync(query, k=top_k)
        text = tool.format_documents(query, documents)
        hybrid = is_hybrid(tool)
        records = [result_record(i, doc, hybrid=hybrid) for i, doc in enumerate(documents, 1)]
        return text, {"tool": self.name, "query": query, "results": records}

    def _fresh(self) -> _DocumentTool:
        """The served tool, rebuilt first when the store was re-ingested since it was built.

        Also while it fell back to an empty in-memory store (the database was down when it
        was built): each call tries the database again, and serves it once it is back.
        """
        if self._generation() == self._seen and not fell_back_empty(self._tool):
            return self._tool
        with self._lock:
            current = self._generation()
            reingested = current != self._seen
            if not reingested and not fell_back_empty(self._tool):
                return self._tool  # another call rebuilt it meanwhile
            self._seen = current
            try:
                tool = self._build()
            except Exception as error:  # keep serving what was loaded
                logger.warning(
                    "%s: reload failed (%s); serving the previous data.",
                    self.name,
                    str(error).splitlines()[0].rstrip(".") if str(error) else type(error).__name__,
                )
                return self._tool
            if tool.name != self.name:  # the last ingest built another tool
                logger.warning(
                    "%s: the last ingest built another tool, %r; still serving %s as it was "
                    "loaded (restart serve to serve %r).",
                    self.name,
                    tool.name,
                    self.name,
                    tool.name,
                )
                return self._tool
            self._tool = tool
            ingested, self._ingested = self._ingested, self._last_ingest(self.name)
            if reingested:
                self.reloads += 1
                if ingested != self._ingested:  # not after another tool's ingest
                    logger.warning("note: %s: re-ingested; reloaded from the store.", self.name)
            elif not fell_back_empty(tool):
                logger.warning("note: %s: %s is back; serving it.", self.name, tool.backend)
        return self._tool


def fell_back_empty(tool: _DocumentTool) -> bool:
    """Whether ``tool``'s database was down when it was opened and its fallback holds nothing.

    ``serve`` never writes, so such a store stays empty: every answer would be "No relevant
    results", which a model reads as "the documents do not say".
    """
    return tool.fallback_reason is not None and not tool.document_count


def served_tools(agent_yaml: Path | None, store: Path, *, quiet: bool) -> list[ServedTool]:
    """The tools of ``agent_yaml`` (or of the last ingest into ``store``), opened read-only.

    Each is rebuilt when ``store``'s ``ingest.json`` changes; the embedding model objects are
    made once per (``embedding_model``, ``long_text``, ``embedding_timeout``) and shared by
    every build.
    """
    from langchain_holodeck.embeddings import resolve_embeddings

    manifest = store / MANIFEST_NAME
    models: dict[tuple[str | None, LongTextMode, float], Embeddings] = {}

    def generation() -> object:
        try:
            stat = manifest.stat()
        except OSError:
            return None
        return (stat.st_mtime_ns, stat.st_size, stat.st_ino)

    def last_ingest(name: str) -> str | None:
        try:
            return last_ingest_of(read_manifest(store), name)
        except (HolodeckError, OSError):  # none, or unreadable: nothing is known
            return None

    def builder(configured: Callable[[], tuple[Target, str]] | None) -> Callable[[], _DocumentTool]:
        """Builds the tool as ``configured`` now says (None: the tool of the last ingest).

        ``configured`` returns the target as agent.yaml now configures it and where that is
        (``agent.yaml tools[1]``). What decides the tool's store (its source, database,
        model...) changes only with an ingest of that tool; the rest follows the file.
        """
        opened = False
        tried: tuple[Target, str | None] | None = None  # the last target built, and its ingest

        def build() -> _DocumentTool:
            nonlocal opened, tried
            or_else = "name an agent.yaml: holodeck-rag serve AGENT_YAML"
            if opened and configured is not None and manifest.is_file():
                read_manifest(store)  # a reload: one it cannot read is no re-ingest (raises)
            if configured is None:
                where = str(manifest.absolute())
                target = target_from_manifest(read_manifest(store, or_else=or_else), store=store)
            else:  # at each reload: an ingest of another SOURCE moves the tool there
                fixed, where = configured()
                target = as_ingested(fixed, store)
                ingest = last_ingest(target.config.name)
                if tried is not None and tried[1] == ingest:  # not ingested since: its store
                    target = replace(tried[0], config=served_config(tried[0].config, target.config))
                tried = (target, ingest)
            config = target.config
            setting = (config.embedding_model, config.long_text, config.embedding_timeout)
            if setting not in models:
                try:
                    models[setting] = resolve_embeddings(
                        setting[0], long_text=setting[1], timeout=setting[2]
                    )
                except Exception as error:  # a missing package, an unknown model id, ...
                    first = str(error).strip().splitlines()[0] if str(error).strip() else ""
                    msg = (
                        f"tool {config.name} is not served: {where}.embedding_model "
                        f"{setting[0]!r} cannot be loaded ({first or type(error).__name__}); "
                        "fix it and ingest: serve opens it again after the next ingest."
                    )
                    raise ConfigError(msg) from error
            tool = build_tool(target, store, embeddings=models[setting])
            tool.open_sync()  # read-only: the source is not walked, nothing is synced
            if not quiet:
                print(f"{tool.name}: {tool.document_count} chunks ready", file=sys.stderr)
            warn_if_moved(target, store, tool)
            if not tool.document_count and tool.fallback_reason is not None:
                logger.warning(
                    "%s: serve fell back to an empty in-memory store; calls answer an error "
                    "until the database is back (each call tries it again).",
                    tool.name,
                )
            elif not tool.document_count and not ingested_here(tool):  # an emptied source: no
                logger.warning(
                    "%s: its store holds no chunk; serve opens the store as the last ingest "
                    "left it: run %s first.",
                    tool.name,
                    ingest_command(tool),
                )
            opened = True
            return tool

        return build

    def ingested_here(tool: _DocumentTool) -> bool:  # without AGENT_YAML: the last ingest's
        return agent_yaml is None or ingested_before(store, tool) or unreadable()

    def unreadable() -> bool:  # a damaged manifest tells nothing (its reload says why)
        try:
            read_manifest(store)
        except HolodeckError:
            return manifest.is_file()
        return False

    def ingest_command(tool: _DocumentTool) -> str:  # absolute: serve may run anywhere
        config = Path(agent_yaml or "agent.yaml").absolute()
        return (
            f"holodeck-rag --store {store.absolute()} ingest --config {config} --tool {tool.name}"
        )

    def unserved(tool: _DocumentTool) -> str | None:  # an emptied source is no error
        if ingested_here(tool):
            return None
        return (
            f"{store.absolute()} holds no chunk of {tool.name} (it was not ingested there?): "
            f"run {ingest_command(tool)}, or serve with the --store it was ingested into."
        )

    def opener(build: Callable[[], _DocumentTool]) -> Callable[[], ServedTool]:
        return lambda: ServedTool(
            build, generation=generation, unserved=unserved, last_ingest=last_ingest
        )

    def configured(first: Target, n: int) -> Callable[[], tuple[Target, str]]:
        last, gone = (first, n), False

        def now() -> tuple[Target, str]:  # agent.yaml as the last ingest found it
            nonlocal last, gone
            found = agent.target(first.config.name)
            if found is None and not gone:  # renamed or removed: said once, not each reload
                logger.warning(
                    "%s: no longer in %s; serving it as last configured (restart serve to "
                    "serve the file's tools).",
                    first.config.name,
                    agent.path,
                )
            gone = found is None  # back in the file: a later removal is said again
            last = found or last
            return last[0], f"{agent.path.absolute()} tools[{last[1]}]"

        return now

    if agent_yaml is None:
        return [ServedTool(builder(None), generation=generation, last_ingest=last_ingest)]
    from langchain_holodeck.cli._served_yaml import ServedAgentYaml, served_config

    agent = ServedAgentYaml(agent_yaml, generation, Path.cwd())
    served: list[ServedTool] = []
    for n, target in enumerate(agent.targets):
        opened = opener(builder(configured(target, n)))
        try:
            served.append(opened())
        except HolodeckError as error:  # one tool's problem: the others are served
            logger.warning("%s", str(error))
            name, description = target.config.name, target.config.description
            served.append(
                UnservableTool(
                    name,
                    description,
                    error,
                    retry=opened,
                    generation=generation,
                    last_ingest=last_ingest,
                )
            )
    unservable = [tool for tool in served if isinstance(tool, UnservableTool)]
    if len(unservable) == len(served):
        raise unservable[0].error  # nothing to serve
    return served


class UnservableTool(ServedTool):
    """A tool of AGENT_YAML that could not be opened: each call answers ``error`` in one line.

    ``serve`` starts with the others. After an ingest into the store (``ingest.json``
    changed: the user did what the error said, e.g. deleted a damaged store and ingested
    again) the next call or ``tools/list`` opens it again, and serves it once it opens.

    Key init args:
        retry: Opens the tool (raises ``HolodeckError`` while it still cannot be).
        generation: Returns a value that changes when the store was re-ingested.
        last_ingest: Returns a value that changes when the tool named was ingested (None:
            each change of ``generation`` is one).
    """

    def __init__(
        self,
        name: str,
        description: str,
        error: HolodeckError,
        *,
        retry: Callable[[], ServedTool] | None = None,
        generation: Callable[[], object] | None = None,
        last_ingest: Callable[[str], object] | None = None,
    ) -> None:
        self.name, self._description, self.error = name, description, error
        self.reloads = 0
        self._retry = retry
        self._generation = generation or (lambda: None)
        self._last_ingest = last_ingest or (lambda name: self._generation())
        self._seen = self._generation()
        self._ingested = self._last_ingest(name)
        self._lock = threading.Lock()
        self._opened: ServedTool | None = None

    @property
    def description(self) -> str:
        """The description configured for the tool (the opened tool's, once it opens)."""
        opened = self._reopened()
        return self._description if opened is None else opened.description

    @property
    def tool(self) -> _DocumentTool:
        """The tool once it opened; until then raises the error: there is no tool."""
        opened = self._reopened()
        if opened is None:
            raise self.error
        return opened.tool

    def search(self, query: str, top_k: int | None) -> tuple[str, dict[str, Any]]:
        """The opened tool's search; until it opens, ``RuntimeError`` with the tool's error."""
        opened = self._reopened()
        if opened is None:
            raise RuntimeError(str(self.error)) from self.error
        return opened.search(query, top_k)

    def _reopened(self) -> ServedTool | None:
        """The tool, opened again when the store was re-ingested since the last attempt."""
        if self._opened is not None or self._retry is None or self._generation() == self._seen:
            return self._opened
        with self._lock:
            current = self._generation()
            if self._opened is not None or current == self._seen:
                return self._opened  # another call tried meanwhile
            self._seen = current
            try:
                self._opened = self._retry()
            except HolodeckError as error:
                if str(error) != str(self.error):
                    logger.warning("%s", str(error))
                self.error = error
                return None
            self.reloads += 1
            ingested, self._ingested = self._ingested, self._last_ingest(self.name)
            logger.warning(
                "note: %s: %sit opens now and is served.",
                self.name,
                "re-ingested; " if ingested != self._ingested else "",
            )
        return self._opened
