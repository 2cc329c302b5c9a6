"""The summaries bench's scorer on hand-made cases worked out by hand, and the gold set's
shape (every conversation scoreable, the frozen baseline covering all of them)."""

from __future__ import annotations

import json

import pytest

from bench.summary_bench import BASELINE, content_words, load_gold, match_items, match_topics, score


def test_content_words_drop_the_words_summaries_wrap_items_in():
    assert content_words("User committed to send the headcount to Julia by Friday") == {
        "send", "headcount", "julia"
    }  # fmt: skip
    assert content_words("Doctor's appointments") == {"doctor", "appointment"}


def test_items_match_once_each_by_overlap():
    predicted = ["Decided to go with the lake lodge", "Decided to go with the lake lodge", "x"]
    gold = ["Go with the lake lodge for the offsite"]
    assert match_items(predicted, gold) == [(0, 0)]  # Dice 2·2/(2+3) = 0.8; the copy unmatched
    assert match_items(["Book a table for dinner"], ["Book the flights"]) == []  # Dice 0.4


def test_topics_match_any_alternative_with_a_word_in_common():
    assert match_topics(["lake lodge", "Julia", "hotel"], ["offsite", "lodge|lake", "hotel"]) == 2


def test_score_is_micro_averaged_and_counts_due_dates_over_dated_gold_items():
    gold = [
        {"id": "a", "expected": {
            "topics": ["garden", "budget"],
            "decisions": ["Go with Hoffmann"],
            "action_items": [{"text": "Call the plumber", "due_days": 1},
                             {"text": "Order the flowers", "due_days": None}],
        }},
    ]  # fmt: skip
    outputs = {"a": {
        "topics": ["garden", "weather", "sentences"],
        "decisions": [],
        "action_items": [{"text": "User committed to call the plumber tomorrow", "due_days": 1},
                         {"text": "Order the flowers", "due_days": 3}],
    }}  # fmt: skip
    result = score(gold, outputs)
    assert result["topics_precision"] == pytest.approx(33.3)
    assert result["topics_recall"] == 50.0
    assert (result["decisions_precision"], result["decisions_recall"]) == (0.0, 0.0)
    assert (result["actions_precision"], result["actions_recall"]) == (100.0, 100.0)
    assert result["due_accuracy"] == 100.0  # one dated gold item, found with its date


def test_every_gold_conversation_has_a_frozen_baseline_output():
    gold = load_gold()
    assert len(gold) == 20
    assert all(4 <= len(c["turns"]) <= 12 for c in gold)
    frozen = json.loads(BASELINE.read_text())["outputs"]
    assert set(frozen) == {c["id"] for c in gold}
