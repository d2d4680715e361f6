"""The agent.yaml ``serve AGENT_YAML`` follows: read again after each ingest, the last good kept.

Every ingest rewrites ``STORE/ingest.json``, so a description or ``top_k`` edited in agent.yaml
and ingested is what the store now answers for; a server that kept the reading it started with
served the old settings until a restart. A file that no longer reads (a typo, a half-saved
edit) leaves the tools served with the settings last read, said once per distinct error.
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
    from langchain_holodeck.config.models import AgentConfig

logger = logging.getLogger(__name__)


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
            return self._agent
