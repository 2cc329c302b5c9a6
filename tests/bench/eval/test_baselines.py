"""The eval's baselines: BM25 figures worked out by hand, and the rank fusion's order."""

from __future__ import annotations

import numpy as np
import pytest

from bench.eval.baselines import BM25, hybrid_ranking, ranking, tokenize

DOCS = [
    ["apple", "pie"],
    ["apple", "tart"],
    ["apple", "banana"],
    ["cherry", "pie", "pie", "cherry", "plum", "fig"],
]  # average length 3


def test_tokens_are_lowercase_words_without_stop_words() -> None:
    assert tokenize("Where did THE cat-sitter go in 2023?") == ["did", "cat", "sitter", "2023"]


def test_bm25_okapi_scores() -> None:
    bm25 = BM25(DOCS)
    # 'tart': idf ln(3.5 / 1.5) = 0.8473, tf 1 in a doc of average length: × 2.5 / 2.125
    assert bm25.scores(["tart"]) == pytest.approx([0, 0.996821, 0, 0], abs=1e-6)
    # 'cherry': tf 2 in a doc twice the average: × 2 · 2.5 / (2 + 1.5 · 1.75)
    assert bm25.scores(["cherry"]) == pytest.approx([0, 0, 0, 0.915998], abs=1e-6)
    # 'apple' is in 3 of 4 docs (idf < 0): epsilon 0.25 × the mean idf (0.4842)
    assert bm25.scores(["apple"]) == pytest.approx([0.142403] * 3 + [0], abs=1e-6)
    # 'pie' in half the docs: idf 0; an unknown word adds nothing; repeats count again
    assert not bm25.scores(["pie", "unknown"]).any()
    assert bm25.scores(["tart", "tart"]) == pytest.approx(2 * bm25.scores(["tart"]))


def test_ties_rank_in_transcript_order() -> None:
    assert ranking(np.array([1.0, 2.0, 1.0, 0.0])).tolist() == [1, 0, 2, 3]
    alternating = np.array([1.0, 0.0] * 50)  # long enough for an unstable sort to reorder
    assert ranking(alternating).tolist() == list(range(0, 100, 2)) + list(range(1, 100, 2))


def test_hybrid_fuses_the_matching_bm25_turns_with_the_dense_ranking() -> None:
    lexical = np.array([0.0, 2.0, 1.0, 0.0])  # ranks 1: doc 1, 2: doc 2; no word of docs 0, 3
    dense = np.array([0.9, 0.1, 0.5, 0.3])  # ranks doc 0, 2, 3, 1
    # doc 2: 1/62 + 1/62 > doc 1: 1/61 + 1/64 > doc 0: 1/61 > doc 3: 1/63
    assert hybrid_ranking(lexical, dense).tolist() == [2, 1, 0, 3]
