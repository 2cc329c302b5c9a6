"""Query-side time expressions resolve to the right window relative to `now`."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from continuum.recall.timeparse import parse_time_range, strip_phrase

NOW = datetime(2026, 11, 24, 9, 30, tzinfo=UTC)  # a Tuesday


def day(month: int, d: int, year: int = 2026) -> str:
    return datetime(year, month, d, tzinfo=UTC).isoformat()


@pytest.mark.parametrize(
    ("query", "since", "until"),
    [
        ("what did I say yesterday?", day(11, 23), day(11, 24)),
        ("what did we do last weekend", day(11, 21), day(11, 23)),
        ("plans for this weekend", day(11, 28), day(11, 30)),  # on a Tuesday: the coming one
        ("where did we go last summer", day(6, 1), day(9, 1)),
        ("last winter", day(12, 1, 2025), day(3, 1)),
        ("last autumn", day(9, 1, 2025), day(12, 1, 2025)),  # this one is not over yet
        ("in the spring", day(3, 1), day(6, 1)),
        ("in the winter", day(12, 1, 2025), day(3, 1)),  # the latest begun
        ("this winter", day(12, 1), day(3, 1, 2027)),
        ("during the summer of 2025", day(6, 1, 2025), day(9, 1, 2025)),
        ("over the fall", day(9, 1), day(12, 1)),
        ("how was this past weekend", day(11, 21), day(11, 23)),
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


@pytest.mark.parametrize(
    ("text", "said_at", "about"),
    [
        ("Went kayaking with Sam.", datetime(2026, 11, 22, 15, tzinfo=UTC), True),  # Sunday
        ("Last weekend I went kayaking with Sam.", datetime(2026, 11, 23, 8, tzinfo=UTC), True),
        ("Yesterday I went kayaking.", datetime(2026, 11, 23, 8, tzinfo=UTC), True),  # Sun
        ("On Saturday we went kayaking.", datetime(2026, 11, 24, 8, tzinfo=UTC), True),
        ("I went kayaking with Sam.", datetime(2026, 11, 23, 8, tzinfo=UTC), False),  # no phrase
        ("Yesterday I went kayaking.", datetime(2026, 11, 24, 8, tzinfo=UTC), False),  # Monday
        ("Last weekend I went kayaking.", datetime(2026, 11, 28, 8, tzinfo=UTC), False),  # too late
        ("Last weekend I went kayaking.", datetime(2026, 11, 20, 8, tzinfo=UTC), False),  # before
    ],
)
def test_a_turn_is_about_the_window_when_said_in_it_or_reporting_back_on_it(
    text: str, said_at: datetime, about: bool
) -> None:
    window = parse_time_range("who did I go kayaking with last weekend?", NOW)  # Nov 21-22
    assert window is not None
    assert window.mentioned_in(text, said_at) is about


def test_reports_are_awaited_for_the_windows_length_within_two_days_and_a_week() -> None:
    lags = {}
    for query in ("yesterday", "last weekend", "last week", "last month"):
        window = parse_time_range(query, NOW)
        assert window is not None
        lags[query] = (window.reported_until - window.until).days
    assert lags == {"yesterday": 2, "last weekend": 2, "last week": 7, "last month": 7}


def test_a_report_is_read_on_the_askers_clock() -> None:
    """Said on Monday 08:30 in Tokyo (Sunday 23:30 UTC), "last weekend" is the weekend just
    over, as the Tokyo asker means it; read on UTC's Sunday it would be the one before."""
    tokyo = ZoneInfo("Asia/Tokyo")
    window = parse_time_range("who did I go kayaking with last weekend?",
                              datetime(2026, 11, 24, 9, 30, tzinfo=tokyo))  # fmt: skip
    assert window is not None and window.since == datetime(2026, 11, 21, tzinfo=tokyo)
    monday_morning_in_tokyo = datetime(2026, 11, 22, 23, 30, tzinfo=UTC)
    assert window.mentioned_in("Last weekend I went kayaking with Ines.", monday_morning_in_tokyo)
