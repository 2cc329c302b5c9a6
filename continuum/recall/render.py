"""How the context block reads: one line per item (its date relative to now, channel,
speaker, clipped text), the header, and the sections in their fixed order.

Apart from packing because packing must count the tokens of exactly the text that will be
shown: both use these functions, so the budget is charged for the lines as rendered. Pure:
same items and same `now` give the same text.
"""

from __future__ import annotations

from datetime import UTC, datetime

from continuum.domain.text import clip
from continuum.recall.items import SECTIONS, Candidate, ContextItem, RecallConfig


def render_when(when: datetime, now: datetime) -> str:
    """`2026-11-21 (Sat, 3 days ago)`: the date, weekday and distance from now."""
    days = (now.date() - when.astimezone(now.tzinfo or UTC).date()).days
    if days == 0:
        distance = "today"
    elif days == 1:
        distance = "yesterday"
    elif days == -1:
        distance = "tomorrow"
    elif days > 0:
        distance = f"{days} days ago" if days < 60 else f"{round(days / 30.44)} months ago"
    else:
        distance = f"in {-days} days"
    return f"{when:%Y-%m-%d} ({when:%a}, {distance})"


def line(candidate: Candidate, now: datetime, config: RecallConfig) -> str:
    """The block's line for `candidate`: a summary clipped at `max_summary_chars`, any
    other item at `max_item_chars`."""
    limit = (
        config.max_summary_chars
        if candidate.section == "Recent conversations"
        else config.max_item_chars
    )
    body = clip(candidate.content, limit)
    if candidate.source == "handoff":
        return f"- {body}"
    if candidate.source == "task":
        return f"- [{candidate.kind}] {body}"
    prefix = f"{render_when(candidate.created_at, now)} " if candidate.created_at else ""
    where = f"[{candidate.channel}] " if candidate.channel else ""
    speaker = f"{candidate.kind}: " if candidate.source == "message" else ""
    return f"- {prefix}{where}{speaker}{body}"


def header(now: datetime) -> str:
    return f"# Memory context (now {now:%Y-%m-%d %a %H:%M} UTC)"


def render(items: list[ContextItem], now: datetime) -> str:
    """The block: the header, then each section with items, in `SECTIONS` order (items in
    the order given); empty without items."""
    if not items:
        return ""
    parts = [header(now)]
    for section in SECTIONS:
        lines = [item.text for item in items if item.section == section]
        if lines:
            parts.append(f"## {section}\n" + "\n".join(lines))
    return "\n\n".join(parts)
