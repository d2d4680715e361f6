import math

import pytest

from langchain_holodeck._scores import clip_unit


@pytest.mark.parametrize(
    ("score", "clipped"),
    [(-0.3, 0.0), (0.0, 0.0), (0.42, 0.42), (1.0, 1.0), (1.7, 1.0), (math.nan, 0.0)],
)
def test_clip_unit_keeps_relevance_in_zero_one(score: float, clipped: float) -> None:
    assert clip_unit(score) == clipped


def test_clip_unit_gives_no_credit_to_an_infinite_score() -> None:
    assert clip_unit(math.inf) == 0.0
    assert clip_unit(-math.inf) == 0.0
