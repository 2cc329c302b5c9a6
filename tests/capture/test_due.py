"""Due times of captured follow-ups and commitments: time phrases read forward from when
they were said, never from now."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from continuum.capture.due import resolve_due

SAID = datetime(2026, 3, 4, 10, 0, tzinfo=UTC)  # a Wednesday, 10:00


def _at(day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(2026, 3, day, hour, minute, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "due"),
    [
        ("I'll send it by Friday", _at(6, 9)),
        ("I have an appointment with Dr. Keller on Friday at 3pm", _at(6, 15)),
        ("book the flights tomorrow evening", _at(5, 18)),
        ("order the flowers next Monday", _at(9, 9)),
        ("this Wednesday", _at(4, 10)),  # said that day after 09:00: due at once
        ("on Wednesday", _at(11, 9)),  # a bare weekday is the next one
        ("she calls tonight", _at(4, 20)),
        ("call me at 9", _at(5, 9)),  # 09:00 has passed today
        ("at 3", _at(4, 15)),  # "at 3" is the afternoon
        ("before the vote on March 20", _at(20, 9)),
        ("on the 3rd of March", datetime(2027, 3, 3, 9, tzinfo=UTC)),  # that day has passed
        ("the end of the month", _at(31, 9)),
        ("next week", _at(9, 9)),
        ("in 2 hours", _at(4, 12)),
        ("within the hour", _at(4, 11)),
    ],
)
def test_phrases_resolve_forward_from_when_they_were_said(text, due):
    assert resolve_due(text, SAID) == due


def test_a_reminder_names_its_own_day_not_the_event_it_is_about():
    text = "I'll remind you on Monday about the doctor's appointment on Tuesday at 10"
    assert resolve_due(text, SAID) == _at(9, 9)
    assert resolve_due("the appointment is on Tuesday at 10", SAID) == _at(10, 10)


def test_the_day_before_counts_back_from_the_date_it_follows():
    text = "I have a doctor's appointment on Tuesday at 10, remind me the day before"
    assert resolve_due(text, SAID) == _at(9, 9)
    assert resolve_due("the exam is on Friday, wake me the evening before", SAID) == _at(5, 18)


@pytest.mark.parametrize(
    "text",
    [
        "Last Friday I went to a council meeting",
        "yesterday at 3pm",
        "two days ago",
        "she always calls on Wednesdays",  # a habit, not a date
        "keep the volume at 75%",
        "rate limit of 100 requests per minute",
        "no time here",
    ],
)
def test_past_habitual_and_timeless_text_has_no_due_time(text):
    assert resolve_due(text, SAID) is None


def test_the_time_zone_and_day_are_those_of_the_turn():
    tokyo = timezone(timedelta(hours=9))
    said = datetime(2026, 3, 4, 23, 30, tzinfo=tokyo)
    assert resolve_due("tomorrow morning", said) == datetime(2026, 3, 5, 9, tzinfo=tokyo)
