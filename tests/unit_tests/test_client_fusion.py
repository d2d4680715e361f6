"""``convex_chunks``: an engine's two legs fused as the retriever's convex fusion does."""

from __future__ import annotations

import pytest

from langchain_holodeck.fusion import convex_score_fusion
from langchain_holodeck.vectorstores._client_fusion import convex_chunks


def test_a_chunk_scores_its_best_entry_and_each_leg_is_divided_by_its_best() -> None:
    dense = [("a:w2", 0.8), ("b", 0.6), ("a", 0.5), ("c:w1", 0.4)]
    keyword = [("c", 6.0), ("b", 3.0)]
    fused = dict(convex_chunks(dense, keyword, (0.7, 0.3)))
    assert fused["a"] == pytest.approx(0.7 * 0.8 / 0.8)  # its window's 0.8, not its own 0.5
    assert fused["b"] == pytest.approx(0.7 * 0.6 / 0.8 + 0.3 * 3.0 / 6.0)
    assert fused["c"] == pytest.approx(0.7 * 0.4 / 0.8 + 0.3 * 1.0)
    assert list(fused) == ["a", "b", "c"]  # 0.7, 0.675, 0.65: best first
    expected = convex_score_fusion(
        [[("a", 0.8), ("b", 0.6), ("c", 0.4)], keyword], weights=[0.7, 0.3],
        lower_bounds=[0.0, 0.0],
    )  # fmt: skip
    assert convex_chunks(dense, keyword, (0.7, 0.3)) == expected


def test_a_leg_weighted_zero_or_empty_adds_nothing() -> None:
    assert convex_chunks([("a", 0.5)], [], (0.7, 0.3)) == [("a", 0.7)]
    assert convex_chunks([("a", 0.5)], [("b", 2.0)], (0.0, 1.0)) == [("b", 1.0)]


def test_the_threshold_reads_similarities_in_fused_order_only_as_far_as_needed() -> None:
    from langchain_core.documents import Document

    from langchain_holodeck.vectorstores._client_fusion import convex_hits

    keyword = [(f"kw{n}", 100.0 - n) for n in range(100)]  # keyword-only: no dense score
    asked: list[list[str]] = []

    def similarities(ids: list[str]) -> dict[str, float]:
        asked.append(ids)
        return {i: 0.9 if int(i[2:]) % 2 == 0 else 0.1 for i in ids}  # every other one passes

    def read(ids: list[str]) -> list[Document]:
        return [Document(id=i, page_content=i) for i in ids]

    hits = convex_hits([("d0", 0.5)], keyword, (0.5, 0.5), k=3, min_similarity_score=0.5,
                       similarities=similarities, read=read)  # fmt: skip
    assert [h.document.id for h in hits] == ["d0", "kw0", "kw2"]  # tie: the dense leg first
    assert [h.similarity for h in hits] == [0.5, 0.9, 0.9]
    assert sum(map(len, asked)) == 19  # one batch of 20 fused chunks, d0's score known
    none = convex_hits([("d0", 0.5)], keyword, (0.5, 0.5), k=3, min_similarity_score=None,
                       similarities=similarities, read=read)  # fmt: skip
    assert [h.similarity for h in none] == [0.5, None, None]
