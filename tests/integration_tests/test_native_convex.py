"""Native hybrid search with the tool's convex fusion on Redis and Qdrant.

Neither engine can fuse by convex itself (Redis Stack 7.4 ranks by vector similarity plus raw
BM25 scaled down, Qdrant by rank), so their stores fuse the legs' ids and scores as the
retriever does. The corpus is the case that needs it: one chunk holds the identifier a query
names, and ten chunks share its words "the ship", so they are nearer by vector.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.documents import Document

from langchain_holodeck import HybridRetriever
from langchain_holodeck.contracts import NativeHit
from tests.helpers import HashingEmbeddings

QUERY = "Which ship has the registry NCC-1289?"
TARGET = "The Enterprise-C bears NCC-1289."
NEAR = [f"The ship {place} the {thing}." for place, thing in (
    ("of", "line"), ("in", "dock"), ("at", "pier"), ("and", "crew"), ("under", "sky"),
    ("by", "moon"), ("near", "star"), ("past", "gate"), ("over", "sea"), ("with", "sail"),
)]  # fmt: skip
FILLER = [f"Deck {n} holds the holodeck arch and its safety protocols." for n in range(12)]
"""Chunks without the query's words: once chunks are written again, a word in most chunks has
more postings (deleted entries not yet collected) than the index has chunks and RediSearch's
BM25STD IDF wraps to about 41 (search-strategy.md), so no query word may be in most chunks."""
WEIGHTS = (0.5, 0.5)


def corpus() -> list[Document]:
    docs = [Document(id=f"near{i}", page_content=t, metadata={"namespace": "kb"}) for i, t in
            enumerate(NEAR)]  # fmt: skip
    docs += [Document(id=f"filler{i}", page_content=t, metadata={"namespace": "kb"}) for i, t in
             enumerate(FILLER)]  # fmt: skip
    docs.append(Document(id="target", page_content=TARGET, metadata={"namespace": "kb"}))
    # the same identifier in another corpus of the same store: never a hit of "kb"
    docs.append(Document(id="other", page_content=TARGET, metadata={"namespace": "other"}))
    return docs


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True)) / math.sqrt(
        sum(x * x for x in a) * sum(y * y for y in b)
    )


@pytest.fixture(params=["redis", "qdrant"])
def backend(request: pytest.FixtureRequest) -> Iterator[tuple[Any, Any]]:
    """``(store, namespace filter)`` holding ``corpus()``, on each engine."""
    embeddings = HashingEmbeddings()
    if request.param == "redis":
        from redisvl.query.filter import Tag

        from langchain_holodeck.vectorstores import create_vector_store

        url = request.getfixturevalue("redis_url")
        name = request.getfixturevalue("redis_index_name")
        store = create_vector_store(
            {"provider": "redis", "connection_string": url, "index_name": name},
            embeddings,
            fallback=False,
        )
        store.add_documents(corpus())
        yield store, Tag("namespace") == "kb"
    else:
        pytest.importorskip("qdrant_client")
        from qdrant_client import QdrantClient

        from langchain_holodeck.backends.qdrant import HolodeckQdrantVectorStore

        store = HolodeckQdrantVectorStore(QdrantClient(location=":memory:"), "ships", embeddings)
        store.add_documents(corpus())
        yield store, store.namespace_filter("kb")


def ids(hits: list[NativeHit]) -> list[str]:
    return [str(h.document.id) for h in hits]


def test_convex_ranks_the_one_identifier_match_first_where_the_engine_fusion_does_not(
    backend: tuple[Any, Any],
) -> None:
    store, ours = backend
    kwargs = {"k": 3, "fetch_k": 20, "weights": WEIGHTS, "filter": ours}
    engine = store.native_hybrid_search(QUERY, **kwargs)
    convex = store.native_hybrid_search(QUERY, fusion="convex", **kwargs)
    assert ids(engine)[0] != "target"  # the engine's own fusion: a merely similar chunk wins
    assert ids(convex)[0] == "target"
    assert "other" not in ids(convex)  # the namespace filter holds on both legs
    assert [h.score for h in convex] == sorted((h.score for h in convex), reverse=True)
    assert convex[0].document.page_content == TARGET  # read after the fusion
    embeddings = HashingEmbeddings()
    expected = cosine(embeddings.embed_query(QUERY), embeddings.embed_query(TARGET))
    assert convex[0].similarity == pytest.approx(expected, abs=1e-4)  # in the dense leg


def test_convex_scores_a_keyword_only_hit_for_the_threshold(backend: tuple[Any, Any]) -> None:
    store, ours = backend
    # a dense leg of 2 misses the target: it is a keyword-only candidate
    kwargs = {"k": 5, "fetch_k": 2, "weights": WEIGHTS, "filter": ours, "fusion": "convex"}
    plain = store.native_hybrid_search(QUERY, **kwargs)
    target = next(h for h in plain if h.document.id == "target")
    assert target.similarity is None  # not computed without a threshold
    embeddings = HashingEmbeddings()
    similarity = cosine(embeddings.embed_query(QUERY), embeddings.embed_query(TARGET))
    kept = store.native_hybrid_search(QUERY, min_similarity_score=similarity - 0.01, **kwargs)
    assert "target" in ids(kept)
    hit = next(h for h in kept if h.document.id == "target")
    assert hit.similarity == pytest.approx(similarity, abs=1e-4)
    assert all(h.similarity is not None and h.similarity >= similarity - 0.01 for h in kept)
    dropped = store.native_hybrid_search(QUERY, min_similarity_score=similarity + 0.01, **kwargs)
    assert "target" not in ids(dropped)


def test_the_retriever_passes_its_convex_fusion_to_the_engine(backend: tuple[Any, Any]) -> None:
    store, ours = backend
    kwargs = {"vector_store": store, "k": 3, "weights": (*WEIGHTS, 0.0)}
    native = HybridRetriever(search_strategy="native", search_kwargs={"filter": ours}, **kwargs)
    assert native.fusion == "convex"  # the default
    assert native.invoke(QUERY)[0].id == "target"
    engine = HybridRetriever(
        search_strategy="native", fusion="rrf", search_kwargs={"filter": ours}, **kwargs
    )
    assert engine.invoke(QUERY)[0].id != "target"


def test_an_unknown_fusion_is_refused(backend: tuple[Any, Any]) -> None:
    store, _ = backend
    with pytest.raises(ValueError, match="fusion must be 'rrf' or 'convex', got 'linear'"):
        store.native_hybrid_search(QUERY, k=3, fetch_k=5, fusion="linear")


def _redis_store(url: str, index_name: str, metric: str = "COSINE") -> Any:
    from langchain_holodeck.vectorstores import create_vector_store

    store = create_vector_store(
        {
            "provider": "redis",
            "connection_string": url,
            "index_name": index_name,
            "distance_metric": metric,
        },
        HashingEmbeddings(),
        fallback=False,
    )
    store.add_documents(corpus())
    return store


@pytest.fixture
def redis_store(redis_url: str, redis_index_name: str) -> Any:
    return _redis_store(redis_url, redis_index_name)


@pytest.mark.parametrize("metric", ["COSINE", "L2", "IP"])
def test_redis_script_and_two_round_trips_rank_alike(
    redis_url: str, redis_index_name: str, metric: str
) -> None:
    """The server-side script fuses exactly as the store's Python path does, for each metric.

    The similarity is the cosine for the unit vectors of the corpus, whatever the metric.
    """
    from redisvl.query.filter import Tag

    redis_store = _redis_store(redis_url, redis_index_name, metric)
    embeddings = HashingEmbeddings()
    kwargs = {"k": 8, "fetch_k": 20, "weights": WEIGHTS, "fusion": "convex"}
    ours = Tag("namespace") == "kb"
    for query in (QUERY, "ship registry", "holodeck safety arch", "NCC-1289"):
        scripted = redis_store.native_hybrid_search(query, filter=ours, **kwargs)
        assert redis_store._scripts not in (None, False)  # the script ran
        redis_store._scripts = False
        two_trips = redis_store.native_hybrid_search(query, filter=ours, **kwargs)
        redis_store._scripts = None
        assert ids(scripted) == ids(two_trips)
        assert [h.score for h in scripted] == pytest.approx([h.score for h in two_trips], abs=1e-12)
        assert [h.similarity for h in scripted] == [h.similarity for h in two_trips]
        assert [h.document for h in scripted] == [h.document for h in two_trips]
        top = scripted[0]
        expected = cosine(
            embeddings.embed_query(query), embeddings.embed_query(top.document.page_content)
        )
        assert top.similarity == pytest.approx(max(0.0, expected), abs=1e-5)


def test_redis_without_script_permission_searches_in_two_round_trips(
    redis_store: Any, redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    import redis

    from langchain_holodeck.vectorstores import create_vector_store

    admin = redis.Redis.from_url(redis_url)
    user = f"noscript_{redis_store._index.name[-10:]}"
    admin.execute_command("ACL", "SETUSER", user, "on", ">pw", "~*", "&*", "+@all", "-@scripting")
    try:
        host = redis_url.split("://", 1)[1]
        limited = create_vector_store(
            {
                "provider": "redis",
                "connection_string": f"redis://{user}:pw@{host}",
                "index_name": redis_store._index.name,
            },
            HashingEmbeddings(),
            fallback=False,
        )
        with caplog.at_level("INFO"):
            hits = limited.native_hybrid_search(QUERY, k=3, fetch_k=20, weights=WEIGHTS,
                                                fusion="convex")  # fmt: skip
        assert ids(hits)[0] == "target"
        assert limited._scripts is False
        assert "refused the native search script" in caplog.text
    finally:
        admin.execute_command("ACL", "DELUSER", user)


def test_redis_engine_fusion_ranks_a_rewritten_index_as_a_fresh_one(redis_store: Any) -> None:
    """``fusion="rrf"`` on Redis 7.4 (one ``FT.AGGREGATE``) after every chunk was written again.

    The old entries stay in the postings until the server collects them, so a TAG every chunk
    carries counts more documents than the index holds and its BM25STD score wraps to about
    50: written as redisvl writes it (``(~@text:(...) (@namespace:{kb}))``) the filter's score
    swamped the words' and the identifier's chunk fell out of the first five. The store writes
    each word intersected with the filter, the filter scoring nothing.
    """
    from redisvl.query.filter import Tag

    kwargs = {"k": 5, "fetch_k": 20, "weights": (0.01, 0.99), "fusion": "rrf"}  # alpha 0.5
    ours = Tag("namespace") == "kb"
    fresh = redis_store.native_hybrid_search(QUERY, filter=ours, **kwargs)
    redis_store.add_documents(corpus())  # the same chunks again: stale postings
    info = redis_store._index.client.ft(redis_store._index.name).info()
    assert int(info["max_doc_id"]) > int(info["num_docs"])  # the case under test
    rewritten = redis_store.native_hybrid_search(QUERY, filter=ours, **kwargs)
    assert ids(fresh)[0] == ids(rewritten)[0] == "target"
    assert all(h.score < 2.0 for h in rewritten)  # no wrapped score: alpha * 1 + (1 - alpha) * BM25


def test_redis_script_reads_window_ids_as_the_python_path_does(redis_store: Any) -> None:
    """Only ``<chunk>:w<n>`` (n from 1) is a window; ``:w0`` or ``:wx`` end a chunk's own id."""
    from langchain_holodeck._chunk import window_parent

    odd = [Document(id=i, page_content=f"{i} ship NCC-1289", metadata={"namespace": "kb"})
           for i in ("odd:w0", "odd:w01", "odd:wx", "plain:w3x")]  # fmt: skip
    redis_store.add_documents(odd)
    kwargs = {"k": 30, "fetch_k": 40, "weights": WEIGHTS, "fusion": "convex"}
    scripted = redis_store.native_hybrid_search(QUERY, **kwargs)
    redis_store._scripts = False
    two_trips = redis_store.native_hybrid_search(QUERY, **kwargs)
    assert ids(scripted) == ids(two_trips)
    assert {"odd:w0", "odd:w01", "odd:wx", "plain:w3x"} <= set(ids(scripted))
    assert all(window_parent(i) == i for i in ids(scripted))


def test_a_failing_script_falls_back_for_that_query_and_is_kept(redis_store: Any) -> None:
    """Only a refusal (no permission, no such command) turns the script off for good."""
    from redis.exceptions import NoPermissionError, ResponseError

    from langchain_holodeck.vectorstores._redis_convex import script_refused

    broken = redis_store._index.client.register_script("return redis.error_reply('boom')")
    redis_store._scripts = broken
    kwargs = {"k": 3, "fetch_k": 20, "weights": WEIGHTS, "fusion": "convex"}
    hits = redis_store.native_hybrid_search(QUERY, **kwargs)
    assert ids(hits)[0] == "target"  # answered by the two-round-trip path
    assert redis_store._scripts is broken  # still tried on the next query
    assert script_refused(NoPermissionError("no permissions to run the 'evalsha' command"))
    assert script_refused(ResponseError("unknown command 'EVALSHA'"))
    assert not script_refused(ResponseError("boom"))
