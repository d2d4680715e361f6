"""The agent.yaml ``serve AGENT_YAML`` follows: read again after each ingest, the last good kept.

Every ingest rewrites ``STORE/ingest.json``, so a description or ``top_k`` edited in agent.yaml
and ingested is what the store now answers for; a server that kept the reading it started with
served the old settings until a restart. A file that no longer reads (a typo, a half-saved
edit) leaves the tools served with the settings last read, said once per distinct error.

Only the settings that shape an answer (``SERVE_SETTINGS``) follow any ingest; the rest (the
source, ``corpus_id``, ``database``, the embedding and chunking settings, ``keyword_index``)
decide what the store holds, and follow an ingest of that tool only (``served_config``): an
edit not ingested yet had turned a tool to a store holding none of it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from langchain_holodeck.cli._targets import Target, config_tool_target
from langchain_holodeck.config.models import load_agent_config
from langchain_holodeck.errors import HolodeckError

if TYPE_CHECKING:
    from langchain_holodeck.cli._targets import AnyToolConfig
    from langchain_holodeck.config.models import AgentConfig

logger = logging.getLogger(__name__)

SERVE_SETTINGS = frozenset(
    {
        "description",
        "top_k",
        "min_similarity_score",
        "rerank",
        "rerank_top_n",
        "reranker",
        "rerank_on",
        "search_weights",
        "fetch_k",
        "fusion",
        "feedback_docs",
        "feedback_weight",
        "expand_hops",
        "expand_direction",
        "expand_limit",
    }
)
"""The tool settings a search reads and the store does not: they follow any re-reading."""


def served_config(served: AnyToolConfig, read: AnyToolConfig) -> AnyToolConfig:
    """``served`` with the ``SERVE_SETTINGS`` of ``read`` (the file as now read).

    For a tool not ingested since it was opened: what its store holds is what ``served``
    says. A description left to its default names the source served, not the one read.
    """
    read = read.with_source(served.source)
    fields = SERVE_SETTINGS & type(served).model_fields.keys() & type(read).model_fields.keys()
    return served.model_copy(update={name: getattr(read, name) for name in fields})


class ServedAgentYaml:
    """An agent.yaml read at start and again whenever ``generation`` changes (an ingest).

    Key init args:
        path: The agent.yaml ``serve`` was given.
        generation: Returns a value that changes when the store was re-ingested.
        project_dir: The working directory ``serve`` started in.

    Raises:
        ConfigError: At construction, when the file does not read: serve has nothing to serve.
    """

    def __init__(self, path: Path, generation: Callable[[], object], project_dir: Path) -> None:
        self.path = path
        self._generation = generation
        self._project_dir = project_dir
        self._seen = generation()
        self._agent: AgentConfig = load_agent_config(path)
        self._said: str | None = None  # the last error warned about: each is said once
        self._added = {tool.name for tool in self._agent.tools}  # served, or said not to be
        self._lock = threading.Lock()

    @property
    def targets(self) -> list[Target]:
        """Each tool of the file as configured, in file order (as last read)."""
        return [
            config_tool_target(tool, self.path, self._project_dir) for tool in self._read().tools
        ]

    def target(self, name: str) -> tuple[Target, int] | None:
        """Tool ``name`` as the file now configures it, and its index; None when it is gone."""
        for n, target in enumerate(self.targets):
            if target.config.name == name:
                return target, n
        return None

    def _read(self) -> AgentConfig:
        current = self._generation()
        with self._lock:
            if current == self._seen:
                return self._agent
            self._seen = current
            try:
                self._agent = load_agent_config(self.path)
            except HolodeckError as error:
                said = str(error).strip().splitlines()[0] if str(error).strip() else ""
                if said != self._said:
                    logger.warning(
                        "%s does not read now (%s); serving its tools with the settings last "
                        "read, until an ingest after it is fixed.",
                        self.path,
                        said.rstrip(".") or type(error).__name__,
                    )
                self._said = said
            else:
                self._said = None
                self._say_added()
            return self._agent

    def _say_added(self) -> None:
        """Warn once of each tool the file gained since serve started: it is not served."""
        for tool in self._agent.tools:
            if tool.name not in self._added:
                self._added.add(tool.name)
                logger.warning(
                    "%s: added to %s since serve started; not served (restart serve to serve "
                    "the file's tools).",
                    tool.name,
                    self.path,
                )
