"""Changing embedding_model to one of another dimension: detected, and force_ingest recovers."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.stores import InMemoryByteStore
from langchain_core.vectorstores import InMemoryVectorStore

from langchain_holodeck.backends import MemoryBackend
from langchain_holodeck.config import HierarchicalDocumentToolConfig, VectorStoreToolConfig
from langchain_holodeck.embeddings import CachedEmbeddings, LocalEmbeddings, embedding_dimension
from langchain_holodeck.errors import EmbeddingModelMismatchError
from langchain_holodeck.tools import HierarchicalDocumentTool, VectorStoreTool
from langchain_holodeck.vectorstores import MatrixVectorStore
from tests.helpers import DATA_DIR, HashingEmbeddings, needs_sentence_transformers

FIX = r"force_ingest=True"


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    shutil.copytree(DATA_DIR / "docs", tmp_path / "docs")
    return tmp_path / "docs"


def vector_tool(docs: Path, tmp_path: Path, size: int) -> VectorStoreTool:
    config = VectorStoreToolConfig(type="vectorstore", name="kb", source=str(docs), top_k=3)
    return VectorStoreTool(
        config,
        embeddings=HashingEmbeddings(size),
        project_dir=tmp_path,
        home_dir=tmp_path,
        store_dir=tmp_path / "store",
    )


async def test_saved_in_memory_store_of_another_dimension_is_refused_then_rebuilt(
    docs: Path, tmp_path: Path
) -> None:
    first = await vector_tool(docs, tmp_path, 64).initialize()
    changed = vector_tool(docs, tmp_path, 32)  # a new process: the saved 64-wide matrix loads
    with pytest.raises(EmbeddingModelMismatchError, match=r"holds 64-dimensional .* 32-") as info:
        await changed.initialize()
    assert FIX in str(info.value)
    result = await changed.initialize(True)
    assert (result.added + result.updated, result.failed) == (first.added, 0)
    assert "docs/api.md" in await changed.search("endpoint users GET POST requests")
    reloaded = vector_tool(docs, tmp_path, 32)  # the rebuilt store was saved at 32
    assert (await reloaded.initialize()).skipped == first.added
    assert MemoryBackend().vector_dimension(reloaded.as_retriever().vector_store) == 32  # type: ignore[attr-defined]


async def test_hierarchical_tool_recovers_too(tmp_path: Path) -> None:
    shutil.copytree(DATA_DIR / "legal", tmp_path / "legal")

    def tool(size: int) -> HierarchicalDocumentTool:
        config = HierarchicalDocumentToolConfig(
            type="hierarchical_document", name="act", source=str(tmp_path / "legal"), top_k=3
        )
        return HierarchicalDocumentTool(
            config,
            embeddings=HashingEmbeddings(size),
            project_dir=tmp_path,
            home_dir=tmp_path,
            store_dir=tmp_path / "store",
        )

    await tool(64).initialize()
    changed = tool(16)
    with pytest.raises(EmbeddingModelMismatchError, match=FIX):
        await changed.initialize()
    assert (await changed.initialize(True)).failed == 0
    docs = await changed.as_retriever().ainvoke("Section 203(a)(1)")
    assert docs[0].metadata["section_id"] == "203(a)(1)"
    assert docs[0].metadata["semantic_rank"] is not None  # the dense leg answers again


async def test_langchain_in_memory_store_of_another_dimension(docs: Path) -> None:
    store = InMemoryVectorStore(HashingEmbeddings(64))
    config = VectorStoreToolConfig(type="vectorstore", name="kb", source=str(docs), top_k=3)
    await VectorStoreTool(config, vector_store=store).initialize()
    store.embedding = HashingEmbeddings(32)  # the model behind the store changed
    changed = VectorStoreTool(config, vector_store=store)
    with pytest.raises(EmbeddingModelMismatchError, match=FIX):
        await changed.initialize()
    assert (await changed.initialize(True)).failed == 0
    assert {len(record["vector"]) for record in store.store.values()} == {32}
    output = await changed.search("endpoint users GET POST requests")
    assert output.startswith("Found 3 result(s)")  # over 32-wide vectors only: no error


def test_a_store_shared_with_another_corpus_is_not_rebuilt() -> None:
    store = MatrixVectorStore(HashingEmbeddings(8))
    store.add_documents(
        [
            Document(id="a", page_content="alpha", metadata={"namespace": "kb"}),
            Document(id="b", page_content="beta", metadata={"namespace": "other"}),
        ]
    )
    with pytest.raises(EmbeddingModelMismatchError, match=r"also holds chunks of 'other'") as info:
        MemoryBackend().rebuild_for_dimension(store, namespace="kb", dimension=4)
    assert "its own store (another store_dir=, CLI --store)" in str(info.value)
    assert (store.document_count, store.embedding_dimension) == (2, 8)


def test_the_setting_that_gives_a_corpus_its_own_store_is_the_providers() -> None:
    """The refusal asked every provider for 'another database.index_name': PostgreSQL names
    it table_name, Qdrant collection_name."""
    from langchain_holodeck.backends._registry import _BACKENDS, load_builtin_providers

    load_builtin_providers()
    for provider, backend in _BACKENDS.items():
        if provider == "in-memory":  # a directory, not a database field
            continue
        field = backend.own_store.removeprefix("another database.").split(",")[0]
        config = backend.config_type
        assert config is not None, provider
        assert field in config.model_fields, (provider, field)
    assert _BACKENDS["postgres"].own_store == "another database.table_name"


def test_embedding_dimension_reads_settings_before_probing() -> None:
    class Probed(Embeddings):  # states no dimension: must be measured
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [[0.0] * 7 for _ in texts]

        def embed_query(self, text: str) -> list[float]:
            return [0.0] * 7

    assert embedding_dimension(HashingEmbeddings(12)) == 12
    assert embedding_dimension(Probed()) == 7
    assert embedding_dimension(CachedEmbeddings(HashingEmbeddings(5), InMemoryByteStore())) == 5


@needs_sentence_transformers
def test_local_embeddings_state_their_dimension_without_loading() -> None:
    assert embedding_dimension(LocalEmbeddings()) == 384  # the default: no model load


class _OtherModel(HashingEmbeddings):
    """Another model of the same width: another ``embedding_model_id``, same dimension."""


def test_opening_without_sync_refuses_a_store_another_model_of_the_same_width_made(
    docs: Path, tmp_path: Path
) -> None:
    # serve opens tools with open_sync (nothing synced): it answered queries embedded by the
    # new model from the old model's vectors (a store of an older version: another model id)
    vector_tool(docs, tmp_path, 64).initialize_sync()
    config = VectorStoreToolConfig(type="vectorstore", name="kb", source=str(docs), top_k=3)
    changed = VectorStoreTool(
        config,
        embeddings=_OtherModel(64),
        project_dir=tmp_path,
        home_dir=tmp_path,
        store_dir=tmp_path / "store",
    )
    with pytest.raises(EmbeddingModelMismatchError, match=r"'HashingEmbeddings:size=64'") as info:
        changed.open_sync()
    assert "'_OtherModel:size=64'" in str(info.value)
    assert FIX in str(info.value)
    assert not changed.is_initialized
    assert vector_tool(docs, tmp_path, 64).open_sync() > 0  # the same model opens it
