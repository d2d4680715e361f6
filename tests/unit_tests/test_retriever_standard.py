"""langchain-tests' standard retriever suite, run in memory as a unit test."""

import importlib.util

import pytest
from langchain_core.documents import Document
from langchain_tests.integration_tests import RetrieversIntegrationTests

from langchain_holodeck.exact import ExactMatchIndex
from langchain_holodeck.keyword_index import BM25KeywordIndex
from langchain_holodeck.retrievers import HybridRetriever
from langchain_holodeck.vectorstores import MatrixVectorStore
from tests.helpers import HashingEmbeddings

CORPUS = [
    Document(
        id=f"c{i}",
        page_content=text,
        metadata={"source_path": "safety.md", "section_id": str(i + 1)},
    )
    for i, text in enumerate(
        [
            "Holodeck safety protocols must stay engaged during every program.",
            "The safety interlock limits the force a simulation can exert.",
            "Protocols for disabling safety require two senior officers.",
            "Crew shifts are scheduled weekly by the duty officer.",
            "The arch controls end any holodeck program at once.",
        ]
    )
]


def _parts() -> dict:
    store = MatrixVectorStore(HashingEmbeddings())
    store.add_documents(CORPUS)
    bm25 = BM25KeywordIndex()
    bm25.upsert(CORPUS)
    exact = ExactMatchIndex()
    exact.upsert(CORPUS)
    return {"vector_store": store, "keyword_index": bm25, "exact_index": exact}


class TestHybridRetriever(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[HybridRetriever]:
        return HybridRetriever

    @property
    def retriever_constructor_params(self) -> dict:
        return _parts()

    @property
    def retriever_query_example(self) -> str:
        return "holodeck safety protocols"


def _native_qdrant_parts() -> dict:
    """The same corpus in Qdrant (local, in memory), fused by the engine (``native``)."""
    from qdrant_client import QdrantClient

    from langchain_holodeck.vectorstores.qdrant import HolodeckQdrantVectorStore

    store = HolodeckQdrantVectorStore(
        QdrantClient(location=":memory:"), "standard", HashingEmbeddings()
    )
    store.add_documents(CORPUS)
    exact = ExactMatchIndex()
    exact.upsert(CORPUS)
    return {"vector_store": store, "exact_index": exact, "search_strategy": "native"}


@pytest.mark.skipif(
    importlib.util.find_spec("qdrant_client") is None, reason="needs the qdrant extra"
)
class TestNativeHybridRetrieverOnQdrant(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[HybridRetriever]:
        return HybridRetriever

    @property
    def retriever_constructor_params(self) -> dict:
        return _native_qdrant_parts()

    @property
    def retriever_query_example(self) -> str:
        return "holodeck safety protocols"
