"""Evidence at a token budget, worked out by hand: packed search stops at the first turn that
would pass the budget (as the split's packed.py), and a block's sections are scored apart."""

from __future__ import annotations

import pytest
from rich.console import Console

from bench.eval.budget import (
    PREFIX_TOKENS,
    Held,
    Section,
    block_held,
    by_section,
    held_markdown,
    held_rows,
    held_table,
    packed_search,
)
from bench.eval.locomo import Question

QUESTIONS = [
    Question("q1", "c", "Where?", 4, ("D1:1", "D1:3")),
    Question("q2", "c", "When?", 2, ("D2:1",)),
]
TEXTS = {("c", "D1:1"): "a " * 10, ("c", "D1:2"): "b " * 30, ("c", "D1:3"): "c " * 5,
         ("c", "D2:1"): "d " * 10}  # fmt: skip


def words(text: str) -> int:
    return len(text.split())


def test_packed_search_stops_at_the_first_turn_past_the_budget() -> None:
    budget = 2 * PREFIX_TOKENS + 10 + 30  # D1:1 and D1:2 fit exactly; D1:3 would not
    results = {"q1": ["D1:1", "D1:1", "D1:2", "D1:3"], "q2": ["D9:9", "D2:1"]}
    held = packed_search("packed", results, QUESTIONS, TEXTS, budget, words)
    # q1 holds D1:1 of its two evidence turns (a repeat is packed once); q2 skips an
    # unknown id and holds its one
    assert held.recall == pytest.approx((0.5 + 1.0) / 2)
    assert held.lines == pytest.approx((2 + 1) / 2)
    assert held.tokens == pytest.approx((budget + PREFIX_TOKENS + 10) / 2)


def test_a_blocks_evidence_is_counted_whole_and_per_section() -> None:
    blocks = {
        "q1": {
            "Relevant memories": Section(["D1:1"], 40, 1),
            "Recent conversations": Section(["D1:3", "D1:2"], 20, 1),
        },
        "q2": {"Relevant memories": Section(["D1:1"], 30, 1)},
    }
    held = block_held("block", 100, blocks, {"q1": 90, "q2": 50}, QUESTIONS)
    assert held.recall == pytest.approx((1.0 + 0.0) / 2)
    assert (held.lines, held.tokens) == (1.5, 70)
    sections = by_section(blocks, QUESTIONS)
    assert sections["Relevant memories"] == pytest.approx((0.25, 1.0, 35.0))
    assert sections["Recent conversations"] == pytest.approx((0.25, 0.5, 10.0))


def test_the_printed_and_saved_tables_hold_the_same_rows() -> None:
    held = [Held("packed search", 800, 0.75, 14.5, 771.0)]
    rows = held_rows(held, {"Relevant memories": (0.7, 12.0, 600.0)})
    assert rows == [
        ["packed search", "800", "0.7500", "14.5", "771"],
        ["block section: Relevant memories", "", "0.7000", "12.0", "600"],
    ]
    markdown = held_markdown(rows).splitlines()
    assert markdown[-2:] == [
        "| packed search | 800 | 0.7500 | 14.5 | 771 |",
        "| block section: Relevant memories |  | 0.7000 | 12.0 | 600 |",
    ]
    console = Console(record=True, width=120)
    console.print(held_table(rows))
    printed = console.export_text()
    assert "packed search" in printed and "0.7500" in printed and "771" in printed
    assert "block section: Relevant memories" in printed and "0.7000" in printed
