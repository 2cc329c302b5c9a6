"""Query-side time expressions resolve to the right window relative to `now`."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from continuum.timeparse import parse_time_range, strip_phrase

NOW = datetime(2026, 11, 24, 9, 30, tzinfo=UTC)  # a Tuesday


def day(month: int, d: int, year: int = 2026) -> str:
    return datetime(year, month, d, tzinfo=UTC).isoformat()


@pytest.mark.parametrize(
    ("query", "since", "until"),
    [
        ("what did I say yesterday?", day(11, 23), day(11, 24)),
        ("what did we do last weekend", day(11, 21), day(11, 23)),
        ("anything from last week", day(11, 16), day(11, 23)),
        ("the plan in March", day(3, 1), day(4, 1)),
        ("back in December", day(12, 1, 2025), day(1, 1)),  # the latest December before now
        ("in March 2025", day(3, 1, 2025), day(4, 1, 2025)),
        ("a couple of days ago", day(11, 21), day(11, 24)),
        ("what happened on Friday", day(11, 20), day(11, 21)),
        ("last Tuesday's call", day(11, 17), day(11, 18)),
        ("last month", day(10, 1), day(11, 1)),
        ("on March 14th", day(3, 14), day(3, 15)),
        ("notes of 2026-02-03", day(2, 3), day(2, 4)),
        ("in 2025", day(1, 1, 2025), day(1, 1)),
    ],
)
def test_windows(query: str, since: str, until: str) -> None:
    window = parse_time_range(query, NOW)
    assert window is not None
    assert (window.since.isoformat(), window.until.isoformat()) == (since, until)


def test_counting_back_gives_a_window_around_the_point() -> None:
    window = parse_time_range("two weeks ago I mentioned a recipe", NOW)
    assert window is not None and window.contains(datetime(2026, 11, 10, tzinfo=UTC))
    assert not window.contains(datetime(2026, 11, 20, tzinfo=UTC))
    assert strip_phrase("two weeks ago I mentioned a recipe", window) == "I mentioned a recipe"


@pytest.mark.parametrize("query", ["may I ask about the garden", "march forward", "no time"])
def test_no_false_times(query: str) -> None:
    assert parse_time_range(query, NOW) is None


def test_first_expression_wins_and_weekend_today() -> None:
    window = parse_time_range("yesterday or last month", NOW)
    assert window is not None and window.phrase == "yesterday"
    sunday = datetime(2026, 11, 29, 12, tzinfo=UTC)
    this = parse_time_range("this weekend", sunday)
    last = parse_time_range("last weekend", sunday)
    assert this is not None and this.since.isoformat() == day(11, 28)
    assert last is not None and last.since.isoformat() == day(11, 21)
