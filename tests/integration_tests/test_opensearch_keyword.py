"""OpenSearchKeywordIndex against a loopback server speaking OpenSearch's wire format."""

from __future__ import annotations

import base64
import logging

import pytest
from langchain_core.documents import Document
from pydantic import SecretStr

from langchain_holodeck.keyword_index import KeywordIndex, OpenSearchKeywordIndex
from langchain_holodeck.retrievers import HybridRetriever
from langchain_holodeck.vectorstores import MatrixVectorStore
from tests.opensearch_server import FakeOpenSearch, serve

DOCS = [
    Document(
        id="a",
        page_content="The Operator shall confirm the safety interlock.",
        metadata={"namespace": "legal", "source_path": "act.md", "section_id": "201(a)"},
    ),
    Document(
        id="b",
        page_content="A second officer shall remain near the arch controls.",
        metadata={"namespace": "legal", "source_path": "act.md", "section_id": "202(a)"},
    ),
    Document(
        id="c",
        page_content="Crew shifts are scheduled weekly by the duty officer.",
        metadata={"namespace": "crew", "source_path": "shifts.txt", "section_id": ""},
    ),
    Document(
        id="d",
        page_content="Arch maintenance happens monthly.",
        metadata={"namespace": "crew", "source_path": "maint.md", "section_id": ""},
    ),
]


@pytest.fixture
def fake():
    state = FakeOpenSearch()
    server = serve(state)
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    yield state
    server.shutdown()
    server.server_close()


def test_upsert_search_delete_round_trip(fake) -> None:
    index = OpenSearchKeywordIndex(fake.url, index_name="kw", timeout=5)
    assert isinstance(index, KeywordIndex)
    index.upsert(DOCS)
    assert set(fake.indices["kw"]) == {"a", "b", "c", "d"}
    assert fake.indices["kw"]["b"]["section_id"] == "202(a)"
    hits = index.search("arch controls", k=5)
    assert [h.id for h in hits][:2] == ["b", "d"]
    assert hits[0].score > 0
    index.delete(["b", "missing"])
    assert [h.id for h in index.search("arch controls", k=5)] == ["d"]
    paths = [(m, p.split("?")[0]) for m, p, _ in fake.requests]
    assert ("PUT", "/kw") in paths
    assert ("POST", "/_bulk") in paths
    assert ("POST", "/kw/_search") in paths


def test_upsert_replaces_by_id(fake) -> None:
    index = OpenSearchKeywordIndex(fake.url, index_name="kw")
    index.upsert(DOCS)
    index.upsert([Document(id="a", page_content="Replicator rations", metadata={})])
    assert [h.id for h in index.search("replicator", k=3)] == ["a"]
    assert index.search("interlock", k=3) == []


def test_namespace_filter(fake) -> None:
    OpenSearchKeywordIndex(fake.url, index_name="kw").upsert(DOCS)
    crew = OpenSearchKeywordIndex(fake.url, index_name="kw", namespace="crew")
    assert {h.id for h in crew.search("arch officer", k=5)} == {"c", "d"}
    assert fake.requests[-1][1].startswith("/kw/_search")


def test_basic_auth_and_api_key_headers(fake) -> None:
    OpenSearchKeywordIndex(
        fake.url, index_name="kw", username="admin", password=SecretStr("s3cret")
    ).search("x", 1)
    auth = fake.requests[-1][2].get("authorization") or fake.requests[-1][2].get("Authorization")
    assert auth == "Basic " + base64.b64encode(b"admin:s3cret").decode()
    index = OpenSearchKeywordIndex(fake.url, index_name="kw", api_key="k3y")
    index.search("x", 1)
    headers = {k.lower(): v for k, v in fake.requests[-1][2].items()}
    assert headers["authorization"] == "ApiKey k3y"
    assert "k3y" not in repr(index)
    assert "s3cret" not in repr(OpenSearchKeywordIndex(fake.url, username="u", password="s3cret"))


def test_rebuild_from_store_replaces_only_its_namespace(fake, embeddings) -> None:
    store = MatrixVectorStore(embeddings)
    store.add_documents(DOCS)
    index = OpenSearchKeywordIndex(fake.url, index_name="kw")
    index.upsert(DOCS)  # both namespaces share the OpenSearch index
    index.upsert([Document(id="stale", page_content="stale arch", metadata={"namespace": "legal"})])
    legal = OpenSearchKeywordIndex(fake.url, index_name="kw", namespace="legal")
    assert legal.rebuild_from_store(store) == 2
    assert set(fake.indices["kw"]) == {"a", "b", "c", "d"}  # crew's c, d kept; stale gone
    crew = OpenSearchKeywordIndex(fake.url, index_name="kw", namespace="crew")
    assert {h.id for h in crew.search("arch officer", k=5)} == {"c", "d"}
    assert ("DELETE", "/kw") not in [(m, p.split("?")[0]) for m, p, _ in fake.requests]


def test_blank_query_and_bad_k(fake) -> None:
    index = OpenSearchKeywordIndex(fake.url, index_name="kw")
    before = len(fake.requests)
    assert index.search("   ", k=3) == []
    assert len(fake.requests) == before  # no request for nothing
    with pytest.raises(ValueError, match="k must be a positive integer, got 0"):
        index.search("arch", k=0)


def test_server_failure_degrades_the_retriever(fake, embeddings, caplog) -> None:
    store = MatrixVectorStore(embeddings)
    store.add_documents(DOCS)
    index = OpenSearchKeywordIndex(fake.url, index_name="kw", timeout=2)
    index.upsert(DOCS)
    fake.fail_next = 10  # the client retries: fail them all
    r = HybridRetriever(vector_store=store, keyword_index=index, k=2)
    with caplog.at_level(logging.WARNING, logger="langchain_holodeck.retrievers"):
        docs = r.invoke("arch controls")
    assert len(docs) == 2
    assert all(d.metadata["keyword_rank"] is None for d in docs)
    assert "keyword search failed" in caplog.text
    fake.fail_next = 0
    assert any(d.metadata["keyword_rank"] for d in r.invoke("arch controls"))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"endpoint": "localhost:9200"}, "endpoint must be an http:// or https:// URL"),
        ({"username": "u"}, "username and password go together"),
        ({"username": "u", "password": "p", "api_key": "k"}, "either api_key or username"),
        ({"timeout": 0}, "timeout must be > 0 and at most 604800 seconds .*got 0"),
        ({"timeout": float("inf")}, "timeout must be > 0 and at most 604800 seconds .*got inf"),
    ],
)
def test_bad_arguments(kwargs, match) -> None:
    kwargs = {"endpoint": "http://127.0.0.1:9", **kwargs}
    with pytest.raises(ValueError, match=match):
        OpenSearchKeywordIndex(**kwargs)


@pytest.mark.parametrize("timeout", [True, None, "10"])
def test_a_timeout_that_is_not_a_number_is_refused(timeout: object) -> None:
    """Found 2026-12-07: timeout=True was a timeout of 1 s (a bool is an int in Python)."""
    with pytest.raises(TypeError, match=rf"^timeout must be a number of seconds.*got {timeout!r}"):
        OpenSearchKeywordIndex("http://127.0.0.1:9", timeout=timeout)  # type: ignore[arg-type]  # the values under test
