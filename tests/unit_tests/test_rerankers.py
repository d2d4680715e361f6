"""Pure parts of the rerankers: validation, breaker, fallback, composition. No network."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from langchain_core.documents import BaseDocumentCompressor, Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_tests.integration_tests import RetrieversIntegrationTests
from pydantic import Field, ValidationError

from langchain_holodeck.rerankers import (
    CohereReranker,
    RerankRetriever,
    VLLMReranker,
    create_reranker,
)
from langchain_holodeck.rerankers.base import (
    _checked_ranking,
    _CircuitBreaker,
    _RerankCompressor,
)
from tests.helpers import HashingEmbeddings
from tests.rerank_server import expected_order, lexical_score

CORPUS = [
    Document(id="a", page_content="Shifts rotate every week.", metadata={"source": "guide.md"}),
    Document(id="b", page_content="The holodeck safety protocols stay on.", metadata={"n": 2}),
    Document(id="c", page_content="Holodeck safety protocols are audited.", metadata={"n": 3}),
    Document(id="d", page_content="Replicators serve tea.", metadata={"n": 4}),
    Document(id="e", page_content="Crew quarters are on deck four.", metadata={"n": 5}),
]


class LexicalReranker(_RerankCompressor):
    """In-memory backend scoring like the test server; counts its calls."""

    calls: int = 0
    fail_with: str | None = None
    answer: list[tuple[object, object]] | None = None

    def _rank(self, query: str, texts: list[str], top_n: int) -> Sequence[tuple[object, object]]:
        self.calls += 1
        if self.fail_with is not None:
            raise RuntimeError(self.fail_with)
        if self.answer is not None:
            return self.answer
        return [(i, lexical_score(query, texts[i])) for i in expected_order(query, texts)][:top_n]


# -- _checked_ranking ------------------------------------------------------------------------


def test_checked_ranking_sorts_best_first() -> None:
    assert _checked_ranking([(2, 0.1), (0, 0.9), (1, 0.5)], 3) == [(0, 0.9), (1, 0.5), (2, 0.1)]


@pytest.mark.parametrize(
    ("pairs", "match"),
    [
        ([], "ranks no documents"),
        ([(0, 0.1), (1, 0.2), (2, 0.3)], "only 2 were sent"),
        ([(5, 0.5)], "index 5"),
        ([(-1, 0.5)], "index -1"),
        ([("0", 0.5)], "index '0'"),
        ([(True, 0.5)], "index True"),
        ([(None, 0.5)], "index None"),
        ([(0, 0.5), (0, 0.4)], "repeats index 0"),
        ([(0, None)], "relevance_score None"),
        ([(0, "high")], "relevance_score 'high'"),
        ([(0, float("nan"))], "relevance_score nan"),
    ],
)
def test_checked_ranking_rejects_malformed_answers(
    pairs: list[tuple[object, object]], match: str
) -> None:
    with pytest.raises(ValueError, match=match):
        _checked_ranking(pairs, 2)


# -- circuit breaker -------------------------------------------------------------------------


@dataclass
class FakeClock:
    now: float = 0.0

    def __call__(self) -> float:
        return self.now


def test_breaker_opens_after_threshold_and_half_opens_after_cooldown() -> None:
    clock = FakeClock()
    breaker = _CircuitBreaker(clock)
    assert breaker.allow(10)
    assert not breaker.record_failure(2)
    assert breaker.record_failure(2)  # second consecutive failure opens it
    assert not breaker.allow(10)
    clock.now = 9.9
    assert not breaker.allow(10)
    clock.now = 10.0
    assert breaker.allow(10)  # the single half-open trial
    assert not breaker.allow(10)  # others keep skipping while the trial runs
    breaker.record_success()
    assert breaker.allow(10)
    assert not breaker.is_open


def test_breaker_failed_trial_reopens_for_a_full_cooldown() -> None:
    clock = FakeClock()
    breaker = _CircuitBreaker(clock)
    breaker.record_failure(1)
    clock.now = 5.0
    assert breaker.allow(5)
    assert breaker.record_failure(1)
    clock.now = 9.0
    assert not breaker.allow(5)
    clock.now = 10.0
    assert breaker.allow(5)


def test_success_resets_the_consecutive_count() -> None:
    breaker = _CircuitBreaker(FakeClock())
    breaker.record_failure(3)
    breaker.record_failure(3)
    breaker.record_success()
    assert not breaker.record_failure(3)
    assert breaker.allow(60)


# -- base compressor -------------------------------------------------------------------------


def test_rerank_reorders_and_keeps_ids_and_metadata() -> None:
    reranker = LexicalReranker(top_n=2)
    out = reranker.compress_documents(CORPUS, "holodeck safety audited")
    assert [d.id for d in out] == ["c", "b"]
    assert out[0].metadata == {"n": 3, "relevance_score": 1.0, "rerank_input_rank": 3}
    assert out[1].metadata["rerank_input_rank"] == 2
    assert CORPUS[2].metadata == {"n": 3}  # inputs untouched


def test_top_n_none_returns_all_reordered() -> None:
    out = LexicalReranker(top_n=None).compress_documents(CORPUS, "replicators tea")
    assert len(out) == len(CORPUS)
    assert out[0].id == "d"


def test_no_documents_makes_no_call() -> None:
    reranker = LexicalReranker()
    assert reranker.compress_documents([], "anything") == []
    assert reranker.calls == 0


async def test_async_no_documents_makes_no_call() -> None:
    reranker = LexicalReranker()
    assert await reranker.acompress_documents([], "anything") == []
    assert reranker.calls == 0


def test_reranks_on_original_content_by_default() -> None:
    docs = [
        Document(
            id="x",
            page_content="context about tea\n\nShifts rotate.",
            metadata={"original_content": "Shifts rotate."},
        ),
        Document(id="y", page_content="Replicators serve tea.", metadata={}),
    ]
    plain = LexicalReranker(top_n=None).compress_documents(docs, "tea")
    contextual = LexicalReranker(top_n=None, use_contextualized=True).compress_documents(
        docs, "tea"
    )
    assert plain[0].metadata["relevance_score"] == 1.0
    assert [d.id for d in plain] == ["y", "x"]
    assert plain[1].metadata["relevance_score"] == 0.0
    assert [d.metadata["relevance_score"] for d in contextual] == [1.0, 1.0]


def test_failure_falls_back_to_input_order_with_one_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    reranker = LexicalReranker(top_n=3, fail_with="backend exploded")
    with caplog.at_level(logging.WARNING, logger="langchain_holodeck.rerankers"):
        out = reranker.compress_documents(CORPUS, "tea")
    assert [d.id for d in out] == ["a", "b", "c"]
    assert all("relevance_score" not in d.metadata for d in out)
    assert len(caplog.records) == 1
    assert "backend exploded" in caplog.text


def test_malformed_answer_falls_back(caplog: pytest.LogCaptureFixture) -> None:
    reranker = LexicalReranker(top_n=2, answer=[(0, 0.3), (9, 0.9)])
    with caplog.at_level(logging.WARNING):
        out = reranker.compress_documents(CORPUS, "tea")
    assert [d.id for d in out] == ["a", "b"]
    assert "malformed answer" in caplog.text


def test_breaker_skips_the_backend_once_open() -> None:
    reranker = LexicalReranker(fail_with="down", failure_threshold=2, cooldown=3600)
    for _ in range(5):
        assert [d.id for d in reranker.compress_documents(CORPUS, "tea")] == ["a", "b", "c"]
    assert reranker.calls == 2


def test_invalid_top_n_is_rejected() -> None:
    with pytest.raises(ValidationError, match="top_n"):
        LexicalReranker(top_n=0)


# -- constructors and factory ----------------------------------------------------------------


def test_cohere_key_never_in_repr() -> None:
    reranker = CohereReranker(api_key="sk-unit-DISTINCTIVE-42")
    assert "sk-unit-DISTINCTIVE-42" not in repr(reranker)
    assert "sk-unit-DISTINCTIVE-42" not in str(reranker.model_dump())


def test_unknown_field_is_rejected() -> None:
    with pytest.raises(ValidationError, match="topn"):
        CohereReranker(api_key="k", topn=3)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://localhost:8000", "http://localhost:8000"),
        ("http://localhost:8000/", "http://localhost:8000"),
        ("http://localhost:8000/v1", "http://localhost:8000"),
        ("https://rerank.example/v2/", "https://rerank.example"),
    ],
)
def test_vllm_url_is_normalized(url: str, expected: str) -> None:
    assert VLLMReranker(url=url, model="m").url == expected


def test_vllm_url_needs_a_scheme() -> None:
    with pytest.raises(ValidationError, match="got 'localhost:8000'"):
        VLLMReranker(url="localhost:8000", model="m")


def test_vllm_model_is_required() -> None:
    with pytest.raises(ValidationError, match="model"):
        VLLMReranker(url="http://localhost:8000", model="")


@dataclass
class CohereCfg:
    api_key: str
    provider: str = "cohere"
    model: str = "rerank-v3.5"


@dataclass
class VLLMCfg:
    url: str
    model: str
    timeout: float = 30.0
    provider: str = "vllm"


def test_create_reranker_builds_each_provider() -> None:
    cohere = create_reranker(CohereCfg(api_key="k", model="rerank-english-v3.0"), top_n=5)
    assert isinstance(cohere, CohereReranker)
    assert (cohere.model, cohere.top_n) == ("rerank-english-v3.0", 5)
    vllm = create_reranker(VLLMCfg(url="http://h:1/v1", model="bge", timeout=2.5), top_n=None)
    assert isinstance(vllm, VLLMReranker)
    assert (vllm.url, vllm.model, vllm.timeout, vllm.top_n) == ("http://h:1", "bge", 2.5, None)


def test_create_reranker_rejects_unknown_provider() -> None:
    @dataclass
    class Bad:
        provider: str = "vllmm"

    with pytest.raises(ValueError, match="got 'vllmm'"):
        create_reranker(Bad())


def test_create_reranker_from_the_config_models() -> None:
    from langchain_holodeck.config import CohereRerankerConfig, VLLMRerankerConfig

    cohere = create_reranker(CohereRerankerConfig(provider="cohere", api_key="sk-cfg-1"))
    assert isinstance(cohere, CohereReranker)
    assert cohere.api_key.get_secret_value() == "sk-cfg-1"
    assert cohere.top_n is None  # all, reordered: RerankRetriever cuts to k
    vllm = create_reranker(
        VLLMRerankerConfig(provider="vllm", url="http://h:8000", model="bge", timeout=4),
        use_contextualized=True,
    )
    assert isinstance(vllm, VLLMReranker)
    assert (vllm.url, vllm.model, vllm.timeout, vllm.use_contextualized) == (
        "http://h:8000",
        "bge",
        4.0,
        True,
    )


# -- RerankRetriever ---------------------------------------------------------------------------


def _store_retriever() -> BaseRetriever:
    store = InMemoryVectorStore(HashingEmbeddings())
    store.add_documents(CORPUS)
    return store.as_retriever()


def test_rerank_retriever_fetches_fetch_k_and_returns_k() -> None:
    retriever = RerankRetriever(
        retriever=_store_retriever(), reranker=LexicalReranker(top_n=None), k=2, fetch_k=5
    )
    out = retriever.invoke("holodeck safety audited")
    assert [d.id for d in out] == ["c", "b"]
    assert out[0].metadata["relevance_score"] == 1.0


def test_rerank_retriever_passes_fetch_k_to_the_first_stage() -> None:
    class Recording(BaseRetriever):
        seen_k: list[int] = Field(default_factory=list)

        def _get_relevant_documents(
            self, query: str, *, run_manager: object, k: int = 4
        ) -> list[Document]:
            self.seen_k.append(k)
            return CORPUS[:k]

    first = Recording()
    RerankRetriever(retriever=first, reranker=LexicalReranker(top_n=None), k=1).invoke("tea")
    RerankRetriever(retriever=first, reranker=LexicalReranker(top_n=None), k=1, fetch_k=4).invoke(
        "tea", k=2
    )
    assert first.seen_k == [3, 4]  # default fetch_k = 3 * k


async def test_rerank_retriever_async_passes_fetch_k_to_a_sync_only_first_stage() -> None:
    class SyncOnly(BaseRetriever):  # the usual custom retriever: no async hook of its own
        seen_k: list[int] = Field(default_factory=list)

        def _get_relevant_documents(
            self, query: str, *, run_manager: object, k: int = 4
        ) -> list[Document]:
            self.seen_k.append(k)
            return CORPUS[:k]

    first = SyncOnly()
    retriever = RerankRetriever(retriever=first, reranker=LexicalReranker(top_n=None), k=1)
    out = await retriever.ainvoke("replicators tea")  # was TypeError: unexpected keyword 'k'
    batched = await retriever.abatch(["tea", "holodeck"], k=2)
    assert len(out) == 1
    assert [len(docs) for docs in batched] == [2, 2]
    assert sorted(first.seen_k) == [3, 6, 6]  # fetch_k = 3 * k reached the sync hook


async def test_rerank_retriever_async_path() -> None:
    retriever = RerankRetriever(
        retriever=_store_retriever(), reranker=LexicalReranker(top_n=None), k=1, fetch_k=5
    )
    out = await retriever.ainvoke("replicators tea")
    assert [d.id for d in out] == ["d"]


@pytest.mark.parametrize("mode", ["ok", "error_500"])
async def test_rerank_retriever_returns_k_past_top_n_and_fetch_k(
    mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    from langchain_holodeck.retrievers import HybridRetriever
    from langchain_holodeck.vectorstores import MatrixVectorStore
    from tests.rerank_server import RerankServer

    store = MatrixVectorStore(HashingEmbeddings())
    store.add_documents(
        [Document(id=str(i), page_content=f"note {i} about reactors") for i in range(20)]
    )
    with RerankServer(mode=mode) as server:  # type: ignore[arg-type]  # a Mode literal
        reranker = VLLMReranker(url=server.url, model="m", failure_threshold=9)  # top_n: 3
        retriever = RerankRetriever(
            retriever=HybridRetriever(vector_store=store, k=5), reranker=reranker, k=3, fetch_k=5
        )
        with caplog.at_level(logging.WARNING):
            got = [
                len(retriever.invoke("reactors", k=8)),
                len(await retriever.ainvoke("reactors", k=8)),
                len(retriever.invoke("reactors")),
                len(retriever.invoke("reactors", k=30)),  # more than there are: all 20
            ]
    assert got == [8, 8, 3, 20]
    assert [len(r.documents) for r in server.requests] == [8, 8, 5, 20]
    if mode == "ok":
        assert [r.top_n for r in server.requests] == [8, 8, 3, 20]
    else:  # the fallback keeps the retrieval order, k of it
        assert "vllm reranker failed, keeping the retrieval order (8 documents)" in caplog.text


async def test_a_server_ranking_fewer_than_asked_is_filled_from_the_retrieval_order() -> None:
    """A rerank server answering 1 result for top_n=5 (a gateway's own threshold) shortened
    the result to 1, silently; asking for k gets min(k, candidates): the ranked ones first,
    then the rest in the retrieval order, without a relevance_score."""
    from langchain_holodeck.retrievers import HybridRetriever
    from langchain_holodeck.vectorstores import MatrixVectorStore
    from tests.rerank_server import RerankServer

    store = MatrixVectorStore(HashingEmbeddings())
    texts = ["reactor notes", "reactor core", "galley menu", "reactor core shielding"]
    store.add_documents([Document(id=str(i), page_content=t) for i, t in enumerate(texts)])
    first = HybridRetriever(vector_store=store, k=4)
    candidates = [d.id for d in first.invoke("reactor core shielding")]
    with RerankServer(mode="fewer") as server:
        reranker = VLLMReranker(url=server.url, model="m")
        retriever = RerankRetriever(retriever=first, reranker=reranker, k=3, fetch_k=4)
        answers = [
            retriever.invoke("reactor core shielding"),
            await retriever.ainvoke("reactor core shielding"),
        ]
    assert [r.top_n for r in server.requests] == [3, 3]
    for got in answers:
        assert got[0].id == "3"  # the server's one result
        assert got[0].metadata["relevance_score"] == 1.0
        assert [d.id for d in got[1:]] == [i for i in candidates if i != "3"][:2]
        assert all("relevance_score" not in d.metadata for d in got[1:])
        assert [d.metadata["rerank_input_rank"] for d in got[1:]] == [
            candidates.index(d.id) + 1 for d in got[1:]
        ]


def test_an_error_body_with_http_200_is_named_in_the_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from tests.rerank_server import RerankServer

    docs = [Document(id=str(i), page_content=f"note {i}") for i in range(3)]
    with RerankServer(mode="error_200") as server, caplog.at_level(logging.WARNING):
        out = VLLMReranker(url=server.url, model="m").compress_documents(docs, "note")
    assert [d.id for d in out] == ["0", "1", "2"]
    assert "the server said: 'model overloaded'" in caplog.text


@pytest.mark.parametrize("bad_k", [0, -1, "3", 2.5, True])
async def test_rerank_retriever_names_a_bad_per_call_k_as_given(bad_k: object) -> None:
    reranker = LexicalReranker(top_n=None)
    retriever = RerankRetriever(retriever=_store_retriever(), reranker=reranker, k=2)
    message = rf"^k must be an integer between 1 and 1000, got {bad_k!r}\.$"
    with pytest.raises(ValueError, match=message):
        retriever.invoke("holodeck", k=bad_k)
    with pytest.raises(ValueError, match=message):
        await retriever.ainvoke("holodeck", k=bad_k)
    assert reranker.calls == 0


async def test_rerank_retriever_names_the_callers_k_and_the_limit() -> None:
    """k=1001 failed in the first stage naming 3003 (3 * k); k=400 naming 1200."""
    from langchain_holodeck.retrievers import HybridRetriever
    from langchain_holodeck.vectorstores import MatrixVectorStore

    store = MatrixVectorStore(HashingEmbeddings())
    store.add_documents(CORPUS)
    reranker = LexicalReranker(top_n=None)
    retriever = RerankRetriever(retriever=HybridRetriever(vector_store=store), reranker=reranker)
    message = r"^k must be an integer between 1 and 1000, got 1001\.$"
    with pytest.raises(ValueError, match=message):
        retriever.invoke("holodeck", k=1001)
    with pytest.raises(ValueError, match=message):
        await retriever.ainvoke("holodeck", k=1001)
    assert reranker.calls == 0
    with pytest.raises(ValidationError, match="k\n  Input should be less than or equal to 1000"):
        RerankRetriever(retriever=retriever.retriever, reranker=reranker, k=1001)
    # 3 * k past the first stage's limit: the default candidate count stops at 1000
    assert len(retriever.invoke("holodeck", k=400)) == len(CORPUS)
    assert len(await retriever.ainvoke("holodeck", k=1000)) == len(CORPUS)


def test_rerank_retriever_refuses_a_fetch_k_no_call_can_take_when_built() -> None:
    """Found 2026-12-07: fetch_k=5000 was accepted, then every call failed in the first stage
    with "k must be an integer between 1 and 1000, got 5000", naming k, not fetch_k."""
    first, reranker = _store_retriever(), LexicalReranker(top_n=None)
    refused = "fetch_k\n  Input should be less than or equal to 1000 .*input_value=5000"
    with pytest.raises(ValidationError, match=refused):
        RerankRetriever(retriever=first, reranker=reranker, fetch_k=5000)
    most = RerankRetriever(retriever=first, reranker=reranker, k=2, fetch_k=1000)
    assert len(most.invoke("holodeck safety")) == 2


def test_rerank_retriever_lifts_another_compressors_top_n_per_call() -> None:
    class TopN(BaseDocumentCompressor):
        top_n: int = 2

        def compress_documents(
            self, documents: Sequence[Document], query: str, callbacks: object = None
        ) -> Sequence[Document]:
            return list(documents)[: self.top_n]

    reranker = TopN()
    retriever = RerankRetriever(retriever=_store_retriever(), reranker=reranker, k=1, fetch_k=5)
    assert len(retriever.invoke("holodeck", k=4)) == 4
    assert reranker.top_n == 2  # the reranker itself is left as it was


class TestRerankRetrieverStandard(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[RerankRetriever]:
        return RerankRetriever

    @property
    def retriever_constructor_params(self) -> dict:
        return {"retriever": _store_retriever(), "reranker": LexicalReranker(top_n=None)}

    @property
    def retriever_query_example(self) -> str:
        return "holodeck safety protocols"


def test_a_timeout_that_is_not_finite_is_refused() -> None:
    """timeout=inf passed, then every call failed (OverflowError: timestamp out of range for
    platform time_t) and the retrieval order was kept with a warning."""
    with pytest.raises(ValueError, match="timeout"):
        VLLMReranker(url="http://h:8000", model="m", timeout=float("inf"))


@pytest.mark.parametrize("timeout", [1e12, 604_800.5])
def test_a_timeout_past_a_week_is_refused(timeout: float) -> None:
    """timeout=1e12 passed, then every rerank failed (OverflowError) and kept the order."""
    with pytest.raises(ValidationError, match=r"timeout\n.*less than or equal to 604800"):
        VLLMReranker(url="http://h:8000", model="m", timeout=timeout)


def test_the_longest_timeout_taken_reranks() -> None:
    """A week, the bound: the request is made and answered (no clock overflow)."""
    from tests.rerank_server import RerankServer

    docs = [Document(page_content=text) for text in ("reactor core", "galley menu", "reactor")]
    with RerankServer() as server:
        reranker = VLLMReranker(url=server.url, model="m", timeout=604_800, top_n=None)
        ranked = reranker.compress_documents(docs, "reactor")
    assert len(server.requests) == 1
    assert all("relevance_score" in doc.metadata for doc in ranked)


BOOLEAN_NUMBERS = [
    {"timeout": True},
    {"timeout": False},
    {"top_n": True},
    {"failure_threshold": True},
    {"cooldown": False},
]


@pytest.mark.parametrize("kwargs", BOOLEAN_NUMBERS)
@pytest.mark.parametrize(
    "reranker",
    [
        lambda **kw: CohereReranker(api_key="k", **kw),
        lambda **kw: VLLMReranker(url="http://h:8000", model="m", **kw),
    ],
    ids=["cohere", "vllm"],
)
def test_a_bool_for_a_number_is_refused(reranker: Any, kwargs: dict[str, bool]) -> None:
    """Found 2026-12-07: CohereReranker(timeout=True) waited 1 s (a bool is an int in Python,
    and pydantic took it as 1); top_n=True kept one document, cooldown=False none."""
    ((name, value),) = kwargs.items()
    with pytest.raises(ValidationError, match=rf"{name}\n.*not a bool .*got {value}"):
        reranker(**kwargs)
    assert reranker(**{name: 2}).model_dump()[name] == 2  # a number still is one


def test_a_bool_k_of_the_rerank_retriever_is_refused() -> None:
    first = InMemoryVectorStore(HashingEmbeddings()).as_retriever()
    for name in ("k", "fetch_k"):
        with pytest.raises(ValidationError, match=rf"{name}\n.*not a bool"):
            RerankRetriever(retriever=first, reranker=LexicalReranker(), **{name: True})
