"""Query-side time expressions: "yesterday", "last weekend", "in March", "last summer",
"two weeks ago"… become a `[since, until)` window relative to `now` (in `now`'s time
zone; seasons are the northern meteorological ones). A turn is about
the window when it was said inside it, or said soon after with a phrase of its own that
points back into it ("last weekend I…", said on Monday, read relative to Monday).

Calendar phrases map to their calendar span (last week = the previous Monday–Sunday). Phrases
that count back ("3 days ago", "a month ago") are fuzzy in speech, so they map to a window
around that point: ±1 day for days, ±4 days for weeks, ±15 days for months, ±6 months for
years. Recall uses the window as a boost plus an extra in-window candidate channel, never as
a hard filter, so a loose reading costs little.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo

from continuum.domain.text import MONTH_PATTERN, WEEKDAYS, month_number

_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
    "a couple of": 2, "couple of": 2, "a few": 3, "few": 3, "several": 3,
}  # fmt: skip
_FUZZ = {"day": timedelta(days=1), "week": timedelta(days=4), "month": timedelta(days=15),
         "year": timedelta(days=183)}  # fmt: skip
_UNIT = {"day": timedelta(days=1), "week": timedelta(weeks=1), "month": timedelta(days=30.44),
         "year": timedelta(days=365.25)}  # fmt: skip
_MONTH_WORD = rf"(?P<month>{MONTH_PATTERN})"
_COUNT = r"(?P<n>\d+|a couple of|couple of|a few|few|several|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"


REPORT_LAG_MIN = timedelta(days=2)
REPORT_LAG_MAX = timedelta(days=7)


@dataclass(frozen=True)
class TimeRange:
    """A half-open window `[since, until)` and the words of the query that expressed it."""

    since: datetime
    until: datetime
    phrase: str

    def contains(self, when: datetime) -> bool:
        return self.since <= when < self.until

    def overlaps(self, other: TimeRange) -> bool:
        return self.since < other.until and other.since < self.until

    @property
    def reported_until(self) -> datetime:
        """Until when people still report on the window ("last weekend I…", said on
        Monday): its own length after it, at least 2 days and at most a week."""
        lag = min(max(self.until - self.since, REPORT_LAG_MIN), REPORT_LAG_MAX)
        return self.until + lag

    def mentioned_in(self, text: str, said_at: datetime) -> bool:
        """Whether a turn said at `said_at` is about this window: said inside it, or said
        soon after with a time phrase of its own that points back into it."""
        if self.contains(said_at):
            return True
        if not self.until <= said_at < self.reported_until:
            return False
        # Its own phrase is read on the asker's clock: "last weekend", said on a Monday
        # morning in Tokyo, is not the weekend before because it was still Sunday in UTC.
        own = parse_time_range(text, said_at.astimezone(self.since.tzinfo))
        return own is not None and own.overlaps(self)


def day_span(first: date, zone: tzinfo, count: int = 1) -> tuple[datetime, datetime]:
    """`[since, until)` of `count` calendar days from `first` in `zone`: midnight to
    midnight on its clock (a day is 23 or 25 hours long where the clocks change)."""
    since = datetime.combine(first, time.min, tzinfo=zone)
    return since, datetime.combine(first + timedelta(days=count), time.min, tzinfo=zone)


def _midnight(day: date, now: datetime) -> datetime:
    return datetime.combine(day, time.min, tzinfo=now.tzinfo or UTC)


def _days(first: date, count: int, now: datetime) -> tuple[datetime, datetime]:
    return day_span(first, now.tzinfo or UTC, count)


def _month_span(year: int, month: int, now: datetime) -> tuple[datetime, datetime]:
    end = date(year + month // 12, month % 12 + 1, 1)
    return _midnight(date(year, month, 1), now), _midnight(end, now)


def _latest_month(month: int, year: str | None, now: datetime) -> tuple[datetime, datetime]:
    """`month` of `year`, or its latest occurrence not after now."""
    if year:
        return _month_span(int(year), month, now)
    return _month_span(now.year if month <= now.month else now.year - 1, month, now)


def _ago(m: re.Match[str], now: datetime) -> tuple[datetime, datetime]:
    raw = m.group("n").lower()
    count = int(raw) if raw.isdigit() else _NUMBERS[raw]
    unit = m.group("unit").lower()
    point = now - count * _UNIT[unit]
    if unit == "day":
        return _days(point.date() - timedelta(days=1), 3, now)
    return point - _FUZZ[unit], point + _FUZZ[unit]


def _weekday(m: re.Match[str], now: datetime) -> tuple[datetime, datetime]:
    wanted = WEEKDAYS.index(m.group("weekday").lower())
    back = (now.weekday() - wanted) % 7 or 7  # the latest such day before today
    return _days(now.date() - timedelta(days=back), 1, now)


def _which(m: re.Match[str]) -> str:
    """`last` / `this` / `past` / `the`, whichever alternative of the pattern matched."""
    groups = m.groupdict()
    return (groups.get("which") or groups.get("which2") or "last").lower()


def _weekend(m: re.Match[str], now: datetime) -> tuple[datetime, datetime]:
    """The weekend just past; "this weekend" on a weekend day is the current one, and from
    Tuesday to Friday the coming one (on a Monday it still means the one just ended)."""
    today = now.date()
    in_weekend = today.weekday() >= 5
    saturday = today - timedelta(days=(today.weekday() - 5) % 7)
    if _which(m) in ("last", "past") and in_weekend:
        saturday -= timedelta(days=7)
    elif _which(m) == "this" and 1 <= today.weekday() <= 4:
        saturday += timedelta(days=7)
    return _days(saturday, 2, now)


def _week(m: re.Match[str], now: datetime) -> tuple[datetime, datetime]:
    monday = now.date() - timedelta(days=now.weekday())
    if _which(m) == "last":
        monday -= timedelta(days=7)
    return _days(monday, 7, now)


def _relative_month(m: re.Match[str], now: datetime) -> tuple[datetime, datetime]:
    if _which(m) == "this":
        return _month_span(now.year, now.month, now)
    previous = now.month - 1 or 12
    return _month_span(now.year - (now.month == 1), previous, now)


def _year_span(year: int, now: datetime) -> tuple[datetime, datetime]:
    return _midnight(date(year, 1, 1), now), _midnight(date(year + 1, 1, 1), now)


def _relative_year(m: re.Match[str], now: datetime) -> tuple[datetime, datetime]:
    return _year_span(now.year - (_which(m) == "last"), now)


_SEASON_START = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}


def _season_span(season: str, year: int, now: datetime) -> tuple[datetime, datetime]:
    """The three months of `season` starting in `year` (winter runs into the next year)."""
    start = _SEASON_START[season.lower()]
    last = start + 2  # its third month
    return _month_span(year, start, now)[0], _month_span(year + (last > 12), last % 12 or 12, now)[
        1
    ]


def _season(m: re.Match[str], now: datetime) -> tuple[datetime, datetime]:
    """ "last summer": the latest one over; "this winter": the one of this year (winter:
    the one still running in January and February); "in the spring (of 2025)": that year's,
    or the latest one begun."""
    season, which = m["season"], (m["which"] or "").lower()
    if m["year"]:
        return _season_span(season, int(m["year"]), now)
    if which == "this":
        winter_running = season.lower() == "winter" and now.month <= 2
        return _season_span(season, now.year - winter_running, now)
    year = now.year
    while True:  # at most two steps back
        since, until = _season_span(season, year, now)
        if (until if which in ("last", "past") else since) <= now:
            return since, until
        year -= 1


def _month_day(m: re.Match[str], now: datetime) -> tuple[datetime, datetime]:
    month, day = month_number(m.group("month")), int(m.group("day"))
    year = int(m.group("year")) if m.group("year") else now.year
    if not m.group("year") and date(year, month, min(day, 28)) > now.date():
        year -= 1
    return _days(date(year, month, day), 1, now)


Resolver = Callable[[re.Match[str], datetime], tuple[datetime, datetime]]
_RULES: list[tuple[str, Resolver]] = [
    (r"\b(?P<y>\d{4})-(?P<mo>\d{2})-(?P<d>\d{2})\b",
     lambda m, now: _days(date(int(m["y"]), int(m["mo"]), int(m["d"])), 1, now)),
    (rf"\b{_MONTH_WORD}\.? (?P<day>\d{{1,2}})(?:st|nd|rd|th)?(?:,? (?P<year>\d{{4}}))?\b", _month_day),
    (r"\bthe day before yesterday\b", lambda m, now: _days(now.date() - timedelta(days=2), 1, now)),
    (r"\byesterday\b", lambda m, now: _days(now.date() - timedelta(days=1), 1, now)),
    (r"\blast night\b", lambda m, now: (_midnight(now.date(), now) - timedelta(hours=12),
                                         _midnight(now.date(), now) + timedelta(hours=6))),
    (r"\b(?:today|this morning|this afternoon|this evening|tonight|earlier today)\b",
     lambda m, now: _days(now.date(), 1, now)),
    (rf"\b{_COUNT} (?P<unit>day|week|month|year)s? ago\b", _ago),
    (r"\b(?P<which>last|this|past) ?weekend\b|\b(?P<which2>the) weekend\b",
     _weekend),
    (r"\b(?:(?P<which>last|this|past)|in|during|over) (?:the )?"
     r"(?P<season>spring|summer|autumn|fall|winter)(?: (?:of )?(?P<year>(?:19|20)\d{2}))?\b",
     _season),
    (r"\b(?P<which>last|this) week\b", _week),
    (r"\b(?P<which>last|this) month\b", _relative_month),
    (r"\b(?P<which>last|this) year\b|\bearlier (?P<which2>this) year\b",
     _relative_year),
    (r"\b(?:on |last |this past )?(?P<weekday>monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b",
     _weekday),
    (rf"\b(?:in|during|back in|since|from) {_MONTH_WORD}(?: (?P<year>\d{{4}}))?\b",
     lambda m, now: _latest_month(month_number(m["month"]), m["year"], now)),
    (r"\b(?:in|during|back in) (?P<year>(?:19|20)\d{2})\b",
     lambda m, now: _year_span(int(m["year"]), now)),
]  # fmt: skip
_COMPILED = [(re.compile(pattern, re.IGNORECASE), resolve) for pattern, resolve in _RULES]


def parse_time_range(text: str, now: datetime | None = None) -> TimeRange | None:
    """The first time expression in `text` as a window relative to `now`, or None."""
    now = now or datetime.now(UTC)
    found: list[tuple[int, TimeRange]] = []
    for pattern, resolve in _COMPILED:
        match = pattern.search(text)
        if match:
            try:
                since, until = resolve(match, now)
            except (ValueError, KeyError):  # "February 31st" and other impossible dates
                continue
            found.append((match.start(), TimeRange(since, until, match.group(0))))
    return min(found, key=lambda item: item[0])[1] if found else None


def strip_phrase(text: str, window: TimeRange | None) -> str:
    """`text` without the time phrase, so "last weekend" does not match every weekend."""
    if window is None:
        return text
    stripped = re.sub(r"\s+", " ", text.replace(window.phrase, " ", 1)).strip()
    return stripped or text
