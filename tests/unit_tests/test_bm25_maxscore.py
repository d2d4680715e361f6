"""MaxScore top k of BM25KeywordIndex equals scoring every posting, on random corpora."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.documents import Document

from langchain_holodeck.keyword_index import BM25KeywordIndex

WORDS = [f"w{i:02d}" for i in range(40)]


def _docs(texts: list[list[int]], prefix: str = "d") -> list[Document]:
    return [
        Document(id=f"{prefix}{n}", page_content=" ".join(WORDS[w] for w in words))
        for n, words in enumerate(texts)
    ]


# Zipf-like: low word numbers are frequent, so queries mix long and short columns.
word = st.integers(0, 39).map(lambda w: w * w // 40)
texts = st.lists(st.lists(word, min_size=1, max_size=30), min_size=1, max_size=60)
queries = st.lists(st.lists(st.integers(0, 39), min_size=1, max_size=6), min_size=1, max_size=5)


def _pair(score_all_below: int = 0, **kwargs: object) -> tuple[BM25KeywordIndex, BM25KeywordIndex]:
    """A ``maxscore`` index (pruning always, by default) and an ``exhaustive`` one."""
    pruned = BM25KeywordIndex(stopwords=None, stemmer=None, scoring="maxscore", **kwargs)  # type: ignore[arg-type]  # test kwargs
    pruned._score_all_below = score_all_below  # 0: MaxScore on every query, however small
    full = BM25KeywordIndex(stopwords=None, stemmer=None, scoring="exhaustive", **kwargs)  # type: ignore[arg-type]  # test kwargs
    return pruned, full


def _query(words: list[int]) -> str:
    return " ".join(WORDS[w] for w in words)


@settings(max_examples=150, deadline=None)
@given(texts=texts, queries=queries, k=st.integers(1, 12), below=st.sampled_from([0, 40, 10**6]))
def test_maxscore_top_k_equals_exhaustive(
    texts: list[list[int]], queries: list[list[int]], k: int, below: int
) -> None:
    # below=0: MaxScore always; 10**6: every posting scored (the small-query path); 40: mixed
    pruned, full = _pair(below)
    for index in (pruned, full):
        index.upsert(_docs(texts))
    for words in queries:
        assert pruned.search(_query(words), k) == full.search(_query(words), k)


@settings(max_examples=100, deadline=None)
@given(
    texts=texts,
    updates=texts,
    deleted=st.lists(st.integers(0, 59), max_size=20),
    queries=queries,
    k=st.integers(1, 12),
)
def test_maxscore_equals_exhaustive_with_delta_segment_and_tombstones(
    texts: list[list[int]],
    updates: list[list[int]],
    deleted: list[int],
    queries: list[list[int]],
    k: int,
) -> None:
    pruned, full = _pair(max_delta_ratio=1.0)  # keep the delta segment: never rebuild
    scored_all, _ = _pair(10**6, max_delta_ratio=1.0)  # every posting scored, no pruning
    for index in (pruned, full, scored_all):
        index.upsert(_docs(texts))
        index.search("w00", 1)  # the main segment is built here
        index.upsert(_docs(updates[: len(updates) // 2]))  # replaces d0.. (tombstones)
        index.upsert(_docs(updates, prefix="new"))  # delta-only documents
        index.delete([f"d{n}" for n in deleted])
    for words in queries:
        expected = full.search(_query(words), k)
        assert pruned.search(_query(words), k) == expected
        assert scored_all.search(_query(words), k) == expected


def test_search_ranked_is_search_as_arrays() -> None:
    index = BM25KeywordIndex(stopwords=None, stemmer=None)
    index.upsert(_docs([[1, 2, 2], [2, 3], [4], [1, 1, 5]]))
    ranked = index.search_ranked("w01 w02", 3)
    hits = index.search("w01 w02", 3)
    assert [(h.id, h.score) for h in hits] == list(ranked)
    assert ranked.ids == ["d0", "d3", "d1"]
    assert ranked.scores.dtype == np.float64
    assert ranked.unique
    assert list(index.search_ranked("w39", 3)) == []  # no posting: empty, as search


def test_maxscore_skips_the_long_column_of_a_frequent_term() -> None:
    # "common" is in every document, "rare" in two: the top 2 needs no full scan of "common"
    docs = [Document(id=str(n), page_content="common filler") for n in range(200)]
    docs += [Document(id="r1", page_content="rare common"), Document(id="r2", page_content="rare")]
    pruned, full = _pair()
    for index in (pruned, full):
        index.upsert(docs)
    hits = pruned.search("rare common", 2)
    assert {h.id for h in hits} == {"r1", "r2"}
    assert hits == full.search("rare common", 2)


def test_bad_scoring_is_rejected() -> None:
    with pytest.raises(ValueError, match="got 'wand'"):
        BM25KeywordIndex(scoring="wand")  # type: ignore[arg-type]  # the bad value under test


def test_scoring_survives_save_and_load(tmp_path: pytest.TempPathFactory) -> None:
    index = BM25KeywordIndex(scoring="exhaustive")
    index.upsert(_docs([[1, 2], [2, 3]]))
    index.save(tmp_path)
    assert BM25KeywordIndex.load(tmp_path).scoring == "exhaustive"


def test_a_delta_larger_than_the_main_segment_keeps_scores_positive() -> None:
    # found by the property above: "w28" is in 3 delta rows but main has 2 docs, which gave a
    # negative idf, a negative column bound, and an empty MaxScore top 1
    pruned, full = _pair(max_delta_ratio=1.0)
    for index in (pruned, full):
        index.upsert(_docs([[0], [0]]))
        index.search("w00", 1)
        index.upsert(_docs([[9, 28]]))
        index.upsert(_docs([[9, 28], [28]], prefix="new"))
    for k in (1, 2, 3):
        hits = pruned.search(_query([9, 28]), k)
        assert hits == full.search(_query([9, 28]), k)
        assert hits
        assert all(h.score > 0 for h in hits)
