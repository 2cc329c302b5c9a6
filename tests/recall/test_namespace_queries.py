"""Plain one-namespace queries over messages, sessions and memories
(continuum.recall.namespace_queries)."""

from __future__ import annotations

from typing import Any

from continuum.recall.namespace_queries import recent_memories
from tests.support.memories import remember


def test_recent_memories_are_the_newest_listed_in_capture_order(db: Any) -> None:
    remember("Oldest: the boiler was serviced.", days_ago=30)
    remember("Middle: the roof was checked.", days_ago=10)
    remember("Newest: the gutters were cleaned.", days_ago=1)
    assert [m.content.split(":")[0] for m in recent_memories("pearl", limit=2)] == [
        "Middle",
        "Newest",
    ]
