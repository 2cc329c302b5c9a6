"""The eval's scorer on a hand-made case whose Recall, Hit and NDCG are worked out by hand."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest

from bench.eval.scoring import coverage, evaluate, score


@dataclass(frozen=True)
class Q:
    qid: str
    category: int
    evidence: tuple[str, ...]


def test_one_ranking_is_deduplicated_then_scored() -> None:
    # Deduplicated: a x b y c. Evidence a (rank 1), b (rank 3), z (never found).
    row = score(["a", "x", "a", "b", "y", "c"], ["a", "b", "z"])
    assert row["recall@1"] == pytest.approx(1 / 3)
    assert row["hit@1"] == 1.0
    assert row["recall@5"] == row["recall@50"] == pytest.approx(2 / 3)
    ideal = 1 + 1 / math.log2(3) + 1 / math.log2(4)  # all three evidence turns on top
    assert row["ndcg@10"] == pytest.approx((1 + 1 / math.log2(4)) / ideal)  # ≈ 0.7039


def test_hits_below_the_cutoff_do_not_count() -> None:
    row = score(["x", "y", "b"], ["b"])
    assert (row["recall@1"], row["hit@1"]) == (0.0, 0.0)
    assert (row["recall@5"], row["hit@5"]) == (1.0, 1.0)
    assert row["ndcg@10"] == pytest.approx(0.5)  # 1 / log2(3 + 1)


def test_ndcg_of_a_perfect_ranking_is_one_whatever_the_evidence_count() -> None:
    evidence = [f"D1:{n}" for n in range(1, 13)]  # more evidence turns than NDCG's 10 ranks
    assert score(evidence, evidence)["ndcg@10"] == pytest.approx(1.0)
    assert score(evidence[:1], evidence[:1])["ndcg@10"] == pytest.approx(1.0)


def test_means_over_questions_per_category_and_missing_answers() -> None:
    questions = [
        Q("s#0", 1, ("a", "b", "z")),
        Q("s#1", 4, ("b",)),
        Q("s#2", 4, ("c",)),  # no answer: scores 0
    ]
    results = {"s#0": ["a", "x", "a", "b"], "s#1": ["x", "y", "b"]}
    out = evaluate(results, questions)
    assert out["recall@1"] == pytest.approx((1 / 3 + 0 + 0) / 3)
    assert out["hit@5"] == pytest.approx(2 / 3)
    assert out["recall@10"] == pytest.approx((2 / 3 + 1 + 0) / 3)
    assert out["recall@10_cat1_multi-hop"] == pytest.approx(2 / 3)
    assert out["recall@10_cat4_single-hop"] == pytest.approx(0.5)
    assert math.isnan(out["recall@10_cat2_temporal"])  # no question of that category
    assert (out["n_questions"], out["n_missing"]) == (3, 1)


def test_coverage_counts_evidence_anywhere_in_the_list() -> None:
    assert coverage(["q"] * 60 + ["b", "a"], ["a", "b", "c", "d"]) == 0.5
