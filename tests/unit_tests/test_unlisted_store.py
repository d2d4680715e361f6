"""A LangChain store no backend can list: the keyword and exact indexes still hold every chunk."""

from __future__ import annotations

import logging
import math
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import VectorStore

from langchain_holodeck import HierarchicalDocumentTool, HierarchicalDocumentToolConfig
from tests.helpers import DATA_DIR, HashingEmbeddings


class UnlistedStore(VectorStore):
    """Only add_documents, get_by_ids and a scored search: no enumeration, no delete."""

    def __init__(self, embeddings: Embeddings) -> None:
        self._embeddings = embeddings
        self._rows: dict[str, tuple[Document, list[float]]] = {}
        self.embedded = 0

    @property
    def embeddings(self) -> Embeddings:
        return self._embeddings

    def add_documents(self, documents: list[Document], **kwargs: Any) -> list[str]:
        ids = kwargs.get("ids") or [d.id for d in documents]
        vectors = self._embeddings.embed_documents([d.page_content for d in documents])
        self.embedded += len(documents)
        for doc_id, doc, vector in zip(ids, documents, vectors, strict=True):
            self._rows[doc_id] = (doc.model_copy(update={"id": doc_id}), vector)
        return list(ids)

    def get_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        return [self._rows[i][0] for i in ids if i in self._rows]

    def similarity_search_with_score(
        self, query: str, k: int = 4, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        q = self._embeddings.embed_query(query)

        def cosine(v: list[float]) -> float:
            norm = math.sqrt(sum(x * x for x in v)) * math.sqrt(sum(x * x for x in q)) or 1.0
            return sum(a * b for a, b in zip(q, v, strict=True)) / norm

        hits = [(doc, cosine(vector)) for doc, vector in self._rows.values()]
        return sorted(hits, key=lambda hit: -hit[1])[:k]

    def similarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Document]:
        return [doc for doc, _ in self.similarity_search_with_score(query, k=k)]

    @classmethod
    def from_texts(cls, *args: Any, **kwargs: Any) -> UnlistedStore:
        raise NotImplementedError


def _tool(store: VectorStore, legal: Path, store_dir: Path | None) -> HierarchicalDocumentTool:
    config = HierarchicalDocumentToolConfig(
        type="hierarchical_document", name="act", source=str(legal), top_k=3
    )
    return HierarchicalDocumentTool(
        config,
        vector_store=store,
        project_dir=legal.parent,
        home_dir=legal.parent,
        store_dir=store_dir,
    )


def _assert_indexes_complete(tool: HierarchicalDocumentTool) -> None:
    retriever = tool.as_retriever()
    (first, *_) = retriever.invoke("Section 202")
    assert first.metadata["exact_rank"] == 1
    assert "second officer shall remain" in first.page_content
    hits = retriever.invoke("logged seven years")
    keyword = [d for d in hits if d.metadata["keyword_rank"] == 1]
    assert keyword, [d.metadata for d in hits]
    assert "seven years" in keyword[0].page_content


@pytest.mark.parametrize("persisted", [False, True], ids=["no-store-dir", "store-dir"])
def test_a_store_that_cannot_be_listed_still_gets_complete_keyword_and_exact_indexes(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, *, persisted: bool
) -> None:
    legal = tmp_path / "legal"
    shutil.copytree(DATA_DIR / "legal", legal)
    store = UnlistedStore(HashingEmbeddings())
    store_dir = tmp_path / "store" if persisted else None
    tool = _tool(store, legal, store_dir)
    with caplog.at_level(logging.WARNING):
        first = tool.initialize_sync()
    assert first.added > 0
    assert first.failed == 0
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, warnings
    assert "UnlistedStore cannot be listed" in warnings[0]
    assert "\n" not in warnings[0]
    _assert_indexes_complete(tool)
    embedded = store.embedded

    assert tool.initialize_sync().skipped == first.added  # re-initialize: same instance
    _assert_indexes_complete(tool)
    again = _tool(store, legal, store_dir)  # a new instance over the same store
    assert again.initialize_sync().skipped == first.added
    _assert_indexes_complete(again)
    assert again.definitions == tool.definitions != {}  # built from every chunk, both times
    assert store.embedded == embedded  # nothing was embedded again
