"""The retriever's array fusion (``retrievers/_plan``) equals ``langchain_holodeck.fusion``.

Bit for bit: the same ids in the same order (ties by first appearance) and the same float
scores, on rankings with repeated ids, tied scores, empty lists and zero weights. And the
fast paths keep corpora apart: two corpora sharing one store never see each other's chunks.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from langchain_core.documents import Document

from langchain_holodeck.backends import backend_for_store
from langchain_holodeck.contracts import KeywordHit, NativeHit, RankedIds
from langchain_holodeck.exact import DESCENDANT_SCORE, SECTION_SCORE
from langchain_holodeck.fusion import convex_score_fusion, reciprocal_rank_fusion
from langchain_holodeck.keyword_index import BM25KeywordIndex
from langchain_holodeck.retrievers import HybridRetriever
from langchain_holodeck.retrievers._dense import DenseResult
from langchain_holodeck.retrievers._plan import (
    Legs,
    Ranking,
    Universe,
    _fuse,
    fused_plan,
    native_plan,
)
from langchain_holodeck.vectorstores import MatrixVectorStore
from tests.helpers import TableEmbeddings


def _rankings(rng: random.Random) -> list[list[tuple[str, float]]]:
    pool = [f"d{i}" for i in range(rng.randint(1, 60))]
    out = []
    for _ in range(3):
        n = rng.choice([0, 1, 5, 40, 80])
        ids = [rng.choice(pool) for _ in range(n)]  # repeats: each counts at its first entry
        scores = sorted(
            (rng.choice([0.0, 0.25, 0.5, 1.0, rng.random() * 9]) for _ in ids), reverse=True
        )
        out.append(list(zip(ids, scores, strict=True)))
    return out


@pytest.mark.parametrize("seed", range(200))
def test_array_fusion_equals_the_reference_functions(seed: int) -> None:
    rng = random.Random(seed)
    lists = _rankings(rng)
    weights = [rng.choice([0.0, 0.2, 0.3, 0.7, 1.0]) for _ in lists]
    if not any(weights):
        weights[0] = 0.5
    universe = Universe()
    universe.slots([f"d{i}" for i in range(70, 60, -1)])  # ids no list holds, seen first
    rankings = [Ranking(hits, universe) for hits in lists]
    bounds = [rng.choice([None, 0.0]) for _ in lists]

    def fused(slots: np.ndarray, scores: np.ndarray) -> list[tuple[str, float]]:
        return [(universe.ids[s], float(scores[s])) for s in slots.tolist()]

    expected = convex_score_fusion(lists, weights=weights, lower_bounds=bounds)
    assert fused(*_fuse(rankings, weights, len(universe), lower_bounds=bounds)) == expected

    c = rng.choice([0, 1, 60])
    expected = reciprocal_rank_fusion(lists, k=c, weights=weights)
    assert fused(*_fuse(rankings, weights, len(universe), rrf_k=c)) == expected


@pytest.mark.parametrize("seed", range(100))
def test_slot_order_fusion_equals_first_seen_fusion(seed: int) -> None:
    # the legs' lists in a fresh universe, every list weighted: slots follow first appearance
    rng = random.Random(seed)
    lists = [hits for hits in _rankings(rng) if hits] or [[("d0", 1.0)]]
    weights = [rng.choice([0.2, 0.3, 0.7, 1.0]) for _ in lists]
    universe = Universe()
    rankings = [Ranking(hits, universe) for hits in lists]
    for kwargs in ({"lower_bounds": [0.0] * len(lists)}, {"rrf_k": rng.choice([0, 1, 60])}):
        slots, fused = _fuse(rankings, weights, len(universe), **kwargs)  # type: ignore[arg-type]  # test kwargs
        fast, same = _fuse(rankings, weights, len(universe), slot_order=True, **kwargs)  # type: ignore[arg-type]  # test kwargs
        assert fast.tolist() == slots.tolist()
        assert same.tobytes() == fused.tobytes()


def test_ranking_keeps_each_id_at_its_first_entry() -> None:
    universe = Universe()
    ranking = Ranking([("a", 3.0), ("b", 2.0), ("a", 1.0), ("c", 0.5)], universe)
    assert universe.ids == ["a", "b", "c"]
    assert ranking.find("a") == (1, 3.0)
    assert ranking.find("c") == (4, 0.5)  # its position in the list, repeats counted
    assert ranking.find("z") is None
    later = Ranking([("z", 9.0), ("b", 8.0)], universe)  # a slot taken after the first look-up
    assert ranking.find("z") is None
    assert later.find("z") == (1, 9.0)
    assert later.find("b") == (2, 8.0)
    assert later.find("a") is None


def _first_entries(hits: Sequence[tuple[str, float]]) -> dict[str, tuple[int, float]]:
    first: dict[str, tuple[int, float]] = {}
    for n, (doc_id, score) in enumerate(hits):
        first.setdefault(doc_id, (n + 1, score))
    return first


@pytest.mark.parametrize("seed", range(100))
def test_plan_metadata_gives_each_id_its_first_rank_score_and_fused_score(seed: int) -> None:
    rng = random.Random(seed)
    dense, keyword, exact = _rankings(rng)
    exact_hits = [KeywordHit(i, rng.choice([1.0, 2.0])) for i, _ in exact]  # 2.0: a section
    weights = [rng.choice([0.0, 0.3, 0.7]), rng.choice([0.0, 0.3]), 0.2]
    legs = Legs(DenseResult(hits=dense, kind="relevance"), keyword, exact_hits)
    plan = fused_plan(legs, weights=weights, fusion="convex", rrf_k=60, exact_first=True)
    lists = [dense, keyword, [tuple(h) for h in exact_hits]]
    fused = dict(convex_score_fusion(lists, weights=weights, lower_bounds=[0.0, 0.0, 0.0]))
    best = sum(w for w, hits in zip(weights, lists, strict=True) if hits and w > 0)
    ids = list(plan.order)
    rng.shuffle(ids)
    metas = plan.metas(ids)
    assert metas == [plan.meta(i) for i in ids]
    firsts = [_first_entries(hits) for hits in lists]
    for doc_id, meta in zip(ids, metas, strict=True):
        pinned = doc_id in plan.pinned
        expected = min(1.0, fused[doc_id] / best) if best > 0 else 0.0
        assert meta["fused_score"] == (1.0 if pinned else expected)
        for name, first in zip(("semantic", "keyword", "exact"), firsts, strict=True):
            found = first.get(doc_id)
            assert meta[f"{name}_rank"] == (found[0] if found else None)
            if name != "exact":
                assert meta[f"{name}_score"] == (found[1] if found else None)
        assert meta["exact_match"] == (doc_id in firsts[2])
    # a second fusion over ids the first never saw: the legs' lists do not hold them
    extra = [(f"new{i}", 1.0 - i / 10) for i in range(3)] + dense[:2]
    again = fused_plan(
        legs,
        weights=weights,
        fusion="convex",
        rrf_k=60,
        exact_first=True,
        dense_ranking=legs.ranking(extra),
    )
    for meta, doc_id in zip(again.metas(["new0", "new2"]), ["new0", "new2"], strict=True):
        assert meta["semantic_rank"] is None, doc_id
        assert meta["keyword_rank"] is None


def test_a_non_finite_score_is_named_as_by_convex_score_fusion() -> None:
    lists = [[("a", 1.0)], [("b", float("nan"))]]
    with pytest.raises(ValueError, match="non-finite") as expected:
        convex_score_fusion(lists, weights=[1.0, 1.0])
    universe = Universe()
    rankings = [Ranking(h, universe) for h in lists]
    with pytest.raises(ValueError, match="non-finite") as got:
        _fuse(rankings, [1.0, 1.0], len(universe))
    assert str(got.value) == str(expected.value)


class _SpyStore(MatrixVectorStore):
    """Records the ids the feedback re-scores, on the array path (``rank_ids``)."""

    scored: list[str]

    def similarity_by_ids(self, embedding: Any, ids: Sequence[str]) -> dict[str, float]:
        self.scored.extend(ids)
        return super().similarity_by_ids(embedding, ids)

    def rank_ids(self, embedding: Any, ids: Sequence[str]) -> RankedIds:
        self.scored.extend(ids)
        return super().rank_ids(embedding, ids)


@pytest.mark.parametrize("arrays", [True, False])
async def test_two_corpora_sharing_a_store_never_see_each_other_with_feedback(
    monkeypatch: pytest.MonkeyPatch, arrays: bool
) -> None:
    rng = np.random.default_rng(11)
    words = [f"term{i}" for i in range(30)]
    texts = [" ".join(rng.choice(words, size=8)) for _ in range(60)]
    table = {t: rng.standard_normal(8).tolist() for t in texts}
    query = " ".join(words[:4])
    table[query] = rng.standard_normal(8).tolist()
    store = (
        _SpyStore(TableEmbeddings(table)) if arrays else MatrixVectorStore(TableEmbeddings(table))
    )
    corpora: dict[str, list[Document]] = {
        ns: [  # the same texts and vectors in both corpora: each would rank the other's first
            Document(id=f"{ns}-{i}", page_content=t, metadata={"namespace": ns})
            for i, t in enumerate(texts)
        ]
        for ns in ("a", "b")
    }
    for docs in corpora.values():
        store.add_documents(docs)
    scored: list[str] = []
    if isinstance(store, _SpyStore):  # the array twins: rank_ids and rank_ids_by_vector
        store.scored = scored
    else:  # an instance attribute: the plain methods (similarity_by_ids) are called
        similarity_by_ids = store.similarity_by_ids

        def spy(embedding: Any, ids: Sequence[str]) -> dict[str, float]:
            scored.extend(ids)
            return similarity_by_ids(embedding, ids)

        monkeypatch.setattr(store, "similarity_by_ids", spy)
    for ns, docs in corpora.items():
        view, search_kwargs = backend_for_store(store).search_scope(store, ns)
        bm25 = BM25KeywordIndex()
        bm25.upsert(docs)
        retriever = HybridRetriever(  # the defaults: feedback on, convex fusion, fetch_k 300
            vector_store=view, keyword_index=bm25, search_kwargs=search_kwargs, k=20
        )
        scored.clear()
        got = [*retriever.invoke(query), *(await retriever.ainvoke(query))]
        assert len(got) == 40
        assert {d.metadata["namespace"] for d in got} == {ns}
        assert {d.id.split("-")[0] for d in got if d.id} == {ns}
        assert scored  # the feedback re-scored candidates: its own corpus's only
        assert {i.split("-")[0] for i in scored} == {ns}


@pytest.mark.parametrize("change", ["model_copy", "assignment"])
async def test_new_search_kwargs_reach_the_dense_leg_of_a_used_retriever(change: str) -> None:
    from langchain_core.embeddings import DeterministicFakeEmbedding

    store = MatrixVectorStore(DeterministicFakeEmbedding(size=16))
    store.add_documents(
        [
            Document(id=f"d{i}", page_content=f"deck {i} report", metadata={"team": "ab"[i % 2]})
            for i in range(10)
        ]
    )
    retriever = HybridRetriever(vector_store=store, weights=(1.0, 0.0, 0.0))
    assert {d.metadata["team"] for d in retriever.invoke("deck report", k=10)} == {"a", "b"}
    only_b = {"filter": {"team": "b"}}
    if change == "model_copy":  # the copy carries the first search's cached dense leg
        retriever = retriever.model_copy(update={"search_kwargs": only_b})
    else:
        retriever.search_kwargs = only_b
    assert {d.metadata["team"] for d in retriever.invoke("deck report", k=10)} == {"b"}
    assert {d.metadata["team"] for d in await retriever.ainvoke("deck report", k=10)} == {"b"}


def test_a_dense_leg_serves_only_the_kwargs_it_was_built_with() -> None:
    from langchain_core.embeddings import DeterministicFakeEmbedding

    from langchain_holodeck.retrievers._dense import DenseLeg

    mask = np.arange(3)
    leg = DenseLeg(MatrixVectorStore(DeterministicFakeEmbedding(size=4)), {"mask": mask, "k": 1})
    assert leg.serves({"mask": mask, "k": 1})  # the same objects
    assert not leg.serves({"mask": mask, "k": 2})
    assert not leg.serves({"mask": mask})
    # an equal array of its own: its == answers elementwise, so the leg counts it as changed
    assert not leg.serves({"mask": np.arange(3), "k": 1})


def _native(ids: Sequence[str]) -> list[NativeHit]:
    return [NativeHit(Document(id=i, page_content=i), 1.0 / n, None) for n, i in enumerate(ids, 1)]


def test_native_plan_weighs_a_demoted_exact_hit_by_its_score() -> None:
    """A query naming a document: its section 4.2 scores 2.0, another document's 4.2 0.5.

    The other 4.2 (engine rank 16) adds a quarter of the exact weight at exact rank 2, so the
    named document's 4.1 (engine rank 2, no exact hit) stays above it; plain RRF gave the
    demoted hit nearly the whole weight and ranked it second.
    """
    engine = ["hb-4.2", "hb-4.1", *(f"n{i}" for i in range(13)), "bill-4.2"]
    exact = [KeywordHit("hb-4.2", SECTION_SCORE), KeywordHit("bill-4.2", DESCENDANT_SCORE)]
    weights, k = (0.35, 0.25, 0.4), 60
    plan = native_plan(_native(engine), exact, weights=weights, rrf_k=k, exact_first=True)
    assert list(plan.order[:3]) == ["hb-4.2", "hb-4.1", "n0"]
    assert plan.pinned == {"hb-4.2"}
    best = (0.6 + 0.4) / (k + 1)
    demoted = plan.meta("bill-4.2")
    assert demoted["fused_score"] == (0.6 / (k + 16) + 0.4 * 0.25 / (k + 2)) / best
    assert (demoted["exact_rank"], demoted["exact_match"], demoted["native_rank"]) == (2, True, 16)


@pytest.mark.parametrize("seed", range(50))
def test_native_plan_with_equal_exact_scores_is_plain_rrf(seed: int) -> None:
    """Every exact hit at the leg's best score (pinned hits): the fusion is RRF bit for bit."""
    rng = random.Random(seed)
    pool = [f"d{i}" for i in range(30)]
    engine = [rng.choice(pool) for _ in range(rng.choice([0, 5, 20]))]
    score = rng.choice([SECTION_SCORE, DESCENDANT_SCORE, 4.0])
    exact = [KeywordHit(rng.choice(pool), score) for _ in range(rng.choice([0, 1, 4]))]
    weights = (rng.choice([0.0, 0.3]), 0.3, rng.choice([0.0, 0.4]))
    k = rng.choice([0, 60])
    plan = native_plan(_native(engine), exact, weights=weights, rrf_k=k, exact_first=False)
    ranking = [(i, 1.0 / n) for n, i in enumerate(engine, 1)]
    pair = [weights[0] + weights[1], weights[2]]
    expected = reciprocal_rank_fusion([ranking, exact], k=k, weights=pair)
    assert list(plan.order) == [doc_id for doc_id, _ in expected]
    answered = (pair[0] if engine else 0.0) + (weights[2] if exact and weights[2] else 0.0)
    for doc_id, fused in expected:
        assert plan.meta(doc_id)["fused_score"] == min(1.0, fused / (answered / (k + 1)))


def test_rrf_fallback_weighs_a_demoted_exact_hit_by_its_score() -> None:
    """Found 2026-12-07 (nat19): with ``fusion="rrf"`` another document's 4.2 (exact score
    0.5 beside the named document's 2.0) took nearly the whole exact weight, as on native."""
    dense = [("hb-4.2", 0.9), ("hb-4.1", 0.8), *((f"n{i}", 0.7 - i / 100) for i in range(13))]
    dense.append(("bill-4.2", 0.1))
    exact = [KeywordHit("hb-4.2", SECTION_SCORE), KeywordHit("bill-4.2", DESCENDANT_SCORE)]
    legs = Legs(DenseResult(hits=dense, kind="relevance"), [], exact)
    weights, k = (0.6, 0.0, 0.4), 60
    plan = fused_plan(legs, weights=weights, fusion="rrf", rrf_k=k, exact_first=True)
    assert list(plan.order[:3]) == ["hb-4.2", "hb-4.1", "n0"]
    best = (0.6 + 0.4) / (k + 1)
    assert plan.meta("bill-4.2")["fused_score"] == (0.6 / (k + 16) + 0.4 * 0.25 / (k + 2)) / best
    # every exact hit at the best score: plain RRF, bit for bit
    same = [KeywordHit("hb-4.2", SECTION_SCORE), KeywordHit("bill-4.2", SECTION_SCORE)]
    plain = fused_plan(
        Legs(DenseResult(hits=dense, kind="relevance"), [], same),
        weights=weights,
        fusion="rrf",
        rrf_k=k,
        exact_first=False,
    )
    expected = reciprocal_rank_fusion([dense, [tuple(h) for h in same]], k=k, weights=[0.6, 0.4])
    assert list(plain.order) == [doc_id for doc_id, _ in expected]
