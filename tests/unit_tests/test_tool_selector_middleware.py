"""HybridToolSelectorMiddleware in a real ``create_agent`` loop, driven by a scripted model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import BaseTool
from pydantic import Field

from langchain_holodeck import (
    ConfigError,
    HierarchicalDocumentTool,
    HierarchicalDocumentToolConfig,
    HybridToolSelectorMiddleware,
    MatrixVectorStore,
    ToolSelectionConfig,
    ToolSelector,
    VectorStoreTool,
    VectorStoreToolConfig,
    build_tool_selector_middleware,
    load_agent_config,
)
from tests.helpers import DATA_DIR, HashingEmbeddings
from tests.unit_tests.test_tool_selection import TOOLS

REPO = DATA_DIR.parent.parent


class ScriptedChatModel(FakeMessagesListChatModel):
    """Replays ``responses``; records the tool names bound before each model call."""

    bound: list[list[str]] = Field(default_factory=list)
    calls: int = 0

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:
        self.bound.append([t.name if isinstance(t, BaseTool) else t["name"] for t in tools])
        return self

    def _generate(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return super()._generate(*args, **kwargs)


def answer(text: str = "done") -> AIMessage:
    return AIMessage(content=text)


def call(name: str, args: dict[str, Any], call_id: str = "call_1") -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": call_id}])


def middleware(**kwargs: Any) -> HybridToolSelectorMiddleware:
    return HybridToolSelectorMiddleware(
        selector=ToolSelector(HashingEmbeddings(size=256)), **kwargs
    )


def run(model: ScriptedChatModel, mw: HybridToolSelectorMiddleware, *messages: Any) -> dict:
    agent = create_agent(model, tools=TOOLS, middleware=[mw])
    return agent.invoke({"messages": list(messages)})


def test_only_the_selected_tools_reach_the_model() -> None:
    model = ScriptedChatModel(responses=[answer()])
    run(model, middleware(max_tools=2), HumanMessage("weather forecast: will it rain in Lyon?"))
    assert len(model.bound) == 1
    assert len(model.bound[0]) == 2
    assert "get_weather" in model.bound[0]


def test_the_selection_itself_makes_no_model_call() -> None:
    model = ScriptedChatModel(responses=[answer()])
    run(model, middleware(max_tools=2), HumanMessage("translate a text into Italian"))
    assert model.calls == 1  # the agent's own call; LLMToolSelectorMiddleware would make 2


def test_selection_runs_before_every_model_call_and_tools_run() -> None:
    model = ScriptedChatModel(
        responses=[call("convert_currency", {"amount": 3, "currency": "EUR"}), answer()]
    )
    state = run(
        model, middleware(max_tools=1), HumanMessage("convert 3 euros at the exchange rate")
    )
    assert model.bound == [["convert_currency"], ["convert_currency"]]
    tool_message = next(m for m in state["messages"] if m.type == "tool")
    assert tool_message.content == "3.0EUR"


def test_always_include_is_added_on_top_of_max_tools() -> None:
    model = ScriptedChatModel(responses=[answer()])
    run(
        model,
        middleware(max_tools=1, always_include=["send_email"]),
        HumanMessage("translate this text into German"),
    )
    assert model.bound == [["translate_text", "send_email"]]


def test_a_named_tool_is_selected_even_when_unrelated() -> None:
    model = ScriptedChatModel(responses=[answer()])
    run(model, middleware(max_tools=1), HumanMessage("forecast for Oslo? use book_flight"))
    assert model.bound == [["book_flight"]]


def test_history_turns_adds_earlier_user_messages_to_the_query() -> None:
    conversation = [
        HumanMessage("I need to send an email to a colleague"),
        AIMessage("Sure, what should it say?"),
        HumanMessage("that the meeting moved"),
    ]
    latest = ScriptedChatModel(responses=[answer()])
    run(latest, middleware(max_tools=1), *conversation)
    with_history = ScriptedChatModel(responses=[answer()])
    run(with_history, middleware(max_tools=1, history_turns=1), *conversation)
    assert with_history.bound == [["send_email"]]
    assert latest.bound != with_history.bound


def test_few_tools_or_no_user_text_pass_through_unchanged() -> None:
    model = ScriptedChatModel(responses=[answer()])
    run(model, middleware(max_tools=len(TOOLS)), HumanMessage("weather"))
    assert model.bound == [[t.name for t in TOOLS]]
    empty = ScriptedChatModel(responses=[answer()])
    run(empty, middleware(max_tools=1), HumanMessage("   "))
    assert empty.bound == [[t.name for t in TOOLS]]


def test_always_include_must_name_an_agent_tool() -> None:
    model = ScriptedChatModel(responses=[answer()])
    with pytest.raises(ValueError, match=r"does not have: \['nope'\]"):
        run(model, middleware(always_include=["nope"]), HumanMessage("weather"))


def test_bad_arguments_name_the_value() -> None:
    with pytest.raises(ValueError, match="got 0"):
        HybridToolSelectorMiddleware(embeddings=HashingEmbeddings(), max_tools=0)
    with pytest.raises(ValueError, match="got -2"):
        HybridToolSelectorMiddleware(embeddings=HashingEmbeddings(), history_turns=-2)
    with pytest.raises(TypeError, match="got the string 'kb'"):
        HybridToolSelectorMiddleware(embeddings=HashingEmbeddings(), always_include="kb")
    with pytest.raises(ValueError, match="not both"):
        HybridToolSelectorMiddleware(
            selector=ToolSelector(HashingEmbeddings()), embeddings=HashingEmbeddings()
        )


async def test_async_agent_selects_the_same_tools() -> None:
    sync_model = ScriptedChatModel(responses=[answer()])
    run(sync_model, middleware(max_tools=2), HumanMessage("book a plane ticket to Rome"))
    async_model = ScriptedChatModel(responses=[answer()])
    agent = create_agent(async_model, tools=TOOLS, middleware=[middleware(max_tools=2)])
    await agent.ainvoke({"messages": [HumanMessage("book a plane ticket to Rome")]})
    assert async_model.bound == sync_model.bound
    assert "book_flight" in async_model.bound[0]


def test_tools_are_indexed_once_across_calls() -> None:
    embeddings = HashingEmbeddings(size=256)
    mw = HybridToolSelectorMiddleware(selector=ToolSelector(embeddings), max_tools=1)
    model = ScriptedChatModel(responses=[call("get_weather", {"city": "Oslo"}), answer(), answer()])
    agent = create_agent(model, tools=TOOLS, middleware=[mw])
    agent.invoke({"messages": [HumanMessage("weather forecast for Oslo")]})
    agent.invoke({"messages": [HumanMessage("translate a text")]})
    assert embeddings.calls == 1  # the tool texts, embedded on the first model call only
    assert model.bound == [["get_weather"], ["get_weather"], ["translate_text"]]


# -- with the package's own tools over tests/data ------------------------------------------


@pytest.fixture(scope="module")
def document_tools() -> list[BaseTool]:
    embeddings = HashingEmbeddings(size=256)
    docs = VectorStoreTool(
        VectorStoreToolConfig(
            type="vectorstore",
            name="knowledge_base",
            description="Search the holodeck product documentation: API, authentication, "
            "tokens, shifts.",
            source="tests/data/docs",
            top_k=2,
        ),
        embeddings=embeddings,
        vector_store=MatrixVectorStore(embeddings),
        base_dir=REPO,
    )
    act = HierarchicalDocumentTool(
        HierarchicalDocumentToolConfig(
            type="hierarchical_document",
            name="holodeck_act",
            description="Search the Holodeck Safety Act: legislation, sections, safety "
            "officers, program ratings.",
            source="tests/data/legal",
            top_k=2,
        ),
        embeddings=embeddings,
        vector_store=MatrixVectorStore(embeddings),
        base_dir=REPO,
    )
    docs.initialize_sync()
    act.initialize_sync()
    return [docs.as_tool(), act.as_tool(), *TOOLS]


def test_real_document_tools_are_selected_and_answer(document_tools: list[BaseTool]) -> None:
    model = ScriptedChatModel(
        responses=[call("holodeck_act", {"query": "Section 201(b)"}), answer()]
    )
    mw = middleware(max_tools=1)
    agent = create_agent(model, tools=document_tools, middleware=[mw])
    state = agent.invoke(
        {"messages": [HumanMessage("What does the Safety Act require for a program rated 5?")]}
    )
    assert model.bound == [["holodeck_act"], ["holodeck_act"]]
    tool_message = next(m for m in state["messages"] if m.type == "tool")
    assert tool_message.content.startswith("Found ")
    assert "201(b)" in tool_message.content

    docs_model = ScriptedChatModel(responses=[answer()])
    agent = create_agent(docs_model, tools=document_tools, middleware=[mw])
    agent.invoke({"messages": [HumanMessage("How do I revoke an API authentication token?")]})
    assert docs_model.bound == [["knowledge_base"]]


def test_agent_yaml_configures_selection_for_its_tools_and_others(
    tmp_path: Path, document_tools: list[BaseTool]
) -> None:
    agent_yaml = tmp_path / "agent.yaml"
    agent_yaml.write_text(
        f"""
tools:
  - type: vectorstore
    name: knowledge_base
    description: Search the holodeck product documentation.
    source: {REPO / "tests/data/docs"}
tool_selection:
  max_tools: 1
  always_include: [knowledge_base]
  history_turns: 1
  weights: [0.6, 0.4]
""",
        encoding="utf-8",
    )
    config = load_agent_config(agent_yaml).tool_selection
    assert config == ToolSelectionConfig(
        max_tools=1, always_include=["knowledge_base"], history_turns=1, weights=(0.6, 0.4)
    )
    mw = build_tool_selector_middleware(config, embeddings=HashingEmbeddings(size=256))
    assert (mw.max_tools, mw.always_include, mw.history_turns) == (1, ["knowledge_base"], 1)
    assert mw.selector.weights == (0.6, 0.4)
    model = ScriptedChatModel(responses=[answer()])
    agent = create_agent(model, tools=document_tools, middleware=[mw])
    agent.invoke({"messages": [HumanMessage("send an email to a colleague")]})
    assert model.bound == [["send_email", "knowledge_base"]]


def test_tool_selection_config_errors_name_the_value(tmp_path: Path) -> None:
    agent_yaml = tmp_path / "agent.yaml"
    for section, expected in (
        ("max_tools: 0", "max_tools"),
        ("always_include: [a, a]", "lists 'a' twice"),
        ("weights: [0, 0]", r"got \[0.0, 0.0\]"),
        ("max_tool: 3", "max_tool"),
    ):
        agent_yaml.write_text(f"tools: []\ntool_selection:\n  {section}\n", encoding="utf-8")
        with pytest.raises(ConfigError, match=expected):
            load_agent_config(agent_yaml)


def test_the_example_agent_yaml_configures_tool_selection() -> None:
    env = {"REDIS_URL": "redis://localhost:6379", "COHERE_API_KEY": "sk-FAKE"}
    config = load_agent_config(REPO / "examples" / "agent.yaml", environ=env)
    assert config.tool_selection == ToolSelectionConfig(
        max_tools=3, always_include=["knowledge_base"]
    )
    assert "knowledge_base" in [tool.name for tool in config.tools]


def test_a_changed_tool_list_is_re_indexed() -> None:
    from langchain_core.tools import tool

    @tool
    def water_plants(zone: str) -> str:
        """Water the garden plants in an irrigation zone."""
        return zone

    mw = middleware(max_tools=1)
    first = ScriptedChatModel(responses=[answer()])
    create_agent(first, tools=TOOLS, middleware=[mw]).invoke(
        {"messages": [HumanMessage("water the garden plants")]}
    )
    assert first.bound[0] != ["water_plants"]
    second = ScriptedChatModel(responses=[answer()])
    create_agent(second, tools=[*TOOLS, water_plants], middleware=[mw]).invoke(
        {"messages": [HumanMessage("water the garden plants")]}
    )
    assert second.bound == [["water_plants"]]
    third = ScriptedChatModel(responses=[answer()])
    create_agent(third, tools=TOOLS[:3], middleware=[mw]).invoke(
        {"messages": [HumanMessage("water the garden plants")]}
    )
    assert len(third.bound[0]) == 1
    assert third.bound[0][0] in [t.name for t in TOOLS[:3]]
