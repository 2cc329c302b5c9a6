"""Ending synced sessions: runtimes that only write transcript files send no `session_end`,
so sync ends their sessions itself, through the path that ends every session nobody ended
(`continuum.pipeline.ending`: claimed once, `continuum.finish_session` after the commit).

A synced session ends when its transcript was archived or reset with no live file left
(`status = 'ended'` from the sync writer), or when it has been idle for longer than
`CONTINUUM_IDLE_MS`.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import or_

from continuum.conversations.writer import EVENT_SOURCE
from continuum.pipeline.ending import end_sessions
from continuum.store.models import Session


def end_synced_sessions(namespaces: list[str], idle_ms: int, now: datetime | None = None) -> int:
    """Send `finish_session` for every synced session of `namespaces` that ended or went
    idle and was never finished; returns how many were sent."""
    now = now or datetime.now(UTC)
    idle_since = now - timedelta(milliseconds=idle_ms)
    return end_sessions(
        [
            Session.namespace.in_(namespaces),
            Session.source != EVENT_SOURCE,
            Session.message_count > 0,
            or_(Session.status == "ended", Session.last_activity_at < idle_since),
        ],
        now,
    )
