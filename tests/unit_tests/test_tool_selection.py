"""ToolSelector: the index over tools, hybrid ranking, mentions, incremental updates."""

from __future__ import annotations

import dataclasses
from typing import Annotated

import pytest
from langchain_core.stores import InMemoryByteStore
from langchain_core.tools import BaseTool, InjectedToolArg, StructuredTool, tool
from pydantic import BaseModel, Field

from langchain_holodeck import (
    CachedEmbeddings,
    ToolMatch,
    ToolSelector,
    find_tool_mentions,
    reciprocal_rank_fusion,
    tool_text,
)
from tests.helpers import HashingEmbeddings


class TicketQuery(BaseModel):
    text: str = Field(description="Words to look for in the ticket title and body")
    status: str = Field(description="open, pending or closed")


@tool(args_schema=TicketQuery)
def search_tickets(text: str, status: str) -> str:
    """Find customer support tickets in the helpdesk."""
    return text + status


@tool
def get_weather(city: str) -> str:
    """Weather forecast: rain, temperature and wind for a city."""
    return city


@tool
def send_email(to: str, body: str) -> str:
    """Send an email message to a colleague."""
    return to + body


@tool
def convert_currency(amount: float, currency: str) -> str:
    """Convert money between currencies at today's exchange rate."""
    return f"{amount}{currency}"


@tool
def book_flight(origin: str, destination: str) -> str:
    """Book a plane ticket between two airports."""
    return origin + destination


@tool
def translate_text(text: str, language: str) -> str:
    """Translate a text into another language."""
    return text + language


@tool
def search(query: str) -> str:
    """Look up design courses and workshops."""
    return query


TOOLS: list[BaseTool] = [
    search_tickets,
    get_weather,
    send_email,
    convert_currency,
    book_flight,
    translate_text,
    search,
]


@pytest.fixture
def selector() -> ToolSelector:
    s = ToolSelector(HashingEmbeddings(size=256))
    s.add_tools(TOOLS)
    return s


def test_tool_text_has_name_words_description_and_argument_descriptions() -> None:
    text = tool_text(search_tickets)
    assert text.splitlines()[0] == "search_tickets (search tickets)"
    assert "Find customer support tickets in the helpdesk." in text
    assert "text: Words to look for in the ticket title and body" in text
    assert "status: open, pending or closed" in text


def test_tool_text_splits_camel_case_names() -> None:
    @tool
    def FinanceTool(ticker: str) -> str:
        """Stock quotes."""
        return ticker

    assert tool_text(FinanceTool).splitlines()[0] == "FinanceTool (finance tool)"


def test_select_ranks_the_relevant_tool_first(selector: ToolSelector) -> None:
    assert selector.select("will it rain in Lyon, weather forecast?", k=1)[0].name == "get_weather"
    assert selector.select("exchange rate to convert euros", k=1)[0].name == "convert_currency"


def test_select_returns_frozen_matches_with_both_leg_scores(selector: ToolSelector) -> None:
    (match,) = selector.select("translate this text into French", k=1)
    assert match.name == "translate_text"
    assert match.semantic_score is not None
    assert 0 < match.semantic_score <= 1
    assert match.keyword_score is not None
    assert match.keyword_score > 0
    assert match.mentioned is False
    with pytest.raises(dataclasses.FrozenInstanceError):
        match.name = "other"  # type: ignore[misc]


def test_fused_score_is_the_packages_rrf_of_the_two_legs(selector: ToolSelector) -> None:
    query = "support tickets about email"
    matches = selector.select(query, k=len(TOOLS))
    vector = selector.embeddings.embed_query(query)
    dense = selector._dense.similarity_search_with_score_by_vector(vector, k=20)
    keyword = selector._keyword.search(query, k=20)
    expected = reciprocal_rank_fusion(
        [[(d.id, s) for d, s in dense], list(keyword)], weights=(0.5, 0.5), k=60
    )
    assert [(m.name, m.fused_score) for m in matches] == [
        (name, pytest.approx(score)) for name, score in expected
    ]


def test_keyword_score_is_none_when_bm25_does_not_match(selector: ToolSelector) -> None:
    matches = selector.select("weather", k=len(TOOLS))
    assert matches[0].name == "get_weather"
    assert all(m.keyword_score is None for m in matches[1:])


def test_k_caps_the_selection(selector: ToolSelector) -> None:
    assert len(selector.select("tickets email flight weather", k=3)) == 3
    assert len(selector.select("tickets", k=100)) == len(TOOLS)


def test_a_distinctive_tool_name_in_the_query_is_always_selected_first(
    selector: ToolSelector,
) -> None:
    matches = selector.select("what's the weather in Paris? then use search_tickets", k=2)
    assert [m.name for m in matches][:2] == ["search_tickets", "get_weather"]
    assert matches[0].mentioned is True
    assert matches[1].mentioned is False


def test_mentions_beyond_k_are_all_selected(selector: ToolSelector) -> None:
    matches = selector.select("run `send_email`, `book_flight` and `search_tickets`", k=1)
    assert [m.name for m in matches] == ["send_email", "book_flight", "search_tickets"]


def test_a_plain_word_tool_name_is_a_mention_only_when_quoted(selector: ToolSelector) -> None:
    bare = selector.select("search for a cheap flight between two airports", k=1)
    assert bare[0].name == "book_flight"
    assert not bare[0].mentioned
    quoted = selector.select("use `search` to find a cheap flight", k=1)
    assert quoted[0].name == "search"
    assert quoted[0].mentioned


def test_find_tool_mentions_needs_a_whole_identifier() -> None:
    names = ["search_tickets", "get_weather", "FinanceTool", "calculator"]
    assert find_tool_mentions("use search_tickets_v2 please", names) == []
    assert find_tool_mentions("use my_search_tickets", names) == []
    assert find_tool_mentions("FinanceTool, then get_weather.", names) == [
        "FinanceTool",
        "get_weather",
    ]
    assert find_tool_mentions("a calculator would help", names) == []
    assert find_tool_mentions('try "calculator"', names) == ["calculator"]
    assert find_tool_mentions("GET_WEATHER", names) == []  # names are case-sensitive


def test_mentions_can_be_switched_off() -> None:
    selector = ToolSelector(HashingEmbeddings(size=256), mentions=False)
    selector.add_tools(TOOLS)
    matches = selector.select("weather forecast rain, search_tickets", k=1)
    assert matches[0].name == "get_weather"
    assert not matches[0].mentioned


def test_tools_are_added_and_removed_incrementally(selector: ToolSelector) -> None:
    @tool
    def water_plants(zone: str) -> str:
        """Water the garden plants in an irrigation zone."""
        return zone

    assert selector.add_tools([water_plants]) == 1
    assert selector.select("water the garden plants", k=1)[0].name == "water_plants"
    assert selector.remove_tools(["water_plants", "not_a_tool"]) == 1
    assert "water_plants" not in selector
    assert all(m.name != "water_plants" for m in selector.select("garden plants", k=10))
    assert len(selector) == len(TOOLS)


def test_re_adding_a_tool_replaces_it_by_name(selector: ToolSelector) -> None:
    @tool("get_weather")
    def new_weather(city: str) -> str:
        """Tide tables and harbour information."""
        return city

    assert selector.add_tools([new_weather]) == 1
    assert len(selector) == len(TOOLS)
    assert selector.select("tide tables for the harbour", k=1)[0].name == "get_weather"
    assert "get_weather" not in [m.name for m in selector.select("rain forecast wind", k=1)]


def test_unchanged_tools_are_not_re_embedded() -> None:
    embeddings = HashingEmbeddings(size=256)
    selector = ToolSelector(embeddings)
    selector.add_tools(TOOLS)
    calls = embeddings.calls
    assert selector.add_tools(TOOLS) == 0
    assert embeddings.calls == calls


def test_the_embedding_cache_serves_a_new_selector() -> None:
    embeddings = HashingEmbeddings(size=256)
    store = InMemoryByteStore()
    ToolSelector(embeddings, cache=store).add_tools(TOOLS)
    texts = embeddings.texts_embedded
    second = ToolSelector(CachedEmbeddings(embeddings, store))
    assert second.add_tools(TOOLS) == len(TOOLS)  # indexed ...
    assert embeddings.texts_embedded == texts  # ... from the cache, no model call
    assert second.select("weather forecast", k=1)[0].name == "get_weather"


def test_among_restricts_the_candidates(selector: ToolSelector) -> None:
    matches = selector.select("weather forecast, send an email", k=5, among=["send_email"])
    assert [m.name for m in matches] == ["send_email"]
    assert selector.select("weather", k=5, among=[]) == []
    mentioned = selector.select("use search_tickets", k=5, among=["get_weather"])
    assert "search_tickets" not in [m.name for m in mentioned]


async def test_async_twins_agree_with_sync() -> None:
    sync_selector = ToolSelector(HashingEmbeddings(size=256))
    sync_selector.add_tools(TOOLS)
    async_selector = ToolSelector(HashingEmbeddings(size=256))
    assert await async_selector.aadd_tools(TOOLS) == len(TOOLS)
    for query in ("translate text", "use `search` please", "currency exchange rate"):
        assert await async_selector.aselect(query, k=3) == sync_selector.select(query, k=3)


def test_empty_selector_and_empty_query_select_nothing(selector: ToolSelector) -> None:
    assert ToolSelector(HashingEmbeddings()).select("weather", k=3) == []
    assert selector.select("   ", k=3) == []


def test_bad_arguments_name_the_value(selector: ToolSelector) -> None:
    with pytest.raises(ValueError, match="got 0"):
        selector.select("weather", k=0)
    with pytest.raises(ValueError, match="got -1"):
        ToolSelector(HashingEmbeddings(), fetch_k=-1)
    with pytest.raises(ValueError, match=r"weights\[1\] must be a finite number >= 0, got -1"):
        ToolSelector(HashingEmbeddings(), weights=(0.5, -1))
    with pytest.raises(ValueError, match="two numbers"):
        ToolSelector(HashingEmbeddings(), weights=(0.5, 0.5, 0.5))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"tools\[1\] must be a langchain BaseTool, got str"):
        selector.add_tools([get_weather, "get_weather"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match=r"tools\[0\] and tools\[1\] are both named 'get_weather'"):
        selector.add_tools([get_weather, get_weather])
    with pytest.raises(TypeError, match="got the string 'get_weather'"):
        selector.select("weather", among="get_weather")
    cached = CachedEmbeddings(HashingEmbeddings(), InMemoryByteStore())
    with pytest.raises(ValueError, match="already a CachedEmbeddings"):
        ToolSelector(cached, cache=InMemoryByteStore())


def test_tool_match_is_a_value() -> None:
    a = ToolMatch("t", 0.1, 0.5, None, mentioned=False)
    assert a == ToolMatch("t", 0.1, 0.5, None, mentioned=False)


def test_a_failed_embedding_call_indexes_nothing_and_is_retried() -> None:
    embeddings = HashingEmbeddings(size=256, fail_on="helpdesk")
    selector = ToolSelector(embeddings)
    with pytest.raises(RuntimeError, match="helpdesk"):
        selector.add_tools(TOOLS)
    assert len(selector) == 0
    embeddings.fail_on = None
    assert selector.add_tools(TOOLS) == len(TOOLS)
    assert selector.select("support tickets helpdesk", k=1)[0].name == "search_tickets"


def test_a_tool_whose_description_changed_in_place_is_re_indexed() -> None:
    @tool
    def lookup(term: str) -> str:
        """Dictionary definitions of words."""
        return term

    selector = ToolSelector(HashingEmbeddings(size=256))
    selector.add_tools([lookup, get_weather])
    lookup.description = "Train timetables and railway departures."
    assert selector.add_tools([lookup, get_weather]) == 1
    assert selector.select("railway timetables", k=1)[0].name == "lookup"


def test_tool_text_skips_injected_arguments_and_reads_json_schemas() -> None:
    @tool
    def lookup_order(order_id: str, user_token: Annotated[str, InjectedToolArg]) -> str:
        """Look up an order by its id."""
        return order_id + user_token

    text = tool_text(lookup_order)
    assert "order id" in text
    assert "user token" not in text

    json_tool = StructuredTool(
        name="create_invoice",
        description="Create an invoice.",
        args_schema={
            "type": "object",
            "properties": {"amount": {"type": "number", "description": "Total in euros"}},
        },
        func=lambda amount: amount,
    )
    assert tool_text(json_tool).splitlines()[-1] == "amount: Total in euros"


@pytest.mark.parametrize(
    ("query", "found"),
    [
        ("I'd like 'search' now", ["search"]),  # the apostrophe of I'd opens no quote
        ("it's the search tool, isn't it", []),
        ("use 'search'", ["search"]),
    ],
)
def test_an_apostrophe_is_not_a_quote(query: str, found: list[str]) -> None:
    assert find_tool_mentions(query, ["search"]) == found


async def test_a_query_or_tools_of_the_wrong_type_name_the_parameter(
    selector: ToolSelector,
) -> None:
    with pytest.raises(TypeError, match=r"query must be a string, got NoneType None\."):
        selector.select(None)  # type: ignore[arg-type]  # the mistake under test
    with pytest.raises(TypeError, match=r"query must be a string, got int 5\."):
        await selector.aselect(5)  # type: ignore[arg-type]  # the mistake under test
    with pytest.raises(TypeError, match=r"got the tool 'search'; pass \[tool\]"):
        selector.add_tools(search)  # type: ignore[arg-type]  # the mistake under test
