"""langchain-tests' standard tool suites for ``as_tool()`` of both tools, run in memory."""

from __future__ import annotations

import functools
import re

from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langchain_tests.integration_tests import ToolsIntegrationTests
from langchain_tests.unit_tests import ToolsUnitTests

from langchain_holodeck.config import HierarchicalDocumentToolConfig, VectorStoreToolConfig
from langchain_holodeck.tools import HierarchicalDocumentTool, VectorStoreTool
from tests.helpers import DATA_DIR, HashingEmbeddings

HEADER = re.compile(r"^\[1\] Score: \d\.\d+ \| Source: \S+", re.M)


@functools.cache
def vector_store_tool() -> BaseTool:
    """Built once per session: ingestion of tests/data/docs is the slow part."""
    config = VectorStoreToolConfig(
        type="vectorstore",
        name="knowledge_base",
        description="Semantic search over the holodeck documentation.",
        source=str(DATA_DIR / "docs"),
        top_k=3,
    )
    tool = VectorStoreTool(
        config, embeddings=HashingEmbeddings(), project_dir=DATA_DIR, home_dir=DATA_DIR
    )
    tool.initialize_sync()
    return tool.as_tool()


@functools.cache
def hierarchical_tool() -> BaseTool:
    config = HierarchicalDocumentToolConfig(
        type="hierarchical_document",
        name="legal_docs",
        description="Hybrid search over the Holodeck Safety Act.",
        source=str(DATA_DIR / "legal"),
        top_k=3,
    )
    tool = HierarchicalDocumentTool(
        config, embeddings=HashingEmbeddings(), project_dir=DATA_DIR, home_dir=DATA_DIR
    )
    tool.initialize_sync()
    return tool.as_tool()


class TestVectorStoreToolUnit(ToolsUnitTests):
    @property
    def tool_constructor(self) -> BaseTool:
        return vector_store_tool()

    @property
    def tool_invoke_params_example(self) -> dict:
        return {"query": "which endpoint accepts GET and POST requests"}


class TestVectorStoreToolIntegration(ToolsIntegrationTests):
    @property
    def tool_constructor(self) -> BaseTool:
        return vector_store_tool()

    @property
    def tool_invoke_params_example(self) -> dict:
        return {"query": "which endpoint accepts GET and POST requests"}


class TestHierarchicalDocumentToolUnit(ToolsUnitTests):
    @property
    def tool_constructor(self) -> BaseTool:
        return hierarchical_tool()

    @property
    def tool_invoke_params_example(self) -> dict:
        return {"query": "What does Section 203(a)(1) require?"}


class TestHierarchicalDocumentToolIntegration(ToolsIntegrationTests):
    @property
    def tool_constructor(self) -> BaseTool:
        return hierarchical_tool()

    @property
    def tool_invoke_params_example(self) -> dict:
        return {"query": "What does Section 203(a)(1) require?"}


# The standard suites only check shapes; these pin what a model actually receives.


def test_vector_store_tool_schema_has_one_required_query_string() -> None:
    schema = convert_to_openai_tool(vector_store_tool())["function"]["parameters"]
    assert schema["required"] == ["query"]
    assert list(schema["properties"]) == ["query"]
    assert schema["properties"]["query"]["type"] == "string"


def test_tool_call_returns_the_contract_output_in_a_tool_message() -> None:
    message = vector_store_tool().invoke(
        {
            "name": "knowledge_base",
            "args": {"query": "which endpoint accepts GET and POST requests"},
            "id": "call-1",
            "type": "tool_call",
        }
    )
    assert message.tool_call_id == "call-1"
    assert message.content.startswith("Found 3 result(s):\n\n")
    assert HEADER.search(message.content)


async def test_hierarchical_tool_ainvoke_puts_the_named_section_first() -> None:
    output = await hierarchical_tool().ainvoke({"query": "Section 203(a)(1)"})
    first = output.split("\n\n[2]")[0]
    assert first.startswith("Found 3 result(s):\n\n[1] Score: ")
    assert "203(a)(1)" in first
