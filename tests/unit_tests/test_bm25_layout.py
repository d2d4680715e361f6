"""BM25KeywordIndex's compact layout: one flat term array, and a build in bounded chunks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from langchain_core.documents import Document

from langchain_holodeck.keyword_index import BM25KeywordIndex
from langchain_holodeck.keyword_index._score_matrix import build_matrix
from langchain_holodeck.keyword_index._term_store import TermStore

WORDS = [f"w{i:02d}" for i in range(40)]


def _corpus(n: int, seed: int = 0) -> list[Document]:
    rng = np.random.default_rng(seed)
    return [
        Document(
            id=f"d{i}",
            page_content=" ".join(WORDS[w] for w in rng.integers(0, 40, rng.integers(1, 25))),
        )
        for i in range(n)
    ]


def test_a_build_in_small_chunks_equals_a_build_in_one() -> None:
    rng = np.random.default_rng(1)
    lengths = rng.integers(0, 30, 200)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    flat = (rng.zipf(1.3, int(offsets[-1])) % 300).astype(np.int32)
    whole, df, avgdl = build_matrix(flat, offsets, 300, k1=1.5, b=0.75)
    for chunk_terms in (1, 7, 100):
        parts, df2, avgdl2 = build_matrix(
            flat, offsets, 300, k1=1.5, b=0.75, chunk_terms=chunk_terms
        )
        assert avgdl2 == avgdl
        np.testing.assert_array_equal(df2, df)
        for name in ("data", "indices", "indptr", "col_max"):
            np.testing.assert_array_equal(getattr(parts, name), getattr(whole, name))


def test_term_store_keeps_order_through_replacements_deletions_and_compaction() -> None:
    store = TermStore()
    store.put(
        ["a", "b", "c"],
        [np.array([1, 2], np.int32), np.array([3], np.int32), np.array([], np.int32)],
    )
    assert store.put(["b"], [np.array([4, 4], np.int32)]) == [1]  # its old slot
    assert store.pop("a") == 0
    assert not store.compact_order  # dead slots: 0 (a) and 1 (old b)
    ids, flat, lengths = store.export()
    assert (ids, flat.tolist(), lengths.tolist()) == (["b", "c"], [4, 4], [2, 0])
    store.compact()
    assert store.compact_order
    assert store.slots == {"b": 0, "c": 1}
    flat, offsets = store.packed()
    assert (flat.tolist(), offsets.tolist()) == ([4, 4], [0, 2, 2])


def test_term_store_widens_to_int32_when_the_vocabulary_outgrows_16_bits() -> None:
    store = TermStore()
    store.put(["a"], [np.array([7, 65_535], np.int32)])
    assert store.terms("a").dtype == np.uint16
    store.put(["b"], [np.array([70_000], np.int32)])
    assert store.terms("a").tolist() == [7, 65_535]
    assert store.terms("b").tolist() == [70_000]
    assert store.terms("b").dtype == np.int32


def test_save_after_replacements_and_deletions_loads_the_same_index(tmp_path: Path) -> None:
    index = BM25KeywordIndex(stopwords=None, stemmer=None)
    docs = _corpus(300)
    index.upsert(docs)
    index.search("w01", 3)  # full build; what follows lands in the delta and tombstones
    index.upsert(_corpus(20, seed=5))  # replaces d0..d19
    index.delete(["d30", "d31"])
    index.upsert([Document(id="new", page_content="w01 w01 w02")])
    index.save(tmp_path)
    loaded = BM25KeywordIndex.load(tmp_path)
    assert len(loaded) == len(index) == 299
    # the same chunks in the same order (a replaced id keeps its place), in one full build
    fresh = BM25KeywordIndex(stopwords=None, stemmer=None)
    fresh.upsert([*_corpus(20, seed=5), *docs[20:30], *docs[32:]])
    fresh.upsert([Document(id="new", page_content="w01 w01 w02")])
    for q in ("w01", "w02 w03", "w10 w11 w12"):
        assert loaded.search(q, 10) == fresh.search(q, 10)
        assert {h.id for h in loaded.search(q, 300)} == {h.id for h in index.search(q, 300)}


def test_load_rejects_a_token_file_that_disagrees_with_its_ids(tmp_path: Path) -> None:
    index = BM25KeywordIndex()
    index.upsert(_corpus(5))
    index.save(tmp_path)
    meta_path = tmp_path / "bm25_index.json"
    meta = meta_path.read_text().replace('"d4"', '"d4", "d5"')
    meta_path.write_text(meta)
    with pytest.raises(ValueError, match="names 6 chunks but its token file holds 5 lengths"):
        BM25KeywordIndex.load(tmp_path)
