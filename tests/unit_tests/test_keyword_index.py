import bm25s
import numpy as np
import pytest
import Stemmer
from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore

from langchain_holodeck.keyword_index import BM25KeywordIndex, KeywordHit, KeywordIndex, Tokenizer

TEXTS = [
    "The Operator shall confirm that the safety interlock is engaged.",
    "A second officer shall remain within reach of the arch controls.",
    "Every simulation shall be logged with the program and start times.",
    "Logs are kept for seven years.",
    "Crew shifts are scheduled weekly by the duty officer.",
    "The holodeck arch displays the program catalogue.",
]


def make_docs(texts: list[str] = TEXTS, prefix: str = "d") -> list[Document]:
    return [Document(id=f"{prefix}{i}", page_content=t) for i, t in enumerate(texts)]


@pytest.fixture
def index() -> BM25KeywordIndex:
    idx = BM25KeywordIndex()
    idx.upsert(make_docs())
    return idx


def test_bm25_index_satisfies_protocol(index: BM25KeywordIndex) -> None:
    assert isinstance(index, KeywordIndex)


def test_search_returns_matching_ids_best_first(index: BM25KeywordIndex) -> None:
    hits = index.search("arch controls", k=3)
    assert [h.id for h in hits] == ["d1", "d5"]
    assert all(isinstance(h, KeywordHit) for h in hits)
    assert hits[0].score > hits[1].score > 0
    doc_id, score = hits[0]  # a hit is an (id, score) pair
    assert (doc_id, score) == (hits[0].id, hits[0].score)


def test_scores_equal_bm25s_reference() -> None:
    idx = BM25KeywordIndex(pair_weight=0)  # the terms' BM25 alone, as bm25s scores it
    idx.upsert(make_docs())
    stemmer = Stemmer.Stemmer("english")
    ref = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
    ref.index(bm25s.tokenize(TEXTS, stemmer=stemmer, show_progress=False), show_progress=False)
    for query in ["safety interlock engaged", "program logged", "officer arch"]:
        tokens = bm25s.tokenize([query], stemmer=stemmer, return_ids=False, show_progress=False)
        expected = ref.get_scores(tokens[0])
        got = {h.id: h.score for h in idx.search(query, k=10)}
        for i, score in enumerate(expected):
            assert got.get(f"d{i}", 0.0) == pytest.approx(float(score), rel=1e-5)


def test_stemming_and_stop_words(index: BM25KeywordIndex) -> None:
    assert [h.id for h in index.search("schedules", k=2)] == ["d4"]  # stem of "scheduled"
    assert index.search("the and of", k=3) == []  # only stop words
    unstemmed = BM25KeywordIndex(stemmer=None, stopwords=None)
    unstemmed.upsert(make_docs())
    assert unstemmed.search("schedules", k=2) == []
    assert [h.id for h in unstemmed.search("the", k=10)]  # stop words kept


def test_k_is_clamped_and_empty_cases(index: BM25KeywordIndex) -> None:
    assert len(index.search("officer program arch logs safety crew", k=100)) <= len(TEXTS)
    assert index.search("", k=3) == []
    assert index.search("   \n\t", k=3) == []
    assert index.search("zzzunknownzzz", k=3) == []
    assert BM25KeywordIndex().search("anything", k=3) == []


@pytest.mark.parametrize("bad_k", [0, -1, 1.5, True, "3"])
def test_bad_k_is_rejected(index: BM25KeywordIndex, bad_k: object) -> None:
    with pytest.raises(ValueError, match="k must be a positive integer"):
        index.search("officer", k=bad_k)  # type: ignore[arg-type]


def test_idless_document_rejected_with_position_and_source() -> None:
    idx = BM25KeywordIndex()
    docs = [*make_docs()[:2], Document(page_content="x", metadata={"source_path": "a.md"})]
    with pytest.raises(ValueError, match=r"doc 2 \(source='a.md'\) has none"):
        idx.upsert(docs)
    assert len(idx) == 0  # nothing half-indexed


def test_upsert_replaces_by_id(index: BM25KeywordIndex) -> None:
    index.upsert([Document(id="d3", page_content="Replicator maintenance log")])
    assert [h.id for h in index.search("replicator", k=3)] == ["d3"]
    assert [h.id for h in index.search("seven years", k=3)] == []
    assert len(index) == len(TEXTS)


def test_delete_removes_and_ignores_unknown(index: BM25KeywordIndex) -> None:
    index.search("officer", k=3)
    index.delete(["d1", "nope"])
    assert "d1" not in index
    assert [h.id for h in index.search("arch controls", k=3)] == ["d5"]
    index.delete(["d5"])
    assert index.search("arch", k=3) == []


def test_small_update_does_not_rebuild_everything() -> None:
    texts = [f"filler text number {i} about topic{i % 7}" for i in range(200)]
    idx = BM25KeywordIndex(max_delta_ratio=0.1)
    idx.upsert(make_docs(texts))
    idx.search("topic3", k=5)
    assert idx.full_builds == 1
    idx.upsert([Document(id="new", page_content="warp core breach drill")])
    idx.delete(["d0"])
    idx.upsert([Document(id="d1", page_content="warp field theory")])
    hits = idx.search("warp", k=5)
    assert {h.id for h in hits} == {"new", "d1"}
    assert "d0" not in {h.id for h in idx.search("filler number", k=300)}
    assert idx.full_builds == 1  # delta + tombstones only
    idx.upsert(make_docs([f"bulk {i}" for i in range(50)], prefix="bulk"))
    assert len(idx.search("bulk", k=100)) == 50
    assert idx.full_builds == 2  # a large change compacts once


def test_incremental_ranking_matches_fresh_build() -> None:
    texts = [
        f"the {w} report mentions {w} and engines {i}"
        for i, w in enumerate(["alpha", "beta", "gamma", "delta", "epsilon"] * 20)
    ]
    idx = BM25KeywordIndex(max_delta_ratio=0.5)
    idx.upsert(make_docs(texts))
    idx.search("alpha", k=1)
    extra = [
        Document(id="x1", page_content="alpha alpha engines"),
        Document(id="x2", page_content="gamma report"),
    ]
    idx.upsert(extra)
    fresh = BM25KeywordIndex()
    fresh.upsert([*make_docs(texts), *extra])
    for q in ["alpha engines", "gamma report", "epsilon"]:
        assert [h.id for h in idx.search(q, k=5)][:3] == [h.id for h in fresh.search(q, k=5)][:3]


def test_ties_are_deterministic() -> None:
    idx = BM25KeywordIndex()
    idx.upsert(make_docs(["same words here"] * 5))
    assert [h.id for h in idx.search("words", k=3)] == ["d0", "d1", "d2"]


def test_save_and_load_round_trip(index: BM25KeywordIndex, tmp_path) -> None:
    index.upsert([Document(id="extra", page_content="Replicator rations")])
    index.delete(["d0"])
    before = index.search("officer program replicator", k=10)
    index.save(tmp_path / "kw")
    loaded = BM25KeywordIndex.load(tmp_path / "kw")
    assert len(loaded) == len(index)
    after = loaded.search("officer program replicator", k=10)
    assert [h.id for h in after] == [h.id for h in before]
    loaded.upsert([Document(id="later", page_content="Replicator upgrade")])
    assert "later" in {h.id for h in loaded.search("replicator", k=5)}


def test_unsaved_follows_writes_and_origin_is_saved_with_the_index(
    index: BM25KeywordIndex, tmp_path
) -> None:
    assert index.unsaved  # never saved
    index.origin = "redis redis://127.0.0.1:6379, index kb"
    index.save(tmp_path / "kw")
    assert not index.unsaved
    loaded = BM25KeywordIndex.load(tmp_path / "kw")
    assert (loaded.origin, loaded.unsaved) == (index.origin, False)
    loaded.delete(["not-there"])
    assert not loaded.unsaved  # nothing removed: nothing to save
    loaded.upsert([Document(id="later", page_content="Replicator upgrade")])
    assert loaded.unsaved


def test_save_killed_between_its_two_files_leaves_the_previous_save(
    index: BM25KeywordIndex, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import langchain_holodeck.keyword_index.bm25 as bm25_module

    index.save(tmp_path / "kw")
    before = [h.id for h in index.search("officer program", k=10)]
    index.upsert([Document(id="new", page_content="officer program officer program")])

    def killed(*_args: object) -> None:
        raise KeyboardInterrupt  # the tokens file is written, the JSON never is

    monkeypatch.setattr(bm25_module, "atomic_write_bytes", killed)
    with pytest.raises(KeyboardInterrupt):
        index.save(tmp_path / "kw")
    monkeypatch.undo()
    loaded = BM25KeywordIndex.load(tmp_path / "kw")
    assert [h.id for h in loaded.search("officer program", k=10)] == before
    index.save(tmp_path / "kw")  # the next save completes and leaves one generation
    assert len(list((tmp_path / "kw").glob("bm25_tokens*.npz"))) == 1
    assert "new" in {h.id for h in BM25KeywordIndex.load(tmp_path / "kw").search("officer", k=10)}


def test_load_errors(tmp_path) -> None:
    with pytest.raises(FileNotFoundError, match="no saved BM25KeywordIndex"):
        BM25KeywordIndex.load(tmp_path)
    (tmp_path / "bm25_index.json").write_text('{"format": "other"}')
    with pytest.raises(ValueError, match="is not a saved BM25KeywordIndex"):
        BM25KeywordIndex.load(tmp_path)


def test_rebuild_from_store_indexes_stored_chunks(embeddings) -> None:
    store = InMemoryVectorStore(embeddings)
    store.add_documents(make_docs())
    idx = BM25KeywordIndex()
    idx.upsert([Document(id="stale", page_content="stale officer")])
    assert idx.rebuild_from_store(store) == len(TEXTS)
    assert "stale" not in idx
    assert [h.id for h in idx.search("arch controls", k=2)] == ["d1", "d5"]


def test_rank_bm25_engine_ranks_like_okapi() -> None:
    idx = BM25KeywordIndex(engine="rank_bm25")
    idx.upsert(make_docs())
    assert [h.id for h in idx.search("arch controls", k=3)] == ["d1", "d5"]
    idx.upsert([Document(id="d9", page_content="arch arch arch controls")])
    assert idx.search("arch controls", k=1)[0].id == "d9"
    assert idx.search("unknownword", k=3) == []


@pytest.mark.parametrize(
    ("texts", "hits"),
    [
        (["alpha beta", "alpha gamma", "alpha delta"], 3),  # in every chunk: idf below 0
        (["alpha beta", "alpha gamma", "delta", "epsilon"], 2),  # in half of them: idf 0
    ],
)
def test_rank_bm25_engine_finds_a_term_most_chunks_hold(texts: list[str], hits: int) -> None:
    """Found 2026-12-07: rank_bm25's idf is 0 or below for such a term (its floor, epsilon
    times an average idf, was not above 0 either), so "alpha" found nothing; the default
    engine found every chunk holding it, as it now does."""
    docs = [Document(id=f"d{i}", page_content=text) for i, text in enumerate(texts)]
    okapi, default = BM25KeywordIndex(engine="rank_bm25"), BM25KeywordIndex()
    okapi.upsert(docs)
    default.upsert(docs)
    found = okapi.search("alpha", k=5)
    assert sorted(h.id for h in found) == sorted(h.id for h in default.search("alpha", k=5))
    assert len(found) == hits
    assert all(h.score > 0 for h in found)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"engine": "lucene"}, "engine must be 'bm25s' or 'rank_bm25', got 'lucene'"),
        ({"k1": -1.0}, "k1 must be a finite number >= 0, got -1.0"),
        ({"b": 2.0}, "b must be between 0 and 1, got 2.0"),
        ({"stopwords": "klingon"}, "stopwords must be 'english'"),
        ({"stemmer": "klingon"}, "stemmer must be a Snowball language"),
        ({"max_delta_ratio": 3}, "max_delta_ratio must be between 0 and 1, got 3"),
        # a bool is an int in Python: k1=True was k1 1.0; a string failed with a TypeError
        ({"k1": True}, "k1 must be a number, got True"),
        ({"b": "0.5"}, "b must be a number, got '0.5'"),
        ({"pair_weight": False}, "pair_weight must be a number, got False"),
        ({"max_delta_ratio": None}, "max_delta_ratio must be a number, got None"),
    ],
)
def test_bad_constructor_arguments(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        BM25KeywordIndex(**kwargs)


def test_rank_bm25_missing_gives_install_hint(monkeypatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "rank_bm25", None)
    with pytest.raises(ImportError, match="pip install rank-bm25"):
        BM25KeywordIndex(engine="rank_bm25")


def test_terms_of_every_chunk_share_one_narrow_array(index: BM25KeywordIndex) -> None:
    flat, offsets = index._tokens.packed()
    assert flat.dtype == np.uint16  # the vocabulary is far below 65,536 terms
    assert len(offsets) == len(index) + 1
    assert offsets[-1] == len(flat)


@pytest.mark.parametrize(
    ("word", "terms"),
    [
        ("parse_sections", ["pars", "section", "parse_sections"]),
        ("Shift.swap", ["shift", "swap", "shift.swap"]),
        ("getUser", ["get", "user", "getuser"]),
        ("HTTPServer", ["http", "server", "httpserver"]),
        ("Running", ["run"]),
        ("p53", ["p53"]),
        ("the", []),
    ],
)
def test_tokenizer_splits_identifiers_and_keeps_them_whole(word: str, terms: list[str]) -> None:
    assert Tokenizer().terms_of(word) == terms


def test_identifier_query_ranks_its_definition_first() -> None:
    docs = [
        Document(id="a", page_content="def parse_sections(text): return split(text)"),
        Document(id="b", page_content="Parse the sections of the report, then file them."),
        Document(id="c", page_content="class Shift: def swap(self): pass"),
    ]
    index = BM25KeywordIndex()
    index.upsert(docs)
    assert index.search("parse_sections", k=3)[0].id == "a"
    assert {h.id for h in index.search("parse sections", k=3)} >= {"a", "b"}
    assert index.search("Shift.swap", k=1)[0].id == "c"
    assert "3.5" not in Tokenizer().terms_of("3.5")


def _code_and_prose() -> list[Document]:
    return [
        Document(
            id="code",
            page_content="def parse_sections(text): ...",
            metadata={"chunk_type": "code"},
        ),
        Document(id="prose", page_content="We call parse_sections on each file."),
        Document(id="other", page_content="Sections of the report follow."),
    ]


def test_identifiers_split_everywhere_by_default() -> None:
    index = BM25KeywordIndex()
    index.upsert(_code_and_prose())
    assert {h.id for h in index.search("parse", k=3)} == {"code", "prose"}


def test_identifiers_code_splits_only_code_chunks_and_still_matches_whole_names(
    tmp_path,
) -> None:
    index = BM25KeywordIndex(identifiers="code")
    index.upsert(_code_and_prose())
    assert [h.id for h in index.search("parse", k=3)] == ["code"]  # prose keeps the name whole
    hits = [h.id for h in index.search("parse_sections", k=3)]
    assert set(hits[:2]) == {"code", "prose"}  # the whole name; "other" only has "sections"
    loaded = BM25KeywordIndex.load(index.save(tmp_path))
    assert loaded.identifiers == "code"
    assert [h.id for h in loaded.search("parse", k=3)] == ["code"]


def test_identifiers_must_be_code_or_everywhere() -> None:
    with pytest.raises(ValueError, match="identifiers must be 'code' or 'everywhere', got 'all'"):
        BM25KeywordIndex(identifiers="all")  # type: ignore[arg-type]
