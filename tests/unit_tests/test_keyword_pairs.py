"""Adjacent-term pairs in ``BM25KeywordIndex``: the bonus, code chunks, saves before them."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from langchain_core.documents import Document

from langchain_holodeck import HierarchicalDocumentTool, HierarchicalDocumentToolConfig
from langchain_holodeck.keyword_index import BM25KeywordIndex
from tests.helpers import HashingEmbeddings

FILLER = [f"unrelated note number {n} about the weather and trains" for n in range(8)]
APART = "cancer studies of the liver found no risk"  # both terms, not side by side
BESIDE = "liver studies found no risk of cancer"  # the same terms, risk and cancer side by side


def index_of(*, beside_type: str | None = None, pair_weight: float = 0.5) -> BM25KeywordIndex:
    meta = {"chunk_type": beside_type} if beside_type else {}
    docs = [
        Document(id="apart", page_content=APART),
        Document(id="beside", page_content=BESIDE, metadata=meta),
        *(Document(id=f"f{n}", page_content=t) for n, t in enumerate(FILLER)),
    ]
    index = BM25KeywordIndex(pair_weight=pair_weight)
    index.upsert(docs)
    return index


def test_a_chunk_holding_the_query_pair_side_by_side_ranks_first() -> None:
    without = index_of(pair_weight=0).search("risk of cancer", k=5)
    assert [h.id for h in without] == ["apart", "beside"]  # a tie: kept in index order
    assert without[0].score == pytest.approx(without[1].score)
    hits = index_of().search("risk of cancer", k=5)  # "of" is a stop word: risk, cancer pair
    assert [h.id for h in hits] == ["beside", "apart"]
    assert hits[0].score > without[1].score
    assert hits[1].score == pytest.approx(without[0].score)  # no pair: no bonus


def test_the_order_of_the_pair_counts() -> None:
    assert [h.id for h in index_of().search("risk cancer", k=5)] == ["beside", "apart"]
    reversed_hits = index_of().search("cancer risk", k=5)  # no chunk holds it in this order
    assert [h.id for h in reversed_hits] == ["apart", "beside"]
    assert reversed_hits[0].score == pytest.approx(reversed_hits[1].score)


def test_code_chunks_gain_no_pair_bonus() -> None:
    plain = index_of(beside_type="code", pair_weight=0).search("risk of cancer", k=5)
    hits = index_of(beside_type="code").search("risk of cancer", k=5)
    assert hits == plain


def test_a_saved_index_keeps_its_code_chunks_and_pair_weight(tmp_path: Path) -> None:
    index_of(beside_type="code", pair_weight=0.25).save(tmp_path)
    loaded = BM25KeywordIndex.load(tmp_path)
    assert loaded.pair_weight == 0.25
    assert loaded.chunk_types_known
    plain = index_of(beside_type="code", pair_weight=0).search("risk of cancer", k=5)
    assert loaded.search("risk of cancer", k=5) == plain


def _as_saved_before_pairs(directory: Path) -> None:
    """Rewrite a save as one made before code chunks were recorded (no ``code`` array)."""
    (tokens,) = directory.glob("bm25_tokens*.npz")
    with np.load(tokens) as npz:
        flat, lengths = npz["tokens"], npz["lengths"]
    with tokens.open("wb") as f:
        np.savez(f, tokens=flat, lengths=lengths)


def test_a_save_from_before_pairs_loads_with_its_chunk_types_unknown(tmp_path: Path) -> None:
    index_of(beside_type="code").save(tmp_path)
    _as_saved_before_pairs(tmp_path)
    loaded = BM25KeywordIndex.load(tmp_path)
    assert not loaded.chunk_types_known
    hits = loaded.search("risk of cancer", k=5)
    assert [h.id for h in hits] == ["beside", "apart"]  # the code chunk is not known as code


def test_the_tool_rebuilds_a_save_from_before_pairs(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "notes.md").write_text(f"# Notes\n\n{APART}\n", encoding="utf-8")
    code = "def risk_of_cancer():\n    '''liver studies found no risk of cancer'''\n"
    (tmp_path / "src" / "risk.py").write_text(code, encoding="utf-8")

    def tool() -> HierarchicalDocumentTool:
        config = HierarchicalDocumentToolConfig(
            type="hierarchical_document", name="kb", source="src"
        )
        return HierarchicalDocumentTool(
            config, embeddings=HashingEmbeddings(), base_dir=tmp_path, store_dir=tmp_path / "store"
        )

    first = tool()
    first.initialize_sync()
    directory = tmp_path / "store" / "bm25"
    (saved,) = directory.iterdir()
    _as_saved_before_pairs(saved)
    again = tool()
    again.initialize_sync()
    index = again._keywords
    assert isinstance(index, BM25KeywordIndex)
    assert index.chunk_types_known  # rebuilt from the store, which knows the code chunks
    assert index._code  # the Python file's chunk, which gains no pair bonus


@pytest.mark.parametrize("weight", [-0.1, float("nan"), float("inf")])
def test_a_pair_weight_that_is_no_weight_is_refused(weight: float) -> None:
    with pytest.raises(ValueError, match=r"pair_weight must be a finite number >= 0, got"):
        BM25KeywordIndex(pair_weight=weight)


def test_prose_identifiers_pair_when_only_code_splits_them() -> None:
    docs = [
        Document(id="apart", page_content="output of the run, then parse_sections was called"),
        Document(id="beside", page_content="the run called parse_sections output then"),
        *(Document(id=f"f{n}", page_content=t) for n, t in enumerate(FILLER)),
    ]
    index = BM25KeywordIndex(identifiers="code")  # prose chunks keep parse_sections whole
    index.upsert(docs)
    plain = BM25KeywordIndex(identifiers="code", pair_weight=0)
    plain.upsert(docs)
    hits = index.search("parse_sections output", k=5)
    assert [h.id for h in hits] == ["beside", "apart"]
    assert hits[0].score > plain.search("parse_sections output", k=5)[0].score


@pytest.mark.parametrize(
    "code",
    [
        np.array([0.0, 1.0]),  # floats
        np.array([[0, 1]]),  # two dimensions
        np.array(["0"]),  # text
        np.array(1),  # no dimension
        np.array([True, False]),  # booleans read as numbers would mark the wrong chunks
    ],
)
def test_a_damaged_code_array_is_one_value_error_naming_the_file(
    tmp_path: Path, code: np.ndarray
) -> None:
    index_of(beside_type="code").save(tmp_path)
    (tokens,) = tmp_path.glob("bm25_tokens*.npz")
    with np.load(tokens) as npz:
        flat, lengths = npz["tokens"], npz["lengths"]
    with tokens.open("wb") as f:
        np.savez(f, tokens=flat, lengths=lengths, code=code)
    with pytest.raises(ValueError, match=r"names code chunks it does not hold; save it again"):
        BM25KeywordIndex.load(tmp_path)


@pytest.mark.parametrize(
    ("key", "value"), [("pair_weight", "x"), ("pair_weight", None), ("k1", -1)]
)
def test_a_damaged_setting_is_one_value_error_naming_the_file(
    tmp_path: Path, key: str, value: object
) -> None:
    index_of().save(tmp_path)
    meta_file = tmp_path / "bm25_index.json"
    meta = json.loads(meta_file.read_text(encoding="utf-8"))
    meta[key] = value
    meta_file.write_text(json.dumps(meta), encoding="utf-8")
    with pytest.raises(ValueError, match=r"bm25_index.json' holds a damaged setting"):
        BM25KeywordIndex.load(tmp_path)


def test_the_configured_pair_weight_is_the_tools_over_a_save(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "notes.md").write_text(
        f"# Notes\n\n{APART}\n\n{BESIDE}\n", encoding="utf-8"
    )

    def tool(**keyword_index: object) -> HierarchicalDocumentTool:
        config = HierarchicalDocumentToolConfig(
            type="hierarchical_document",
            name="kb",
            source="src",
            keyword_index={"provider": "in-memory", **keyword_index},
        )
        return HierarchicalDocumentTool(
            config, embeddings=HashingEmbeddings(), base_dir=tmp_path, store_dir=tmp_path / "store"
        )

    first = tool()
    first.initialize_sync()
    assert isinstance(first._keywords, BM25KeywordIndex)
    assert first._keywords.pair_weight == 0.5
    again = tool(pair_weight=0)  # the saved index was made at 0.5: the configuration wins
    again.initialize_sync()
    assert isinstance(again._keywords, BM25KeywordIndex)
    assert again._keywords.pair_weight == 0


@pytest.mark.parametrize("weight", [-1, float("nan"), 11])
def test_a_configured_pair_weight_out_of_bounds_is_refused(weight: float) -> None:
    with pytest.raises(ValueError, match="pair_weight"):
        HierarchicalDocumentToolConfig(
            type="hierarchical_document",
            name="kb",
            source="src",
            keyword_index={"provider": "in-memory", "pair_weight": weight},
        )
