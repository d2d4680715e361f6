import pytest

from langchain_holodeck.fusion import reciprocal_rank_fusion


def test_rrf_matches_hand_computed_scores() -> None:
    a = [("x", 9.0), ("y", 5.0), ("z", 1.0)]
    b = [("y", 0.9), ("w", 0.8)]
    fused = dict(reciprocal_rank_fusion([a, b], k=60))
    assert fused["x"] == pytest.approx(1 / 61)
    assert fused["y"] == pytest.approx(1 / 62 + 1 / 61)
    assert fused["z"] == pytest.approx(1 / 63)
    assert fused["w"] == pytest.approx(1 / 62)


def test_rrf_orders_best_first_with_weights() -> None:
    a = [("x", 1.0), ("y", 0.5)]
    b = [("y", 1.0), ("x", 0.5)]
    fused = reciprocal_rank_fusion([a, b], k=1, weights=[3.0, 1.0])
    # x: 3/2 + 1/3 = 1.8333; y: 3/3 + 1/2 = 1.5
    assert [doc_id for doc_id, _ in fused] == ["x", "y"]
    assert fused[0][1] == pytest.approx(3 / 2 + 1 / 3)
    assert fused[1][1] == pytest.approx(3 / 3 + 1 / 2)


def test_rrf_ties_broken_by_first_appearance() -> None:
    fused = reciprocal_rank_fusion([[("b", 1.0)], [("a", 1.0)]])
    assert [doc_id for doc_id, _ in fused] == ["b", "a"]
    fused = reciprocal_rank_fusion([[("a", 1.0)], [("b", 1.0)]])
    assert [doc_id for doc_id, _ in fused] == ["a", "b"]


def test_rrf_ignores_scores_and_duplicates_within_a_list() -> None:
    fused = dict(reciprocal_rank_fusion([[("a", -5.0), ("a", 100.0), ("b", 7.0)]], k=0))
    assert fused == {"a": pytest.approx(1.0), "b": pytest.approx(1 / 3)}


def test_rrf_zero_weight_list_adds_nothing() -> None:
    fused = reciprocal_rank_fusion([[("a", 1.0)], [("b", 1.0)]], weights=[1.0, 0.0])
    assert fused == [("a", pytest.approx(1 / 61))]


def test_rrf_empty_inputs() -> None:
    assert reciprocal_rank_fusion([]) == []
    assert reciprocal_rank_fusion([[], []]) == []


def test_rrf_does_not_mutate_inputs() -> None:
    a = [("x", 1.0), ("y", 0.5)]
    reciprocal_rank_fusion([a])
    assert a == [("x", 1.0), ("y", 0.5)]


def test_rrf_rejects_wrong_number_of_weights() -> None:
    with pytest.raises(ValueError, match="weights has 3 entries but 2 rankings"):
        reciprocal_rank_fusion([[], []], weights=[1, 1, 1])


def test_rrf_rejects_negative_or_nan_weight() -> None:
    with pytest.raises(ValueError, match=r"weights\[1\] must be a finite number >= 0, got -1"):
        reciprocal_rank_fusion([[], []], weights=[1.0, -1.0])
    with pytest.raises(ValueError, match="got nan"):
        reciprocal_rank_fusion([[]], weights=[float("nan")])


def test_rrf_rejects_all_zero_weights() -> None:
    with pytest.raises(ValueError, match="at least one weight must be > 0"):
        reciprocal_rank_fusion([[("a", 1.0)]], weights=[0.0])


def test_rrf_rejects_negative_k() -> None:
    with pytest.raises(ValueError, match="k must be >= 0, got -1"):
        reciprocal_rank_fusion([], k=-1)


def test_rrf_rejects_a_bool_k() -> None:
    """A bool is an int in Python: k=True fused with the constant 1."""
    with pytest.raises(ValueError, match="k must be a number >= 0, not a bool, got True"):
        reciprocal_rank_fusion([[("a", 1.0)]], k=True)


def test_convex_matches_hand_computed_scores() -> None:
    from langchain_holodeck.fusion import convex_score_fusion

    dense = [("a", 0.8), ("b", 0.4)]
    keyword = [("b", 10.0), ("c", 5.0)]
    fused = convex_score_fusion([dense, keyword], weights=[0.7, 0.3], lower_bounds=[0.0, 0.0])
    expected = {"a": 0.7 * 1.0, "b": 0.7 * 0.5 + 0.3 * 1.0, "c": 0.3 * 0.5}
    assert [i for i, _ in fused] == ["a", "b", "c"]
    assert dict(fused) == pytest.approx(expected)


def test_convex_without_bounds_is_plain_min_max() -> None:
    from langchain_holodeck.fusion import convex_score_fusion

    fused = dict(convex_score_fusion([[("a", 3.0), ("b", 2.0), ("c", 1.0)]]))
    assert fused == {"a": 1.0, "b": 0.5, "c": 0.0}
    assert dict(convex_score_fusion([[("a", 2.0), ("b", 2.0)]])) == {"a": 1.0, "b": 1.0}


def test_convex_first_entry_counts_and_zero_weight_adds_nothing() -> None:
    from langchain_holodeck.fusion import convex_score_fusion

    fused = convex_score_fusion(
        [[("a", 1.0), ("a", 0.1), ("b", 0.5)], [("z", 9.0)]],
        weights=[1.0, 0.0],
        lower_bounds=[0.0, 0.0],
    )
    assert fused == [("a", 1.0), ("b", 0.5)]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"weights": [1.0]}, "weights has 1 entries but 2 rankings"),
        ({"lower_bounds": [0.0]}, "lower_bounds has 1 entries but 2 lists"),
        ({"lower_bounds": [float("nan"), 0.0]}, r"lower_bounds\[0\] must be finite"),
    ],
)
def test_convex_rejects_bad_arguments(kwargs, message) -> None:
    from langchain_holodeck.fusion import convex_score_fusion

    with pytest.raises(ValueError, match=message):
        convex_score_fusion([[("a", 1.0)], [("b", 1.0)]], **kwargs)


def test_convex_rejects_non_finite_scores() -> None:
    from langchain_holodeck.fusion import convex_score_fusion

    with pytest.raises(ValueError, match=r"non-finite score for 'a': inf"):
        convex_score_fusion([[("a", float("inf"))]])
