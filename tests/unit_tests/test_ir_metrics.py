"""The benchmark's nDCG / recall against hand-computed values."""

import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from ir_metrics import ndcg_at_k, recall_at_k


def test_ndcg_hand_computed() -> None:
    ranked = ["a", "b", "c", "d"]
    relevant = {"b": 1, "d": 1, "z": 1}
    dcg = 1 / math.log2(3) + 1 / math.log2(5)  # b at rank 2, d at rank 4
    idcg = 1 + 1 / math.log2(3) + 1 / math.log2(4)  # three relevant docs, ideal order
    assert ndcg_at_k(ranked, relevant, 10) == pytest.approx(dcg / idcg)
    assert ndcg_at_k(ranked, relevant, 2) == pytest.approx(
        (1 / math.log2(3)) / (1 + 1 / math.log2(3))
    )
    assert ndcg_at_k(["b", "d", "z"], relevant, 3) == pytest.approx(1.0)
    assert ndcg_at_k(ranked, {}, 10) == 0.0


def test_recall_hand_computed() -> None:
    relevant = {"b": 1, "d": 1, "z": 1, "n": 0}
    assert recall_at_k(["a", "b", "c", "d"], relevant, 100) == pytest.approx(2 / 3)
    assert recall_at_k(["a", "b", "c", "d"], relevant, 1) == 0.0
    assert recall_at_k(["a"], {}, 10) == 0.0
