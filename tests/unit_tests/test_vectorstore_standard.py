"""LangChain's standard vector store suite (sync and async), run in memory."""

from __future__ import annotations

import pytest
from langchain_core.vectorstores import VectorStore
from langchain_tests.integration_tests import VectorStoreIntegrationTests

from langchain_holodeck.vectorstores import MatrixVectorStore


class TestMatrixVectorStoreStandard(VectorStoreIntegrationTests):
    @pytest.fixture
    def vectorstore(self) -> VectorStore:
        return MatrixVectorStore(self.get_embeddings())
