"""fetch_k and fusion: configured on the hierarchical tool, defaulted from the retriever."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from pydantic import ValidationError

from langchain_holodeck.config import HierarchicalDocumentToolConfig
from langchain_holodeck.retrievers import HybridRetriever
from langchain_holodeck.retrievers.hybrid import DEFAULT_FETCH_K, DEFAULT_FUSION, DEFAULT_WEIGHTS
from langchain_holodeck.tools import HierarchicalDocumentTool
from tests.helpers import DATA_DIR, HashingEmbeddings


def config(**fields: object) -> HierarchicalDocumentToolConfig:
    return HierarchicalDocumentToolConfig(
        type="hierarchical_document", name="legal", source="legal", **fields
    )


def test_config_defaults_are_the_retrievers() -> None:
    weights = config().search_weights
    assert (weights.semantic, weights.keyword, weights.exact) == DEFAULT_WEIGHTS
    assert config().fetch_k == DEFAULT_FETCH_K == HybridRetriever.model_fields["fetch_k"].default
    assert config().fusion == DEFAULT_FUSION == HybridRetriever.model_fields["fusion"].default


def test_fetch_k_below_top_k_is_refused_naming_both() -> None:
    with pytest.raises(ValidationError, match=r"fetch_k \(5\) must be >= top_k \(10\)"):
        config(fetch_k=5, top_k=10)


@pytest.mark.parametrize("bad", [{"fetch_k": 0}, {"fetch_k": 1001}, {"fusion": "linear"}])
def test_out_of_range_values_are_refused(bad: dict) -> None:
    with pytest.raises(ValidationError):
        config(**bad)


async def test_the_tool_builds_its_retriever_with_them(tmp_path: Path) -> None:
    shutil.copytree(DATA_DIR / "legal", tmp_path / "legal")
    cfg = config(fetch_k=123, fusion="convex", top_k=3)
    tool = HierarchicalDocumentTool(
        cfg,
        embeddings=HashingEmbeddings(),
        base_dir=tmp_path,
        project_dir=tmp_path,
        home_dir=tmp_path,
    )
    await tool.initialize()
    retriever = tool.as_retriever()
    assert isinstance(retriever, HybridRetriever)
    assert (retriever.fetch_k, retriever.fusion) == (123, "convex")
    assert len(await tool.search("Section 201(b)")) > 0
