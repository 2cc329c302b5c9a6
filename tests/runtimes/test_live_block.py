"""A live session's block (`LiveBlock`, R43): read again, it keeps the handoff its first read
consumed, and every read stays within the block's budget."""

from __future__ import annotations

from typing import Any

from continuum.ephemeral.handoff import peek_handoff, send_handoff
from continuum.inference.tokenizer import count_tokens
from continuum.runtimes.context import CONTEXT_MAX_TOKENS, LiveBlock
from tests.support.memories import remember

TOPICS = ["garden", "kitchen", "roof", "car", "school", "holiday", "budget", "insurance"]


def test_a_later_read_keeps_the_handoff_inside_the_budget(db: Any) -> None:
    for i in range(80):
        topic = TOPICS[i % len(TOPICS)]
        kind = ("decision", "preference", "fact")[i % 3]
        remember(f"Decision {i} on the {topic}: Jason settled it after comparing three quotes "
                 "from local firms, weighing the price against how soon each could start, "
                 "checking references from two neighbours and reading the small print on "
                 f"the warranty; he asked to be reminded of option {i} next week.", kind,
                 importance=9, days_ago=0.1 + i / 100)  # fmt: skip
    send_handoff("pearl", "jason", "discord", "voice", "Choosing the garden tiles: slate or "
                 "terracotta, to decide by Friday with Maria.")  # fmt: skip
    live = LiveBlock("pearl", user_id="jason", channel="voice")

    first = live.read()
    assert "garden tiles" in first and count_tokens(first) <= CONTEXT_MAX_TOKENS
    assert peek_handoff("pearl", "jason", "voice") is None  # consumed by the first read

    again = live.read()
    assert "garden tiles" in again
    assert CONTEXT_MAX_TOKENS - 100 < count_tokens(again) <= CONTEXT_MAX_TOKENS  # full, not over
