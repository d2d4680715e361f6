"""The embedding cache is pruned, and never of what the corpus needs on its next re-sync.

Issue 25, item 15: the cache (one entry per text ever embedded) only grew. Now

- the cache in a store directory (``store_dir/embedding_cache/<namespace>``, the in-memory
  and Qdrant ``path:`` backends) keeps, after a sync that wrote every chunk, only the texts
  the corpus's stored chunks and model windows hold (and entries written since the sync
  started, by a concurrent process);
- the cache in PostgreSQL (``<table_name>_embcache``) is pruned the same way, this corpus's
  prefix only;
- Redis entries expire ``embedding_cache_ttl_days`` after they were last written *or read*.

What the cache is for holds: a paragraph inserted above others moves their chunk keys, and
their vectors still come from the cache (only the new text is embedded); a re-sync of an
unchanged corpus embeds nothing.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from langchain_holodeck import HierarchicalDocumentTool, HierarchicalDocumentToolConfig
from langchain_holodeck.backends.postgres import PostgresByteStore
from langchain_holodeck.embeddings import CachedEmbeddings, LocalFileByteStore, RedisByteStore
from langchain_holodeck.vectorstores import scan_documents
from tests.helpers import HashingEmbeddings
from tests.reliability import corpus


def write_source(root: Path) -> None:
    corpus.write_files(root, files=3, paragraphs=4)


def bump_mtime(path: Path) -> None:
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 2_000_000_000))


def make_tool(
    workdir: Path, embeddings: HashingEmbeddings, database: dict[str, Any] | None = None
) -> HierarchicalDocumentTool:
    config = HierarchicalDocumentToolConfig(
        type="hierarchical_document",
        name="kb",
        source="src",
        **({"database": database} if database else {}),
    )
    return HierarchicalDocumentTool(
        config, embeddings=embeddings, base_dir=workdir, store_dir=workdir / "store"
    )


def stored_texts(tool: HierarchicalDocumentTool) -> set[str]:
    store = tool.corpus.open()
    return {d.page_content for d in scan_documents(store, namespace=tool.namespace, windows=True)}


def cache_keys(tool: HierarchicalDocumentTool) -> set[str]:
    cache = tool.corpus.cache
    assert cache is not None
    return set(cache.yield_keys())


def expected_keys(tool: HierarchicalDocumentTool) -> set[str]:
    embeddings = tool.corpus.embeddings
    assert isinstance(embeddings, CachedEmbeddings)
    return {embeddings.key(text) for text in stored_texts(tool)}


def test_the_directory_cache_keeps_exactly_the_stored_texts(tmp_path: Path) -> None:
    src = tmp_path / "src"
    write_source(src)
    embeddings = HashingEmbeddings()
    tool = make_tool(tmp_path, embeddings)
    tool.initialize_sync()
    assert isinstance(tool.corpus.cache, LocalFileByteStore)
    assert cache_keys(tool) == expected_keys(tool)

    # an edit: the old texts of manual_01's edited chunks leave the cache
    edited = src / "manual_01.md"
    edited.write_text(edited.read_text().replace("## Part 2", "## Part 2\n\nRevised text."))
    bump_mtime(edited)
    result = make_tool(tmp_path, embeddings).initialize_sync()
    assert result.updated >= 1
    tool = make_tool(tmp_path, embeddings)
    tool.initialize_sync()
    assert cache_keys(tool) == expected_keys(tool)

    # a removed file: its texts leave the cache too
    (src / "manual_02.md").unlink()
    assert make_tool(tmp_path, embeddings).initialize_sync().deleted >= 1
    tool = make_tool(tmp_path, embeddings)
    tool.initialize_sync()
    assert cache_keys(tool) == expected_keys(tool)

    # what the corpus needs stayed: a paragraph inserted at the top of manual_00 moves the
    # keys of every chunk after it, and only the texts not stored before are embedded
    texts = stored_texts(tool)
    first = src / "manual_00.md"
    first.write_text(first.read_text().replace("# Manual 0\n", "# Manual 0\n\nNew intro.\n", 1))
    bump_mtime(first)
    before = embeddings.texts_embedded
    tool = make_tool(tmp_path, embeddings)
    result = tool.initialize_sync()
    new_texts = stored_texts(tool) - texts
    assert result.added + result.updated > len(new_texts)  # chunks rewritten under moved keys
    assert embeddings.texts_embedded - before == len(new_texts)  # the rest: from the cache

    before = embeddings.texts_embedded
    again = make_tool(tmp_path, embeddings).initialize_sync()
    assert (again.added, again.updated, embeddings.texts_embedded - before) == (0, 0, 0)


def test_entries_written_during_the_sync_by_another_process_stay(tmp_path: Path) -> None:
    cache = LocalFileByteStore(tmp_path / "cache")
    cache.mset([("old-unused", b"1"), ("kept", b"2")])
    past = time.time() - 60
    for key in ("old-unused", "kept"):
        path = tmp_path / "cache" / key[:2] / key
        os.utime(path, (past, past))
    started = time.time() - 1
    cache.mset([("fresh-unused", b"3")])  # written after the sync started
    assert cache.prune({"kept"}, written_before=started) == 1
    assert sorted(cache.yield_keys()) == ["fresh-unused", "kept"]


@pytest.fixture
def redis_client(redis_url: str) -> Iterator[Any]:
    import redis

    client = redis.Redis.from_url(redis_url)
    yield client
    client.close()


@pytest.mark.redis
def test_redis_cache_entries_live_ttl_after_their_last_read(redis_client: Any) -> None:
    prefix = f"holodeck_test_ttl_{uuid.uuid4().hex[:8]}:"
    cache = RedisByteStore(redis_client, prefix=prefix, ttl=3600)
    try:
        cache.mset([("a", b"vector")])
        redis_client.expire(prefix + "a", 5)  # as if written long ago
        assert cache.mget(["a", "missing"]) == [b"vector", None]
        assert redis_client.ttl(prefix + "a") > 3000  # the hit refreshed it
        assert redis_client.exists(prefix + "missing") == 0
    finally:
        for key in redis_client.scan_iter(f"{prefix}*"):
            redis_client.delete(key)


@pytest.mark.redis
def test_redis_cache_ttl_is_configurable_and_expiry_costs_no_resync_embedding(
    tmp_path: Path, redis_url: str, redis_index_name: str, redis_client: Any
) -> None:
    write_source(tmp_path / "src")
    database = {
        "provider": "redis",
        "connection_string": redis_url,
        "index_name": redis_index_name,
        "embedding_cache_ttl_days": 2 / 86400,  # 2 s
    }
    embeddings = HashingEmbeddings()
    try:
        make_tool(tmp_path, embeddings, database).initialize_sync()
        keys = list(redis_client.scan_iter(f"holodeck:embcache:{redis_index_name}:*"))
        assert keys
        assert all(0 < redis_client.pttl(k) <= 2000 for k in keys)
        deadline = time.monotonic() + 30
        while redis_client.exists(*keys) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert redis_client.exists(*keys) == 0  # expired by themselves
        before = embeddings.texts_embedded
        again = make_tool(tmp_path, embeddings, database).initialize_sync()
        assert (again.added, again.updated, embeddings.texts_embedded - before) == (0, 0, 0)
    finally:
        for key in redis_client.scan_iter(f"holodeck:embcache:{redis_index_name}:*"):
            redis_client.delete(key)


@pytest.mark.postgres
def test_the_postgres_cache_keeps_exactly_the_stored_texts(
    tmp_path: Path, postgres_url: str, postgres_table: str
) -> None:
    write_source(tmp_path / "src")
    database = {
        "provider": "postgres",
        "connection_string": postgres_url,
        "table_name": postgres_table,
    }
    embeddings = HashingEmbeddings()
    tool = make_tool(tmp_path, embeddings, database)
    tool.initialize_sync()
    assert isinstance(tool.corpus.cache, PostgresByteStore)
    # another corpus in the same cache table: never pruned by this one
    neighbour = PostgresByteStore(
        postgres_url, table=f"{postgres_table}_embcache", prefix="another-corpus:"
    )
    neighbour.mset([("unused", b"vector")])

    edited = tmp_path / "src" / "manual_01.md"
    edited.write_text(edited.read_text().replace("## Part 2", "## Part 2\n\nRevised text."))
    bump_mtime(edited)
    old_keys = cache_keys(tool)
    time.sleep(0.05)  # the edit's sync starts after every entry of the first was written
    assert make_tool(tmp_path, embeddings, database).initialize_sync().updated >= 1
    tool = make_tool(tmp_path, embeddings, database)
    tool.initialize_sync()
    assert cache_keys(tool) == expected_keys(tool)
    assert old_keys - cache_keys(tool)  # the edited texts' entries went
    assert list(neighbour.yield_keys()) == ["unused"]

    before = embeddings.texts_embedded
    again = make_tool(tmp_path, embeddings, database).initialize_sync()
    assert (again.added, again.updated, embeddings.texts_embedded - before) == (0, 0, 0)
