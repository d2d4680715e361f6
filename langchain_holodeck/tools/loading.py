"""``load_tools``: the tools an agent.yaml defines, built to persist as ``holodeck-rag`` does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings

from langchain_holodeck._defaults import DEFAULT_STORE_DIR
from langchain_holodeck.config.models import (
    HierarchicalDocumentToolConfig,
)
from langchain_holodeck.tools.document import VectorStoreTool
from langchain_holodeck.tools.hierarchical import HierarchicalDocumentTool


def load_tools(
    agent_yaml: str | Path,
    *,
    project_dir: str | Path | None = None,
    home_dir: str | Path | None = None,
    embeddings: Embeddings | None = None,
    store_dir: str | Path | None = None,
    **kwargs: Any,
) -> list[VectorStoreTool | HierarchicalDocumentTool]:
    """Build (not initialize) the tools an ``agent.yaml`` defines, in file order.

    The tools persist, as ``holodeck-rag`` does: a tool on the in-memory store saves its
    vectors, keyword index and embedding cache under ``<store_dir>/<tool name>/`` after each
    ``initialize``, and a later process loads them, embedding only what changed. The whole
    store root is left out of every tool's source, not only the tool's own folder: a tool
    whose source holds the store (``source: .``) never reads another tool's saved chunks as
    source files.

    Args:
        agent_yaml: The agent.yaml; relative sources resolve against its directory.
        project_dir: Where ``.holodeck/config.yaml`` is looked up; default the working
            directory.
        home_dir: Where ``~/.holodeck/config.yaml`` is looked up; default the home directory.
        embeddings: Overrides every tool's ``embedding_model`` and ``long_text``.
        store_dir: The store root; default ``<project_dir>/.holodeck/store``, the directory
            ``holodeck-rag`` (run in ``project_dir``) uses. Stores on a server (Redis...)
            keep their vectors there; the root then holds only what they do not.
        **kwargs: Passed to every tool's constructor (``vector_store=``, ``llm=``...); an
            ``exclude=`` is left out beside the store root.

    Example:
        ```python
        tool = load_tools("agent.yaml")[0]
        await tool.initialize()  # first run embeds; a new process reuses .holodeck/store/
        ```
    """
    from langchain_holodeck.config.models import load_agent_config

    path = Path(agent_yaml)
    config = load_agent_config(path)
    root = (
        Path(store_dir)
        if store_dir is not None
        else Path(project_dir or Path.cwd()) / DEFAULT_STORE_DIR
    )
    exclude = [root, *kwargs.pop("exclude", ())]
    tools: list[VectorStoreTool | HierarchicalDocumentTool] = []
    for tool_config in config.tools:
        cls = (
            HierarchicalDocumentTool
            if isinstance(tool_config, HierarchicalDocumentToolConfig)
            else VectorStoreTool
        )
        tools.append(
            cls(
                tool_config,  # type: ignore[arg-type]  # the isinstance above picks the class
                embeddings=embeddings,
                project_dir=project_dir,
                home_dir=home_dir,
                base_dir=path.parent,
                store_dir=root / tool_config.name,
                exclude=exclude,
                **kwargs,
            )
        )
    return tools
