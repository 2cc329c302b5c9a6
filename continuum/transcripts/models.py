"""Normalized transcript records shared by every parser, and the per-session parser state."""

from __future__ import annotations

import re
from collections import Counter
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from continuum.contract.events import in_time_window

Role = Literal["user", "assistant"]
ErrorKind = Literal[
    "malformed_json",
    "invalid_utf8",
    "oversize_line",
    "missing_timestamp",
    "not_an_object",
    "invalid_entry",
]


def parse_timestamp(value: object) -> datetime | None:
    """An ISO-8601 string (`Z` allowed) as tz-aware UTC; naive values are taken as UTC.
    None for anything else, and for times outside the accepted window of events."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
        parsed = parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)
    except (ValueError, OverflowError):
        return None
    return parsed if in_time_window(parsed) else None


def from_millis(value: object) -> datetime | None:
    """Unix milliseconds as tz-aware UTC (booleans, non-numbers and times outside the
    accepted window give None)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        parsed = datetime.fromtimestamp(value / 1000, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None
    return parsed if in_time_window(parsed) else None


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class TranscriptMessage(_Frozen):
    """One user or assistant message with clean text (envelopes, tools, thinking removed).

    `time_inferred`: the line carried no time of its own; `created_at` is the time of the
    nearest earlier entry (or of the session header).
    """

    message_id: str
    parent_id: str | None
    role: Role
    content: str
    created_at: datetime
    sender: str | None = None
    channel: str | None = None
    model: str | None = None
    has_image: bool = False
    byte_offset: int | None = None
    time_inferred: bool = False
    metadata: dict[str, Any] = Field(default_factory=dict)


_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?(?P<text>.*\S)\s*$")
_SECTIONS = {
    "constraints & preferences": "constraints",
    "constraints and preferences": "constraints",
    "done": "done",
    "in progress": "in_progress",
    "blocked": "blocked",
    "key decisions": "decisions",
    "next steps": "next_steps",
}
_EMPTY_ITEMS = {"(none)", "none", "n/a", "-"}


def summary_sections(summary: str) -> dict[str, list[str]]:
    """The items under each known heading of a compaction summary, keyed by section name."""
    sections: dict[str, list[str]] = {name: [] for name in set(_SECTIONS.values())}
    current: str | None = None
    for raw in summary.splitlines():
        heading = _HEADING.match(raw)
        if heading:
            current = _SECTIONS.get(heading.group(2).strip().lower())
            continue
        if current is None or not raw.strip():
            continue
        item = _ITEM.match(raw)
        text = item.group("text") if item else raw.strip()
        if text.lower() not in _EMPTY_ITEMS:
            sections[current].append(text)
    return sections


class Compaction(_Frozen):
    """A compaction summary with the items of its markdown sections."""

    compaction_id: str
    created_at: datetime | None
    summary: str
    decisions: list[str] = Field(default_factory=list)
    next_steps: list[str] = Field(default_factory=list)
    blocked: list[str] = Field(default_factory=list)
    done: list[str] = Field(default_factory=list)
    in_progress: list[str] = Field(default_factory=list)
    constraints: list[str] = Field(default_factory=list)

    @classmethod
    def from_summary(
        cls, compaction_id: str, created_at: datetime | None, summary: str
    ) -> Compaction:
        """Build a compaction, parsing the sections out of the markdown summary."""
        return cls(
            compaction_id=compaction_id,
            created_at=created_at,
            summary=summary,
            **summary_sections(summary),
        )


class CronInfo(_Frozen):
    """The cron job a session was started by (`[cron:<jobId> <jobName>]`)."""

    job_id: str
    name: str
    slug: str


class CronReport(_Frozen):
    """The outcome of a cron run: the last assistant text and the run's time span."""

    job_id: str
    name: str
    text: str
    message_id: str
    run_started_at: datetime | None
    run_ended_at: datetime | None


class ParseError(_Frozen):
    """A line or event that could not be used; `line_no` is batch-relative (or the SQLite seq)."""

    kind: ErrorKind
    detail: str
    offset: int | None = None
    line_no: int | None = None


class ParserState(BaseModel):
    """What a parser knows about a session so far; persist it to resume from an offset."""

    session_id: str | None = None
    started_at: datetime | None = None
    cwd: str | None = None
    model: str | None = None
    channel: str | None = None
    cron: CronInfo | None = None
    seen_user: bool = False
    first_entry_at: datetime | None = None
    last_entry_at: datetime | None = None
    previous_at: datetime | None = None
    last_message_id: str | None = None
    last_assistant_id: str | None = None
    last_assistant_text: str | None = None

    def observe(self, at: datetime) -> None:
        """Widen the session's time span to include an entry at `at`, the latest in file
        order so far (the time given to a later message that has none of its own)."""
        self.previous_at = at
        if self.first_entry_at is None or at < self.first_entry_at:
            self.first_entry_at = at
        if self.last_entry_at is None or at > self.last_entry_at:
            self.last_entry_at = at

    def cron_report(self) -> CronReport | None:
        """The cron report so far: only for cron sessions with an assistant answer."""
        if self.cron is None or self.last_assistant_text is None or self.last_assistant_id is None:
            return None
        return CronReport(
            job_id=self.cron.job_id,
            name=self.cron.name,
            text=self.last_assistant_text,
            message_id=self.last_assistant_id,
            run_started_at=self.first_entry_at,
            run_ended_at=self.last_entry_at,
        )


class ParseResult(BaseModel):
    """What one batch yielded, plus the session facts known after it."""

    session_id: str | None = None
    started_at: datetime | None = None
    cwd: str | None = None
    model: str | None = None
    messages: list[TranscriptMessage] = Field(default_factory=list)
    compactions: list[Compaction] = Field(default_factory=list)
    cron: CronInfo | None = None
    cron_report: CronReport | None = None
    errors: list[ParseError] = Field(default_factory=list)
    skipped: Counter[str] = Field(default_factory=Counter)

    def skip(self, reason: str, count: int = 1) -> None:
        """Count `count` items left out for `reason` (thinking, tool_call, heartbeat...)."""
        if count:
            self.skipped[reason] += count
