"""``HybridToolSelectorMiddleware``: pick an agent's tools per model call by hybrid search.

The counterpart of LangChain v1's ``LLMToolSelectorMiddleware`` (same ``max_tools`` and
``always_include``), choosing with a ``ToolSelector`` instead of an extra model call.

Setup:
    ``pip install "langchain-holodeck[agents]"`` (``langchain>=1.0``, for ``create_agent``).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from langchain_core.embeddings import Embeddings
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.stores import ByteStore
from langchain_core.tools import BaseTool

from langchain_holodeck.tool_selection import ToolMatch, ToolSelector

if TYPE_CHECKING:
    from langchain.agents.middleware import ModelRequest, ModelResponse

    from langchain_holodeck.config.models import ToolSelectionConfig

__all__ = ["HybridToolSelectorMiddleware", "build_tool_selector_middleware"]

logger = logging.getLogger(__name__)
_INSTALL = 'pip install "langchain-holodeck[agents]"'

try:
    from langchain.agents.middleware import AgentMiddleware
except ImportError:  # pragma: no cover - langchain is the `agents` extra

    class AgentMiddleware:  # type: ignore[no-redef]  # stand-in that explains the extra
        """Placeholder base: constructing a middleware without langchain says what to install."""

        def __init__(self) -> None:
            msg = f"HybridToolSelectorMiddleware needs langchain>=1.0: {_INSTALL}"
            raise ImportError(msg)


@dataclass(frozen=True, eq=False)
class _ToolSet:
    """An agent's tools, split into selectable and always-included ones."""

    key: tuple[int, ...]  # ids of the request's tools, in order
    held: tuple[BaseTool | dict[str, Any], ...]  # keeps those objects (and so their ids) alive
    candidates: list[BaseTool]
    pinned: list[BaseTool]
    provider_tools: list[dict[str, Any]]


@dataclass(frozen=True)
class _Plan:
    query: str
    tools: _ToolSet


class HybridToolSelectorMiddleware(AgentMiddleware):  # type: ignore[type-arg]  # any state
    """Show the model only the ``max_tools`` tools most relevant to the user's request.

    Before each model call, the latest user message (with ``history_turns`` earlier user
    messages) is the query of a ``ToolSelector`` over the request's tools; the model is
    called with the selected tools, in the agent's own order, then ``always_include``.
    No model call is made for the selection: one query embedding, a BM25 search and a
    fusion. The agent's tools are indexed on first use and again only when the list of
    tools it passes changes; then only new or changed tools are embedded (through the
    selector's embedding cache).
    A tool the user names (``use `search_tickets```) is always selected.

    Differences from ``LLMToolSelectorMiddleware``: ``max_tools`` is required to be a
    positive number (default 5; a ranking has no natural cut-off), and a request with no
    user text is passed on with all its tools rather than rejected.

    Key init args:
        selector: The ``ToolSelector`` to use (it may already hold tools); or
        embeddings: Embeddings for a new selector (default: the local MiniLM).
        max_tools: Ranked tools per model call; ``always_include`` come on top.
        always_include: Tool names always passed to the model; every name must be a tool
            of the agent.
        history_turns: Earlier user messages added to the query (0: the latest only).

    Instantiate:
        ```python
        from langchain.agents import create_agent

        agent = create_agent(
            model,
            tools=tools,  # say 40 of them
            middleware=[HybridToolSelectorMiddleware(max_tools=3, always_include=["kb"])],
        )
        ```
    """

    def __init__(
        self,
        *,
        selector: ToolSelector | None = None,
        embeddings: Embeddings | None = None,
        max_tools: int = 5,
        always_include: Sequence[str] | None = None,
        history_turns: int = 0,
    ) -> None:
        super().__init__()
        if isinstance(max_tools, bool) or not isinstance(max_tools, int) or max_tools < 1:
            msg = f"max_tools must be a positive integer, got {max_tools!r}."
            raise ValueError(msg)
        if isinstance(history_turns, bool) or not isinstance(history_turns, int):
            msg = f"history_turns must be an integer >= 0, got {history_turns!r}."
            raise ValueError(msg)
        if history_turns < 0:
            msg = f"history_turns must be an integer >= 0, got {history_turns!r}."
            raise ValueError(msg)
        if isinstance(always_include, str):
            msg = f"always_include must be a list of tool names, got the string {always_include!r}."
            raise TypeError(msg)
        if selector is not None and embeddings is not None:
            msg = "pass selector or embeddings, not both (a selector has its own embeddings)."
            raise ValueError(msg)
        if selector is None:
            from langchain_holodeck.embeddings import resolve_embeddings

            selector = ToolSelector(resolve_embeddings(embeddings))
        self.selector = selector
        """The selector holding the agent's tools."""
        self.max_tools = max_tools
        self.always_include = list(always_include or [])
        self.history_turns = history_turns
        self._last: _ToolSet | None = None  # the last request's tools, split
        self._synced: _ToolSet | None = None  # the tools last indexed into the selector

    # -- the hook -------------------------------------------------------------------------
    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any]:
        plan = self._plan(request)
        if plan is None:
            return handler(request)
        if self._synced is not plan.tools:
            self.selector.add_tools(plan.tools.candidates)
            self._synced = plan.tools
        matches = self.selector.select(plan.query, k=self.max_tools, among=self._among(plan))
        return handler(self._narrow(request, plan, matches))

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any]:
        plan = self._plan(request)
        if plan is None:
            return await handler(request)
        if self._synced is not plan.tools:
            await self.selector.aadd_tools(plan.tools.candidates)
            self._synced = plan.tools
        among = self._among(plan)
        matches = await self.selector.aselect(plan.query, k=self.max_tools, among=among)
        return await handler(self._narrow(request, plan, matches))

    # -- pure parts -----------------------------------------------------------------------
    def _plan(self, request: ModelRequest[Any]) -> _Plan | None:
        """What to select from, or ``None`` when the request goes through unchanged."""
        tools = self._tool_set(request.tools)
        if len(tools.candidates) <= self.max_tools:
            return None  # nothing to leave out
        query = _query_text(request.messages, self.history_turns)
        if not query:
            logger.debug("HybridToolSelectorMiddleware: no user text; passing every tool")
            return None
        return _Plan(query, tools)

    def _tool_set(self, request_tools: Sequence[BaseTool | dict[str, Any]]) -> _ToolSet:
        """The request's tools, split; reused while the agent passes the very same tools."""
        key = tuple(map(id, request_tools))
        last = self._last
        if last is not None and last.key == key:
            return last
        tools = [t for t in request_tools if isinstance(t, BaseTool)]
        available = {t.name for t in tools}
        missing = [name for name in self.always_include if name not in available]
        if missing:
            msg = (
                f"always_include names tools the agent does not have: {missing}; "
                f"its tools are {sorted(available)}."
            )
            raise ValueError(msg)
        tool_set = _ToolSet(
            key=key,
            held=tuple(request_tools),
            candidates=[t for t in tools if t.name not in self.always_include],
            pinned=[t for t in tools if t.name in self.always_include],
            provider_tools=[t for t in request_tools if isinstance(t, dict)],
        )
        self._last = tool_set
        return tool_set

    def _among(self, plan: _Plan) -> list[str] | None:
        """``None`` when the selector holds exactly the candidates: no filtering needed."""
        candidates = plan.tools.candidates
        if len(self.selector) == len(candidates):
            return None  # it holds every candidate (just synced), so nothing else
        return [t.name for t in candidates]

    def _narrow(
        self, request: ModelRequest[Any], plan: _Plan, matches: list[ToolMatch]
    ) -> ModelRequest[Any]:
        chosen = {m.name for m in matches}
        logger.debug(
            "HybridToolSelectorMiddleware: %s for %r", [m.name for m in matches], plan.query
        )
        tools = plan.tools
        selected = [t for t in tools.candidates if t.name in chosen]
        return request.override(tools=[*selected, *tools.pinned, *tools.provider_tools])


def build_tool_selector_middleware(
    config: ToolSelectionConfig,
    *,
    embeddings: Embeddings | None = None,
    cache: ByteStore | None = None,
) -> HybridToolSelectorMiddleware:
    """Wire a ``HybridToolSelectorMiddleware`` from the ``tool_selection:`` of an agent.yaml.

    Args:
        config: The section (``load_agent_config(path).tool_selection``).
        embeddings: Overrides the section's ``embedding_model``.
        cache: Where tool vectors are cached (default: in memory).

    Example:
        ```python
        config = load_agent_config("agent.yaml")
        tools = [t.as_tool() for t in load_tools("agent.yaml")] + my_other_tools
        middleware = build_tool_selector_middleware(config.tool_selection)
        agent = create_agent(model, tools=tools, middleware=[middleware])
        ```
    """
    from langchain_holodeck.embeddings import resolve_embeddings

    selector = ToolSelector(
        embeddings
        if embeddings is not None
        else resolve_embeddings(config.embedding_model, timeout=config.embedding_timeout),
        cache=cache,
        weights=config.weights,
        fetch_k=config.fetch_k,
        mentions=config.mentions,
    )
    return HybridToolSelectorMiddleware(
        selector=selector,
        max_tools=config.max_tools,
        always_include=config.always_include,
        history_turns=config.history_turns,
    )


def _query_text(messages: Sequence[BaseMessage], history_turns: int) -> str:
    """The latest user message's text, after ``history_turns`` earlier user messages."""
    users = [m for m in messages if isinstance(m, HumanMessage)][-(history_turns + 1) :]
    return "\n".join(text for m in users if (text := m.text.strip()))
