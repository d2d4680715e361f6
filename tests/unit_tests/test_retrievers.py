import asyncio
import logging
import re
import threading
from pathlib import Path

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import InMemoryVectorStore

from langchain_holodeck.definitions import DefinitionExtractor
from langchain_holodeck.exact import ExactMatchIndex
from langchain_holodeck.fusion import reciprocal_rank_fusion
from langchain_holodeck.keyword_index import BM25KeywordIndex, KeywordHit
from langchain_holodeck.retrievers import HybridRetriever
from langchain_holodeck.splitters import StructuredMarkdownSplitter
from langchain_holodeck.sync import stable_id
from langchain_holodeck.vectorstores import MatrixVectorStore, NamespaceFilteredStore

ACT = "legal/holodeck_act.md"
SCORE_KEYS = {
    "fused_score",
    "semantic_score",
    "keyword_score",
    "exact_match",
    "semantic_rank",
    "keyword_rank",
    "exact_rank",
}


def act_chunks(data_dir: Path) -> list[Document]:
    text = (data_dir / "legal" / "holodeck_act.md").read_text(encoding="utf-8")
    doc = Document(page_content=text, metadata={"source_path": ACT, "source": ACT})
    chunks = StructuredMarkdownSplitter().split_documents([doc])
    keys = [f"{ACT}_chunk_{c.metadata['chunk_index']}" for c in chunks]
    return [
        c.model_copy(update={"id": stable_id("ns", key)})
        for c, key in zip(chunks, keys, strict=False)
    ]


@pytest.fixture
def chunks(data_dir: Path) -> list[Document]:
    return act_chunks(data_dir)


@pytest.fixture
def by_sid(chunks: list[Document]) -> dict[str, str]:
    return {c.metadata["section_id"]: c.id for c in chunks}


@pytest.fixture
def parts(chunks, embeddings):
    store = MatrixVectorStore(embeddings)
    store.add_documents(chunks)
    bm25 = BM25KeywordIndex()
    bm25.upsert(chunks)
    exact = ExactMatchIndex()
    exact.upsert(chunks)
    return store, bm25, exact


@pytest.fixture
def retriever(parts) -> HybridRetriever:
    store, bm25, exact = parts
    return HybridRetriever(vector_store=store, keyword_index=bm25, exact_index=exact, k=5)


def test_results_carry_scores_ranks_and_ids(retriever, chunks) -> None:
    docs = retriever.invoke("second officer arch controls", k=4)
    assert len(docs) == 4
    ids = {c.id for c in chunks}
    for doc in docs:
        assert doc.id in ids
        assert doc.metadata.keys() >= SCORE_KEYS
        assert doc.metadata["source_path"] == ACT  # original metadata kept
    fused = [d.metadata["fused_score"] for d in docs]
    assert fused == sorted(fused, reverse=True)
    top = docs[0].metadata
    assert top["semantic_rank"] is not None
    assert top["keyword_rank"] is not None
    assert 0 <= top["semantic_score"] <= 1
    assert top["keyword_score"] > 0
    assert top["exact_match"] is False
    assert top["exact_rank"] is None


def test_fused_order_is_weighted_rrf_of_the_legs(parts) -> None:
    store, bm25, _ = parts
    r = HybridRetriever(
        vector_store=store,
        keyword_index=bm25,
        k=4,
        fetch_k=8,
        weights=(0.6, 0.4, 0.0),
        rrf_k=10,
        fusion="rrf",
        feedback_docs=0,  # one fusion of the legs (feedback: test_feedback.py)
    )
    query = "program rated 4 or 5 supervising officer"
    dense = [(d.id, s) for d, s in store.similarity_search_with_relevance_scores(query, k=8)]
    expected = reciprocal_rank_fusion([dense, bm25.search(query, 8)], k=10, weights=[0.6, 0.4])
    docs = r.invoke(query)
    best = (0.6 + 0.4) / (10 + 1)  # first in both rankings
    assert [(d.id, d.metadata["fused_score"] * best) for d in docs] == [
        (i, pytest.approx(s)) for i, s in expected[:4]
    ]


def test_does_not_mutate_store_documents(retriever, parts) -> None:
    store, _, _ = parts
    docs = retriever.invoke("Operator", k=2)
    stored = store.get_by_ids([docs[0].id])[0]
    assert "fused_score" not in stored.metadata


def test_exact_section_lookup_is_top_result(retriever, chunks) -> None:
    from tests.unit_tests.test_exact import all_section_ids, section_start

    templates = [
        "Section {}",
        "section {}",
        "§ {}",
        "sec. {}",
        "what does Section {} require?",
        "Section {} of the Holodeck Safety Act",
    ]
    total = top = 0
    for sid in all_section_ids(chunks):
        expected = section_start(chunks, sid)
        for template in templates:
            docs = retriever.invoke(template.format(sid), k=3)
            total += 1
            top += docs[0].id in expected and docs[0].metadata["exact_match"] is True
    assert total >= 90
    assert top / total >= 0.99


def test_the_section_of_the_document_a_query_names_comes_first(embeddings) -> None:
    # found 2026-12-07: the exact leg pinned every document's 4.2, whichever the query named,
    # and "Article 4", in no document, pinned the lease's "Section 4" first
    texts = {
        "employee-handbook.md": "# Employee Handbook\n\n## Section 4.2 Sick leave\n\nTen days.\n",
        "security-policy.md": "# Security Policy\n\n## Section 4.2 Passwords\n\nLong ones.\n",
        "lease.md": "# Lease\n\n## Section 4 Termination\n\nThree months' notice.\n",
    }
    docs = [Document(page_content=t, metadata={"source_path": p}) for p, t in texts.items()]
    chunks = [
        c.model_copy(update={"id": f"{c.metadata['source_path']}#{c.metadata['chunk_index']}"})
        for c in StructuredMarkdownSplitter().split_documents(docs)
    ]
    store = MatrixVectorStore(embeddings)
    store.add_documents(chunks)
    bm25, exact = BM25KeywordIndex(), ExactMatchIndex()
    bm25.upsert(chunks)
    exact.upsert(chunks)
    retriever = HybridRetriever(vector_store=store, keyword_index=bm25, exact_index=exact, k=3)
    for query, named in [
        ("section 4.2 of the employee handbook", "employee-handbook.md"),
        ("Section 4.2 in the security policy", "security-policy.md"),
        ("4.2 in the security policy", "security-policy.md"),
    ]:
        first, *rest = retriever.invoke(query)
        assert (first.metadata["source_path"], first.metadata["section_id"]) == (named, "4.2")
        assert first.metadata["fused_score"] == 1.0
        assert all(d.metadata["fused_score"] < 1.0 for d in rest), query
    assert all(not d.metadata["exact_match"] for d in retriever.invoke("Article 4"))


def test_quoted_phrase_hits_come_first(retriever, by_sid) -> None:
    docs = retriever.invoke('officer "arch controls"', k=3)
    assert docs[0].id == by_sid["202(a)"]
    assert docs[0].metadata["exact_rank"] == 1


def test_keyword_only_hits_are_read_from_the_store(parts, chunks) -> None:
    store, bm25, _ = parts
    r = HybridRetriever(vector_store=store, keyword_index=bm25, k=3, weights=(0.0, 1.0, 0.0))
    docs = r.invoke("seven years logs")
    contents = {c.id: c.page_content for c in chunks}
    assert len(docs) == 3
    assert all(d.metadata["semantic_rank"] is None for d in docs)
    assert all(d.page_content == contents[d.id] for d in docs)


def test_hits_missing_from_the_store_are_skipped(parts, chunks) -> None:
    store, bm25, _ = parts
    bm25.upsert([Document(id="ghost", page_content="ghost ghost protocol")])
    r = HybridRetriever(vector_store=store, keyword_index=bm25, k=3)
    docs = r.invoke("ghost protocol")
    assert "ghost" not in {d.id for d in docs}


def test_blank_query_returns_nothing(retriever) -> None:
    assert retriever.invoke("") == []
    assert retriever.invoke("  \n\t") == []


@pytest.mark.parametrize("query", [5, None, {"query": "officer"}])
async def test_a_query_that_is_not_a_string_is_one_error_naming_it(retriever, query) -> None:
    """Found 2026-12-07: ``AttributeError: 'dict' object has no attribute 'strip'``."""
    said = f"the query must be a string, got {type(query).__name__} {query!r}; in a chain"
    with pytest.raises(TypeError, match=re.escape(said)):
        retriever.invoke(query)
    with pytest.raises(TypeError, match=re.escape(said)):
        await retriever.ainvoke(query)


@pytest.mark.parametrize(
    ("query", "where"),
    [("pump \udcff", "byte 0xff at character 5"), ("\ud800 officer", "U+D800 at character 0")],
)
async def test_a_query_that_is_not_text_is_refused_in_the_tools_words(
    retriever, caplog, query, where
) -> None:
    """Found 2026-12-07: a lone surrogate (a byte that was not UTF-8) made the tokenizer raise
    TypeError in the dense leg; the retriever logged a WARNING and served keyword hits only,
    where the tools refuse such a query. Now the same one-line ValueError as the tools'."""
    said = f"Search query is not UTF-8 text ({where}); send the words as UTF-8."
    with pytest.raises(ValueError, match=f"^{re.escape(said)}$"):
        retriever.invoke(query)
    with pytest.raises(ValueError, match=f"^{re.escape(said)}$"):
        await retriever.ainvoke(query, k=2)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


@pytest.mark.parametrize("bad_k", [0, 1001, -3])
def test_k_out_of_range_is_rejected(retriever, bad_k) -> None:
    with pytest.raises(ValueError, match=f"k must be an integer between 1 and 1000, got {bad_k}"):
        retriever.invoke("officer", k=bad_k)


def test_constructor_validation(parts) -> None:
    store, bm25, _ = parts
    with pytest.raises(ValueError, match="weights must be three finite numbers"):
        HybridRetriever(vector_store=store, weights=(0, 0, 0))
    with pytest.raises(ValueError, match="weights must be three finite numbers"):
        HybridRetriever(vector_store=store, weights=(-1, 1, 1))
    with pytest.raises(ValueError, match="expand_hops=2 needs exact_index"):
        HybridRetriever(vector_store=store, keyword_index=bm25, expand_hops=2)
    with pytest.raises(ValueError, match="less than or equal to 100"):
        HybridRetriever(vector_store=store, k=101)


@pytest.mark.parametrize(
    "kwargs",
    [{"k": True}, {"fetch_k": True}, {"rrf_k": False}, {"weights": (True, False, False)}],
)
def test_a_bool_for_a_number_is_refused(parts, kwargs) -> None:
    """Found 2026-12-07: k=True was one result, weights=(True, False, False) dense only (a
    bool is an int in Python, and pydantic took it as one)."""
    store, _, _ = parts
    with pytest.raises(ValueError, match=r"not a bool .*got (True|False)"):
        HybridRetriever(vector_store=store, **kwargs)


@pytest.mark.parametrize("store_kind", ["matrix", "langchain"])
def test_search_kwargs_k_sets_k_and_keeps_the_dense_leg(
    chunks, embeddings, store_kind, caplog
) -> None:
    from langchain_core.vectorstores import InMemoryVectorStore

    store = (MatrixVectorStore if store_kind == "matrix" else InMemoryVectorStore)(embeddings)
    store.add_documents(chunks)
    bm25 = BM25KeywordIndex()
    bm25.upsert(chunks)
    r = HybridRetriever(
        vector_store=store, keyword_index=bm25, search_kwargs={"k": 3, "fetch_k": 40}
    )
    assert (r.k, r.fetch_k, r.search_kwargs) == (3, 40, {})
    with caplog.at_level(logging.WARNING):
        docs = r.invoke("second officer arch controls")
    assert "search failed" not in caplog.text  # no leg silenced
    assert len(docs) == 3
    assert any(d.metadata["semantic_rank"] is not None for d in docs)
    same = HybridRetriever(vector_store=store, k=3, search_kwargs={"k": 3})
    assert (same.k, same.search_kwargs) == (3, {})


@pytest.mark.parametrize("store_kind", ["matrix", "langchain"])
def test_search_kwargs_score_threshold_is_the_min_similarity_score(
    chunks, embeddings, store_kind, caplog
) -> None:
    """``search_kwargs={"score_threshold": t}`` (``VectorStoreRetriever``'s) thresholds."""
    from langchain_core.vectorstores import InMemoryVectorStore

    store = (MatrixVectorStore if store_kind == "matrix" else InMemoryVectorStore)(embeddings)
    store.add_documents(chunks)
    bm25 = BM25KeywordIndex()
    bm25.upsert(chunks)
    r = HybridRetriever(
        vector_store=store, keyword_index=bm25, search_kwargs={"score_threshold": 0.3}
    )
    assert (r.min_similarity_score, r.search_kwargs) == (0.3, {})
    with caplog.at_level(logging.WARNING):
        docs = r.invoke("second officer arch controls")
    assert "search failed" not in caplog.text  # the dense leg ran
    assert docs
    assert all(d.metadata["semantic_score"] >= 0.3 for d in docs)
    assert any(d.metadata["semantic_rank"] is not None for d in docs)
    with pytest.raises(ValueError, match=r"min_similarity_score=0.5 and search_kwargs=\{'score"):
        HybridRetriever(
            vector_store=store, min_similarity_score=0.5, search_kwargs={"score_threshold": 0.3}
        )


@pytest.mark.parametrize(
    ("store_kind", "as_callable"), [("matrix", False), ("matrix", True), ("inmemory", True)]
)
def test_a_search_kwargs_filter_holds_for_every_leg(
    chunks, embeddings, store_kind, as_callable
) -> None:
    """A filtered retriever returns only filtered documents: keyword and exact hits too."""
    from langchain_core.vectorstores import InMemoryVectorStore

    tagged = [
        c.model_copy(update={"metadata": {**c.metadata, "part": "I" if n % 2 else "II"}})
        for n, c in enumerate(chunks)
    ]
    store = (MatrixVectorStore if store_kind == "matrix" else InMemoryVectorStore)(embeddings)
    store.add_documents(tagged)
    bm25, exact = BM25KeywordIndex(), ExactMatchIndex()
    bm25.upsert(tagged)
    exact.upsert(tagged)
    only = (lambda d: d.metadata["part"] == "I") if as_callable else {"part": "I"}
    kept = {c.id for c in tagged if c.metadata["part"] == "I"}
    r = HybridRetriever(
        vector_store=store, keyword_index=bm25, exact_index=exact, k=10,
        search_kwargs={"filter": only},
    )  # fmt: skip
    for query in ("simulation logs operator", "Section 203(a)(1)", '"shall be logged"'):
        docs = r.invoke(query)
        assert docs
        assert {d.id for d in docs} <= kept, query
        unfiltered = HybridRetriever(
            vector_store=store, keyword_index=bm25, exact_index=exact, k=10
        ).invoke(query)
        assert not {d.id for d in unfiltered} <= kept  # the other part would be found


def test_search_kwargs_k_disagreeing_with_k_is_rejected(parts) -> None:
    store, bm25, _ = parts
    with pytest.raises(ValueError, match=r"k=2 and search_kwargs=\{'k': 1\} disagree"):
        HybridRetriever(vector_store=store, keyword_index=bm25, k=2, search_kwargs={"k": 1})
    r = HybridRetriever(vector_store=store, keyword_index=bm25, k=2)
    r.search_kwargs = {"k": 1}  # after construction: refused when searching, not silenced
    with pytest.raises(ValueError, match=r"search_kwargs holds 'k'.*set retriever\.k"):
        r.invoke("arch controls")


def test_weights_accept_mapping_and_config_object(parts) -> None:
    from langchain_holodeck.config import SearchWeights

    store, _, _ = parts
    r = HybridRetriever(vector_store=store, weights={"semantic": 1, "keyword": 0.5})
    assert r.weights == (1.0, 0.5, 0.0)
    r = HybridRetriever(
        vector_store=store, weights=SearchWeights(semantic=0.2, keyword=0.7, exact=0.1)
    )
    assert r.weights == (0.2, 0.7, 0.1)


def test_min_similarity_score_applies_to_keyword_only_hits(parts) -> None:
    store, bm25, _ = parts
    r = HybridRetriever(vector_store=store, keyword_index=bm25, min_similarity_score=0.999)
    assert r.invoke("seven years") == []  # keyword hits no longer bypass the threshold


def test_keyword_only_hits_pass_the_threshold_by_their_dense_similarity(parts) -> None:
    store, bm25, _ = parts
    query = "seven years of logs"
    vector = store.embeddings.embed_query(query)
    params = {
        "vector_store": store,
        "keyword_index": bm25,
        "k": 4,
        "fetch_k": 1,
        "feedback_docs": 0,  # keep the keyword-only hits of one fusion in the top 4
    }
    unfiltered = HybridRetriever(**params, weights=(0.3, 0.7, 0.0)).invoke(query)
    keyword_only = [d.id for d in unfiltered if d.metadata["semantic_rank"] is None]
    assert len(keyword_only) >= 2  # the dense leg (8 deep) missed these keyword hits
    similarity = store.similarity_by_ids(vector, keyword_only)
    threshold = max(similarity.values())
    docs = HybridRetriever(
        **params, weights=(0.3, 0.7, 0.0), min_similarity_score=threshold
    ).invoke(query)
    assert docs
    assert all(d.metadata["semantic_score"] >= threshold for d in docs)
    kept = {d.id for d in docs}
    assert {i for i in keyword_only if i in kept} == {
        i for i, s in similarity.items() if s >= threshold
    }
    for doc in docs:
        if doc.id in similarity:  # computed for the threshold, and shown
            assert doc.metadata["semantic_score"] == pytest.approx(similarity[doc.id])
    # the threshold drops results; it never reorders the others
    order = [d.id for d in unfiltered]
    survivors = [i for i in order if i in kept]
    assert [d.id for d in docs][: len(survivors)] == survivors


def test_exact_section_hits_are_kept_above_any_threshold(retriever, by_sid) -> None:
    strict = retriever.model_copy(update={"min_similarity_score": 1.0})
    docs = strict.invoke("Section 202(a)")
    assert docs
    assert docs[0].id == by_sid["202(a)"]
    assert all(d.metadata["exact_match"] for d in docs)


def test_dense_leg_builds_no_documents_for_candidates(parts, monkeypatch) -> None:
    import langchain_holodeck.vectorstores.matrix as matrix

    store, bm25, exact = parts
    copies = 0
    real = matrix._copy_document

    def counting(*args):
        nonlocal copies
        copies += 1
        return real(*args)

    monkeypatch.setattr(matrix, "_copy_document", counting)
    r = HybridRetriever(
        vector_store=store, keyword_index=bm25, exact_index=exact, fetch_k=50, feedback_docs=0
    )
    docs = r.invoke("arch controls", k=3)
    assert len(docs) == 3
    assert copies == 3  # only the final k are read
    copies = 0
    fed = r.model_copy(update={"feedback_docs": 2}).invoke("arch controls", k=3)
    assert len(fed) == 3
    assert copies <= 3 + 2  # and the chunks fed back, each read once


@pytest.mark.parametrize("fusion", ["rrf", "convex"])
def test_any_langchain_store_works_even_without_relevance_scores(chunks, fusion) -> None:
    from langchain_core.vectorstores import InMemoryVectorStore

    from tests.helpers import HashingEmbeddings

    store = InMemoryVectorStore(HashingEmbeddings())
    store.add_documents(chunks)
    bm25 = BM25KeywordIndex()
    bm25.upsert(chunks)
    r = HybridRetriever(vector_store=store, keyword_index=bm25, k=3, fusion=fusion)
    docs = r.invoke("arch controls")
    assert len(docs) == 3
    assert any(d.metadata["semantic_rank"] == 1 for d in docs)
    raw = store.similarity_search_with_score("arch controls", k=1)[0]
    top = next(d for d in docs if d.metadata["semantic_rank"] == 1)
    assert (top.id, top.metadata["semantic_score"]) == (raw[0].id, pytest.approx(raw[1]))
    assert all(0.0 <= d.metadata["fused_score"] <= 1.0 for d in docs)
    # the threshold is computed from the embeddings for every result, on any store
    strict = r.model_copy(update={"min_similarity_score": 0.3})
    for doc in strict.invoke("arch controls"):
        assert doc.metadata["semantic_score"] >= 0.3


class FailingIndex:
    def __init__(self) -> None:
        self.calls = 0

    def upsert(self, documents) -> None: ...
    def delete(self, ids) -> None: ...
    def rebuild_from_store(self, store, *, namespace=None) -> int:
        return 0

    def search(self, query: str, k: int) -> list[KeywordHit]:
        self.calls += 1
        msg = "keyword backend is down"
        raise ConnectionError(msg)


def test_failing_keyword_index_degrades_to_semantic(parts, caplog) -> None:
    store, _, _ = parts
    failing = FailingIndex()
    r = HybridRetriever(vector_store=store, keyword_index=failing, k=3)
    with caplog.at_level(logging.WARNING, logger="langchain_holodeck.retrievers"):
        docs = r.invoke("arch controls")
    assert failing.calls == 1
    assert len(docs) == 3
    assert all(d.metadata["keyword_rank"] is None for d in docs)
    assert "keyword search failed (ConnectionError: keyword backend is down)" in caplog.text


async def test_failing_keyword_index_degrades_on_async_path(parts, caplog) -> None:
    store, _, _ = parts
    r = HybridRetriever(vector_store=store, keyword_index=FailingIndex(), k=3)
    with caplog.at_level(logging.WARNING, logger="langchain_holodeck.retrievers"):
        docs = await r.ainvoke("arch controls")
    assert len(docs) == 3
    assert "keyword search failed" in caplog.text


class BrokenEmbeddings(Embeddings):
    def embed_query(self, text: str) -> list[float]:
        msg = "embedding service unavailable"
        raise TimeoutError(msg)

    async def aembed_query(self, text: str) -> list[float]:
        return self.embed_query(text)

    def embed_documents(self, texts):
        return [[1.0] * 64 for _ in texts]


def test_failing_dense_leg_degrades_to_keyword(chunks, caplog) -> None:
    store = MatrixVectorStore(BrokenEmbeddings())
    store.add_documents(chunks)
    bm25 = BM25KeywordIndex()
    bm25.upsert(chunks)
    r = HybridRetriever(vector_store=store, keyword_index=bm25, k=2)
    with caplog.at_level(logging.WARNING):
        docs = r.invoke("arch controls")
    assert docs
    assert all(d.metadata["semantic_rank"] is None for d in docs)
    assert "semantic search failed (TimeoutError" in caplog.text


def test_every_leg_failing_raises_the_dense_error(chunks) -> None:
    store = MatrixVectorStore(BrokenEmbeddings())
    store.add_documents(chunks)
    r = HybridRetriever(vector_store=store, keyword_index=FailingIndex())
    with pytest.raises(TimeoutError, match="embedding service unavailable"):
        r.invoke("arch controls")


class BarrierIndex(BM25KeywordIndex):
    """Keyword search that only proceeds once the dense leg is running at the same time."""

    in_process = False  # it waits like an index doing I/O

    def __init__(self, barrier: threading.Barrier) -> None:
        super().__init__()
        self.barrier = barrier

    def search(self, query, k):
        self.barrier.wait()
        return super().search(query, k)


class BarrierEmbeddings:
    def __init__(self, inner, barrier: threading.Barrier) -> None:
        self.inner, self.barrier = inner, barrier

    def embed_documents(self, texts):
        return self.inner.embed_documents(texts)

    def embed_query(self, text):
        self.barrier.wait()
        return self.inner.embed_query(text)

    async def aembed_query(self, text):
        return self.embed_query(text)


def test_sync_legs_run_concurrently(chunks, embeddings) -> None:
    barrier = threading.Barrier(2, timeout=10)
    store = MatrixVectorStore(BarrierEmbeddings(embeddings, barrier))  # type: ignore[arg-type]
    store.add_documents(chunks)
    bm25 = BarrierIndex(barrier)
    bm25.upsert(chunks)
    r = HybridRetriever(vector_store=store, keyword_index=bm25, k=3)
    docs = r.invoke("arch controls")  # sequential legs would break the barrier
    assert any(d.metadata["semantic_rank"] for d in docs)
    assert any(d.metadata["keyword_rank"] for d in docs)
    assert not barrier.broken


class ThreadRecordingIndex(BM25KeywordIndex):
    """An in-process index that records the thread each search ran on."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: list[str] = []

    def search(self, query, k):
        self.threads.append(threading.current_thread().name)
        return super().search(query, k)


def test_in_process_legs_run_on_the_callers_thread(chunks, embeddings) -> None:
    store = MatrixVectorStore(embeddings)
    store.add_documents(chunks)
    bm25 = ThreadRecordingIndex()
    bm25.upsert(chunks)
    r = HybridRetriever(vector_store=store, keyword_index=bm25, k=3)
    docs = r.invoke("arch controls")
    assert any(d.metadata["keyword_rank"] for d in docs)
    assert bm25.threads == [threading.current_thread().name]  # no pool hand-off


async def test_async_matches_sync(retriever) -> None:
    for query in ["Section 202", "seven years of logs", '"safety interlock"']:
        sync = retriever.invoke(query, k=4)
        asyn = await retriever.ainvoke(query, k=4)
        assert [d.id for d in asyn] == [d.id for d in sync]
        assert [d.metadata for d in asyn] == [d.metadata for d in sync]


def test_definitions_attached_when_query_names_a_term(parts, chunks) -> None:
    store, bm25, _exact = parts
    defs = DefinitionExtractor().extract(chunks)
    r = HybridRetriever(vector_store=store, keyword_index=bm25, definitions=defs, k=2)
    docs = r.invoke("who counts as the operator?")
    found = docs[0].metadata["definitions"]
    assert [d["term"] for d in found] == ["Operator"]
    assert found[0]["section_id"].startswith("102")
    assert "definitions" not in r.invoke("arch controls")[0].metadata


def test_each_result_carries_its_own_documents_definition(embeddings) -> None:
    # two documents define "Operator" differently, a third uses it: every result got the one
    # definition the extractor kept, whichever document it came from
    texts = {
        "forklift.md": "# Forklift\n\n“Operator” means a person certified to drive a forklift.",
        "policy.md": "# Policy\n\n“Operator” means the employee on call for production.",
        "rota.md": "# Rota\n\nThe Operator on the night shift hands over the logbook.",
    }
    chunks = [
        Document(id=name, page_content=text, metadata={"source_path": name})
        for name, text in texts.items()
    ]
    store = MatrixVectorStore(embeddings)
    store.add_documents(chunks)
    bm25 = BM25KeywordIndex()
    bm25.upsert(chunks)
    defs = DefinitionExtractor().extract(reversed(chunks))
    r = HybridRetriever(vector_store=store, keyword_index=bm25, definitions=defs, k=3)
    by_source = {d.metadata["source_path"]: d for d in r.invoke("what does Operator mean?")}

    def attached(source: str) -> list[tuple[str, str, bool]]:
        found = by_source[source].metadata["definitions"]
        return [(d["source_path"], d["definition"][:14], d["elsewhere"]) for d in found]

    assert attached("forklift.md") == [("forklift.md", "a person certi", False)]
    assert attached("policy.md") == [("policy.md", "the employee o", False)]
    assert attached("rota.md") == [  # its document defines none: the others', so marked
        ("forklift.md", "a person certi", True),
        ("policy.md", "the employee o", True),
    ]
    # the old shape, one definition per term, still works
    plain = HybridRetriever(vector_store=store, keyword_index=bm25, definitions=dict(defs), k=3)
    found = {
        d.metadata["source_path"]: d.metadata["definitions"][0]["elsewhere"]
        for d in plain.invoke("what does Operator mean?")
    }
    assert found == {"forklift.md": False, "policy.md": True, "rota.md": True}
    with pytest.raises(TypeError, match="got list"):
        HybridRetriever(vector_store=store, definitions=[])


def test_out_expansion_follows_references_and_reads_the_store(parts, by_sid) -> None:
    store, bm25, exact = parts
    r = HybridRetriever(
        vector_store=store, keyword_index=bm25, exact_index=exact, k=1, expand_hops=1
    )
    # make the store's copy differ from anything the indexes know: expansion must read it
    canonical = store.get_by_ids([by_sid["202(a)"]])[0]
    store.add_documents(
        [canonical.model_copy(update={"metadata": {**canonical.metadata, "marker": "canonical"}})]
    )
    docs = r.invoke("Section 201(b)")
    assert docs[0].id == by_sid["201(b)"]
    assert docs[0].metadata["expansion_hops"] == 0
    expanded = docs[1:]
    assert {d.id for d in expanded} == {by_sid["202(a)"], by_sid["202(b)"]}
    assert [d.id for d in expanded] == sorted(d.id for d in expanded)  # same distance: by id
    assert all(d.metadata["expansion_hops"] == 1 for d in expanded)
    assert all(d.metadata["expanded_from"] == by_sid["201(b)"] for d in expanded)
    marked = next(d for d in expanded if d.id == by_sid["202(a)"])
    assert marked.metadata["marker"] == "canonical"


def test_expansion_cycles_terminate_and_dedupe(parts, by_sid) -> None:
    store, bm25, exact = parts
    # 201(b) -> 202 (incl. 202(b)) -> 201(a) : with 'both' the graph has cycles
    r = HybridRetriever(
        vector_store=store,
        keyword_index=bm25,
        exact_index=exact,
        k=1,
        expand_hops=5,
        expand_direction="both",
    )
    docs = r.invoke("Section 201(b)")
    ids = [d.id for d in docs]
    assert len(ids) == len(set(ids))
    hops = [d.metadata["expansion_hops"] for d in docs]
    assert hops == sorted(hops)
    assert by_sid["201(a)"] in ids  # reached at distance 2 via 202(b)


def test_in_expansion_finds_referrers(parts, by_sid) -> None:
    store, bm25, exact = parts
    r = HybridRetriever(
        vector_store=store,
        keyword_index=bm25,
        exact_index=exact,
        k=1,
        expand_hops=1,
        expand_direction="in",
    )
    docs = r.invoke("Section 201(a)")
    assert [d.id for d in docs] == [by_sid["201(a)"], by_sid["202(b)"]]


def test_a_threshold_holds_the_hits_and_not_the_chunks_they_cite(embeddings) -> None:
    """min_similarity_score measures the search's hits; a chunk expansion adds follows the
    kept hit that cites it, unmeasured (semantic_score None), as README and the docstring say.
    """
    from langchain_holodeck.sync import sync_documents
    from langchain_holodeck.tools._wiring import IndexFanOut

    text = (
        "# Storage\n\n## 6 Replication\n\n### 6.1 Quorum writes\n\nA write succeeds once a "
        "quorum of replicas acknowledge it. See section 6.2.\n\n### 6.2 Compaction\n\n"
        "Compaction removes tombstones older than 10 days.\n"
    )
    doc = Document(page_content=text, metadata={"source_path": "storage.md"})
    chunks = StructuredMarkdownSplitter().split_documents([doc])
    store, bm25, exact = MatrixVectorStore(embeddings), BM25KeywordIndex(), ExactMatchIndex()
    sync_documents(chunks, store, namespace="kb", keyword_index=IndexFanOut((bm25, exact)))
    ids = {d.metadata["section_id"]: d.id for d in store.iter_documents()}
    query = "how many replicas acknowledge a quorum write"
    cosine = store.similarity_by_ids(embeddings.embed_query(query), [ids["6.1"], ids["6.2"]])
    assert cosine[ids["6.1"]] > cosine[ids["6.2"]]  # else the threshold below tests nothing
    threshold = (cosine[ids["6.1"]] + cosine[ids["6.2"]]) / 2
    parts = {"vector_store": store, "keyword_index": bm25, "exact_index": exact, "k": 5}
    hits = HybridRetriever(**parts, min_similarity_score=threshold).invoke(query)
    assert [d.id for d in hits] == [ids["6.1"]]  # 6.2, a candidate too, is under it: dropped
    found = HybridRetriever(**parts, min_similarity_score=threshold, expand_hops=1).invoke(query)
    assert [d.id for d in found] == [ids["6.1"], ids["6.2"]]
    cited = found[1].metadata
    assert (cited["expanded_from"], cited["expansion_hops"]) == (ids["6.1"], 1)
    assert cited["semantic_score"] is None  # not measured, so not held to the threshold


def _two_corpora_of_one_act(embeddings: Embeddings) -> HybridRetriever:
    """The same act.md synced into namespaces A and B of one store, indexes shared."""
    from langchain_holodeck.sync import sync_documents
    from langchain_holodeck.tools._wiring import IndexFanOut

    text = (
        "# Act\n\n## Section 1. Scope\n\nThis applies to all decks. See Section 2.\n\n"
        "## Section 2. Duties\n\nThe {who} shall log every run.\n"
    )
    store, bm25, exact = MatrixVectorStore(embeddings), BM25KeywordIndex(), ExactMatchIndex()
    for namespace, who in (("A", "operator"), ("B", "corpus B officer")):
        doc = Document(page_content=text.format(who=who), metadata={"source_path": "act.md"})
        chunks = StructuredMarkdownSplitter().split_documents([doc])
        sync_documents(chunks, store, namespace=namespace, keyword_index=IndexFanOut((bm25, exact)))
    return HybridRetriever(
        vector_store=store,
        keyword_index=bm25,
        exact_index=exact,
        k=1,
        expand_hops=1,
        search_kwargs={"filter": {"namespace": "A"}},
    )


async def test_expansion_is_held_to_the_filter(embeddings) -> None:
    """Expansion found Section 2 by its source_path and section in the shared exact index,
    in both namespaces, and read both: corpus B's chunk came back under A's filter."""
    r = _two_corpora_of_one_act(embeddings)
    for docs in (r.invoke("Section 1"), await r.ainvoke("Section 1")):
        assert [(d.metadata["namespace"], d.metadata["section_id"]) for d in docs] == [
            ("A", "1"),
            ("A", "2"),
        ]
        assert "operator" in docs[1].page_content


def test_no_expansion_keys_when_off(retriever) -> None:
    assert "expansion_hops" not in retriever.invoke("Section 201", k=1)[0].metadata


@pytest.mark.parametrize("fusion", ["rrf", "convex"])
def test_fused_score_is_one_for_the_top_of_every_leg_and_in_unit_interval(parts, fusion) -> None:
    store, bm25, exact = parts
    r = HybridRetriever(
        vector_store=store, keyword_index=bm25, exact_index=exact, k=8, fusion=fusion
    )
    query = "arch controls"
    docs = r.invoke(query)
    dense_top = store.similarity_search(query, k=1)[0].id
    keyword_top = bm25.search(query, 1)[0].id
    scores = [d.metadata["fused_score"] for d in docs]
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert scores == sorted(scores, reverse=True)
    if dense_top == keyword_top:
        assert docs[0].id == dense_top
        assert scores[0] == pytest.approx(1.0)
    else:
        assert scores[0] < 1.0
    pinned = r.invoke("Section 202(a)")[0]
    assert pinned.metadata["exact_match"]
    assert pinned.metadata["fused_score"] == 1.0


def test_convex_fusion_is_the_weighted_sum_of_normalized_leg_scores(parts) -> None:
    store, bm25, _ = parts
    r = HybridRetriever(
        vector_store=store,
        keyword_index=bm25,
        k=4,
        fetch_k=8,
        fusion="convex",
        weights=(0.7, 0.3, 0.0),
        feedback_docs=0,  # one fusion of the legs (feedback: test_feedback.py)
    )
    query = "program rated 4 or 5 supervising officer"
    dense = [(d.id, s) for d, s in store.similarity_search_with_relevance_scores(query, k=8)]
    keyword = bm25.search(query, 8)
    top_dense, top_keyword = dense[0][1], keyword[0].score
    expected: dict[str, float] = {}
    for doc_id, s in dense:
        expected[doc_id] = expected.get(doc_id, 0.0) + 0.7 * s / top_dense
    for doc_id, s in keyword:
        expected[doc_id] = expected.get(doc_id, 0.0) + 0.3 * s / top_keyword
    docs = r.invoke(query)
    assert [d.id for d in docs] == sorted(expected, key=lambda i: -expected[i])[:4]
    for doc in docs:
        assert doc.metadata["fused_score"] == pytest.approx(expected[doc.id])  # best is 1.0


class NetworkIdStore(MatrixVectorStore):
    """An id-searching store with a blocking client (Redis, PostgreSQL): records where its
    searches ran, since a blocking call on the event loop stalls every other task."""

    in_process = False

    def __init__(self, embeddings: Embeddings) -> None:
        super().__init__(embeddings)
        self.on_loop: list[bool] = []

    def _record(self) -> None:
        try:
            asyncio.get_running_loop()
            self.on_loop.append(True)
        except RuntimeError:
            self.on_loop.append(False)

    def search_ids_by_vector(self, embedding, k, **kwargs):  # type: ignore[no-untyped-def]
        self._record()
        return super().search_ids_by_vector(embedding, k, **kwargs)

    def rank_ids_by_vector(self, embedding, k, **kwargs):  # type: ignore[no-untyped-def]
        self._record()
        return super().rank_ids_by_vector(embedding, k, **kwargs)


async def test_ainvoke_runs_a_blocking_id_search_off_the_event_loop(chunks, embeddings) -> None:
    store = NetworkIdStore(embeddings)
    store.add_documents(chunks)
    retriever = HybridRetriever(vector_store=store, k=3)
    got = await retriever.ainvoke("safety protocols")
    assert store.on_loop == [False]
    assert [d.id for d in got] == [d.id for d in retriever.invoke("safety protocols")]


def test_dense_leg_down_under_a_threshold_serves_the_keyword_hits_unchecked(chunks, caplog) -> None:
    """The query cannot be embedded: the threshold cannot be checked, and an outage is not
    'nothing relevant' (it returned [] even at min_similarity_score=0.0)."""
    store = MatrixVectorStore(BrokenEmbeddings())
    store.add_documents(chunks)
    bm25 = BM25KeywordIndex()
    bm25.upsert(chunks)
    unfiltered = HybridRetriever(vector_store=store, keyword_index=bm25, k=3).invoke("arch")
    assert unfiltered
    for threshold in (0.0, 0.9):
        r = HybridRetriever(
            vector_store=store, keyword_index=bm25, k=3, min_similarity_score=threshold
        )
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            docs = r.invoke("arch")
        assert [d.id for d in docs] == [d.id for d in unfiltered]
        assert all(d.metadata["semantic_score"] is None for d in docs)
        assert "served without the min_similarity_score check" in caplog.text


async def test_dense_leg_down_under_a_threshold_on_the_async_path(chunks) -> None:
    store = MatrixVectorStore(BrokenEmbeddings())
    store.add_documents(chunks)
    bm25 = BM25KeywordIndex()
    bm25.upsert(chunks)
    r = HybridRetriever(vector_store=store, keyword_index=bm25, k=3, min_similarity_score=0.9)
    assert await r.ainvoke("arch")


def test_threshold_without_a_dense_leg_embeds_the_query(parts) -> None:
    """Keyword weight only: the dense leg is not asked, the threshold still checks each hit."""
    store, bm25, _ = parts
    query = "seven years of logs"
    params = {"vector_store": store, "keyword_index": bm25, "weights": (0.0, 1.0, 0.0)}
    hits = HybridRetriever(**params).invoke(query)
    assert hits
    everything = HybridRetriever(**params, min_similarity_score=0.0).invoke(query)
    assert [d.id for d in everything] == [d.id for d in hits]
    similarity = store.similarity_by_ids(
        store.embeddings.embed_query(query), [str(d.id) for d in hits]
    )
    for doc in everything:
        assert doc.metadata["semantic_score"] == pytest.approx(similarity[doc.id])
    threshold = sorted(similarity.values())[len(similarity) // 2]
    kept = HybridRetriever(**params, min_similarity_score=threshold).invoke(query)
    assert {d.id for d in kept} == {i for i, s in similarity.items() if s >= threshold}


@pytest.mark.parametrize("key", ["filters", "lambda_mult"])
def test_a_search_kwarg_the_store_does_not_take_is_refused(parts, key) -> None:
    """'filters' for 'filter': every query's dense search raised TypeError, served as an outage
    (keyword results only, unfiltered, a WARNING per query)."""
    store, bm25, _ = parts
    with pytest.raises(ValueError, match=rf"search_kwargs '{key}' is not an argument of Matrix"):
        HybridRetriever(vector_store=store, keyword_index=bm25, search_kwargs={key: 1})
    HybridRetriever(vector_store=store, keyword_index=bm25, search_kwargs={"filter": {"n": 1}})


@pytest.mark.parametrize("key", ["filters", "fliter"])
def test_a_misspelt_search_kwarg_is_refused_through_a_namespace_view(parts, key) -> None:
    """Found 2026-12-07 (late probe): the view's searches take ``**kwargs``, so the check was
    skipped and the store under it dropped the key: every query ran unfiltered, silently."""
    store, bm25, _ = parts
    view = NamespaceFilteredStore(store, namespace="kb")
    assert view.search_keywords == {"filter", "exact"}  # the wrapped store's
    with pytest.raises(ValueError, match=rf"search_kwargs '{key}' is not an argument of"):
        HybridRetriever(vector_store=view, keyword_index=bm25, search_kwargs={key: {"n": 1}})
    with pytest.raises(TypeError, match=r"filter must be a callable .* got int 3"):  # the store's
        HybridRetriever(vector_store=view, keyword_index=bm25, search_kwargs={"filter": 3})
    HybridRetriever(vector_store=view, keyword_index=bm25, search_kwargs={"filter": {"n": 1}})
    with pytest.raises(ValueError, match=rf"search_kwargs '{key}' is not an argument of Matrix"):
        NamespaceFilteredStore(store, namespace="kb", search_kwargs={key: {"n": 1}})
    # a store whose search takes **kwargs says nothing, and neither does its view
    plain = NamespaceFilteredStore(InMemoryVectorStore(store.embeddings), namespace="kb")
    assert plain.search_keywords is None


class _CodesAreNoise(Embeddings):
    """Hashed words with every code left out: how a dense model reads ``E1042`` (noise)."""

    def __init__(self, embeddings: Embeddings) -> None:
        self.inner = embeddings

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.inner.embed_documents([re.sub(r"\w*\d\w*", " ", t) for t in texts])

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


@pytest.mark.parametrize("fusion", ["convex", "rrf"])
def test_an_error_code_query_puts_the_chunk_holding_it_first(embeddings, fusion) -> None:
    """Found 2026-12-07: under convex fusion the best dense score counts 0.7 and a keyword-only
    hit at most 0.3, so the only chunk holding ``E1042`` ranked below unrelated chunks."""
    texts = [
        "Troubleshooting: a worker crashes when the error queue is full.",
        "Changelog: error handling for the worker was rewritten.",
        "Release notes: what the error page shows.",
        'func check() error { return errors.New("E1042") }',
    ]
    docs = [
        Document(id=f"d{n}", page_content=t, metadata={"source_path": f"f{n}"})
        for n, t in enumerate(texts)
    ]
    store = MatrixVectorStore(_CodesAreNoise(embeddings))
    store.add_documents(docs)
    bm25, exact = BM25KeywordIndex(), ExactMatchIndex()
    bm25.upsert(docs)
    exact.upsert(docs)
    retriever = HybridRetriever(
        vector_store=store, keyword_index=bm25, exact_index=exact, fusion=fusion, k=3
    )
    for query in ("E1042", "error E1042"):
        top = retriever.invoke(query)[0]
        assert top.id == "d3", query
        assert top.metadata["exact_match"] is True
