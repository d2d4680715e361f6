"""What a CLI run works on: a tool configuration and its directories, and the ingest manifest.

``build_tool`` turns a target into the tool every command (ingest, search, chat, test) uses;
``ingest.json`` (``write_manifest`` / ``read_manifest``) remembers the last ingest so ``search``
and ``chat`` rebuild the same tool.
"""

from __future__ import annotations

import argparse
import json
import logging
import threading
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args, get_origin, get_type_hints

from langchain_holodeck._defaults import DEFAULT_STORE_DIR
from langchain_holodeck._embedding_settings import DEFAULT_LONG_TEXT, LONG_TEXT_MODES, LongTextMode
from langchain_holodeck._persist import atomic_write_bytes, os_error_text, why_not_saved
from langchain_holodeck._source_walk import real_path
from langchain_holodeck.errors import (
    ConfigError,
    HolodeckError,
    NoSupportedFilesError,
    StoreNotSavedError,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from langchain_core.embeddings import Embeddings

    from langchain_holodeck.config.models import (
        HierarchicalDocumentToolConfig,
        VectorStoreToolConfig,
    )
    from langchain_holodeck.ingestion import IngestProgress
    from langchain_holodeck.sync import SyncResult
    from langchain_holodeck.tools.document import SaveErrors, _DocumentTool

    AnyToolConfig = VectorStoreToolConfig | HierarchicalDocumentToolConfig

logger = logging.getLogger(__name__)

DEFAULT_STORE = DEFAULT_STORE_DIR
"""Where ``ingest`` saves the in-memory store and ``ingest.json`` unless ``--store`` is given."""
DEFAULT_TOOL_NAME = "default"
"""Name (and sync namespace) of the tool ``ingest SOURCE`` builds without ``--config``."""
DEFAULT_TOP_K = 5
"""Results ``search`` prints for the default tool unless ``--top-k`` is given."""
MANIFEST_NAME = "ingest.json"
MANIFEST_FORMAT = 1


@dataclass(frozen=True)
class Manifest:
    """``<store>/ingest.json``: enough to rebuild the tool that was ingested."""

    tool: str
    type: str
    source: str
    """The source as given or configured; relative ones resolve against ``base_dir``."""
    base_dir: str
    project_dir: str
    """Working directory of the ingest: where ``.holodeck/config.yaml`` was looked up (and is,
    by every command on this store for the same agent.yaml: ``as_ingested``)."""
    config: str | None
    """Absolute path of the agent.yaml, or None for the default tool."""
    source_overridden: bool
    embedding_model: str | None
    """The ``embedding_model`` setting of the default tool (None: the local default)."""
    embedding_model_id: str | None
    backend: str
    store_dir: str
    ingested_at: str
    long_text: LongTextMode = DEFAULT_LONG_TEXT
    """The ``long_text`` setting of the default tool (absent from manifests written before
    it existed: read from ``embedding_model_id`` by ``read_manifest``)."""
    source_root: str | None = None
    """The source's root as the ingest resolved it (absolute, symlinks followed): the path its
    corpus namespace is made of. None in manifests written before it was recorded (then
    ``recorded_root`` resolves ``source`` against ``base_dir`` today)."""
    ingests: dict[str, str] = field(default_factory=dict)
    """Each tool ever ingested into the store, by name: when its last ingest ran (to the
    microsecond). The rest of the manifest is the last ingest's, of one tool; ``serve`` tells by
    this which tool an ingest was for (``last_ingest_of``). Empty in manifests written before."""
    format: int = MANIFEST_FORMAT


@dataclass(frozen=True, kw_only=True)
class Target:
    """A tool configuration and the directories it resolves against."""

    config: AnyToolConfig
    base_dir: Path
    project_dir: Path
    config_path: Path | None
    source_overridden: bool
    embedding_model: str | None = None
    long_text: LongTextMode = DEFAULT_LONG_TEXT


def agent_yaml_path(text: str) -> Path:
    """``AGENT_YAML`` (``--config``, or ``chat``/``serve``/``test``'s argument) as a path.

    An empty one (``"$AGENT"`` with the variable unset) was taken as ``.``, the working
    directory, and refused as "a directory".

    Raises:
        argparse.ArgumentTypeError: When ``text`` is empty or only spaces.
    """
    if not text.strip():
        msg = f"must name an agent.yaml, got {text!r} (an unset shell variable?)"
        raise argparse.ArgumentTypeError(msg)
    return Path(text)


def default_target(
    source: str,
    *,
    embedding_model: str | None,
    long_text: LongTextMode = DEFAULT_LONG_TEXT,
    base_dir: Path,
    project_dir: Path,
) -> Target:
    from langchain_holodeck.config.models import HierarchicalDocumentToolConfig

    config = HierarchicalDocumentToolConfig(
        type="hierarchical_document",
        name=DEFAULT_TOOL_NAME,
        source=source,
        embedding_model=embedding_model,
        long_text=long_text,
        top_k=DEFAULT_TOP_K,
    )
    return Target(
        config=config,
        base_dir=base_dir,
        project_dir=project_dir,
        config_path=None,
        source_overridden=False,
        embedding_model=embedding_model,
        long_text=long_text,
    )


def config_target(
    path: Path, tool: str | None, *, source: str | None, base_dir: Path | None, project_dir: Path
) -> Target:
    from langchain_holodeck.config.models import load_agent_config

    agent = load_agent_config(path)
    names = [t.name for t in agent.tools]
    if tool is None:
        chosen = agent.tools[0]
        if len(names) > 1:
            logger.warning(
                "%s defines %d tools (%s); using the first, %r. Pick one with --tool.",
                path,
                len(names),
                ", ".join(names),
                chosen.name,
            )
    else:
        found = [t for t in agent.tools if t.name == tool]
        if not found:
            msg = f"{path}: --tool {tool!r} is not a tool of this file; its tools: " + ", ".join(
                names
            )
            raise ConfigError(msg)
        chosen = found[0]
    if source is None:
        return config_tool_target(chosen, path, project_dir)
    return Target(
        config=chosen.with_source(source),
        base_dir=base_dir or Path.cwd(),
        project_dir=project_dir,
        config_path=path,
        source_overridden=True,
    )


def config_tool_target(config: AnyToolConfig, path: Path, project_dir: Path) -> Target:
    """A tool of an agent.yaml as configured: its source resolves against the file's folder."""
    return Target(
        config=config,
        base_dir=config.base_dir or path.parent.absolute(),
        project_dir=project_dir,
        config_path=path,
        source_overridden=False,
    )


def as_ingested(target: Target, store: Path) -> Target:
    """``target``, or what the last ingest into ``store`` made of it.

    ``ingest --config F --tool T SOURCE`` gives tool T another source; ``search``, ``chat``,
    ``test``, ``serve`` and ``tools`` on that store then use it, as ``ingest --help`` says.
    The project of F (where ``.holodeck/config.yaml`` is looked up) is the one its ingest ran
    in, whatever the working directory now: ``serve /abs/agent.yaml`` spawned by an MCP client
    from ``/`` had looked in ``/``, found no ``vectorstore:`` section, and opened an empty
    in-memory store beside the Redis the ingest had filled.
    A manifest that cannot be read tells nothing: ``target`` as configured, with a WARNING
    (the next ingest rewrites it).
    """
    if target.config_path is None or not (store / MANIFEST_NAME).is_file():
        return target
    try:
        manifest = read_manifest(store)
    except HolodeckError as error:
        logger.warning("%s; using %s as configured.", str(error).rstrip("."), target.config.name)
        return target
    if not _same_file(manifest.config, target.config_path):
        return target
    if manifest.tool == target.config.name and manifest.source_overridden:
        return target_from_manifest(manifest, store=store)  # keep the SOURCE given to ingest
    return replace(target, project_dir=Path(manifest.project_dir))


def warn_if_the_project_moves(store: Path, target: Target) -> None:
    """Say so when this ingest of an agent.yaml's tool runs in another project than the last.

    The project (where ``.holodeck/config.yaml`` names the store: Redis, PostgreSQL, a Qdrant
    path) is the working directory of an ingest; ``search``, ``chat``, ``serve`` and ``tools``
    follow the last ingest's (``as_ingested``). A cron job running ``ingest --config
    /abs/agent.yaml`` from ``/`` moved the tool to ``/``'s project, likely another store,
    without a word.
    """
    if target.config_path is None or not (store / MANIFEST_NAME).is_file():
        return
    try:
        manifest = read_manifest(store)
    except HolodeckError:
        return  # as_ingested and the next write say what is wrong with it
    then, now = Path(manifest.project_dir), target.project_dir.absolute()
    if real_path(then) == real_path(now):
        return
    same_tool = _same_file(manifest.config, target.config_path)
    if same_tool and manifest.tool == target.config.name:
        logger.warning(
            "the last ingest of tool %r of %s into %s ran in the project %s; this one runs in %s "
            "(its .holodeck/config.yaml names the store), and search, chat, serve and tools "
            "will follow it; run ingest from %s to keep that project's store.",
            target.config.name,
            manifest.config,
            store,
            then,
            now,
            then,
        )


def _same_file(recorded: str | None, path: Path) -> bool:
    """Whether ``recorded`` (a manifest's agent.yaml) is ``path``, however either is spelt.

    ``../proj/agent.yaml`` and a link to the project are the same file as its absolute path.
    """
    return recorded is not None and real_path(recorded) == real_path(path)


def tool_store_dir(store: Path, name: str) -> Path:
    return store / name


def store_files(store: Path) -> list[Path]:
    """What of ``store`` a tool never reads as a source file: the directory and its manifest.

    The store may lie inside the source, or be the source folder itself (``--store docs
    ingest docs``): the loader leaves out the directory when it lies below the source, and
    only the paths named below the source when the directory holds it, so the manifest is
    named too (the tool's own ``STORE/<tool name>/`` is left out by the tool). Read as a
    source, ``ingest.json`` was indexed, and each search found it changed and re-synced.
    """
    return [store, store / MANIFEST_NAME]


def build_tool(
    target: Target,
    store: Path,
    *,
    top_k: int | None = None,
    embeddings: Embeddings | None = None,
) -> _DocumentTool:
    """The target's tool over ``store`` (not initialized); ``embeddings`` overrides the model."""
    from langchain_holodeck.config.models import HierarchicalDocumentToolConfig
    from langchain_holodeck.tools.document import VectorStoreTool
    from langchain_holodeck.tools.hierarchical import HierarchicalDocumentTool

    config = target.config
    if top_k is not None:
        config = config.model_copy(update={"top_k": top_k})
    options: dict[str, Any] = {
        "project_dir": target.project_dir,
        "base_dir": target.base_dir,
        "store_dir": tool_store_dir(store, config.name),
        "embeddings": embeddings,
        "exclude": store_files(store),
    }
    if isinstance(config, HierarchicalDocumentToolConfig):
        return HierarchicalDocumentTool(config, **options)
    return VectorStoreTool(config, **options)


def initialize_known(tool: _DocumentTool, store: Path, *, force_ingest: bool = False) -> SyncResult:
    """``tool.initialize_sync()`` for a command that re-checks a source an ingest reported on.

    When the re-check changed the store (chunks added, updated or deleted), ``store``'s
    ``ingest.json`` is rewritten as it was (``mark_store_changed``), so a ``serve`` on
    ``store`` reloads before its next call.

    ``search``, ``test`` and ``chat`` walk the source again before answering. The
    unsupported files that walk counts were warned about by the ingest, so the summary goes to
    DEBUG (``-v`` shows it), unless this call is the corpus's first ingest (everything added,
    nothing found already stored) or a forced one, which are news. Only this thread's summary
    is held (the loader walks in the thread that syncs): two tools may be built at once, and
    the other's summary is its own news.

    An unchanged file some of whose chunks the ingest left without context (the context model
    failed) is left as it is (``retry_contexts=False``): only a changed file waits for the
    context model, and ``holodeck-rag ingest`` retries the missing contexts.

    A store that cannot be saved (a read-only mount, a full disk) is searched as synced, in
    memory, after one WARNING (``save_errors="warn"``): the saved store is left as it was.
    """
    from langchain_holodeck.loaders import SKIP_SUMMARY

    held: list[logging.LogRecord] = []
    caller = threading.get_ident()

    def hold(record: logging.LogRecord) -> bool:
        if (
            getattr(record, SKIP_SUMMARY, False)
            and record.levelno > logging.DEBUG
            and record.thread == caller
        ):
            held.append(record)
            return False
        return True

    loaders = logging.getLogger("langchain_holodeck.loaders")
    loaders.addFilter(hold)
    news = True  # a failure keeps the warning: it may say why
    try:  # a context left out by a failing context model is ingest's to retry, not a search's
        result = sync_source(
            tool, store, force_ingest=force_ingest, retry_contexts=False, save_errors="warn"
        )
        first = result.added > 0 and not (result.skipped or result.updated)
        news = force_ingest or first
    finally:
        loaders.removeFilter(hold)
        for record in held:
            if not news:
                record.levelno, record.levelname = logging.DEBUG, "DEBUG"
            loaders.handle(record)
    if result.added or result.updated or result.deleted:
        mark_store_changed(store)
    return result


def sync_source(
    tool: _DocumentTool,
    store: Path,
    *,
    force_ingest: bool = False,
    on_progress: Callable[[IngestProgress], None] | None = None,
    retry_contexts: bool = True,
    save_errors: SaveErrors = "raise",
) -> SyncResult:
    """``tool.initialize_sync()``; a source whose files all went since its ingest is empty.

    The sync that finds the last files gone removes their chunks; the next finds no supported
    file and nothing stored, which alone cannot tell an emptied source from one that never
    held a file. ``store``'s manifest tells: when it records this tool ingesting this source,
    the tool is opened on what the store holds (no chunk: a search finds nothing) and the
    result counts nothing. A source that was never ingested stays an error.

    Raises:
        NoSupportedFilesError: When the source holds no supported file and ``store``'s
            manifest does not record this tool ingesting it.
    """
    try:
        return tool.initialize_sync(
            force_ingest=force_ingest,
            on_progress=on_progress,
            retry_contexts=retry_contexts,
            save_errors=save_errors,
        )
    except NoSupportedFilesError:
        if not ingested_before(store, tool):
            raise
        from langchain_holodeck.sync import SyncResult

        logger.debug("%s: no supported file left in %s; nothing to sync.", tool.name, store)
        tool.open_sync()
        return SyncResult()


def ingested_before(store: Path, tool: _DocumentTool) -> bool:
    """Whether ``store``'s manifest records ``tool`` (its name) ingesting its source."""
    try:
        manifest = read_manifest(store)
    except (HolodeckError, OSError):  # none, or unreadable: nothing is known
        return False
    corpus = tool.corpus
    source = real_path(corpus.config.resolved_source(corpus.source_base))
    return manifest.tool == tool.name and recorded_root(manifest) == source


def last_ingest_of(manifest: Manifest, name: str) -> str | None:
    """When tool ``name`` was last ingested into ``manifest``'s store; None: never, as known.

    A manifest written before ``ingests`` was recorded knows its own tool only.
    """
    if manifest.ingests:
        return manifest.ingests.get(name)
    return manifest.ingested_at if manifest.tool == name else None


def mark_store_changed(store: Path) -> None:
    """Rewrite ``store``'s ``ingest.json`` unchanged, as a new file: running servers reload.

    ``serve`` stats the manifest before each call; a sync outside ``ingest`` (``search``,
    ``test``, ``chat``) changes the store, not the manifest. No manifest: nothing to do.
    """
    path = store / MANIFEST_NAME
    try:
        atomic_write_bytes(path, path.read_bytes())
    except OSError as error:  # none, or read-only: servers reload at the next ingest
        logger.debug("%s not rewritten: %s", path, error)


def read_manifest(store: Path, *, or_else: str = "--config AGENT_YAML") -> Manifest:
    """What the last ``ingest`` into ``store`` recorded; ``or_else`` names the other way in.

    Raises:
        HolodeckError: When nothing was ingested into ``store`` (the message ends with
            ``or_else``: ``--config AGENT_YAML`` for ``search``, an ``AGENT_YAML`` argument
            for ``chat`` and ``serve``), or its manifest cannot be read.
    """
    path = store / MANIFEST_NAME
    if not path.is_file():
        msg = (
            f"nothing ingested in {store} yet ({path} not found); run "
            "`holodeck-rag ingest SOURCE` first, pass the --store DIR you ingested into, "
            f"or {or_else}."
        )
        raise HolodeckError(msg)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("format") != MANIFEST_FORMAT:
            msg = f"format {data.get('format')!r} is not {MANIFEST_FORMAT}"
            raise ValueError(msg)
        if "long_text" not in data:  # written before it was recorded: the mode the id names
            data["long_text"] = recorded_long_text(data.get("embedding_model_id"))
        if data.get("long_text", DEFAULT_LONG_TEXT) not in LONG_TEXT_MODES:
            msg = f"long_text {data.get('long_text')!r} is not one of {LONG_TEXT_MODES}"
            raise ValueError(msg)
        _check_manifest_types(data)
        manifest = Manifest(**data)
        if manifest.config is None:
            _check_default_tool(manifest)
        return manifest
    except (ValueError, TypeError, AttributeError) as error:
        msg = f"{path} is not a valid ingest manifest ({error}); run `holodeck-rag ingest` again."
        raise HolodeckError(msg) from error


def _check_manifest_types(data: dict[str, Any]) -> None:
    """Raise ``ValueError`` naming the first field of ``data`` whose value has the wrong type.

    ``Manifest`` is a dataclass, which checks nothing: a hand-edited ``"source": 5`` or
    ``"base_dir": null`` failed later, in a traceback.
    """
    for name, hint in get_type_hints(Manifest).items():
        if name not in data:
            continue  # a missing field: Manifest(**data) says which
        value, types = data[name], _json_types(hint)
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            allowed = " or ".join("null" if t is type(None) else t.__name__ for t in types)
            msg = f"{name} must be {allowed}, got {json.dumps(value)}"
            raise ValueError(msg)
    for tool, when in data.get("ingests", {}).items():
        if not isinstance(when, str):
            msg = f"ingests.{tool} must be str, got {json.dumps(when)}"
            raise ValueError(msg)


def _check_default_tool(manifest: Manifest) -> None:
    """Raise ``ValueError`` when the default tool the manifest records cannot be built.

    A hand-edited ``"source": ""`` or ``"embedding_model": "nonsense"`` failed in the tool's
    config, in a traceback; the first field at fault is named instead.
    """
    from pydantic import ValidationError

    try:
        target_from_manifest(manifest)
    except ValidationError as error:
        first = error.errors()[0]
        msg = f"{'.'.join(map(str, first['loc']))}: {first['msg']}"
        raise ValueError(msg) from error


def _json_types(hint: Any) -> tuple[type, ...]:
    """The classes a value of a field annotated ``hint`` may have (``str | None``, a Literal)."""
    if get_origin(hint) is Literal:
        return tuple(dict.fromkeys(type(arg) for arg in get_args(hint)))
    if get_origin(hint) is dict:
        return (dict,)
    if get_args(hint):  # a union
        return tuple(t for arg in get_args(hint) for t in _json_types(arg))
    return (hint,)


def recorded_long_text(model_id: object) -> LongTextMode:
    """The ``long_text`` an ``embedding_model_id`` names (``...:long_text=auto:...``).

    Manifests written before ``long_text`` was recorded hold the mode in the id only (``auto``,
    the default then): reading it keeps their stores searchable and a plain re-ingest free.
    An id without one means ``DEFAULT_LONG_TEXT``.
    """
    named = {f"long_text={mode}": mode for mode in LONG_TEXT_MODES}
    for part in str(model_id or "").split(":"):
        if part in named:
            return named[part]
    return DEFAULT_LONG_TEXT


def remembered_settings(
    store: Path, source: str, base_dir: Path
) -> tuple[str | None, LongTextMode]:
    """The default tool's ``embedding_model`` and ``long_text`` of the last ingest of ``source``.

    From ``store``'s manifest when it records the default tool ingesting the same path
    (``source`` resolved against ``base_dir``); else, or when there is no valid manifest, the
    defaults (``None``: the local model, ``DEFAULT_LONG_TEXT``). A plain re-ingest then keeps
    the settings a user chose with flags, instead of asking for ``--force-ingest``.
    """
    manifest = _last_default_ingest(store, source, base_dir)
    if manifest is None:
        return None, DEFAULT_LONG_TEXT
    return manifest.embedding_model, manifest.long_text


def _last_default_ingest(store: Path, source: str, base_dir: Path) -> Manifest | None:
    """``store``'s manifest if it records the default tool ingesting ``source``.

    ``source`` is resolved against ``base_dir``; ``None`` for another path, an agent.yaml's
    tool, or no valid manifest.
    """
    try:
        manifest = read_manifest(store)
    except (HolodeckError, OSError):  # none, or unreadable: the ingest rewrites it
        return None
    then = Path(manifest.base_dir) / Path(manifest.source).expanduser()
    if manifest.config is not None or real_path(then) != real_path(
        base_dir / Path(source).expanduser()
    ):
        return None
    return manifest


def replaced_corpus(store: Path, target: Target) -> Manifest | None:
    """``store``'s manifest if it records another corpus of the same tool name as ``target``.

    Both live under ``STORE/<tool name>/``, in their own namespaces: ingesting ``target`` keeps
    the recorded corpus's chunks, but the commands that read the manifest (``search``,
    ``chat``, ``serve``, ``tools``) then use ``target`` only. ``None`` when there is no valid
    manifest, it names another tool (its own directory), the same source root, or ``target``
    pins ``corpus_id`` (one corpus, moved: its stale chunks are meant to go).
    """
    try:
        manifest = read_manifest(store)
    except (HolodeckError, OSError):
        return None
    config = target.config
    if manifest.tool != config.name or config.corpus_id is not None:
        return None
    if recorded_root(manifest) == real_path(config.resolved_source(target.base_dir)):
        return None
    return manifest


def recorded_root(manifest: Manifest) -> Path:
    """The root of the corpus ``manifest`` records, as its ingest resolved it.

    A symlinked source re-pointed since (``docs -> ../r2/docs``, a release deploy) resolves
    elsewhere today; the recorded ``source_root`` is where the ingest read, so the corpus it
    names is the one in the store. Manifests without it: ``source`` resolved now.
    """
    if manifest.source_root is not None:
        return Path(manifest.source_root)
    return real_path(Path(manifest.base_dir) / Path(manifest.source).expanduser())


def write_manifest(store: Path, target: Target, tool: _DocumentTool) -> None:
    """Record this ingest in ``store``'s ``ingest.json``, rewritten by every ingest.

    Running servers reload when it changes, so an ingest that changed no chunk still writes
    it: the settings it records (a tool's description, ``top_k``) may have changed, or chunks
    written some other way (your own code) are to be served. Only when it cannot be written
    (a read-only mount), the ingest changed no chunk (``tool.last_sync_result``) and the
    manifest would differ only in ``ingested_at`` and ``store_dir`` (where the store was
    written: a store mounted elsewhere keeps it) is that no error: what it records holds.

    Raises:
        StoreNotSavedError: When ``ingest.json`` cannot be written (read-only, disk full)
            and records something else than this ingest.
    """
    now = datetime.now(timezone.utc)
    manifest = Manifest(
        tool=tool.name,
        type=target.config.type,
        source=target.config.source,
        base_dir=str(target.base_dir.absolute()),
        project_dir=str(target.project_dir.absolute()),
        config=str(target.config_path.absolute()) if target.config_path else None,
        source_overridden=target.source_overridden,
        embedding_model=target.embedding_model,
        embedding_model_id=tool.corpus.model_id or target_model_id(target),  # as the store holds
        backend=tool.backend,
        store_dir=str(tool_store_dir(store, tool.name).absolute()),
        ingested_at=now.isoformat(timespec="seconds"),
        long_text=target.long_text,
        source_root=str(real_path(target.config.resolved_source(target.base_dir))),
        ingests={**_recorded_ingests(store), tool.name: now.isoformat(timespec="microseconds")},
    )
    text = json.dumps(asdict(manifest), indent=2) + "\n"
    try:
        store.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(store / MANIFEST_NAME, text.encode("utf-8"))
    except OSError as error:
        if _records_already(store, manifest, tool.last_sync_result):
            logger.debug("%s not rewritten (%s): it records this ingest", store, error)
            return
        why, fix = why_not_saved(error)
        msg = (
            f"could not write {store / MANIFEST_NAME}: {why} ({os_error_text(error)}); what "
            "was ingested is "
            f"stored, but search, chat and serve follow the previous ingest.json: {fix} and "
            "run ingest again."
        )
        raise StoreNotSavedError(msg) from error


def _recorded_ingests(store: Path) -> dict[str, str]:
    """The ``ingests`` of ``store``'s manifest, kept by the next: none when it does not read.

    A manifest written before ``ingests`` was recorded gives its own tool's ingest (as
    ``last_ingest_of`` reads it), so the next ingest of another tool keeps it.
    """
    try:
        manifest = read_manifest(store)
    except (HolodeckError, OSError):
        return {}
    if manifest.ingests:
        return dict(manifest.ingests)
    return {manifest.tool: manifest.ingested_at} if manifest.tool else {}


def _records_already(store: Path, manifest: Manifest, result: SyncResult | None) -> bool:
    """Whether ``store``'s manifest records ``manifest``'s ingest and that changed no chunk."""
    if result is None or result.added or result.updated or result.deleted:
        return False
    try:
        recorded = read_manifest(store)
    except (HolodeckError, OSError):  # none, or unreadable
        return False
    same = replace(
        recorded,
        ingested_at=manifest.ingested_at,
        store_dir=manifest.store_dir,
        ingests=manifest.ingests,  # the others as recorded, this one's time
        source_root=recorded.source_root or manifest.source_root,  # an older manifest
    )
    if recorded.source_root == manifest.source_root:  # ./docs/, /abs/docs: one root
        same = replace(same, source=manifest.source, base_dir=manifest.base_dir)
    return same == manifest


def target_model_id(target: Target) -> str:
    from langchain_holodeck.embeddings import embedding_model_id, resolve_embeddings

    config = target.config
    return embedding_model_id(
        resolve_embeddings(config.embedding_model, long_text=config.long_text)
    )


def target_from_manifest(manifest: Manifest, *, store: Path | None = None) -> Target:
    """The target ``manifest`` records; ``store`` is where it was read (named in errors).

    Raises:
        ConfigError: When the agent.yaml it names, or its tool, is no longer there (naming
            ``store``'s ``ingest.json``, the file and what to pass).
    """
    project_dir = Path(manifest.project_dir)
    if manifest.config is None:
        return default_target(
            manifest.source,
            embedding_model=manifest.embedding_model,
            long_text=manifest.long_text,
            base_dir=Path(manifest.base_dir),
            project_dir=project_dir,
        )
    config = Path(manifest.config)
    try:
        return config_target(
            config,
            manifest.tool,
            source=manifest.source if manifest.source_overridden else None,
            base_dir=Path(manifest.base_dir),
            project_dir=project_dir,
        )
    except ConfigError as error:
        raise _gone_from_manifest(manifest, config, error, store=store) from error


def _gone_from_manifest(
    manifest: Manifest, config: Path, error: ConfigError, *, store: Path | None
) -> ConfigError:
    """The error of a manifest naming an agent.yaml, or a tool of it, that is no longer there.

    Said as config_target says it (``--tool 'kb' is not a tool of this file``), it named a flag
    the user never gave, or a file the user never named. The manifest named is the one read
    (``store``'s): the ``store_dir`` it records is where the ingest wrote, gone with a moved
    project.
    """
    recorded = (Path(manifest.store_dir).parent if store is None else store) / MANIFEST_NAME
    if not config.is_file():
        why = "that file is gone (moved or renamed?)"
    elif "--tool" in str(error):
        why = f"that file has no tool {manifest.tool!r} now (renamed?)"
    else:
        why = str(error).rstrip(".")
    msg = (
        f"{recorded} records the last ingest as tool {manifest.tool!r} of {config}, but {why}; "
        "pass --config AGENT_YAML (and --tool NAME), or ingest again."
    )
    return ConfigError(msg)
