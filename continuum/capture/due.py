"""Due times of what capture finds ("tomorrow at 3pm", "by Friday", "on March 20", "the day
before"): resolved forward from the moment the words were said (the turn's timestamp,
never the time of processing), in that timestamp's time zone.

A date phrase without a clock time is due at the hour of its day part ("Friday evening" →
18:00), else at 09:00; what that makes already past ("today", said at noon) is due at once. A weekday is its next occurrence after the day it was said ("this
Friday" said on a Friday is that day; "next Monday" is the Monday of next week). Phrases
that point back ("last Friday", "yesterday", "two days ago") give no due time: what they
describe is over. The query side reads time the other way (`continuum.recall.timeparse`).
"""

from __future__ import annotations

import calendar
import re
from datetime import date, datetime, time, timedelta

from continuum.domain.text import MONTH_PATTERN, NUMBER, WEEKDAYS, month_number, parse_number

_I = re.IGNORECASE
_WEEKDAY = "|".join(WEEKDAYS)
_PARTS = "morning|afternoon|evening|night"
_DAY_PART_HOURS = {"morning": 9, "afternoon": 14, "evening": 18, "night": 20, "tonight": 20}
DEFAULT_HOUR = 9
PAST = re.compile(
    rf"\b(?:last|this past)\s+(?:{_WEEKDAY}|week|weekend|month|year|night)\b|\byesterday\b|"
    r"\bago\b|\bearlier today\b",
    _I,
)
_DATES = re.compile(
    "|".join(
        (
            rf"\b(?:(?P<which>this|next)\s+)?(?P<weekday>{_WEEKDAY})(?!s\b)(?:\s+(?P<part>{_PARTS}))?\b",
            rf"\b(?P<rel>the day after tomorrow|tomorrow|today|tonight)(?:\s+(?P<part2>{_PARTS}))?\b",
            r"\bthis\s+(?P<this_part>morning|afternoon|evening)\b",
            r"\b(?P<week>this|next)\s+week(?P<weekend>end)?\b",
            r"\b(?:the\s+)?end\s+of\s+(?:the\s+|this\s+)?(?P<end>day|week|month)\b",
            r"\bnext\s+month\b(?P<next_month>)",
            rf"\b(?P<month>{MONTH_PATTERN})\.?\s+(?P<day>\d{{1,2}})(?:st|nd|rd|th)?\b",
            rf"\b(?P<day2>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<month2>{MONTH_PATTERN})\b",
            r"\b(?P<iso>\d{4}-\d{2}-\d{2})\b",
        )
    ),
    _I,
)
_SPAN = re.compile(
    rf"\b(?:in|within)\s+(?P<n>{NUMBER}|an?|the)\s+(?P<unit>minute|hour|day|week)s?\b", _I
)
_CLOCK = re.compile(
    r"\b(?P<h>\d{1,2})(?::(?P<m>\d{2}))?\s*(?P<ampm>am|pm|a\.m\.|p\.m\.)|"
    r"\b(?:at|by|around)\s+(?P<bare>\d{1,2})(?::(?P<bare_m>\d{2}))?\b(?![.,]?\d|\s*%)|"
    r"\b(?P<named>noon|midday|midnight)\b",
    _I,
)
_DAY_BEFORE = re.compile(r"\bthe\s+(?P<part>day|night|evening|morning)\s+before\b", _I)
_ADJACENT = 16  # characters between a date phrase and the clock time that belongs to it


def _next_weekday(said: date, wanted: int, which: str | None) -> date:
    if which == "next":
        return said + timedelta(days=7 - said.weekday() + wanted)
    ahead = (wanted - said.weekday()) % 7
    return said + timedelta(days=ahead or (0 if which == "this" else 7))


def _month_day(said: date, month: int, day: int) -> date:
    """The next `month`/`day` on or after the day it was said."""
    found = date(said.year, month, day)
    return found if found >= said else date(said.year + 1, month, day)


def _date_of(m: re.Match[str], said: date) -> tuple[date, str | None]:
    """The day a date phrase names, and its day part if it has one."""
    g = m.groupdict()
    part = (g["part"] or g["part2"] or g["this_part"] or "").lower() or None
    if g["weekday"]:
        which = (g["which"] or "").lower() or None
        return _next_weekday(said, WEEKDAYS.index(g["weekday"].lower()), which), part
    if g["rel"]:
        rel = g["rel"].lower()
        days = {"the day after tomorrow": 2, "tomorrow": 1}.get(rel, 0)
        return said + timedelta(days=days), part or ("tonight" if rel == "tonight" else None)
    if g["this_part"]:
        return said, part
    monday = said - timedelta(days=said.weekday())
    if g["week"]:
        upcoming = g["week"].lower() == "next"
        if g["weekend"]:  # this weekend: the one running or coming; next: the one after it
            saturday = monday + timedelta(days=5 + (7 if upcoming and said.weekday() >= 5 else 0))
            return max(saturday, said), None
        if upcoming:
            return monday + timedelta(days=7), None
    if g["week"] or g["end"] == "week":  # this week, the end of the week: its Friday
        return max(monday + timedelta(days=4), said), None
    if g["end"]:
        end = g["end"].lower()
        if end == "month":
            return said.replace(day=calendar.monthrange(said.year, said.month)[1]), None
        return said, "evening"
    if g["next_month"] is not None:
        return (said.replace(day=1) + timedelta(days=32)).replace(day=1), None
    if g["iso"]:
        return date.fromisoformat(g["iso"]), None
    month, day = (g["month"], g["day"]) if g["month"] else (g["month2"], g["day2"])
    return _month_day(said, month_number(month), int(day)), None


def _clock(m: re.Match[str]) -> time:
    g = m.groupdict()
    if g["named"]:
        return time(0) if g["named"].lower() == "midnight" else time(12)
    hour = int(g["h"] or g["bare"])
    minute = int(g["m"] or g["bare_m"] or 0)
    ampm = (g["ampm"] or "").lower().replace(".", "")
    if ampm == "pm" and hour < 12:
        hour += 12
    elif ampm == "am" and hour == 12:
        hour = 0
    elif not ampm and 1 <= hour <= 6:  # "at 3" means the afternoon
        hour += 12
    return time(hour % 24, minute % 60)


def _near(clocks: list[re.Match[str]], m: re.Match[str]) -> re.Match[str] | None:
    """The clock time written right before or after date phrase `m` ("Tuesday at 10")."""
    for clock in clocks:
        if 0 <= clock.start() - m.end() <= _ADJACENT or 0 <= m.start() - clock.end() <= _ADJACENT:
            return clock
    return None


def resolve_due(text: str, said_at: datetime) -> datetime | None:
    """When what `text` describes is due, read from `said_at`; None when it names no time
    or points back in time."""
    if PAST.search(text):
        return None
    span = _SPAN.search(text)
    dates = list(_DATES.finditer(text))
    clocks = list(_CLOCK.finditer(text))
    if span and (not dates or span.start() < dates[0].start()):
        raw = span["n"].lower()
        count = 1 if raw in ("a", "an", "the") else parse_number(raw) or 1
        return said_at + timedelta(**{f"{span['unit'].lower()}s": count})
    said = said_at.date()
    if dates:
        day, part = _date_of(dates[0], said)
        clock = _near(clocks, dates[0])
        at = _clock(clock) if clock else time(_DAY_PART_HOURS.get(part or "", DEFAULT_HOUR))
    elif clocks:
        at = _clock(clocks[0])
        day = said if at > said_at.time() else said + timedelta(days=1)
    else:
        return None
    before = _DAY_BEFORE.search(text)
    if before:
        day -= timedelta(days=1)
        at = time(_DAY_PART_HOURS.get(before["part"].lower(), DEFAULT_HOUR))
    return max(datetime.combine(day, at, tzinfo=said_at.tzinfo), said_at)


def due_label(when: datetime) -> str:
    """`due Mon 23 Nov`: how summaries and task lists show a due time."""
    return f"due {when:%a} {when.day} {when:%b}"
