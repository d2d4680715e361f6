"""The backend seam: registry, capabilities, namespace scoping on every kind of store."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Literal

import pytest
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore

from langchain_holodeck.backends import (
    Backend,
    BackendCapabilities,
    CoreInMemoryBackend,
    LangChainStoreBackend,
    MemoryBackend,
    NamespaceFilteredStore,
    _registry,
    backend_for_store,
    get_backend,
    open_vector_store,
    register_backend,
    registered_providers,
)
from langchain_holodeck.config.models import DatabaseProviderConfig
from langchain_holodeck.errors import ConfigError
from langchain_holodeck.vectorstores import MatrixVectorStore, scan_documents
from tests.helpers import HashingEmbeddings, PlainStore


def crowded(store: VectorStore) -> None:
    """60 chunks of namespace 'other' that match the query better than 3 of 'mine'."""
    store.add_texts(
        [f"shift rota schedule week {i}" for i in range(60)],
        [{"namespace": "other"} for _ in range(60)],
        ids=[f"o{i}" for i in range(60)],
    )
    store.add_texts(
        ["the shift rota", "rota for tea", "duty officer"],
        [{"namespace": "mine"} for _ in range(3)],
        ids=["m0", "m1", "m2"],
    )


def test_get_backend_defaults_to_memory_and_names_known_providers() -> None:
    assert isinstance(get_backend(None), MemoryBackend)
    assert {"in-memory", "redis"} <= set(registered_providers())
    with pytest.raises(ConfigError, match=r"database\.provider must be .*'redis', got 'mongo'"):
        get_backend({"provider": "mongo"})


def test_backend_for_store_picks_by_class() -> None:
    embeddings = HashingEmbeddings()
    assert isinstance(backend_for_store(MatrixVectorStore(embeddings)), MemoryBackend)
    assert isinstance(backend_for_store(InMemoryVectorStore(embeddings)), CoreInMemoryBackend)
    plain = backend_for_store(PlainStore(embeddings))
    assert isinstance(plain, LangChainStoreBackend)
    assert plain.capabilities.filters_namespace is False
    assert plain.capabilities.native_hybrid is False


@pytest.mark.parametrize("store_type", [MatrixVectorStore, InMemoryVectorStore, PlainStore])
def test_search_scope_shows_one_namespace_on_every_store(store_type: type) -> None:
    store = store_type(HashingEmbeddings())
    crowded(store)
    view, kwargs = backend_for_store(store).search_scope(store, "mine")
    hits = view.similarity_search_with_relevance_scores("shift rota", k=3, **kwargs)
    assert sorted(d.id for d, _ in hits) == ["m0", "m1", "m2"]


def test_post_filter_grows_the_fetch_until_enough_survive() -> None:
    store = PlainStore(HashingEmbeddings())
    crowded(store)
    view = NamespaceFilteredStore(store, namespace="mine")
    hits = view.similarity_search("shift rota schedule week", k=2)
    assert len(hits) == 2
    assert {d.id for d in hits} <= {"m0", "m1", "m2"}
    assert store.fetches == [20, 80]  # 20 held fewer than 2 of 'mine': 4x more
    assert [d.id for d in view.get_by_ids(["o1", "m1"])] == ["m1"]
    everything = view.similarity_search("shift", k=10)  # the store runs out: all of 'mine'
    assert sorted(d.id for d in everything) == ["m0", "m1", "m2"]


@pytest.mark.parametrize("store_type", [MatrixVectorStore, InMemoryVectorStore])
async def test_the_view_scores_relevance_the_same_sync_and_async(store_type: type) -> None:
    store = store_type(HashingEmbeddings())
    crowded(store)
    view = NamespaceFilteredStore(store, namespace="mine")
    query = "the shift rota"
    sync = view.similarity_search_with_relevance_scores(query, k=2)
    assert [d.id for d, _ in sync][:1] == ["m0"]
    assert await view.asimilarity_search_with_relevance_scores(query, k=2) == sync
    options = {"score_threshold": 0.5, "k": 3}
    retriever = view.as_retriever(search_type="similarity_score_threshold", search_kwargs=options)
    assert [d.id for d in await retriever.ainvoke(query)] == [d.id for d in retriever.invoke(query)]


@pytest.mark.parametrize(
    ("store_type", "native_filter"),
    [(MatrixVectorStore, False), (InMemoryVectorStore, False), (InMemoryVectorStore, True)],
)
async def test_the_view_runs_the_stores_mmr_in_its_namespace(
    store_type: type, *, native_filter: bool
) -> None:
    """MMR raised NotImplementedError on the view; now it is the store's, in one namespace."""
    store = store_type(HashingEmbeddings())
    crowded(store)
    store.add_texts(["the shift rota"], [{"namespace": "mine"}], ids=["m0-copy"])
    if native_filter:  # the view over langchain-core's store passes its namespace filter
        view, _ = backend_for_store(store).search_scope(store, "mine")
        assert isinstance(view, NamespaceFilteredStore)
        assert view.search_kwargs
    else:
        view = NamespaceFilteredStore(store, namespace="mine")
    query = "the shift rota"
    assert {d.id for d in view.similarity_search(query, k=2)} == {"m0", "m0-copy"}
    mmr = view.max_marginal_relevance_search(query, k=2, fetch_k=20, lambda_mult=0.25)
    assert len(mmr) == 2
    assert mmr[0].id in {"m0", "m0-copy"}
    assert mmr[1].id in {"m1", "m2"}  # the copy adds nothing new: MMR picks another
    vector = HashingEmbeddings().embed_query(query)
    options = {"k": 2, "fetch_k": 20, "lambda_mult": 0.25}
    assert view.max_marginal_relevance_search_by_vector(vector, **options) == mmr
    assert await view.amax_marginal_relevance_search(query, **options) == mmr
    assert await view.amax_marginal_relevance_search_by_vector(vector, **options) == mmr
    retriever = view.as_retriever(search_type="mmr", search_kwargs={"k": 10})
    ids = sorted(d.id for d in retriever.invoke(query))
    assert ids == ["m0", "m0-copy", "m1", "m2"]
    assert sorted(d.id for d in await retriever.ainvoke(query)) == ids
    if native_filter:  # every candidate is of the namespace: the answer is the store's own
        assert view.max_marginal_relevance_search(query, k=2, fetch_k=3) == (
            store.max_marginal_relevance_search(query, k=2, fetch_k=3, **view.search_kwargs)
        )


@pytest.mark.parametrize("store_type", [MatrixVectorStore, InMemoryVectorStore])
def test_enumeration_and_namespace_deletion_stay_in_the_namespace(store_type: type) -> None:
    store = store_type(HashingEmbeddings())
    crowded(store)
    backend = backend_for_store(store)
    assert backend.capabilities.enumerates
    assert sorted(d.id for d in scan_documents(store, namespace="mine")) == ["m0", "m1", "m2"]
    assert backend.has_documents(store, "mine")
    assert backend.delete_namespace(store, "mine") == 3
    assert not backend.has_documents(store, "mine")
    assert len(list(scan_documents(store, namespace="other"))) == 60


def test_a_store_no_backend_can_list_says_so() -> None:
    with pytest.raises(TypeError, match="cannot enumerate documents of PlainStore"):
        list(scan_documents(PlainStore(HashingEmbeddings())))


def test_memory_backend_saves_only_after_a_write(tmp_path: Path) -> None:
    backend = get_backend({"provider": "in-memory"})
    store = backend.open_store(HashingEmbeddings(), store_dir=tmp_path)
    assert backend.save(store, tmp_path) is True  # never saved
    assert backend.save(store, tmp_path) is False
    store.add_texts(["a"], [{"namespace": "n"}], ids=["1"])
    assert backend.save(store, tmp_path) is True
    again = get_backend(None).open_store(HashingEmbeddings(), store_dir=tmp_path)
    assert [d.id for d in again.get_by_ids(["1"])] == ["1"]
    assert backend.describe(store_dir=tmp_path) == f"in-memory, saved in {tmp_path}"


def test_embedding_cache_is_one_per_corpus(tmp_path: Path) -> None:
    backend = get_backend(None)
    one = backend.byte_store(namespace="ns-one", store_dir=tmp_path)
    two = backend.byte_store(namespace="ns-two", store_dir=tmp_path)
    one.mset([("k", b"1")])
    two.mset([("k", b"2")])
    one.mdelete(list(one.yield_keys()))  # force_ingest of corpus one
    assert two.mget(["k"]) == [b"2"]


# -- adding a provider: one config class, one Backend subclass -----------------------------
class ToyDatabaseConfig(DatabaseProviderConfig):
    """A provider the test adds; the union in config is not needed to use it directly."""

    provider: Literal["toy"]
    size: int = 3


class ToyBackend(Backend):
    provider = "toy"
    config_type = ToyDatabaseConfig
    capabilities = BackendCapabilities(filters_namespace=True, enumerates=True, persistent=False)

    def open_store(
        self, embeddings: Embeddings, *, store_dir: Path | None = None, connect_timeout: float = 2
    ) -> VectorStore:
        return InMemoryVectorStore(embeddings)

    def describe(self, *, store_dir: Path | None = None) -> str:
        return f"toy of size {self.config.size}"  # type: ignore[union-attr]  # config given


def test_a_registered_provider_is_found_by_its_config() -> None:
    register_backend(ToyBackend)
    try:
        handle = open_vector_store({"provider": "toy", "size": 5}, HashingEmbeddings())
        assert (handle.backend, handle.fell_back) == ("toy", False)
        assert isinstance(handle.adapter, ToyBackend)
        assert handle.adapter.describe() == "toy of size 5"
        with pytest.raises(ConfigError, match="size"):
            get_backend({"provider": "toy", "size": "big"})
        with pytest.raises(ValueError, match="already served by ToyBackend"):
            register_backend(type("Other", (ToyBackend,), {}))
    finally:
        _registry._BACKENDS.pop("toy", None)
        _registry._ADOPTERS.remove(ToyBackend)


def test_untested_langchain_redis_version_warns_and_a_store_without_index_fails(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    pytest.importorskip("langchain_redis")
    from langchain_holodeck.vectorstores import _redis_index as redis_index

    monkeypatch.setattr(redis_index, "_installed_langchain_redis", lambda: "0.9.1")
    redis_index._check_langchain_redis_version.cache_clear()
    try:
        with caplog.at_level(logging.WARNING), pytest.raises(TypeError, match=r"0\.9\.1"):
            redis_index.search_index(object())  # type: ignore[arg-type]  # the point
        assert "langchain-redis 0.9.1 is untested" in caplog.text
    finally:
        redis_index._check_langchain_redis_version.cache_clear()


RACE = """
import importlib.abc, sys, threading
from langchain_holodeck.backends import _registry

entered, release = threading.Event(), threading.Event()

class Slow(importlib.abc.MetaPathFinder):  # holds the import of one provider module
    def find_spec(self, name, path=None, target=None):
        if name == "langchain_holodeck.backends.qdrant" and not release.is_set():
            entered.set()
            release.wait()
        return None

sys.meta_path.insert(0, Slow())
results = {}

def ask(who):
    try:
        results[who] = type(_registry.get_backend({"provider": "redis", "connection_string": "redis://127.0.0.1:1"})).__name__
    except Exception as error:
        results[who] = f"{type(error).__name__}: {error}"

first = threading.Thread(target=ask, args=("first",))
first.start()
entered.wait()  # the first thread is importing the providers
second = threading.Thread(target=ask, args=("second",))
second.start()
second.join(timeout=1)  # unfixed, it answers at once; fixed, it waits for the first
release.set()
first.join()
second.join()
print(results["first"], "|", results["second"])
"""


def test_a_provider_asked_for_while_another_thread_loads_them_is_found() -> None:
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run(
        [sys.executable, "-c", RACE], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "RedisBackend | RedisBackend"
