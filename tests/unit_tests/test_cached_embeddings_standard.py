"""langchain-tests' standard embeddings suites for ``CachedEmbeddings``, in memory.

Run twice: caching only documents (the default) and queries too (``cache_queries=True``),
each over a fresh in-memory byte store, so both the cold and the cached paths are checked.
"""

from __future__ import annotations

from langchain_core.stores import InMemoryByteStore
from langchain_tests.integration_tests import EmbeddingsIntegrationTests
from langchain_tests.unit_tests import EmbeddingsUnitTests

from langchain_holodeck.embeddings import CachedEmbeddings
from tests.helpers import HashingEmbeddings


class _Params:
    cache_queries = False

    @property
    def embeddings_class(self) -> type[CachedEmbeddings]:
        return CachedEmbeddings

    @property
    def embedding_model_params(self) -> dict:
        return {
            "underlying": HashingEmbeddings(),
            "store": InMemoryByteStore(),
            "cache_queries": self.cache_queries,
        }


class TestCachedEmbeddingsUnit(_Params, EmbeddingsUnitTests):
    pass


class TestCachedEmbeddingsStandard(_Params, EmbeddingsIntegrationTests):
    pass


class TestCachedQueryEmbeddingsStandard(_Params, EmbeddingsIntegrationTests):
    cache_queries = True
