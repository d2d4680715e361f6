"""Two corpora in one store or index never see or delete each other's chunks, on every backend.

Pairs: the same tool name over two roots (two projects on one machine), and two tool names over
one root. Backends: MatrixVectorStore (given, and configured with one shared store directory),
langchain-core InMemoryVectorStore, a LangChain store that cannot filter (post-filtered), Redis
(REDIS_URL), Postgres (POSTGRES_URL), Qdrant (in-process), and an OpenSearch keyword index shared
by both corpora (loopback fake speaking the wire format).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore

from langchain_holodeck.backends import open_vector_store
from langchain_holodeck.config import HierarchicalDocumentToolConfig, VectorStoreToolConfig
from langchain_holodeck.corpus import corpus_namespace
from langchain_holodeck.sync import sync_documents
from langchain_holodeck.tools import HierarchicalDocumentTool, VectorStoreTool
from langchain_holodeck.vectorstores import MatrixVectorStore, scan_documents
from tests.helpers import (
    HashingEmbeddings,
    PlainStore,
    drop_postgres_tables,
    postgres_url_or_skip,
    redis_url_or_skip,
)
from tests.opensearch_server import FakeOpenSearch, serve

Tool = VectorStoreTool | HierarchicalDocumentTool


def write_corpus(root: Path, marker: str) -> Path:
    """``root/docs`` with the same file names in every corpus; ``marker`` tells them apart."""
    docs = root / "docs"
    docs.mkdir(parents=True)
    (docs / "note.md").write_text(f"# Note\n\nThe {marker} warp core note.\n", encoding="utf-8")
    (docs / "extra.md").write_text(f"# Extra\n\nThe {marker} shift rota.\n", encoding="utf-8")
    return docs


@pytest.fixture
def roots(tmp_path: Path) -> tuple[Path, Path]:
    write_corpus(tmp_path / "alpha", "alphacorpus")
    write_corpus(tmp_path / "beta", "betacorpus")
    return tmp_path / "alpha", tmp_path / "beta"


class Backend:
    """Makes tools that share one store (given, or configured)."""

    def __init__(self, name: str, make: Callable[[Path, str, Path], Tool]) -> None:
        self.name = name
        self.make = make


def given_store_backend(name: str, store_type: Callable[[Embeddings], VectorStore]) -> Backend:
    embeddings = HashingEmbeddings()
    shared: dict[str, VectorStore] = {}

    def make(root: Path, tool_name: str, _tmp: Path) -> Tool:
        store = shared.setdefault("store", store_type(embeddings))
        config = VectorStoreToolConfig(
            type="vectorstore", name=tool_name, description="d", source="docs", top_k=10
        )
        return VectorStoreTool(config, embeddings=embeddings, vector_store=store, base_dir=root)

    return Backend(name, make)


def configured_tool(
    embeddings: HashingEmbeddings,
    database: dict[str, Any] | None,
    base: Path,
    store_dir: Path,
    **fields: Any,
) -> VectorStoreTool:
    """A vectorstore tool built from config fields, its project and home ``base``."""
    fields = {"type": "vectorstore", "description": "d", **fields}
    if database is not None:
        fields["database"] = database
    return VectorStoreTool(
        VectorStoreToolConfig(**fields),
        embeddings=embeddings,
        base_dir=base,
        project_dir=base,
        home_dir=base,
        store_dir=store_dir,
    )


def configured_backend(name: str, database: dict[str, Any] | None) -> Backend:
    """Tools built from config; in-memory ones share one store directory (two projects)."""
    embeddings = HashingEmbeddings()

    def make(root: Path, tool_name: str, tmp: Path) -> Tool:
        return configured_tool(
            embeddings,
            database,
            root,
            tmp / "shared-store",
            name=tool_name,
            source="docs",
            top_k=10,
        )

    return Backend(name, make)


@pytest.fixture
def redis_database(redis_index_name: str) -> Iterator[dict[str, Any]]:
    url = redis_url_or_skip()
    yield {"provider": "redis", "connection_string": url, "index_name": redis_index_name}
    import redis

    client = redis.Redis.from_url(url)
    try:
        for key in client.scan_iter(f"holodeck:embcache:{redis_index_name}:*"):
            client.delete(key)
    finally:
        client.close()


@pytest.fixture
def postgres_database() -> Iterator[dict[str, Any]]:
    url = postgres_url_or_skip()
    table = f"holodeck_test_{uuid.uuid4().hex[:10]}"
    yield {"provider": "postgres", "connection_string": url, "table_name": table}
    drop_postgres_tables(url, table)


BACKENDS = [
    "matrix",
    "core-in-memory",
    "post-filtered",
    "in-memory-dir",
    "redis",
    "postgres",
    "qdrant",
]


def qdrant_store(embeddings: Embeddings) -> VectorStore:
    """An in-process Qdrant collection (qdrant-client local mode), shared as a given store."""
    pytest.importorskip("langchain_qdrant")
    config = {"provider": "qdrant", "location": ":memory:"}
    return open_vector_store(config, embeddings, fallback=False).store


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> Backend:
    name = request.param
    if name == "matrix":
        return given_store_backend(name, MatrixVectorStore)
    if name == "core-in-memory":
        return given_store_backend(name, InMemoryVectorStore)
    if name == "post-filtered":
        return given_store_backend(name, PlainStore)
    if name == "in-memory-dir":
        return configured_backend(name, None)
    if name == "qdrant":
        return given_store_backend(name, qdrant_store)
    return configured_backend(name, request.getfixturevalue(f"{name}_database"))


def chunks_of(tool: Tool) -> set[str]:
    store = tool._resolve_store()
    if isinstance(store, PlainStore):  # cannot enumerate: read the wrapped store
        return {
            d.id or ""
            for d in scan_documents(store.inner)
            if d.metadata.get("namespace") == tool.namespace
        }
    return {d.id or "" for d in scan_documents(store, namespace=tool.namespace)}


def assert_sees_only_itself(tool: Tool, marker: str, other: str) -> None:
    docs = tool.as_retriever().invoke("warp core note shift rota")
    assert docs, f"{tool.name} found nothing"
    assert all(marker in d.page_content for d in docs), [d.page_content for d in docs]
    assert not any(other in d.page_content for d in docs)
    assert all(d.metadata["namespace"] == tool.namespace for d in docs)


@pytest.mark.parametrize("pair", ["same-name-two-roots", "two-names-one-root"])
def test_two_corpora_in_one_store_stay_apart(
    backend: Backend, roots: tuple[Path, Path], tmp_path: Path, pair: str
) -> None:
    """Each run is a fresh tool (a separate process), on the one shared store."""
    alpha_root, beta_root = roots
    if pair == "same-name-two-roots":
        alpha_spec, beta_spec = (alpha_root, "docs"), (beta_root, "docs")
        beta_file = beta_root / "docs" / "extra.md"
    else:
        alpha_spec, beta_spec = (alpha_root, "one"), (alpha_root, "two")
        beta_file = alpha_root / "docs" / "two_only.md"
        beta_file.write_text("# T\n\nThe betacorpus file.\n", encoding="utf-8")

    def run(spec: tuple[Path, str], **kwargs: Any) -> Tool:
        tool = backend.make(*spec, tmp_path)
        tool.initialize_sync(**kwargs)
        return tool

    alpha = run(alpha_spec)
    alpha_chunks = chunks_of(alpha)
    beta = run(beta_spec)
    assert alpha.namespace != beta.namespace
    assert alpha_chunks
    assert chunks_of(beta)
    assert alpha_chunks.isdisjoint(chunks_of(beta))
    assert chunks_of(backend.make(*alpha_spec, tmp_path)) == alpha_chunks  # beta took nothing
    if pair == "same-name-two-roots":
        assert_sees_only_itself(run(alpha_spec), "alphacorpus", "betacorpus")
        assert_sees_only_itself(run(beta_spec), "betacorpus", "alphacorpus")

    # beta loses a file (cleanup), then force-ingests: alpha's chunks are all still stored
    beta_file.unlink()
    cleaned = run(beta_spec).last_sync_result
    assert cleaned is not None
    if backend.name == "post-filtered":  # cannot enumerate: cleanup is skipped, and says so
        assert "cleanup of deleted files skipped" in cleaned.errors[0]
    else:
        assert cleaned.deleted > 0
    run(beta_spec, force_ingest=True)
    assert chunks_of(backend.make(*alpha_spec, tmp_path)) == alpha_chunks
    if pair == "same-name-two-roots":
        assert_sees_only_itself(run(alpha_spec), "alphacorpus", "betacorpus")


def test_force_ingest_clears_only_its_own_embedding_cache(
    roots: tuple[Path, Path], tmp_path: Path
) -> None:
    backend = configured_backend("in-memory-dir", None)
    alpha = backend.make(roots[0], "docs", tmp_path)
    beta = backend.make(roots[1], "docs", tmp_path)
    alpha.initialize_sync()
    beta.initialize_sync()
    cache = tmp_path / "shared-store" / "embedding_cache"
    alpha_files = sorted(p.name for p in (cache / alpha.namespace).iterdir())
    assert alpha_files
    beta.initialize_sync(force_ingest=True)
    assert sorted(p.name for p in (cache / alpha.namespace).iterdir()) == alpha_files


def test_redis_force_ingest_keeps_the_other_corpus_cache(
    roots: tuple[Path, Path], tmp_path: Path, redis_database: dict[str, Any]
) -> None:
    import redis

    backend = configured_backend("redis", redis_database)
    alpha = backend.make(roots[0], "docs", tmp_path)
    beta = backend.make(roots[1], "docs", tmp_path)
    alpha.initialize_sync()
    beta.initialize_sync()
    client = redis.Redis.from_url(redis_database["connection_string"])
    prefix = f"holodeck:embcache:{redis_database['index_name']}:{alpha.namespace}:*"
    try:
        before = sorted(client.scan_iter(prefix))
        assert before
        beta.initialize_sync(force_ingest=True)
        assert sorted(client.scan_iter(prefix)) == before
    finally:
        client.close()


def test_opensearch_index_shared_by_two_corpora(
    roots: tuple[Path, Path], embeddings: HashingEmbeddings
) -> None:
    fake = FakeOpenSearch()
    server = serve(fake)
    url = f"http://127.0.0.1:{server.server_address[1]}"
    store = MatrixVectorStore(embeddings)
    try:

        def tool(root: Path) -> HierarchicalDocumentTool:
            config = HierarchicalDocumentToolConfig(
                type="hierarchical_document",
                name="docs",
                source="docs",
                keyword_index={"provider": "opensearch", "endpoint": url, "index_name": "kw"},
            )
            return HierarchicalDocumentTool(
                config, embeddings=embeddings, vector_store=store, base_dir=root
            )

        alpha, beta = tool(roots[0]), tool(roots[1])
        alpha.initialize_sync()
        alpha_ids = {i for i, d in fake.indices["kw"].items() if d["namespace"] == alpha.namespace}
        beta.initialize_sync()
        assert beta._keywords is not None
        beta._keywords.rebuild_from_store(store, namespace=beta.namespace)  # a rebuild
        beta.initialize_sync(force_ingest=True)
        kept = {i for i, d in fake.indices["kw"].items() if d["namespace"] == alpha.namespace}
        assert kept == alpha_ids
        hits = alpha.as_retriever().invoke("alphacorpus betacorpus warp")
        assert hits
        assert all("alphacorpus" in d.page_content for d in hits)
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("where", ["matrix", "redis"])
def test_old_scheme_chunks_are_reported_never_deleted(
    roots: tuple[Path, Path],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    request: pytest.FixtureRequest,
    where: str,
) -> None:
    from langchain_core.documents import Document

    if where == "matrix":
        embeddings = HashingEmbeddings()
        shared = MatrixVectorStore(embeddings)
        tool = VectorStoreTool(
            VectorStoreToolConfig(type="vectorstore", name="docs", description="d", source="docs"),
            embeddings=embeddings,
            vector_store=shared,
            base_dir=roots[0],
        )
    else:
        redis_tools = configured_backend(where, request.getfixturevalue("redis_database"))
        tool = redis_tools.make(roots[0], "docs", tmp_path)  # type: ignore[assignment]  # same class
    store = tool._resolve_store()
    old = [Document(page_content="old docs chunk", metadata={"source_path": "docs/note.md"})]
    sync_documents(old, store, namespace="docs")  # what versions before corpus identity wrote
    with caplog.at_level(logging.WARNING):
        tool.initialize_sync()
    lines = [r.getMessage() for r in caplog.records if "older version" in r.getMessage()]
    assert len(lines) == 1
    assert "holodeck-rag purge-legacy" in lines[0]
    assert "or they are another project's, pinned with corpus_id: docs" in lines[0]
    assert "corpus_id: docs" in lines[0]
    assert tool.legacy_chunks_found
    assert len(list(scan_documents(store, namespace="docs"))) == 1  # still there
    own = len(list(scan_documents(store, namespace=tool.namespace)))
    assert tool.purge_legacy_chunks() == 1
    assert list(scan_documents(store, namespace="docs")) == []
    assert len(list(scan_documents(store, namespace=tool.namespace))) == own


def test_corpus_id_pins_the_namespace(roots: tuple[Path, Path]) -> None:
    def tool(root: Path, **extra: Any) -> VectorStoreTool:
        config = VectorStoreToolConfig(
            type="vectorstore", name="docs", description="d", source="docs", **extra
        )
        return VectorStoreTool(config, embeddings=HashingEmbeddings(), base_dir=root)

    assert tool(roots[0]).namespace != tool(roots[1]).namespace
    assert tool(roots[0]).namespace == tool(roots[0] / ".." / roots[0].name).namespace
    pinned = f"share-{uuid.uuid4().hex[:6]}"
    assert tool(roots[0], corpus_id=pinned).namespace == pinned
    assert tool(roots[1], corpus_id=pinned).namespace == pinned


def pinned_tool(root: Path, corpus_id: str, tmp: Path, database: dict[str, Any] | None) -> Tool:
    """A tool whose corpus_id is pinned, in the shared store directory or ``database``."""
    fields: dict[str, Any] = {
        "type": "vectorstore",
        "name": "docs",
        "description": "d",
        "source": "docs",
        "top_k": 10,
        "corpus_id": corpus_id,
    }
    if database is not None:
        fields["database"] = database
    return VectorStoreTool(
        VectorStoreToolConfig(**fields),
        embeddings=HashingEmbeddings(),
        base_dir=root,
        project_dir=root,
        home_dir=root,
        store_dir=tmp / "shared-store",
    )


@pytest.mark.parametrize(
    ("where", "pinned"),
    [
        ("in-memory-dir", ".."),  # its cache directory was the store directory itself
        ("in-memory-dir", "a"),
        ("redis", "a"),  # its cache keys took in those of "a:b"
        ("postgres", "a"),
    ],
)
def test_a_pinned_corpus_id_never_reaches_another_corpus_cache_or_chunks(
    roots: tuple[Path, Path],
    tmp_path: Path,
    where: str,
    pinned: str,
    request: pytest.FixtureRequest,
) -> None:
    database = None if where == "in-memory-dir" else request.getfixturevalue(f"{where}_database")
    mine = pinned_tool(roots[0], pinned, tmp_path, database)
    theirs = pinned_tool(roots[1], "a:b", tmp_path, database)
    mine.initialize_sync()
    theirs.initialize_sync()
    their_chunks = chunks_of(theirs)
    their_cache = sorted(theirs.corpus.cache.yield_keys())
    assert their_chunks
    assert their_cache
    mine.initialize_sync(force_ingest=True)  # clears its own embedding cache
    assert sorted(theirs.corpus.cache.yield_keys()) == their_cache
    assert chunks_of(pinned_tool(roots[1], "a:b", tmp_path, database)) == their_chunks
    if where == "in-memory-dir":  # the keyword files stay under bm25/, one directory each
        store_dir = tmp_path / "shared-store"
        assert not list(store_dir.glob("bm25_*"))
        assert not list(store_dir.glob("bm25/bm25_*"))


@pytest.mark.parametrize("where", ["in-memory-dir", "redis", "postgres"])
def test_every_spelling_of_one_root_writes_the_same_chunks(
    roots: tuple[Path, Path], tmp_path: Path, where: str, request: pytest.FixtureRequest
) -> None:
    """One share, one pinned corpus_id, the root spelt as each machine and working directory
    names it: the first run writes the chunks and every other spelling writes nothing (found
    2026-12-07: source_path followed the spelling, so each run deleted and re-added every
    chunk the other spelling wrote, embedding them again where no cache was shared)."""
    database = None if where == "in-memory-dir" else request.getfixturevalue(f"{where}_database")
    root = roots[0]
    (root / "other").mkdir()
    mount = tmp_path / "mnt" / "share"  # another machine's mount point of the same share
    mount.parent.mkdir()
    mount.symlink_to(root, target_is_directory=True)
    embeddings = HashingEmbeddings()

    def spelt(source: str, base: Path) -> Tool:
        return configured_tool(
            embeddings,
            database,
            base,
            tmp_path / "shared-store",
            name="docs",
            source=source,
            corpus_id="team_docs",
        )

    first = spelt("docs", root)
    assert first.initialize_sync().added == 2
    ids = chunks_of(first)
    calls = embeddings.calls
    for source, base in [
        ("./docs/", root),
        (".", root / "docs"),
        ("../docs", root / "other"),
        (str(mount / "docs"), tmp_path),
        ("docs", root),
    ]:
        tool = spelt(source, base)
        result = tool.initialize_sync()
        assert (result.added, result.updated, result.deleted, result.skipped) == (0, 0, 0, 2)
        assert chunks_of(tool) == ids
        assert sorted(
            d.metadata["source_path"]
            for d in scan_documents(tool._resolve_store(), namespace="team_docs")
        ) == [
            "docs/extra.md",
            "docs/note.md",
        ]
    assert embeddings.calls == calls


@pytest.mark.parametrize("where", ["in-memory-dir", "redis"])
def test_a_renamed_tools_old_chunks_stay_until_deleted_by_namespace(
    roots: tuple[Path, Path], tmp_path: Path, where: str, request: pytest.FixtureRequest
) -> None:
    """A renamed tool is another corpus: the old namespace's chunks stay in a shared store
    (a known limitation, found 2026-12-07) until deleted by namespace, as reliability.md says."""
    database = None if where == "in-memory-dir" else request.getfixturevalue(f"{where}_database")
    backend = configured_backend(where, database)
    old = backend.make(roots[0], "kb", tmp_path)
    old.initialize_sync()
    renamed = backend.make(roots[0], "kb_docs", tmp_path)
    renamed.initialize_sync()
    store = renamed.corpus.open()
    stale = corpus_namespace(roots[0] / "docs", name="kb")
    assert stale == old.namespace
    assert len(list(scan_documents(store, namespace=stale))) == 2
    store.delete(ids=[d.id or "" for d in scan_documents(store, namespace=stale)])
    assert list(scan_documents(store, namespace=stale)) == []
    assert len(chunks_of(renamed)) == 2
