"""How the context block reads: the header, the sections in their fixed order, one line
per item (channel, speaker, clipped text). In a dated section the lines stand in time order
under the day they were said (`### 2026-11-21 (Sat, 3 days ago)`, a day of `now`'s time
zone: the tenant's), so a day costs its date once however many of its lines the block
holds; conversation summaries, tasks and a handoff carry their own date, if any, on their
line.

Apart from packing because packing must count the tokens of exactly the text that will be
shown: both use these functions, so the budget is charged for the lines as rendered. Pure:
same items and same `now` give the same text.
"""

from __future__ import annotations

from datetime import UTC, datetime

from continuum.domain.text import clip, speaker_of
from continuum.recall.items import (
    SECTIONS,
    SUGGESTED_TASKS,
    Candidate,
    ContextItem,
    RecallConfig,
)


def render_when(when: datetime, now: datetime) -> str:
    """`2026-11-21 (Sat, 3 days ago)`: the date, weekday and distance from now (within 60
    days back; older, `2023-06-27 (Tue)`), on `now`'s clock (the tenant's time zone)."""
    when = when.astimezone(now.tzinfo or UTC)
    days = (now.date() - when.date()).days
    if days == 0:
        distance = "today"
    elif days == 1:
        distance = "yesterday"
    elif days == -1:
        distance = "tomorrow"
    elif days >= 60:  # months back, the date says it; the header gives now
        return f"{when:%Y-%m-%d} ({when:%a})"
    elif days > 0:
        distance = f"{days} days ago"
    else:
        distance = f"in {-days} days"
    return f"{when:%Y-%m-%d} ({when:%a}, {distance})"


UNDATED_SECTIONS = frozenset(
    {"Pending handoff", "Recent conversations", "Active tasks", SUGGESTED_TASKS}
)


def day_of(section: str, when: datetime | None, now: datetime) -> str | None:
    """The day heading a line of `section` said at `when` stands under (None: no heading)."""
    if section in UNDATED_SECTIONS or when is None:
        return None
    return f"### {render_when(when, now)}"


def line(candidate: Candidate, now: datetime, config: RecallConfig) -> str:
    """The block's line for `candidate`: a summary clipped at `max_summary_chars`, any
    other item at `max_item_chars`; dated only where no day heading carries its date."""
    limit = (
        config.max_summary_chars
        if candidate.section == "Recent conversations"
        else config.max_item_chars
    )
    body = clip(candidate.content, limit)
    if candidate.source == "handoff":
        return f"- {body}"
    if candidate.source == "task" and candidate.section == SUGGESTED_TASKS:
        return f"- [{candidate.ref.removeprefix('task:')[:8]}] {body}"
    if candidate.source == "task":
        return f"- [{candidate.kind}] {body}"
    when = candidate.created_at
    dated = when is not None and not day_of(candidate.section, when, now)
    prefix = f"{render_when(when, now)} " if when is not None and dated else ""
    where = f"[{candidate.channel}] " if candidate.channel else ""
    # A turn shows who said it: its role, unless its text opens with the speaker's name.
    named = candidate.source != "message" or speaker_of(candidate.content) is not None
    speaker = "" if named else f"{candidate.kind}: "
    return f"- {prefix}{where}{speaker}{body}"


def header(now: datetime) -> str:
    """`# Memory context (now 2026-11-24 Tue 09:30 Europe/Paris)`: the block's clock."""
    return f"# Memory context (now {now:%Y-%m-%d %a %H:%M} {now.tzinfo or UTC})"


def render(items: list[ContextItem], now: datetime) -> str:
    """The block: the header, then each section with items, in `SECTIONS` order (items in
    the order given, a day heading before the first line of each day); empty without items."""
    if not items:
        return ""
    parts = [header(now)]
    for section in SECTIONS:
        lines: list[str] = []
        day: str | None = None
        for item in (item for item in items if item.section == section):
            heading = day_of(section, item.created_at, now)
            if heading and heading != day:
                lines.append(heading)
            day = heading
            lines.append(item.text)
        if lines:
            parts.append(f"## {section}\n" + "\n".join(lines))
    return "\n\n".join(parts)
