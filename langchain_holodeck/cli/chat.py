"""``holodeck-rag chat``: initialize the tools once, then answer line after line, model warm.

With a ``model:`` section in the agent.yaml, each line goes to a LangChain agent
(``create_agent`` + ``init_chat_model``) that calls the configured tools; its answer is printed
with the sources it used. Without one, each line is a search of every tool.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from langchain_holodeck._request_url import with_unanswered_url
from langchain_holodeck.cli._drift import sync_known
from langchain_holodeck.cli._interrupt import interrupt_says
from langchain_holodeck.cli._output import print_result
from langchain_holodeck.cli._targets import (
    agent_yaml_path,
    as_ingested,
    build_tool,
    config_tool_target,
    read_manifest,
    target_from_manifest,
)
from langchain_holodeck.errors import ConfigError, HolodeckError

if TYPE_CHECKING:
    from langchain_core.documents import Document
    from langchain_core.messages import BaseMessage
    from langchain_core.runnables import RunnableConfig
    from langchain_core.tools import BaseTool
    from pydantic import ValidationError

    from langchain_holodeck.config.models import AgentConfig, ChatModelConfig, ToolSelectionConfig
    from langchain_holodeck.tools.document import _DocumentTool

logger = logging.getLogger(__name__)

EXIT_WORDS = frozenset({"exit", "quit", ":q"})
"""Lines that end a chat session (as does end of input)."""
_CHAT_HELP = """\
Initializes every tool of AGENT_YAML once (or, without it, the tool the last `ingest` into
STORE built), then reads questions from standard input, one per line, until end of input or
`exit`. With a `model:` section in AGENT_YAML (provider, name, base_url, api_key: see the
configuration reference), each question goes to an agent that calls the tools and answers,
followed by the sources it used; without one, each line is searched in every tool and the
results are printed. Answers go to stdout; notes and errors to stderr. When input is piped,
each answer is printed under its question (`> question`), as a transcript. A failing
question prints `error: ...` (naming the server that did not answer) and the session goes on;
the exit status is then 1, else 0."""


def add_chat_parser(
    verbs: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    """Register ``chat`` on the ``holodeck-rag`` parser."""
    chat = verbs.add_parser(
        "chat",
        parents=[common],
        help="answer questions line after line with the tools (and model) initialized once",
        description=_CHAT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    chat.add_argument("agent_yaml", nargs="?", type=agent_yaml_path, metavar="AGENT_YAML")
    chat.add_argument(
        "--force-ingest", action="store_true", help="re-embed every file before the first line"
    )
    chat.add_argument(
        "--max-chars", type=positive_int, metavar="N", help="show at most N characters per result"
    )
    chat.set_defaults(run=run_chat)


@contextlib.contextmanager
def one_blas_thread() -> Iterator[None]:
    """Run with one BLAS thread: a query is one matrix-vector product, which threads only slow.

    On a busy 2-core machine OpenBLAS's threaded product over 10k x 384 vectors took 45 ms
    against 0.6 ms on one thread (``bench_chat.py --micro-only``); ingestion's heavy work
    runs in onnxruntime, not BLAS.
    """
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        yield


def positive_int(text: str) -> int:
    """Parse an integer >= 1 (an argparse ``type``)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        msg = f"must be a positive integer, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return value


# -- the tools of a session -------------------------------------------------------------------
_OR_AGENT_YAML = "name an agent.yaml: holodeck-rag chat AGENT_YAML"


def session_tools(
    agent: AgentConfig | None,
    agent_yaml: Path | None,
    store: Path,
    *,
    force_ingest: bool,
    quiet: bool,
) -> list[_DocumentTool]:
    """Build and initialize the tools of ``agent`` (or of the last ingest into ``store``)."""
    if agent is None or agent_yaml is None:
        targets = [target_from_manifest(read_manifest(store, or_else=_OR_AGENT_YAML), store=store)]
    else:
        targets = [
            as_ingested(config_tool_target(t, agent_yaml, Path.cwd()), store) for t in agent.tools
        ]
    tools = []
    for target in targets:
        tool = build_tool(target, store)
        result = sync_known(target, tool, store, force_ingest=force_ingest)
        if not quiet:
            print(
                f"{tool.name}: {tool.document_count} chunks ready ({result.added} added, "
                f"{result.updated} updated, {result.failed} failed)",
                file=sys.stderr,
            )
        tools.append(tool)
    return tools


def is_hybrid(tool: _DocumentTool) -> bool:
    """Whether ``tool`` shows fused scores and sections (a HierarchicalDocumentTool)."""
    from langchain_holodeck.tools.hierarchical import HierarchicalDocumentTool

    return isinstance(tool, HierarchicalDocumentTool)


def search_text(tool: _DocumentTool, query: str, *, max_chars: int | None) -> str:
    """The tool's text for ``query``, each result cut to ``max_chars`` when given.

    Made safe for a terminal (``terminal_documents``): escape sequences from documents are
    spelled out, and a file name holding a newline stays on its ``Source:`` line.
    """
    from langchain_holodeck.cli._format import terminal_documents, terminal_text
    from langchain_holodeck.tools.formatting import format_results

    documents = terminal_documents(tool.retrieve_sync(query))
    if max_chars is None or not documents:
        return terminal_text(tool.format_documents(query, documents))
    return format_results(documents, hybrid=is_hybrid(tool), max_chars=max_chars)


# -- answering ---------------------------------------------------------------------------------
Answer = Callable[[str], str]


def search_answerer(tools: list[_DocumentTool], *, max_chars: int | None) -> Answer:
    """Each line is a search of every tool (a header per tool when there are several)."""

    def answer(question: str) -> str:
        blocks = []
        for tool in tools:
            text = search_text(tool, question, max_chars=max_chars)
            blocks.append(f"## {tool.name}\n{text}" if len(tools) > 1 else text)
        return "\n\n".join(blocks)

    return answer


def source_tool(tool: _DocumentTool, *, max_chars: int | None) -> BaseTool:
    """``tool`` for an agent: the tool's text for the model, its Documents as the artifact.

    It answers as ``tool.as_tool()`` does: a bad argument, an invalid query (empty, no letter
    or digit) or a failed search is one line the model reads (``status="error"``).
    """
    from langchain_core.tools import StructuredTool

    from langchain_holodeck.tools.document import told_to_the_model
    from langchain_holodeck.tools.formatting import format_results

    base = tool.as_tool()
    hybrid = is_hybrid(tool)

    def run(query: str) -> tuple[str, list[Document]]:
        with told_to_the_model():  # as as_tool: a bad query or a failed search is one line
            documents = tool.retrieve_sync(query)
            if not documents:  # the threshold check asks the store too
                return tool.format_documents(query, documents), []
        return format_results(documents, hybrid=hybrid, max_chars=max_chars), documents

    from langchain_core.documents import Document

    # the agent reads run's hints: real types, not the strings of postponed annotations
    run.__annotations__ = {"query": str, "return": tuple[str, list[Document]]}

    return StructuredTool.from_function(
        func=run,
        name=base.name,
        description=base.description,
        args_schema=base.args_schema,
        response_format="content_and_artifact",
        handle_tool_error=base.handle_tool_error,
        handle_validation_error=base.handle_validation_error,
    )


_KEY_VARIABLES: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "azure_openai": ("AZURE_OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "cohere": ("COHERE_API_KEY", "CO_API_KEY"),
    "mistralai": ("MISTRAL_API_KEY",),
    "groq": ("GROQ_API_KEY",),
    "google_genai": ("GOOGLE_API_KEY",),
    "fireworks": ("FIREWORKS_API_KEY",),
    "together": ("TOGETHER_API_KEY",),
    "xai": ("XAI_API_KEY",),
    "deepseek": ("DEEPSEEK_API_KEY",),
}
"""The environment variables a provider's LangChain model reads its key from, when it has one."""


def missing_key(
    config: ChatModelConfig, *, display: str, environ: Mapping[str, str] | None = None
) -> str | None:
    """Why ``config`` has no API key (naming the variable and ``model.api_key``), or None.

    Only providers whose key variable is known are checked; ``api_key`` set in the file wins.
    """
    variables = _KEY_VARIABLES.get(config.provider)
    env = os.environ if environ is None else environ
    if config.api_key is not None or variables is None or any(env.get(v) for v in variables):
        return None
    return (
        f"{display}: model.api_key: not set, and {variables[0]} is not in the environment; "
        f"export {variables[0]}=... or set model.api_key: ${{YOUR_VARIABLE}} "
        f"(model.provider {config.provider!r})."
    )


def chat_model(config: ChatModelConfig, *, display: str = "agent.yaml") -> Any:
    """The chat model of ``config``, through LangChain's ``init_chat_model``.

    Raises:
        ImportError: When langchain or the provider's package is missing (with the install hint).
        ConfigError: When the provider's API key is neither in the file nor in the environment,
            or the provider refuses the settings (the message names ``display`` and the field).
    """
    try:
        from langchain.chat_models import init_chat_model
    except ImportError as error:
        msg = (
            f"chat with a model: section needs langchain ({error}): "
            'pip install "langchain-holodeck[agents]"'
        )
        raise ImportError(msg) from error
    # a timeout: without one a server that accepts and never answers hung the session
    options: dict[str, Any] = {"temperature": config.temperature, "timeout": config.timeout}
    if config.base_url is not None:
        options["base_url"] = config.base_url
    if config.api_key is not None:
        options["api_key"] = config.api_key.get_secret_value()
    no_key = missing_key(config, display=display)
    try:
        model = init_chat_model(config.name, model_provider=config.provider, **options)
    except ImportError as error:
        msg = f"model.provider {config.provider!r} needs its LangChain package: {error}"
        raise ImportError(
            msg + ' (pip install "langchain-holodeck[agents,openai]" for openai)'
        ) from error
    except ValueError as error:
        msg = no_key or (
            f"{display}: model: init_chat_model refused provider {config.provider!r}: {error}"
        )
        raise ConfigError(msg) from error
    except Exception as error:  # the provider's client refused (credentials, settings)
        text = " ".join(str(error).split())
        msg = no_key or (
            f"{display}: model: {config.provider} model {config.name!r} could not be created: "
            f"{type(error).__name__}: {text}"
        )
        raise ConfigError(msg) from error
    if no_key is not None:  # a client that only fails at the first question: fail now
        raise ConfigError(no_key)
    return model


def agent_support() -> tuple[Any, type[Exception]]:
    """``create_agent`` and LangGraph's ``GraphRecursionError``, or the install hint.

    Raises:
        ImportError: When langchain (the ``agents`` extra) is not installed; the message
            says ``pip install "langchain-holodeck[agents]"``.
    """
    try:
        from langchain.agents import create_agent
        from langgraph.errors import GraphRecursionError
    except ImportError as error:
        msg = (
            f"chat with a model: section needs langchain ({error}): "
            'pip install "langchain-holodeck[agents]"'
        )
        raise ImportError(msg) from error
    return create_agent, GraphRecursionError


def agent_answerer(
    config: ChatModelConfig,
    tools: list[_DocumentTool],
    *,
    llm: Any,
    instructions: str | None,
    max_chars: int | None,
    selection: ToolSelectionConfig | None = None,
) -> Answer:
    """Each line goes to a ``create_agent`` agent of ``llm`` over ``tools``; history is kept.

    With ``selection`` (the agent.yaml's ``tool_selection:``) each model call is offered the
    tools a ``HybridToolSelectorMiddleware`` picks for the question, as in ``create_agent``.
    Each model call is given up past ``model_call_deadline`` (``config.timeout`` for each of
    the client's tries, and its pauses, with the server's ``Retry-After`` ones), and its
    reply's lone surrogates are spelt U+FFFD (``ChatModelCalls``).
    """
    from langchain_core.messages import HumanMessage
    from pydantic import ValidationError

    from langchain_holodeck.cli._model_replies import ModelReplies, refusal, unreadable_answer
    from langchain_holodeck.middleware import build_tool_selector_middleware

    create_agent, recursion_error = agent_support()  # langchain is there: _model_calls needs it
    from langchain_holodeck.cli._model_calls import (
        ChatModelCalls,
        client_retries,
        watch_retry_after,
    )

    # innermost: each model call bounded in all (not each read), its reply's text cleaned;
    # the server's Retry-After pauses, which the client waits for, lengthen that bound
    watch_retry_after(llm)
    middleware = [
        history_limit(config.history_tokens),
        ChatModelCalls(config, retries=client_retries(llm)),
    ]
    if selection is not None:
        try:
            middleware.insert(0, build_tool_selector_middleware(selection))
        except HolodeckError:
            raise
        except ValueError as error:  # a section built in code, not loaded: one line, no trace
            msg = f"tool_selection: {error}"
            raise ConfigError(msg) from error
    agent = create_agent(
        llm,
        tools=[source_tool(t, max_chars=max_chars) for t in tools],
        system_prompt=instructions,
        middleware=middleware,
    )
    history: list[BaseMessage] = []
    replies = ModelReplies()
    run_config: RunnableConfig = {
        "recursion_limit": 2 * config.max_tool_calls + 1,
        "callbacks": [replies],
    }

    def answer(question: str) -> str:
        messages = [*history, HumanMessage(question)]
        replies.empty = False
        try:
            state = agent.invoke({"messages": messages}, config=run_config)  # type: ignore[call-overload]  # a plain dict for the agent state TypedDict
        except recursion_error as error:
            msg = f"the agent made more than {config.max_tool_calls} tool calls (max_tool_calls)"
            raise HolodeckError(msg) from error
        except ValidationError as error:  # the client could not even build the model's reply
            said = not_an_object_call(error)
            if said is None:
                raise
            return f"{said}\n\nSources: none (its tool call could not be read)"
        except Exception as error:
            said = unreadable_answer(error, config, empty=replies.empty)
            if said is None:
                raise
            raise HolodeckError(said) from error
        new = state["messages"][len(messages) :]
        history[:] = state["messages"]
        last = state["messages"][-1]
        text = last.text or refusal(last) or unreadable_call(last)
        sources = used_sources(new)
        if not sources:
            return f"{text}\n\nSources: none ({no_sources_reason(new)})"
        return f"{text}\n\nSources:\n" + "\n".join(f"  - {s}" for s in sources)

    return answer


def history_limit(tokens: int) -> Any:
    """The middleware that keeps a long conversation within ``tokens`` (estimated).

    Past them, each request sends the tool results but the 3 latest as ``[cleared]``; the
    history itself is kept whole.
    """
    from langchain.agents.middleware import ClearToolUsesEdit, ContextEditingMiddleware

    return ContextEditingMiddleware(edits=[ClearToolUsesEdit(trigger=tokens, keep=3)])


def unreadable_call(message: BaseMessage) -> str:
    """Why ``message`` (the agent's last) has no text: a tool call that is not JSON, else ``""``.

    ``create_agent`` stops at such a call (``invalid_tool_calls``), so the answer was empty.
    """
    from langchain_holodeck.tools.formatting import snippet

    calls = getattr(message, "invalid_tool_calls", None) or []
    if not calls:
        return ""
    args = snippet(str(calls[0].get("args") or ""), 60)
    return (
        f"(no answer: the model called {calls[0].get('name')} with arguments that are not "
        f"JSON: {args!r})"
    )


def not_an_object_call(error: ValidationError) -> str | None:
    """The line for a reply whose tool call's arguments are JSON but not an object, else None.

    langchain-openai parses such a reply (``[1, 2]``, ``"revoke"``) into an ``AIMessage``,
    which refuses it: pydantic's report, not an answer.
    """
    from langchain_holodeck.tools.formatting import snippet

    for problem in error.errors():
        where = problem.get("loc", ())
        if len(where) == 3 and where[0] == "tool_calls" and where[2] == "args":
            args = snippet(json.dumps(problem.get("input"), default=str), 60)
            return (
                "(no answer: the model called a tool with arguments that are not a JSON "
                f"object: {args!r})"
            )
    return None


def no_sources_reason(messages: list[BaseMessage]) -> str:
    """Why ``messages`` (one question's) name no source: no tool call, or calls found nothing."""
    from langchain_core.messages import ToolMessage

    answers = [m for m in messages if isinstance(m, ToolMessage)]
    if not answers and any(getattr(m, "invalid_tool_calls", None) for m in messages):
        return "its tool call could not be read"
    if not answers:
        return "the model called no tool"
    if all(m.status == "error" for m in answers):
        return "its tool calls failed"
    return "its tool calls found nothing"


def used_sources(messages: list[BaseMessage]) -> list[str]:
    """``tool: file (section; section)`` per file the tool calls in ``messages`` returned.

    Files in the order the results first named them; a file's sections likewise.
    """
    from langchain_core.messages import ToolMessage

    from langchain_holodeck.tools.formatting import section_breadcrumb

    files: dict[tuple[str, str], list[str]] = {}
    for message in messages:
        if not isinstance(message, ToolMessage) or not isinstance(message.artifact, list):
            continue
        for document in message.artifact:
            meta = document.metadata
            where = str(meta.get("source_path", meta.get("source", "unknown")))
            sections = files.setdefault((str(message.name), where), [])
            crumb = section_breadcrumb(document)
            if crumb and crumb not in sections:
                sections.append(crumb)
    return [
        f"{tool}: {where}" + (f" ({'; '.join(sections)})" if sections else "")
        for (tool, where), sections in files.items()
    ]


# -- the command -------------------------------------------------------------------------------
def run_chat(args: argparse.Namespace) -> int:
    """``holodeck-rag chat``: initialize once, then one answer per input line."""
    from langchain_holodeck.config.models import chat_model_config, load_agent_config
    from langchain_holodeck.tools.document import undecoded_byte

    agent = None if args.agent_yaml is None else load_agent_config(args.agent_yaml)
    model = None if agent is None else chat_model_config(agent, display=str(args.agent_yaml))
    llm = None
    if model is not None:  # before the tools are initialized: a hint or a missing key at once
        agent_support()
        llm = chat_model(model, display=str(args.agent_yaml))
    tools = session_tools(
        agent, args.agent_yaml, args.store, force_ingest=args.force_ingest, quiet=args.quiet
    )
    if model is None:
        answer = search_answerer(tools, max_chars=args.max_chars)
    else:
        instructions = agent.instructions if agent and isinstance(agent.instructions, str) else None
        answer = agent_answerer(
            model,
            tools,
            llm=llm,
            instructions=instructions,
            max_chars=args.max_chars,
            selection=agent.tool_selection if agent else None,
        )
    interactive = sys.stdin.isatty()
    failed = False
    with interrupt_says(""):  # from "ready" on, Ctrl-C ends the session quietly (exit 130)
        if not args.quiet:
            mode = f"agent {model.provider}:{model.name}" if model else "search"
            print(f"ready ({mode}); one question per line, `exit` to stop.", file=sys.stderr)
        for question in _lines(sys.stdin, prompt="> " if interactive else None):
            if question in EXIT_WORDS:
                break
            where = undecoded_byte(question)
            if where is not None:  # one bad line ends nothing
                print(f"error: this line is not UTF-8 text ({where}); skipped.", file=sys.stderr)
                failed = True
                continue
            # a transcript: each answer under the question it answers
            if not interactive and not print_result(f"> {question}"):
                break  # the reader has gone (`| head`): answer no more
            try:
                text = answer(question)
            except Exception as error:  # one failing question (model down...) ends nothing
                print(f"error: {question_error(error)}", file=sys.stderr)
                failed = True
                continue
            if not print_result(_terminal_text(text) + "\n"):
                break
    return 1 if failed else 0


def question_error(error: Exception) -> str:
    """The line of a question that failed: what a bad question says, or the error and its type.

    A model or embeddings server that did not answer is named by its URL (``Connection
    error.`` does not say which server it tried).
    """
    logger.debug("question failed", exc_info=True)
    line = " ".join(str(error).split())
    if not isinstance(error, ValueError | HolodeckError):  # these say what is wrong
        line = f"{type(error).__name__}: {line}"
    return with_unanswered_url(line, error)


def _lines(stream: TextIO, *, prompt: str | None) -> Iterator[str]:
    """Non-empty stripped lines; bytes that are not UTF-8 come as surrogates, not an error."""
    reconfigure = getattr(stream, "reconfigure", None)
    if reconfigure is not None and getattr(stream, "errors", None) == "strict":
        reconfigure(errors="surrogateescape")  # a strict locale raised at the first such byte
    while True:
        if prompt is not None:
            print(prompt, end="", file=sys.stderr, flush=True)
        line = stream.readline()
        if not line:
            return
        text = line.strip()
        if text:
            yield text


def _terminal_text(text: str) -> str:
    """``cli._format.terminal_text``, imported on use (it loads the tool formatting)."""
    from langchain_holodeck.cli._format import terminal_text

    return terminal_text(text)
