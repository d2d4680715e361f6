"""Two Redis indexes whose key prefixes nest (``kb`` beside ``kb:v2``) never both open.

Found 2026-12-07 (late probe): the index ``kb`` (prefix ``kb:``) also indexed every key of
``kb:v2`` (``kb:v2:``), so its searches returned the other's chunks and its ingest's stale
cleanup deleted them; alternating ingests never converged. The store now asks the server for
its indexes' prefixes when it opens and refuses the second of such a pair, before creating
its index or writing anything. Against Redis Stack at REDIS_URL.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from langchain_core.documents import Document
from pydantic import SecretStr

from langchain_holodeck.errors import ConfigError
from langchain_holodeck.sync import sync_documents
from langchain_holodeck.vectorstores import create_vector_store_with_status, scan_documents
from langchain_holodeck.vectorstores.redis import HolodeckRedisVectorStore
from tests.helpers import DATA_DIR, HashingEmbeddings, RedisDatabase
from tests.helpers import run_cli as run

pytestmark = pytest.mark.redis


def open_store(url: str, index: str) -> HolodeckRedisVectorStore:
    handle = create_vector_store_with_status(
        RedisDatabase(SecretStr(url), index), HashingEmbeddings()
    )
    assert handle.backend == "redis", handle.reason
    assert isinstance(handle.store, HolodeckRedisVectorStore)
    return handle.store


def chunks(marker: str, n: int = 3) -> list[Document]:
    return [
        Document(
            page_content=f"The {marker} warp core note {i}.",
            metadata={"source": f"docs/{i}.md", "source_path": f"docs/{i}.md", "chunk_index": 0},
        )
        for i in range(n)
    ]


@pytest.fixture
def client(redis_url: str) -> Iterator[redis.Redis]:
    c = redis.Redis.from_url(redis_url)
    yield c
    c.close()


@pytest.fixture
def nested(redis_index_name: str, client: redis.Redis) -> Iterator[str]:
    """``<index>:v2``; its index, keys and the tools' embedding caches dropped afterwards.

    The keys of both (``<index>*``) go with the ``redis_index_name`` fixture.
    """
    name = f"{redis_index_name}:v2"
    yield name
    for index in (name, f"{redis_index_name}:b", f"foreign_{redis_index_name}"):
        with contextlib.suppress(redis.ResponseError):
            client.ft(index).dropindex(delete_documents=False)
    for key in client.scan_iter(f"holodeck:embcache:{redis_index_name}*"):
        client.delete(key)


def indexes(client: redis.Redis) -> set[str]:
    return {n.decode() for n in client.execute_command("FT._LIST")}


def keys(client: redis.Redis, prefix: str) -> set[bytes]:
    return set(client.scan_iter(f"{prefix}*"))


def test_an_index_inside_an_existing_one_is_refused_before_it_is_created(
    redis_url: str, redis_index_name: str, nested: str, client: redis.Redis
) -> None:
    """kb, then kb:v2 (a migration to a new index beside the old one)."""
    outer = open_store(redis_url, redis_index_name)
    sync_documents(chunks("alphacorpus"), outer, namespace="kb")
    stored = keys(client, f"{redis_index_name}:")

    with pytest.raises(ConfigError) as refused:
        open_store(redis_url, nested)

    message = str(refused.value)
    assert message == (
        f"Redis index_name '{nested}' (key prefix '{nested}:') nests with the index "
        f"'{redis_index_name}' (key prefix '{redis_index_name}:') on this server: "
        f"'{redis_index_name}' also covers the keys of '{nested}', so its searches would "
        f"return them and its ingest's cleanup would delete them; if '{redis_index_name}' is "
        f"no longer used, drop it with its documents (redis-cli FT.DROPINDEX "
        f"{redis_index_name} DD: without DD its hashes stay under the prefix); else give this "
        f"store an index_name that no other index nests with (e.g. '{redis_index_name}_v2') "
        "and ingest there."
    )
    assert nested not in indexes(client)  # refused before FT.CREATE
    assert keys(client, f"{redis_index_name}:") == stored  # nothing written or deleted
    # the name the message suggests opens beside it
    beside = open_store(redis_url, f"{redis_index_name}_v2")
    try:
        assert sorted(d.id for d in scan_documents(beside)) == []
    finally:
        client.ft(f"{redis_index_name}_v2").dropindex(delete_documents=True)


def test_an_index_around_an_existing_one_is_refused_and_deletes_nothing(
    redis_url: str, redis_index_name: str, nested: str, client: redis.Redis
) -> None:
    """kb:v2, then kb: the order whose stale cleanup deleted kb:v2's chunks (the same
    namespace, so kb's sync took them for its own stale chunks)."""
    inner = open_store(redis_url, nested)
    result = sync_documents(chunks("betacorpus"), inner, namespace="kb")
    assert result.added == 3
    stored = keys(client, f"{nested}:")
    assert len(stored) == 3

    with pytest.raises(ConfigError, match=rf"index_name '{redis_index_name}' \(key prefix "):
        open_store(redis_url, redis_index_name)  # its ingest would have deleted all three

    assert redis_index_name not in indexes(client)
    assert keys(client, f"{nested}:") == stored
    assert int(client.ft(nested).info()["num_docs"]) == 3
    # kb:v2 itself opens and syncs as before: its own chunks, once each
    again = sync_documents(chunks("betacorpus"), open_store(redis_url, nested), namespace="kb")
    assert (again.added, again.skipped, again.deleted) == (0, 3, 0)


def test_nesting_indexes_made_before_the_check_part_as_the_refusal_says(
    redis_url: str, redis_index_name: str, nested: str, client: redis.Redis
) -> None:
    """Found 2026-12-07 (late probe): ``kb`` and ``kb:v2`` both made before the check (the
    old code opened both): ``kb`` was refused, told to rename one, but renaming ``kb:v2``
    leaves its index on the server, and dropping it without its documents (``FT.DROPINDEX``
    alone) left its hashes under ``kb:``, each returned twice by ``kb`` and never removed.
    The refusal now gives the drop that frees ``kb`` (with ``DD``), and it does."""
    outer = open_store(redis_url, redis_index_name)
    sync_documents(chunks("gammacorpus"), outer, namespace="kb")
    own = sorted(d.id or "" for d in scan_documents(outer))
    # kb:v2 as the old code made it beside kb: its own index, its hashes under kb:v2:
    client.execute_command(
        "FT.CREATE", nested, "ON", "HASH", "PREFIX", "1", f"{nested}:", "SCHEMA", "text", "TEXT"
    )
    for key in keys(client, f"{redis_index_name}:"):
        copy = key.decode().replace(f"{redis_index_name}:", f"{nested}:", 1)
        client.hset(copy, mapping=client.hgetall(key))  # type: ignore[arg-type]  # bytes map

    with pytest.raises(ConfigError) as refused:
        open_store(redis_url, redis_index_name)
    command = f"FT.DROPINDEX {nested} DD"
    assert f"if '{nested}' is no longer used, drop it with its documents (redis-cli " in str(
        refused.value
    )
    assert command in str(refused.value)

    client.execute_command(*command.split())  # as the message says
    reopened = open_store(redis_url, redis_index_name)
    assert sorted(d.id or "" for d in scan_documents(reopened)) == own  # each once, its own
    assert keys(client, f"{nested}:") == set()


def test_an_index_vanished_and_nested_meanwhile_is_not_created_again(
    redis_url: str, redis_index_name: str, nested: str, client: redis.Redis
) -> None:
    """kb's index lost (a server that lost its indexes), kb:v2 created meanwhile (its check
    found no kb), then kb writes: it re-creates its index only after the same check."""
    outer = open_store(redis_url, redis_index_name)
    client.ft(redis_index_name).dropindex(delete_documents=False)
    inner = open_store(redis_url, nested)
    sync_documents(chunks("betacorpus"), inner, namespace="kb")
    stored = keys(client, f"{nested}:")

    with pytest.raises(ConfigError, match=rf"nests with the index '{nested}'"):
        outer.add_documents(chunks("alphacorpus"))

    assert redis_index_name not in indexes(client)
    assert keys(client, f"{nested}:") == stored


def test_an_index_another_program_made_counts_too(
    redis_url: str, redis_index_name: str, nested: str, client: redis.Redis
) -> None:
    """Its prefix is read from FT.INFO, whatever its name; an index of JSON documents, which
    never indexes a hash, does not count."""
    foreign = f"foreign_{redis_index_name}"
    client.execute_command(
        "FT.CREATE", foreign, "ON", "JSON", "PREFIX", 1, f"{redis_index_name}:x:",
        "SCHEMA", "$.t", "AS", "t", "TEXT",
    )  # fmt: skip
    open_store(redis_url, redis_index_name)  # JSON: no clash
    client.ft(redis_index_name).dropindex(delete_documents=True)
    client.ft(foreign).dropindex(delete_documents=False)
    client.execute_command(
        "FT.CREATE", foreign, "ON", "HASH", "PREFIX", 1, f"{redis_index_name}:x:",
        "SCHEMA", "t", "TEXT",
    )  # fmt: skip

    with pytest.raises(ConfigError) as refused:
        open_store(redis_url, redis_index_name)

    assert str(refused.value).endswith(
        f"give this store an index_name whose key prefix neither starts with "
        f"'{redis_index_name}:x:' nor begins it, and ingest there."
    )
    assert redis_index_name not in indexes(client)


def test_a_user_refused_the_index_list_opens_its_store_unchecked(
    redis_url: str, redis_index_name: str, client: redis.Redis
) -> None:
    """An ACL without FT._LIST: the server will not say which indexes it has, so the store
    opens as before (the check needs the list; it is not an error to lack it)."""
    user, password = redis_index_name, "pw-acl-nest"
    client.execute_command(
        "ACL", "SETUSER", user, "on", f">{password}", "~*", "&*", "+@all", "-ft._list"
    )
    try:
        host = redis_url.split("://", 1)[1].rsplit("@", 1)[-1]
        store = open_store(f"redis://{user}:{password}@{host}", redis_index_name)
        assert sync_documents(chunks("alphacorpus"), store, namespace="kb").added == 3
    finally:
        client.execute_command("ACL", "DELUSER", user)


AGENT_YAML = """\
tools:
  - {{type: hierarchical_document, name: one, source: {one}, corpus_id: shared,
      database: {{provider: redis, connection_string: "{url}", index_name: "{index}"}}}}
  - {{type: hierarchical_document, name: two, source: {two}, corpus_id: shared,
      database: {{provider: redis, connection_string: "{url}", index_name: "{index}:b"}}}}
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copytree(DATA_DIR / "docs", tmp_path / "docs")
    shutil.copytree(DATA_DIR / "docs", tmp_path / "other")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path


@pytest.mark.usefixtures("nested")
def test_two_tools_pinning_one_corpus_id_on_nesting_indexes_are_refused_at_load(
    project: Path, redis_url: str, redis_index_name: str, client: redis.Redis,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """The probe's agent.yaml: 'pc' and 'pc:b' were two stores by store_key, both loaded, and
    each one's ingest deleted the other's chunks; now one store, refused as one index is."""
    agent = project / "agent.yaml"
    agent.write_text(
        AGENT_YAML.format(one="docs", two="other", url=redis_url, index=redis_index_name)
    )

    code, out, err = run(capsys, "ingest", "--config", str(agent), "--tool", "two")

    assert code == 1
    assert out == ""
    assert "both pin corpus_id 'shared': a corpus is one source" in err
    assert (
        f"index_name '{redis_index_name}:b' is '{redis_index_name}' followed by ':', so the "
        f"index '{redis_index_name}' covers its keys on one server; rename one index_name"
    ) in err
    assert not {redis_index_name, f"{redis_index_name}:b"} & indexes(client)


@pytest.mark.usefixtures("nested")
def test_two_tools_of_one_corpus_on_nesting_indexes_never_delete_each_others_chunks(
    project: Path, redis_url: str, redis_index_name: str, client: redis.Redis,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """One source, one corpus_id: the file loads (one corpus), and the second store to open is
    refused by the server check before its ingest could clean up the other's chunks."""
    agent = project / "agent.yaml"
    agent.write_text(
        AGENT_YAML.format(one="docs", two="docs", url=redis_url, index=redis_index_name)
    )
    code, out, err = run(capsys, "ingest", "--config", str(agent), "--tool", "two")
    assert code == 0, err
    stored = keys(client, f"{redis_index_name}:b:")
    assert stored

    code, out, err = run(capsys, "ingest", "--config", str(agent), "--tool", "one")

    assert code == 1
    assert err.startswith(
        f"error: Redis index_name '{redis_index_name}' (key prefix '{redis_index_name}:') "
        f"nests with the index '{redis_index_name}:b'"
    ), err
    assert len(err.splitlines()) == 1
    assert redis_index_name not in indexes(client)
    assert keys(client, f"{redis_index_name}:b:") == stored
    code, out, err = run(capsys, "ingest", "--config", str(agent), "--tool", "two")
    assert code == 0, err
    assert ": 0 added, 0 updated, " in out
    assert " 0 deleted;" in out
