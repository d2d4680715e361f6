"""``holodeck-rag``: ingest a folder, search it, list an agent's tools.

```
holodeck-rag ingest docs/                 # the default hybrid tool, saved in .holodeck/store/
holodeck-rag search "revoke a token"      # searches what the last ingest built
holodeck-rag tools --config agent.yaml    # the tools an agent.yaml defines, and their data
holodeck-rag chat agent.yaml              # one answer per line, tools (and model) kept warm
holodeck-rag test agent.yaml              # the agent.yaml's retrieval cases: hit@k and MRR
holodeck-rag serve agent.yaml             # the tools as an MCP server (stdio or --transport http)
```

``ingest`` writes ``<store>/ingest.json`` (tool type and name, source, config file, embedding
model and ``long_text``), so ``search`` rebuilds the same tool without being told again.
Errors the user can fix (``HolodeckError``, a missing source) print one ``error: ...`` line on
stderr and exit 1.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import functools
import gc
import json
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_holodeck._embedding_settings import (
    DEFAULT_LONG_TEXT,
    LONG_TEXT_MODES,
    UNSET_LONG_TEXTS,
    long_text_without_windows,
    openai_model,
)
from langchain_holodeck._redact import scrub
from langchain_holodeck._version import __version__
from langchain_holodeck.cli._drift import note_sync as _note_sync
from langchain_holodeck.cli._drift import sync_known as _sync_known
from langchain_holodeck.cli._drift import warn_if_replacing as _warn_if_replacing
from langchain_holodeck.cli._drift import with_ways as _with_ways
from langchain_holodeck.cli._interrupt import command_interrupted, interrupt_message, interrupt_says
from langchain_holodeck.cli._output import (
    escape_what_stdout_cannot_hold,
    flush_stdout,
    print_result,
    silence_stdout,
    stdout_holds_any_text,
)
from langchain_holodeck.cli._targets import (
    DEFAULT_STORE,
    as_ingested,
    warn_if_the_project_moves,
)
from langchain_holodeck.cli._targets import Target as _Target
from langchain_holodeck.cli._targets import agent_yaml_path as _agent_yaml_path
from langchain_holodeck.cli._targets import build_tool as _build_tool
from langchain_holodeck.cli._targets import config_target as _config_target
from langchain_holodeck.cli._targets import config_tool_target as _config_tool_target
from langchain_holodeck.cli._targets import default_target as _default_target
from langchain_holodeck.cli._targets import read_manifest as _read_manifest
from langchain_holodeck.cli._targets import recorded_long_text as _recorded_long_text
from langchain_holodeck.cli._targets import remembered_settings as _remembered_settings
from langchain_holodeck.cli._targets import sync_source as _sync_source
from langchain_holodeck.cli._targets import target_from_manifest as _target_from_manifest
from langchain_holodeck.cli._targets import target_model_id as _target_model_id
from langchain_holodeck.cli._targets import tool_store_dir as _tool_store_dir
from langchain_holodeck.cli._targets import write_manifest as _write_manifest
from langchain_holodeck.cli.chat import (
    add_chat_parser,
    is_hybrid,
    one_blas_thread,
    positive_int,
    search_text,
)
from langchain_holodeck.cli.regression import add_test_parser
from langchain_holodeck.cli.serve import add_serve_parser
from langchain_holodeck.errors import ConfigError, EmbeddingModelMismatchError, HolodeckError
from langchain_holodeck.fusion import DEFAULT_FUSION, FUSION_NAMES

if TYPE_CHECKING:
    from langchain_holodeck.config.models import (
        HierarchicalDocumentToolConfig,
        VectorStoreToolConfig,
    )
    from langchain_holodeck.tools.document import _DocumentTool

    AnyToolConfig = VectorStoreToolConfig | HierarchicalDocumentToolConfig

logger = logging.getLogger(__name__)


_DESCRIPTION = "Hybrid (dense + BM25 + exact section) retrieval over your own documents."
_INGEST_HELP = f"""\
Without --config, SOURCE is indexed by the default tool: a hierarchical_document tool named
'default' (structure-aware splitting; dense all-MiniLM-L6-v2 embeddings, local and offline;
BM25 keywords; exact section lookup; fused by {FUSION_NAMES[DEFAULT_FUSION]}; 5 results
unless `search --top-k`). Its vectors and keyword index are saved under STORE/default/ so that
`search` works in a later run, no server needed.
A project .holodeck/config.yaml with a `vectorstore:` section (e.g. Redis) is honoured.
--embedding-model and --long-text are remembered in STORE/ingest.json: `search`, `chat`,
`serve` and `tools` use them without repeating the flags, and so does a later `ingest` of the
same SOURCE given neither flag. Given flags replace both (an unset one is its default); a
change of model or mode asks for --force-ingest (all is re-embedded).

With --config, the tool named --tool (default: the first tool of the file) is ingested into
its configured database (Redis: falls back to memory with a warning when unreachable, or
fails with `fallback_to_memory: false`; the in-memory store is saved under
STORE/<tool name>/). SOURCE, when given, replaces the tool's configured source (resolved
against the working directory); otherwise the configured source is used (resolved against the
agent.yaml's directory).

Re-running is cheap: files whose mtime and size did not change are neither read nor
embedded. Files deleted from SOURCE have their chunks removed. Exit status: 0 on success, 1
on an error or when some chunks failed to sync (listed as warnings).

One STORE serves the last ingest: ingesting another SOURCE into it (same tool) keeps the
earlier corpus's chunks, in their own namespace, nothing deleted, but `search`, `chat`,
`serve` and `tools` then use the new one, and a warning says so. Ingesting the earlier
SOURCE again switches back without re-embedding. To search both, ingest their common parent
folder, or give each its own --store."""
_SEARCH_HELP = """\
Searches the tool the last `ingest` into STORE built (recorded in STORE/ingest.json), or the
--config/--tool given. Before searching, the source is re-checked: unchanged files cost a
stat each; files changed since the ingest are synced first (a note says so). What the ingest
warned about while walking the source (unsupported files, a dangling link) is not warned
about again (-v lists it).

Output: the tool's own format (`Found N result(s):`, then `[rank] Score: ... | Source: ...`
and the text). --explain adds, under each header, the per-modality evidence:
`explain: fused F | semantic #R S | keyword #R S | exact #R` (`-` when a modality did not
return the chunk; keyword scores are raw BM25; `rerank S` when a reranker ran). Where the
store fused dense + keyword itself (search strategy native), `engine #R S | semantic S`:
the engine's rank and fused score, and the cosine. A dense-only tool (type vectorstore) has
one leg: `explain: semantic #R S`, S the score its header shows.

--json prints a JSON list, one object per result, with always these keys (null when
unknown): rank, id, score (the displayed score), source_path, section_id, heading,
parent_chain (list), text, fused_score, semantic_score, semantic_rank, keyword_score,
keyword_rank, exact_match (bool), exact_rank, native_rank, native_score (the engine's own
rank and fused score where it fused, else null), relevance_score."""
_TOOLS_HELP = """\
Lists each tool of the agent.yaml: name, type, source, and where its data lives (vectors:
in-memory store directory or Redis URL with the password masked and index name; keywords:
in-memory BM25, Redis full-text or OpenSearch). Nothing is connected to. Without --config,
describes the tool the last `ingest` into STORE built."""

_PURGE_HELP = """\
Versions before corpus identity stored chunks under the tool's name as namespace. They are no
longer searched (initialize warns about them). This deletes exactly those chunks from the
tool's store (the tool the last `ingest` into STORE built, or --config/--tool); the tool's own
corpus and every other namespace are untouched. To keep using them instead, set
`corpus_id: <tool name>` in the tool's config.

A chunk does not say which version wrote it: chunks under the tool's name may also be the live
corpus of another project on the same store that pins `corpus_id: <tool name>`. So nothing is
deleted without --yes, your word that no project on this store pins that corpus_id (a tool of
--config that pins it is refused even with --yes)."""


# -- entry point ----------------------------------------------------------------------------
def main(argv: Sequence[str] | None = None) -> int:
    """Run ``holodeck-rag`` with ``argv`` (default ``sys.argv[1:]``); return the exit status.

    Called without ``argv``, as the console script calls it, the process ends when this
    returns: it then skips the interpreter's last garbage collections (``_quick_exit``).
    """
    if argv is None:
        _quick_exit()
    escape_what_stdout_cannot_hold()  # cp1252, latin-1: an escape, not UnicodeEncodeError
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the local model never downloads
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # no "Loading weights" bar
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # --help, or a usage error argparse already printed
        return exit_.code if isinstance(exit_.code, int) else 1
    with (
        _exit_on_interrupt(),
        interrupt_says(command_interrupted(args.command)),
        _cli_logging(verbose=args.verbose, quiet=args.quiet),
        one_blas_thread(),
    ):
        try:
            code = int(args.run(args))
            flush_stdout()  # the reader gone (`| head`) ends the output, not the exit status
            return code
        except BrokenPipeError:  # `holodeck-rag search ... | head`: the reader has had enough
            silence_stdout()  # in a command that prints before it decides (search): exit 0
            return 0
        except (HolodeckError, OSError) as error:
            logger.debug("%s", type(error).__name__, exc_info=True)
            print(f"error: {_one_line(error)}", file=sys.stderr)
            return 1
        except ImportError as error:
            if "pip install" not in str(error):
                raise
            print(f"error: {_one_line(error)}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:  # where the signal thread is not available
            if interrupt_message():
                print(interrupt_message(), file=sys.stderr)
            return 130


@functools.cache
def _quick_exit() -> None:
    """Skip the interpreter's last garbage collections at exit (``gc.freeze``, an exit handler).

    Python's shutdown collects the objects of every imported module (langchain-core's and
    langsmith's pydantic models, onnxruntime's session): 0.2-0.4 s after an ingest or a search
    has printed its result, 0.07 s frozen. The operating system frees them instead. Exit
    handlers registered later (telemetry exporters) still run first, and nothing of ours needs
    a finalizer at exit: what a command writes is written before ``main`` returns.
    """
    atexit.register(gc.freeze)


@contextmanager
def _exit_on_interrupt() -> Iterator[None]:
    """Ctrl-C prints ``interrupt_message()`` and exits 130 at once, even in a long native call.

    SIGINT is blocked in every thread and taken by one waiting thread, so it does not wait for
    the main thread to leave onnxruntime or a socket, nor for worker threads to finish.
    Whatever was committed stays: the embedding cache is written after every model call, the
    store in batches, and each file's record last (the next run redoes unfinished files and
    embeds only what the cache lacks).
    """
    if (
        not hasattr(signal, "pthread_sigmask")
        or threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield
        return
    done = threading.Event()

    def wait() -> None:
        signal.sigwait({signal.SIGINT})
        if done.is_set():
            return
        message = interrupt_message()
        with contextlib.suppress(OSError, ValueError):
            tty = sys.stderr.isatty()
            if message or tty:  # on a terminal, at least end the line the ^C is on
                sys.stderr.write(("\n" if tty else "") + (f"{message}\n" if message else ""))
            sys.stderr.flush()
        os._exit(130)

    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    waiter = threading.Thread(target=wait, name="holodeck-rag-sigint", daemon=True)
    waiter.start()
    try:
        yield
    finally:
        done.set()
        if waiter.is_alive() and waiter.ident is not None:
            with contextlib.suppress(ProcessLookupError, OSError):
                signal.pthread_kill(waiter.ident, signal.SIGINT)  # wakes the waiter, quietly
        waiter.join()
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def build_parser() -> argparse.ArgumentParser:
    """The ``holodeck-rag`` argument parser (``-v``/``-q``/``--store`` before or after the verb)."""
    parser = argparse.ArgumentParser(
        prog="holodeck-rag", description=_DESCRIPTION, parents=[_common_options()]
    )
    parser.set_defaults(verbose=0, quiet=False, store=DEFAULT_STORE)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    # Each verb gets its own copy of the options, defaulting to SUPPRESS, so that an option
    # given before the verb is not reset by the verb's parser (argparse shares parent actions).
    common = _common_options()
    verbs = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    fmt = argparse.RawDescriptionHelpFormatter

    ingest = verbs.add_parser(
        "ingest",
        parents=[common],
        help="load, split, embed and sync a folder (idempotent)",
        description=_INGEST_HELP,
        formatter_class=fmt,
    )
    ingest.add_argument(
        "source",
        nargs="?",
        metavar="SOURCE",
        help="file or directory to index (required without --config)",
    )
    _config_options(ingest)
    ingest.add_argument(
        "--force-ingest",
        action="store_true",
        help="re-read, re-embed and rewrite every file, even unchanged ones",
    )
    ingest.add_argument(
        "--embedding-model",
        metavar="NAME",
        help="default tool only: 'sentence-transformers/<name>' (must be in the local "
        "Hugging Face cache) or an OpenAI model name; default: all-MiniLM-L6-v2",
    )
    ingest.add_argument(
        "--long-text",
        choices=LONG_TEXT_MODES,
        metavar="MODE",
        help="default tool only: fit (default), auto, best, mean or first; 'first' embeds a "
        "chunk as its first 256 word pieces, no windows: 19-26%% less ingest CPU on a docs "
        "folder, for nDCG@10 -0.011 on SciFact (docs/embeddings.md)",
    )
    ingest.set_defaults(run=_run_ingest)

    search = verbs.add_parser(
        "search",
        parents=[common],
        help="hybrid search of what was ingested",
        description=_SEARCH_HELP,
        formatter_class=fmt,
    )
    search.add_argument("query", metavar="QUERY", help="what to look for")
    search.add_argument(
        "-k",
        "--top-k",
        type=_top_k,
        metavar="N",
        help="number of results, 1-100 (default: the tool's top_k)",
    )
    shown = search.add_mutually_exclusive_group()
    shown.add_argument("--json", action="store_true", help="print a JSON list (keys above)")
    shown.add_argument("--explain", action="store_true", help="show per-modality ranks and scores")
    search.add_argument(
        "--max-chars",
        type=positive_int,
        metavar="N",
        help="show at most N characters of each result's text (cut at a word, marked …)",
    )
    _config_options(search)
    search.set_defaults(run=_run_search)

    tools = verbs.add_parser(
        "tools",
        parents=[common],
        help="list the tools an agent.yaml defines and where their data lives",
        description=_TOOLS_HELP,
        formatter_class=fmt,
    )
    tools.add_argument(
        "--config", type=_agent_yaml_path, metavar="AGENT_YAML", help="the agent.yaml"
    )
    tools.set_defaults(run=_run_tools)
    add_chat_parser(verbs, common)
    add_test_parser(verbs, common)
    add_serve_parser(verbs, common)

    purge = verbs.add_parser(
        "purge-legacy",
        parents=[common],
        help="delete the chunks an older version stored under the tool's name",
        description=_PURGE_HELP,
        formatter_class=fmt,
    )
    _config_options(purge)
    purge.add_argument(
        "--yes",
        action="store_true",
        help="delete: no project on this store pins corpus_id: <tool name> (see above)",
    )
    purge.set_defaults(run=_run_purge_legacy)
    return parser


def _common_options() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=argparse.SUPPRESS,
        help="debug logs of this package (-vv: of every library)",
    )
    common.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        default=argparse.SUPPRESS,
        help="no progress bars, notes or warnings on stderr (errors still shown)",
    )
    common.add_argument(
        "--store",
        type=_store_dir,
        default=argparse.SUPPRESS,
        metavar="DIR",
        help=f"directory of the saved store and ingest.json (default: {DEFAULT_STORE}/)",
    )
    return common


def _store_dir(text: str) -> Path:
    """``--store DIR``; an empty one would write the store into the working directory."""
    if not text.strip():
        msg = f"must name a directory (default: {DEFAULT_STORE}), got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    path = Path(text)
    existing = next((p for p in (path, *path.parents) if p.exists()), path)
    if existing.exists() and not existing.is_dir():  # else ingest embeds all, then cannot save
        which = "which" if existing == path else f"but {str(existing)!r}"
        msg = f"must name a directory (created when missing), got {text!r}, {which} is a file"
        raise argparse.ArgumentTypeError(msg)
    return path


def _config_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config",
        type=_agent_yaml_path,
        metavar="AGENT_YAML",
        help="use a tool of this agent.yaml",
    )
    parser.add_argument(
        "--tool", metavar="NAME", help="the tool of --config to use (default: the first)"
    )


def _top_k(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= 100:
        msg = f"must be an integer from 1 to 100, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return value


def _search_target(args: argparse.Namespace) -> _Target:
    store: Path = args.store
    if args.config is None:
        if args.tool is not None:
            msg = f"--tool {args.tool!r} needs --config AGENT_YAML."
            raise ConfigError(msg)
        return _target_from_manifest(_read_manifest(store), store=store)
    target = _config_target(
        args.config, args.tool, source=None, base_dir=None, project_dir=Path.cwd()
    )
    return as_ingested(target, store)


# -- commands -------------------------------------------------------------------------------
def _run_ingest(args: argparse.Namespace) -> int:
    from langchain_holodeck.cli._format import IngestReport, ProgressBars, format_summary

    target = _ingest_target(args)
    warn_if_the_project_moves(args.store, target)
    tool = _build_tool(target, args.store)
    bars = ProgressBars(enabled=not args.quiet and sys.stderr.isatty(), stream=sys.stderr)
    start = time.perf_counter()
    with bars, _logs_above_bars(enabled=bars.enabled):
        try:
            result = _sync_source(
                tool, args.store, force_ingest=args.force_ingest, on_progress=bars
            )
        except EmbeddingModelMismatchError as error:
            target = _in_its_stored_mode(args, target, error)  # else raised again
            tool = _build_tool(target, args.store)
            result = _sync_source(tool, args.store, force_ingest=False, on_progress=bars)
    seconds = time.perf_counter() - start
    _warn_if_replacing(args.store, target, tool)  # once this source was read: not a typo
    _write_manifest(args.store, target, tool)
    report = IngestReport(
        tool=tool.name,
        source=_shown_source(target),
        where=_where(tool, target, args.store),
        result=result,
        seconds=seconds,
        search_strategy=tool.search_strategy,
        dense_only=not is_hybrid(tool),
    )
    print_result(format_summary(report))  # a reader gone: the failures below are still told
    for line in result.errors:
        logger.warning("%s", line)
    return 1 if result.failed else 0


def _in_its_stored_mode(
    args: argparse.Namespace, target: _Target, error: EmbeddingModelMismatchError
) -> _Target:
    """The default tool in the ``long_text`` mode its stored chunks were embedded in.

    ``ingest.json`` remembers the settings of the last source only: switching back to an
    earlier one ingested with ``--long-text first`` met the mismatch, and its advice
    (``--force-ingest``) would have re-embedded it in another mode. A plain ingest (no
    flag) keeps the mode the store holds when only the mode differs.

    Raises:
        EmbeddingModelMismatchError: ``error`` with the ways out (``with_ways``), when this
            is not that case.
    """
    flagged = args.embedding_model is not None or args.long_text is not None
    stored = error.stored_model
    if target.config_path is not None or flagged or args.force_ingest or stored is None:
        raise _with_ways(error, target, args.store)
    mode = _recorded_long_text(stored)
    kept = _default_target(
        target.config.source,
        embedding_model=target.embedding_model,
        long_text=mode,
        base_dir=target.base_dir,
        project_dir=target.project_dir,
    )
    if mode == target.long_text or _target_model_id(kept) != stored:
        raise _with_ways(error, target, args.store)
    logger.warning(
        "note: %s was embedded with --long-text %s; kept (pass --long-text to change it).",
        target.config.source,
        mode,
    )
    return kept


def _ingest_target(args: argparse.Namespace) -> _Target:
    if args.source is not None:
        _check_source_argument(args.source)
    if args.config is not None:
        for flag, key in (("--embedding-model", "embedding_model"), ("--long-text", "long_text")):
            if getattr(args, key) is not None:
                msg = f"{flag} applies to the default tool; with --config set the tool's "
                msg += f"{key} in the agent.yaml."
                raise ConfigError(msg)
        return _config_target(
            args.config, args.tool, source=args.source, base_dir=Path.cwd(), project_dir=Path.cwd()
        )
    if args.tool is not None:
        msg = f"--tool {args.tool!r} needs --config AGENT_YAML."
        raise ConfigError(msg)
    if args.source is None:
        msg = "ingest needs SOURCE (a file or directory), or --config AGENT_YAML."
        raise ConfigError(msg)
    _refuse_an_agent_yaml_as_source(Path(args.source).expanduser())
    embedding_model, long_text = args.embedding_model, args.long_text
    if embedding_model is None and long_text is None:  # a plain re-ingest keeps the last ones
        embedding_model, long_text = _remembered_settings(args.store, args.source, Path.cwd())
    long_text = long_text or DEFAULT_LONG_TEXT
    if long_text not in UNSET_LONG_TEXTS and openai_model(embedding_model) is not None:
        msg = f"--long-text {long_text_without_windows(str(embedding_model))}, got {long_text!r}."
        raise ConfigError(msg)
    if embedding_model is not None:
        _check_embedding_model(embedding_model)
    return _default_target(
        args.source,
        embedding_model=embedding_model,
        long_text=long_text,
        base_dir=Path.cwd(),
        project_dir=Path.cwd(),
    )


def _check_source_argument(source: str) -> None:
    """SOURCE as a tool's configured ``source`` is checked (a NUL, ``~user`` naming nobody).

    An empty SOURCE (``holodeck-rag ingest "$DOCS"`` with ``DOCS`` unset) is refused here, in
    one line: the tool's config refused it in a pydantic traceback.

    Raises:
        ConfigError: Naming SOURCE, its value and the fix.
    """
    from langchain_holodeck.config.models import check_path

    if not source:
        msg = (
            "SOURCE must not be empty, got '' (an unset shell variable, as in "
            'holodeck-rag ingest "$DOCS"?); pass a file or directory, e.g. holodeck-rag '
            "ingest docs."
        )
        raise ConfigError(msg)
    try:
        check_path(source)
    except ValueError as error:
        msg = f"SOURCE: {error}."
        raise ConfigError(msg) from error


def _refuse_an_agent_yaml_as_source(source: Path) -> None:
    """``ingest agent.yaml`` (as ``chat``/``serve``/``test`` take it) would index the file itself.

    Raises:
        ConfigError: When ``source`` is a YAML file with a ``tools:`` list (an agent.yaml).
    """
    if source.suffix.lower() not in {".yaml", ".yml"} or not source.is_file():
        return
    from langchain_holodeck.config.models import declared_tool_names

    tools = declared_tool_names(source)
    if tools:
        msg = (
            f"SOURCE {str(source)!r} is an agent.yaml (tools: {', '.join(tools)}); ingest its "
            f"tools with: holodeck-rag ingest --config {source} [--tool NAME]. To index the "
            "file itself as a document, ingest the folder holding it."
        )
        raise ConfigError(msg)


def _check_embedding_model(name: str) -> None:
    from langchain_holodeck.embeddings import resolve_embeddings

    try:
        resolve_embeddings(name)  # validates the name; local models load lazily
    except (ValueError, TypeError) as error:
        msg = f"--embedding-model: {error}"
        raise ConfigError(msg) from error


def _run_search(args: argparse.Namespace) -> int:
    from langchain_holodeck.tools.document import has_search_terms, undecoded_byte
    from langchain_holodeck.tools.hierarchical import HierarchicalDocumentTool

    query: str = args.query
    if not query.strip():
        msg = "QUERY is empty; pass the words to look for, e.g. holodeck-rag search 'token'."
        raise HolodeckError(msg)
    where = undecoded_byte(query)
    if where is not None:
        msg = f"QUERY is not UTF-8 text ({where}); set the terminal's encoding to UTF-8."
        raise HolodeckError(msg)
    if not has_search_terms(query):
        msg = (
            f"QUERY has no letters or digits ({query!r}); pass the words to look for, e.g. "
            "holodeck-rag search 'token'."
        )
        raise HolodeckError(msg)
    target = _search_target(args)
    tool = _build_tool(target, args.store, top_k=args.top_k)
    _note_sync(target, tool, args.store, _sync_known(target, tool, args.store))
    if not (args.json or args.explain):
        print(search_text(tool, query, max_chars=args.max_chars))
        return 0
    from langchain_holodeck.cli._format import (
        dense_explain_line,
        explain_line,
        result_record,
        terminal_documents,
        terminal_text,
    )
    from langchain_holodeck.tools.document import format_results
    from langchain_holodeck.tools.formatting import snippet

    documents = tool.retrieve_sync(query)
    hybrid = isinstance(tool, HierarchicalDocumentTool)
    if args.json:
        records = [
            result_record(rank, doc, hybrid=hybrid) for rank, doc in enumerate(documents, start=1)
        ]
        if args.max_chars is not None:
            for record in records:
                record["text"] = snippet(record["text"], args.max_chars)
        # \u escapes where stdout cannot hold the text: valid JSON, nothing lost
        print(json.dumps(records, indent=2, ensure_ascii=not stdout_holds_any_text()))
    elif documents:
        text = format_results(
            terminal_documents(documents),
            hybrid=hybrid,
            explain=explain_line if hybrid else dense_explain_line,
            max_chars=args.max_chars,
        )
        print(text)
    else:
        print(terminal_text(f"No relevant results found for query: {query}"))
    return 0


def _run_tools(args: argparse.Namespace) -> int:
    if args.config is not None:
        from langchain_holodeck.config.models import load_agent_config

        agent = load_agent_config(args.config)
        targets = [
            as_ingested(_config_tool_target(t, args.config, Path.cwd()), args.store)
            for t in agent.tools
        ]
    else:
        targets = [_target_from_manifest(_read_manifest(args.store), store=args.store)]
    blocks = [_describe(target, args.store) for target in targets]
    print("\n\n".join(blocks))
    return 0


def _run_purge_legacy(args: argparse.Namespace) -> int:
    target = _search_target(args)
    if args.config is not None:  # a tool pinning corpus_id to this name keeps those chunks live
        from langchain_holodeck.config.models import load_agent_config

        name = target.config.name
        pinned = [t.name for t in load_agent_config(args.config).tools if t.corpus_id == name]
        if pinned:
            msg = (
                f"purge-legacy: namespace {name!r} is the corpus_id of tool(s) "
                f"{', '.join(map(repr, pinned))} in {args.config}, so its chunks are live, not "
                f"legacy; nothing deleted. Remove corpus_id: {name} from them first to purge."
            )
            raise HolodeckError(msg)
    tool = _build_tool(target, args.store)
    if not args.yes:  # the chunks cannot tell an old version from another project's pin
        name = target.config.name
        found = tool.corpus.count_legacy_chunks()
        if not found:
            where = _where(tool, target, args.store)
            print(f"no legacy chunk of namespace {name!r} in {where}; nothing to delete")
            return 0
        msg = (
            f"purge-legacy: {found} chunk(s) under namespace {name!r} do not say who wrote "
            f"them: an older version, or another project on this store whose corpus_id is "
            f"{name!r} (its live chunks); nothing deleted. Run again with --yes if no project "
            f"pins corpus_id: {name}."
        )
        raise HolodeckError(msg)
    deleted = tool.purge_legacy_chunks()
    where = _where(tool, target, args.store)
    print(f"deleted {deleted} legacy chunk(s) of namespace {tool.name!r} from {where}")
    return 0


# -- descriptions ---------------------------------------------------------------------------
def _shown_source(target: _Target) -> str:
    from langchain_holodeck.config.models import spelt

    return spelt(target.config.source)  # a name not UTF-8 as \xNN: a strict stdout takes it


def _where(tool: _DocumentTool, target: _Target, store: Path) -> str:
    """Where the vectors went, as the summary line says it."""
    where = tool.describe_storage()
    return f"{where}; {tool.requested_backend} unavailable" if tool.fallback_reason else where


def _describe(target: _Target, store: Path) -> str:
    from langchain_holodeck.backends import get_backend, get_keyword_index_provider
    from langchain_holodeck.config.models import (
        HierarchicalDocumentToolConfig,
        resolve_database_config,
        spelt,
    )

    config = target.config
    database = resolve_database_config(config, project_dir=target.project_dir)
    store_dir = _tool_store_dir(store, config.name)
    backend = get_backend(database)
    vectors = backend.describe(store_dir=store_dir)
    search = "dense only"
    if not isinstance(config, HierarchicalDocumentToolConfig):
        keywords = "none (dense search only)"
    else:
        provider = get_keyword_index_provider(config.keyword_index)
        keywords = provider.describe(store_dir=store_dir, backend=backend)
        search = _search_line(config, backend)
    source = spelt(str(config.resolved_source(target.base_dir)))
    lines = [
        f"{config.name} ({config.type})",
        f"  description: {config.description}",
        f"  source:      {source}",
        f"  vectors:     {vectors}",
        f"  keywords:    {keywords}",
        f"  search:      {search}",
        f"  embeddings:  {config.embedding_model or 'sentence-transformers/all-MiniLM-L6-v2'}"
        + ("" if config.long_text == DEFAULT_LONG_TEXT else f" (long_text: {config.long_text})"),
    ]
    return "\n".join(lines)


def _search_line(config: Any, backend: Any) -> str:
    """The search strategy a hierarchical tool will use, from its backend's capabilities."""
    from langchain_holodeck.search_strategy import tool_search_strategy

    strategy = tool_search_strategy(config, backend)
    how = (
        "the vector store fuses dense + keyword"
        if strategy == "native"
        else f"{FUSION_NAMES[config.fusion]} in-process"
    )
    return f"{strategy} ({how}; search_strategy: {config.search_strategy})"


def _one_line(error: BaseException) -> str:
    """The error message on one line: its lines joined, each ending in punctuation."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    head = [line if line.endswith((".", ";", ":")) else f"{line};" for line in lines[:-1]]
    return scrub(" ".join([*head, *lines[-1:]])) or type(error).__name__


# -- logging --------------------------------------------------------------------------------
class _LineFormatter(logging.Formatter):
    """``warning: message`` (or, verbose, ``DEBUG logger: message``), always one line.

    Verbose, a record's traceback follows its line. Every line is scrubbed (URL passwords,
    bearer tokens): a traceback prints the original exception, whose text may repeat a key
    the server echoed, which the library's own messages had masked.
    """

    def __init__(self, *, verbose: bool) -> None:
        super().__init__()
        self.verbose = verbose

    def format(self, record: logging.LogRecord) -> str:
        message = " ".join(record.getMessage().split())
        if self.verbose:
            text = f"{record.levelname} {record.name}: {message}"
            if record.exc_info:
                text += "\n" + self.formatException(record.exc_info)
            return scrub(text)
        if message.startswith("note: "):
            return scrub(message)
        return scrub(f"{record.levelname.lower()}: {message}")


def _not_a_client_attempt(record: logging.LogRecord) -> bool:
    """A handler filter: leave out a keyword index's client library's own warnings.

    Such a library may log a WARNING per attempt of each request (four for one search while
    its server is down), before the search says once that its keyword leg failed. The
    loggers are the registered providers' ``client_loggers``; their errors still show.
    """
    if record.levelno >= logging.ERROR or record.name.startswith("langchain_holodeck"):
        return True
    from langchain_holodeck.backends import client_loggers  # registered by now, if it logged

    return record.name.split(".", 1)[0] not in client_loggers()


@contextmanager
def _cli_logging(*, verbose: int, quiet: bool) -> Iterator[None]:
    """Log to the current stderr for the duration of one ``main`` call, then restore."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_LineFormatter(verbose=verbose > 0))
    handler.setLevel(logging.ERROR if quiet else logging.DEBUG if verbose else logging.WARNING)
    if verbose < 2:  # -vv: every library's logs, these too
        handler.addFilter(_not_a_client_attempt)
    root = logging.getLogger()
    package = logging.getLogger("langchain_holodeck")
    saved = (root.level, package.level)
    root.setLevel(logging.DEBUG if verbose > 1 else logging.WARNING)
    package.setLevel(logging.DEBUG if verbose else logging.NOTSET)
    root.addHandler(handler)
    try:
        yield
    finally:
        root.removeHandler(handler)
        root.setLevel(saved[0])
        package.setLevel(saved[1])


@contextmanager
def _logs_above_bars(*, enabled: bool) -> Iterator[None]:
    """While progress bars draw, route log lines through tqdm so they do not tear the bars."""
    if not enabled:
        yield
        return
    from tqdm.contrib.logging import logging_redirect_tqdm

    with logging_redirect_tqdm():
        yield


if __name__ == "__main__":
    sys.exit(main())
