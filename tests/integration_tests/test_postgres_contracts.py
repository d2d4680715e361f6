"""What every backend promises, on the real Postgres at POSTGRES_URL: idempotent sync, model
windows, a new embedding dimension, the embedding cache per corpus, and the tool's search
strategies (native hybrid picked from the backend's capabilities, fallback on request)."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from langchain_core.documents import Document

from langchain_holodeck import HybridRetriever
from langchain_holodeck.config import HierarchicalDocumentToolConfig, VectorStoreToolConfig
from langchain_holodeck.errors import EmbeddingModelMismatchError
from langchain_holodeck.sync import stable_id, sync_documents
from langchain_holodeck.tools import HierarchicalDocumentTool, VectorStoreTool
from langchain_holodeck.vectorstores.postgres import PostgresVectorStore
from tests.helpers import (
    DATA_DIR,
    LONG_CHUNK,
    SHORT_CHUNK,
    WINDOW_TAIL,
    HashingEmbeddings,
    WindowedHashingEmbeddings,
    chunk_documents,
)

pytestmark = pytest.mark.postgres


@pytest.fixture
def root(tmp_path: Path) -> Path:
    shutil.copytree(DATA_DIR / "docs", tmp_path / "docs")
    shutil.copytree(DATA_DIR / "legal", tmp_path / "legal")
    return tmp_path


def vector_tool(
    root: Path,
    url: str,
    table: str,
    size: int = 64,
    *,
    source: str = "docs",
    metric: str = "COSINE",
    **fields: Any,
) -> VectorStoreTool:
    database = {
        "provider": "postgres",
        "connection_string": url,
        "table_name": table,
        "distance_metric": metric,
    }
    config = VectorStoreToolConfig.model_validate(
        {
            "type": "vectorstore",
            "name": fields.pop("name", table),
            "source": source,
            "top_k": 3,
            "database": database,
            **fields,
        }
    )
    return VectorStoreTool(
        config, embeddings=HashingEmbeddings(size), project_dir=root, home_dir=root, base_dir=root
    )


def column_width(url: str, table: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT atttypmod FROM pg_attribute WHERE attrelid = to_regclass(%s) "
            "AND attname = 'embedding'",
            (table,),
        ).fetchone()
    assert row is not None
    return int(row[0])


@pytest.fixture
def store(postgres_url: str, postgres_table: str) -> Iterator[PostgresVectorStore]:
    opened = PostgresVectorStore(
        WindowedHashingEmbeddings(), connection_string=postgres_url, table_name=postgres_table
    )
    yield opened
    opened.close()


def test_sync_twice_adds_nothing_and_cleans_shrunk_tails(store: PostgresVectorStore) -> None:
    chunks = [
        Document(page_content=f"chunk {n} of the warp manual", metadata={"source": "a.md"})
        for n in range(5)
    ]
    first = sync_documents(chunks, store, namespace="kb")
    assert (first.added, first.failed) == (5, 0)
    again = sync_documents(chunks, store, namespace="kb")
    assert (again.added, again.updated, again.skipped) == (0, 0, 5)
    shrunk = sync_documents(chunks[:3], store, namespace="kb")
    assert shrunk.deleted == 2
    stored = sorted(str(d.id) for d in store.iter_documents(namespace="kb"))
    assert stored == sorted(stable_id("kb", f"a.md_chunk_{n}") for n in range(3))


def test_dense_leg_finds_the_tail_and_keyword_leg_skips_windows(
    store: PostgresVectorStore,
) -> None:
    result = sync_documents(chunk_documents(LONG_CHUNK, SHORT_CHUNK), store, namespace="kb")
    assert (result.added, result.failed) == (2, 0)
    long_id = stable_id("kb", "a.md_chunk_0")
    short_id = stable_id("kb", "a.md_chunk_1")
    assert [d.id for d in store.get_by_ids([f"{long_id}:w2"])] == [f"{long_id}:w2"]
    assert [i for i, _ in store.keyword_search("replicator earl grey", 5)] == [long_id]

    dense_only = HybridRetriever(vector_store=store, keyword_index=None, k=2)
    hits = dense_only.invoke(WINDOW_TAIL)
    assert [h.page_content for h in hits] == [LONG_CHUNK, SHORT_CHUNK]
    assert hits[0].metadata["semantic_score"] == pytest.approx(1.0, abs=1e-5)

    vector = store.embeddings.embed_query(WINDOW_TAIL)
    similar = store.similarity_by_ids(vector, [long_id, short_id])
    assert similar[long_id] == pytest.approx(1.0, abs=1e-5)
    assert similar[short_id] < 0.5

    native = HybridRetriever(vector_store=store, k=2, search_strategy="native")
    hits = native.invoke(WINDOW_TAIL)
    assert [h.id for h in hits] == [long_id, short_id]
    assert hits[0].page_content == LONG_CHUNK
    sparse = store.native_hybrid_search("replicator earl grey", k=5, weights=(0.0, 1.0))
    assert [h.document.id for h in sparse] == [long_id]


def test_native_search_refuses_a_filter_key_it_would_ignore(store: PostgresVectorStore) -> None:
    """Found 2026-12-07: ``filter={"namespace": "kb", "source": "f1.md"}`` returned chunks of
    every source, and a native HybridRetriever, filtering the engine's rows afterwards, fewer
    results than asked. Refused now, at construction and in the store's own call."""
    sync_documents(chunk_documents(LONG_CHUNK, SHORT_CHUNK), store, namespace="kb")
    wanted = "filter key(s) 'source' would be ignored. Use search_strategy='fallback'"
    both = {"namespace": "kb", "source": "a.md"}
    with pytest.raises(ValueError, match=re.escape(wanted)):
        store.native_hybrid_search("replicator", k=2, filter=both)
    with pytest.raises(ValueError, match=re.escape(wanted)):
        HybridRetriever(
            vector_store=store, k=2, search_strategy="native", search_kwargs={"filter": both}
        )
    fallback = HybridRetriever(
        vector_store=store, keyword_index=None, k=2, search_kwargs={"filter": both}
    )
    assert len(fallback.invoke("replicator earl grey")) == 2  # applied there
    namespaced = store.native_hybrid_search("replicator", k=2, filter={"namespace": "kb"})
    assert len(namespaced) == 2


async def test_vector_tool_refuses_then_rebuilds_for_a_new_dimension(
    root: Path, postgres_url: str, postgres_table: str
) -> None:
    first = await vector_tool(root, postgres_url, postgres_table, 64).initialize()
    assert column_width(postgres_url, postgres_table) == 64
    changed = vector_tool(root, postgres_url, postgres_table, 32)
    with pytest.raises(EmbeddingModelMismatchError, match=r"holds 64-.*force_ingest=True"):
        await changed.initialize()
    result = await changed.initialize(True)
    assert (result.added + result.updated, result.failed) == (first.added, 0)
    assert column_width(postgres_url, postgres_table) == 32
    output = await changed.search("which endpoint accepts GET and POST requests for users")
    assert output.startswith("Found 3 result(s)")
    again = await vector_tool(root, postgres_url, postgres_table, 32).initialize()
    assert again.skipped == first.added


def index_definition(url: str, table: str) -> str:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE tablename = %s AND indexdef LIKE '%%hnsw%%'",
            (table,),
        ).fetchone()
    assert row is not None
    return str(row[0])


@pytest.mark.parametrize("metric", ["IP", "L2"])
async def test_vector_tool_refuses_then_rebuilds_for_a_new_distance_metric(
    root: Path, postgres_url: str, postgres_table: str, metric: str
) -> None:
    first = await vector_tool(root, postgres_url, postgres_table).initialize()
    assert "vector_cosine_ops" in index_definition(postgres_url, postgres_table)
    changed = vector_tool(root, postgres_url, postgres_table, metric=metric)
    with pytest.raises(
        EmbeddingModelMismatchError,
        match=rf"created with distance_metric COSINE but the configuration sets distance_metric "
        rf"{metric}.*force_ingest",
    ):
        await changed.initialize()
    assert "vector_cosine_ops" in index_definition(postgres_url, postgres_table)
    result = await changed.initialize(True)
    assert (result.added + result.updated, result.failed) == (first.added, 0)
    opclass = {"IP": "vector_ip_ops", "L2": "vector_l2_ops"}[metric]
    assert opclass in index_definition(postgres_url, postgres_table)
    assert (await changed.search("GET and POST requests")).startswith("Found 3 result(s)")
    again = await vector_tool(root, postgres_url, postgres_table, metric=metric).initialize()
    assert again.skipped == first.added


async def test_a_table_shared_with_another_corpus_keeps_its_distance_metric(
    root: Path, postgres_url: str, postgres_table: str
) -> None:
    await vector_tool(root, postgres_url, postgres_table).initialize()
    newcomer = vector_tool(
        root, postgres_url, postgres_table, source="legal", name="other_corpus", metric="IP"
    )
    with pytest.raises(EmbeddingModelMismatchError, match=r"also holds chunks of '"):
        await newcomer.initialize(True)
    assert "vector_cosine_ops" in index_definition(postgres_url, postgres_table)


async def test_a_table_shared_with_another_corpus_is_not_rebuilt(
    root: Path, postgres_url: str, postgres_table: str
) -> None:
    await vector_tool(root, postgres_url, postgres_table, 64).initialize()
    newcomer = vector_tool(
        root, postgres_url, postgres_table, 32, source="legal", name="other_corpus"
    )
    with pytest.raises(EmbeddingModelMismatchError, match="force_ingest=True"):
        await newcomer.initialize()
    with pytest.raises(EmbeddingModelMismatchError, match=r"also holds chunks of '"):
        await newcomer.initialize(True)
    assert column_width(postgres_url, postgres_table) == 64
    first = vector_tool(root, postgres_url, postgres_table, 64)
    assert (await first.initialize()).added == 0
    assert (await first.search("GET and POST requests")).startswith("Found 3 result(s)")


async def test_force_ingest_keeps_the_other_corpus_cache(
    root: Path, postgres_url: str, postgres_table: str
) -> None:
    alpha = vector_tool(root, postgres_url, postgres_table, name="alpha")
    beta = vector_tool(root, postgres_url, postgres_table, source="legal", name="beta")
    await alpha.initialize()
    await beta.initialize()
    with psycopg.connect(postgres_url) as conn:

        def keys(namespace: str) -> list[str]:
            rows = conn.execute(
                f"SELECT key FROM {postgres_table}_embcache WHERE starts_with(key, %s) "
                "ORDER BY key",
                (f"{namespace}:",),
            ).fetchall()
            return [r[0] for r in rows]

        before = keys(alpha.namespace)
        assert before
        assert keys(beta.namespace)
        await beta.initialize(True)
        assert keys(alpha.namespace) == before


def hierarchical_tool(
    root: Path, url: str, table: str, strategy: str, **fields: Any
) -> HierarchicalDocumentTool:
    database = {"provider": "postgres", "connection_string": url, "table_name": table}
    config = HierarchicalDocumentToolConfig.model_validate(
        {
            "type": "hierarchical_document",
            "name": "legal",
            "source": "legal",
            "top_k": 3,
            "search_strategy": strategy,
            "database": database,
            **fields,
        }
    )
    return HierarchicalDocumentTool(
        config, embeddings=HashingEmbeddings(), project_dir=root, home_dir=root, base_dir=root
    )


@pytest.mark.parametrize("strategy", ["auto", "fallback"])
async def test_tool_searches_postgres_natively_or_with_client_bm25(
    root: Path, postgres_url: str, postgres_table: str, strategy: str
) -> None:
    tool = hierarchical_tool(root, postgres_url, postgres_table, strategy)
    await tool.initialize()
    assert tool.search_strategy == ("native" if strategy == "auto" else "fallback")
    docs = await tool.as_retriever().ainvoke("Section 203(a)(1)")
    assert docs[0].metadata["section_id"] == "203(a)(1)"  # the exact leg on top
    assert all(d.metadata["namespace"] == tool.namespace for d in docs)
    strict = hierarchical_tool(
        root, postgres_url, postgres_table, strategy, min_similarity_score=0.99
    )
    await strict.initialize()
    assert await strict.as_retriever().ainvoke("definitions of covered persons") == []
