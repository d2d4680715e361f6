"""What changed since the last ingest into a store, said with the way out.

``STORE/ingest.json`` records where the last ingest read (its ``base_dir``), which store it
wrote to (its ``backend``) and how it embedded. A project folder moved, a ``.holodeck/
config.yaml`` naming another store, or a tool setting changed by an upgrade make the present
differ from that record; the commands then say which record and what to run, instead of an
error about an argument they do not take.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from langchain_holodeck._embedding_settings import DEFAULT_LONG_TEXT, LongTextMode
from langchain_holodeck._source_walk import real_path
from langchain_holodeck.cli._targets import (
    DEFAULT_STORE,
    MANIFEST_NAME,
    ingested_before,
    initialize_known,
    read_manifest,
    recorded_long_text,
    recorded_root,
    replaced_corpus,
    target_model_id,
    tool_store_dir,
)
from langchain_holodeck.errors import (
    FORCE_INGEST_WAY,
    EmbeddingModelMismatchError,
    HolodeckError,
)

if TYPE_CHECKING:
    from langchain_holodeck.cli._targets import Target
    from langchain_holodeck.sync import SyncResult
    from langchain_holodeck.tools.document import _DocumentTool

logger = logging.getLogger(__name__)


def sync_known(
    target: Target, tool: _DocumentTool, store: Path, *, force_ingest: bool = False
) -> SyncResult:
    """``initialize_known`` for ``search``, ``chat`` and ``test``, once the source is there.

    Raises:
        HolodeckError: When the source ``store``'s manifest gave ``target`` is gone
            (``check_recorded_source``).
        EmbeddingModelMismatchError: Said with the ways out a CLI user has (``with_ways``).
    """
    check_recorded_source(target, store)
    try:
        return initialize_known(tool, store, force_ingest=force_ingest)
    except EmbeddingModelMismatchError as error:
        said = with_ways(error, target, store)
        if said is error:
            raise
        raise said from error


def note_sync(target: Target, tool: _DocumentTool, store: Path, result: SyncResult) -> None:
    """One ``note:`` WARNING when ``search``'s re-check of the source wrote to the store.

    Said by what the sync found, not blamed on the files: the configured store out of reach
    (an in-memory copy made now); a store that held none of the corpus (the sync added
    chunks and found none to skip, update or delete), because the last ingest went to
    another backend (``STORE/ingest.json``'s ``backend``: a ``.holodeck/config.yaml`` added
    since, or an ingest that fell back to memory while Redis was down) or because the store
    lost them (emptied, restarted without its data); else the source changed since the last
    ingest.
    """
    shown = _spelt(target.config.source)
    counts = f"{result.added} added, {result.failed} failed"
    if tool.fallback_reason is not None and (result.added or result.failed):
        logger.warning(
            "note: %s is unavailable, so this search ran on an in-memory copy of %s made now "
            "(%d chunks embedded, %d failed); the source did not necessarily change.",
            tool.requested_backend,
            shown,
            result.added,
            result.failed,
        )
    elif result.added and not (result.skipped or result.updated or result.deleted):
        where = f"this search's store, {_spelt(tool.describe_storage())},"
        then = _recorded_backend(store, tool)
        if then is not None and then != tool.backend:
            held = f"the last ingest of {shown} went to {then}, and {where} held none of its chunks"
        elif then is None:
            held = f"{where} held none of the chunks of {shown} (not ingested into it yet?)"
        else:  # the store the ingest filled lost them
            lost = (
                "its saved files deleted?"
                if then == "in-memory"
                else "emptied, or restarted without its data?"
            )
            held = f"{where} held none of the chunks of {shown} ({lost})"
        logger.warning(
            "note: %s; synced %s into it first (%s); the files did not necessarily change.",
            held,
            shown,
            counts,
        )
    elif result.added or result.updated or result.deleted or result.failed:
        logger.warning(
            "note: %s changed since the last ingest (its files, or how this version reads "
            "them); synced it first (%d added, %d updated, %d deleted, %d failed).",
            shown,
            result.added,
            result.updated,
            result.deleted,
            result.failed,
        )


def _recorded_backend(store: Path, tool: _DocumentTool) -> str | None:
    """The backend ``store``'s manifest records ``tool`` ingesting its source into, or None."""
    if not ingested_before(store, tool):
        return None
    return read_manifest(store).backend  # read above: valid


def check_recorded_source(target: Target, store: Path) -> None:
    """Raise when ``target``'s source came from ``store``'s manifest and is gone.

    ``search`` (and ``chat``, ``test`` without SOURCE) rebuild the default tool, or a tool
    given another SOURCE, from ``ingest.json``: its ``source`` resolved against its
    ``base_dir``, the ingest's working directory. After the project folder was moved, that
    path is gone though the folder is right here, and the loader's ``source 'docs' does not
    exist ...; pass an existing file or directory`` named an argument these commands do not
    take. The folder here is not followed: a root at another path is another corpus (another
    namespace, its files embedded anew, the old corpus's chunks left beside it), and the
    project's ``.holodeck/config.yaml`` is looked up where the ingest ran, so which store the
    copy would go to is not known either; ``ingest`` is the run that makes it.

    Raises:
        HolodeckError: Naming the manifest, the missing path and the ingest to run.
    """
    repointed = _repointed_source(target, store)
    if repointed is not None:
        msg = (
            f"{repointed}; run `{ingest_command(target, store)}` to ingest what it points to "
            "now (another corpus: its files are embedded anew, and that ingest names the one "
            "it hides)."
        )
        raise HolodeckError(msg)
    said = _recorded_source_gone(target, store)
    if said is None:
        return
    shown = _spelt(target.config.source)
    msg = (
        f"{said}; run `{ingest_command(target, store)}` where {shown} is now (a folder at "
        "another path is another corpus: its files are embedded anew; an agent.yaml tool with "
        "corpus_id keeps one corpus across moves)."
    )
    raise HolodeckError(msg)


def warn_if_moved(target: Target, store: Path, tool: _DocumentTool) -> None:
    """One WARNING when ``serve`` opens a tool whose recorded source is gone (a moved project).

    ``serve`` opens the store as the last ingest left it and never walks the source, so after
    the project folder moved it served the old root's chunks without a word, where ``search``
    stops (``check_recorded_source``). A server is read-only: it keeps serving them, and says
    which and the ingest that makes the folder's present files the ones served.
    """
    repointed = _repointed_source(target, store)
    if repointed is not None:
        logger.warning(
            "%s: %s; serving what the store holds for it now, %d chunk(s) (serve does not "
            "read the source): run `%s` to ingest it, and serve follows it.",
            tool.name,
            repointed,
            tool.document_count,
            ingest_command(target, store),
        )
        return
    said = _recorded_source_gone(target, store)
    if said is None:
        return
    logger.warning(
        "%s: %s; serving the %d chunk(s) that ingest left in the store, as they were (serve "
        "does not read the source): run `%s` where %s is now, and serve follows it.",
        tool.name,
        said,
        tool.document_count,
        ingest_command(target, store),
        _spelt(target.config.source),
    )


def _recorded_source_gone(target: Target, store: Path) -> str | None:
    """What says ``target``'s source, from ``store``'s manifest, is gone; None when it is not.

    ``ingest.json`` names it by ``source`` and ``base_dir`` (the ingest's working directory):
    a relative source of a moved project resolves under the old folder. A source from the
    agent.yaml (not given to ``ingest`` as SOURCE) is not the manifest's: None.
    """
    if target.config_path is not None and not target.source_overridden:
        _check_recorded_tool(target, store)
        return None  # the source is the agent.yaml's: the loader's message names it
    source = target.config.resolved_source(target.base_dir)
    if source.exists():
        return None
    base_dir = target.base_dir.absolute()
    relative = not Path(target.config.source).expanduser().is_absolute()
    gone, why = _what_is_gone(base_dir if relative else None, source)
    return (
        f"{store / MANIFEST_NAME} records the last ingest as {_spelt(target.config.source)!r} "
        f"in {_spelt(str(base_dir))}, and {_spelt(str(gone))} is gone ({why})"
    )


def _what_is_gone(project: Path | None, root: Path) -> tuple[Path, str]:
    """What is gone of a recorded source, and why.

    Its ``project`` folder (the working directory a relative source was read from) when that
    is gone, else its ``root`` itself.
    """
    if project is not None and not project.exists():
        return project, "the project moved or was renamed?"
    return root, "moved, renamed or deleted?"


def _repointed_source(target: Target, store: Path) -> str | None:
    """What says ``target``'s source, from ``store``'s manifest, now resolves elsewhere.

    A symlinked source re-pointed since the ingest (``docs -> ../r2/docs``, a release deploy):
    the manifest's ``source_root`` is where that ingest read. ``search`` embedded the new
    target as a second corpus and said the store's saved files were deleted, and ``serve``
    answered from the new target's empty namespace without a word. None when the source
    resolves where it did, when ``target`` is not the manifest's, for a tool with
    ``corpus_id`` (one corpus wherever it is read), or for a manifest written before
    ``source_root``.
    """
    try:
        manifest = read_manifest(store)
    except (HolodeckError, OSError):  # none, or unreadable: nothing is known
        return None
    config = target.config
    ours = (manifest.tool, manifest.source, Path(manifest.base_dir)) == (
        config.name,
        config.source,
        target.base_dir.absolute(),
    )
    source = config.resolved_source(target.base_dir)
    if not ours or manifest.source_root is None or not source.exists():
        return None
    if config.corpus_id is not None:  # one corpus wherever its files are: a re-point syncs it
        return None
    then, now = Path(manifest.source_root), real_path(source)
    if then == now:
        return None
    return (
        f"{store / MANIFEST_NAME} records the last ingest of {_spelt(config.source)!r} as "
        f"{_spelt(str(then))}, and {_spelt(config.source)} now resolves to {_spelt(str(now))} "
        "(a symlink re-pointed?)"
    )


def _check_recorded_tool(target: Target, store: Path) -> None:
    """Raise when ``store``'s manifest records ``target``'s tool at a root that is gone.

    ``search --config agent.yaml`` in a moved project (what the error of a plain ``search``
    there says to pass) read the tool's source here, another root: it embedded a second
    corpus into the store, said only ``note: docs changed since the last ingest``, and left
    ``ingest.json`` as it was. As for the default tool, ``ingest`` is the run that makes the
    new corpus (and says which one it hides). A tool with ``corpus_id`` is one corpus
    wherever it is read.
    """
    config = target.config
    try:
        manifest = read_manifest(store)
    except (HolodeckError, OSError):  # none, or unreadable: nothing is known
        return
    if manifest.tool != config.name or manifest.config is None or config.corpus_id is not None:
        return
    then = recorded_root(manifest)
    if then.exists() or then == real_path(config.resolved_source(target.base_dir)):
        return
    gone, why = _what_is_gone(Path(manifest.base_dir), then)
    msg = (
        f"{store / MANIFEST_NAME} records the last ingest of tool {config.name!r} as "
        f"{_spelt(str(then))}, and {_spelt(str(gone))} is gone ({why}); run "
        f"`{ingest_command(target, store)}` to ingest "
        f"{_spelt(str(config.resolved_source(target.base_dir).absolute()))} (another corpus: its "
        "files are embedded anew; corpus_id on the tool keeps one corpus across moves)."
    )
    raise HolodeckError(msg)


def warn_if_replacing(store: Path, target: Target, tool: _DocumentTool) -> None:
    """One WARNING when this ingest hides another corpus of the store (its chunks stay).

    Both corpora are named by their resolved roots: ``docs`` ingested in a project, then in
    the same project moved elsewhere, read ``the corpus of docs ... will use docs``. When the
    recorded root is gone (the project moved), ingesting it "again to switch back" cannot
    work: the warning names the old corpus's namespace, whose chunks and embedding cache stay
    unsearched, and the ways to remove them (docs/reliability.md, a source moved).
    """
    previous = replaced_corpus(store, target)
    if previous is None:
        return
    then = recorded_root(previous)  # where that ingest read (a symlink may point elsewhere now)
    now = real_path(target.config.resolved_source(target.base_dir))
    if then.exists():
        logger.warning(
            "%s holds the %r corpus of %s (ingested %s); its chunks are kept, but search, chat, "
            "serve and tools on this --store will use %s. Ingest %s again to switch back "
            "(nothing is re-embedded), or give each source its own --store.",
            store,
            previous.tool,
            _spelt(str(then)),
            previous.ingested_at,
            _spelt(str(now)),
            _spelt(str(then)),
        )
        return
    fresh = ""
    if tool.backend == "in-memory":  # the corpora share STORE/<tool name>/ and nothing else
        fresh = f", or delete {tool_store_dir(store, previous.tool)} and ingest again"
    logger.warning(
        "%s holds the %r corpus of %s (ingested %s), a folder that is gone (moved or "
        "renamed?): this ingest of %s is another corpus, its files embedded anew, and the old "
        "one's chunks and embedding cache stay in the store, unsearched. Delete its namespace "
        "%r (scan_documents, then delete: docs/reliability.md, a source moved)%s; corpus_id "
        "in an agent.yaml keeps one corpus across moves.",
        store,
        previous.tool,
        _spelt(str(then)),
        previous.ingested_at,
        _spelt(str(now)),
        _namespace(then, previous.tool),
        fresh,
    )


def with_ways(
    error: EmbeddingModelMismatchError, target: Target, store: Path
) -> EmbeddingModelMismatchError:
    """``error`` said with the commands that get past it (the whole command, always).

    Stored chunks that differ from the tool's model in ``long_text`` alone (an agent.yaml
    tool built before ``fit`` became the default stores ``...:long_text=auto:...``) can be
    kept by setting that mode, and nothing is re-embedded; the library's message offered
    only ``--force-ingest`` (everything re-embedded), as ``holodeck-rag ingest`` without the
    ``--config`` the tool came from. Both ways are named, with the whole command. Another
    width, or an index created with other settings, is said as the library says it, with the
    whole ``--force-ingest`` command where it names ``FORCE_INGEST_WAY``.
    """
    stored, now = error.stored_model, error.configured_model
    if stored is None or now is None:  # another width, or index settings: the command only
        if FORCE_INGEST_WAY not in str(error):
            return error
        command = f"`{ingest_command(target, store, flags='--force-ingest')}`"
        return EmbeddingModelMismatchError(str(error).replace(FORCE_INGEST_WAY, command))
    config = target.config
    mode = recorded_long_text(stored)
    head = (
        f"the store holds chunks of {config.name!r} embedded with {stored!r}, but its model is "
        f"now {now!r}"
    )
    mode_only = mode != config.long_text and _model_id_in(target, mode) == stored
    if not mode_only:
        ways = f"re-embed everything with `{ingest_command(target, store, flags='--force-ingest')}`"
    elif target.config_path is not None:
        ways = (
            f"set `long_text: {mode}` on tool {config.name!r} in {target.config_path} to keep "
            "them (nothing is re-embedded), or re-embed everything in long_text "
            f"{config.long_text} with `{ingest_command(target, store, flags='--force-ingest')}`"
        )
    else:
        keep = ingest_command(target, store, flags=f"--long-text {mode}")
        again = f"--long-text {config.long_text} --force-ingest"
        ways = (
            f"`{keep}` keeps them (nothing is re-embedded); "
            f"`{ingest_command(target, store, flags=again)}` re-embeds everything"
        )
    said = EmbeddingModelMismatchError(f"{head}; {ways}.")
    said.stored_model, said.configured_model = stored, now
    return said


def _model_id_in(target: Target, mode: LongTextMode) -> str | None:
    """The model id ``target``'s tool would have in ``long_text`` ``mode`` (None: refused)."""
    config = target.config.model_copy(update={"long_text": mode})
    try:
        return target_model_id(replace(target, config=config))
    except ValueError:  # a mode the model does not take (an OpenAI model: fit or auto)
        return None


def ingest_command(target: Target, store: Path, *, flags: str = "") -> str:
    """The ``holodeck-rag ingest`` that re-ingests ``target``'s source into ``store``.

    With the default tool's settings as flags: a remembered setting applies to the path it
    was remembered for, and the command may run elsewhere (a moved project).
    """
    words = ["holodeck-rag"]
    if Path(store) != Path(DEFAULT_STORE):
        words += ["--store", _spelt(str(store))]
    words.append("ingest")
    if target.config_path is not None:
        words += ["--config", _spelt(str(target.config_path)), "--tool", target.config.name]
    if target.config_path is None or target.source_overridden:
        words.append(_spelt(target.config.source))
    if target.config_path is None and target.embedding_model is not None:
        words += ["--embedding-model", target.embedding_model]
    default_mode = target.long_text == DEFAULT_LONG_TEXT or "--long-text" in flags
    if target.config_path is None and not default_mode:
        words += ["--long-text", target.long_text]
    if flags:
        words.append(flags)
    return " ".join(words)


def _spelt(value: str) -> str:
    """A path or source as the messages show it (``config.spelt``), imported when said.

    The CLI imports this module at start, and ``holodeck-rag --version`` loads no pydantic.
    """
    from langchain_holodeck.config.models import spelt

    return spelt(value)


def _namespace(root: str | Path, tool: str) -> str:
    """``corpus_namespace`` of ``root`` for ``tool``, imported when said (as ``_spelt``)."""
    from langchain_holodeck.corpus import corpus_namespace

    return corpus_namespace(root, name=tool)
