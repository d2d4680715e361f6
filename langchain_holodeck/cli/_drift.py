"""What changed since the last ingest into a store, said with the way out.

``STORE/ingest.json`` records where the last ingest read (its ``base_dir``), which store it
wrote to (its ``backend``) and how it embedded. A project folder moved, a ``.holodeck/
config.yaml`` naming another store, or a tool setting changed by an upgrade make the present
differ from that record; the commands then say which record and what to run, instead of an
error about an argument they do not take.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from langchain_holodeck.cli._targets import (
    DEFAULT_STORE,
    MANIFEST_NAME,
    initialize_known,
)
from langchain_holodeck.config.models import spelt
from langchain_holodeck.errors import HolodeckError

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
    """
    check_recorded_source(target, store)
    return initialize_known(tool, store, force_ingest=force_ingest)


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
    if target.config_path is not None and not target.source_overridden:
        return  # the source is the agent.yaml's: the loader's message names it
    source = target.config.resolved_source(target.base_dir)
    if source.exists():
        return
    base_dir = target.base_dir.absolute()
    relative = not Path(target.config.source).expanduser().is_absolute()
    gone, why = (
        (base_dir, "the project moved or was renamed?")
        if relative and not base_dir.exists()
        else (source, "moved, renamed or deleted?")
    )
    shown = spelt(target.config.source)
    msg = (
        f"{store / MANIFEST_NAME} records the last ingest as {shown!r} in "
        f"{spelt(str(base_dir))}, and {spelt(str(gone))} is gone ({why}); run "
        f"`{ingest_command(target, store)}` where {shown} is now (a folder at another path is "
        "another corpus: its files are embedded anew; an agent.yaml tool with corpus_id keeps "
        "one corpus across moves)."
    )
    raise HolodeckError(msg)


def ingest_command(target: Target, store: Path, *, flags: str = "") -> str:
    """The ``holodeck-rag ingest`` that re-ingests ``target``'s source into ``store``."""
    words = ["holodeck-rag"]
    if Path(store) != Path(DEFAULT_STORE):
        words += ["--store", spelt(str(store))]
    words.append("ingest")
    if target.config_path is not None:
        words += ["--config", spelt(str(target.config_path)), "--tool", target.config.name]
    if target.config_path is None or target.source_overridden:
        words.append(spelt(target.config.source))
    if flags:
        words.append(flags)
    return " ".join(words)
