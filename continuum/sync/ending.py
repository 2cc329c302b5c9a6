"""Ending synced sessions: runtimes that only write transcript files send no `session_end`,
so sync ends their sessions itself, through the same path as evented ones
(`continuum.finish_session`: summary, extraction of what capture missed, narrative line).

A synced session ends when its transcript was archived or reset with no live file left
(`status = 'ended'` from the sync writer), or when it has been idle for longer than
`CONTINUUM_IDLE_MS`. Each session is claimed once (`details.end_requested`, set in the
transaction that selects it, rows locked with SKIP LOCKED so overlapping runs never claim
the same session) and its task is sent after the commit; `finish_session` itself does the
work at most once per session (`details.finished`), so a task delivered twice is harmless.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import or_, select
from sqlalchemy.orm import Session as DbSession

from continuum.contract import dispatch
from continuum.contract.events import SessionEndEvent
from continuum.contract.queues import FINISH_SESSION
from continuum.store.engine import session_scope
from continuum.store.models import Session

log = logging.getLogger(__name__)
EVENTED = "event"  # the `source` of sessions that send their own session_end
CLAIM = "end_requested"
TRANSCRIPT_CHANNEL = "transcript"  # for a synced session whose channel is unknown


@dataclass(frozen=True)
class _Ending:
    payload: dict[str, object]
    namespace: str
    session_id: str


def _claim(db: DbSession, now: datetime, idle_ms: int, namespaces: list[str]) -> list[_Ending]:
    idle_since = now - timedelta(milliseconds=idle_ms)
    rows = db.scalars(
        select(Session)
        .where(
            Session.namespace.in_(namespaces),
            Session.source != EVENTED,
            Session.message_count > 0,
            ~Session.details.has_key("finished"),
            ~Session.details.has_key(CLAIM),
            or_(Session.status == "ended", Session.last_activity_at < idle_since),
        )
        .order_by(Session.id)
        .with_for_update(skip_locked=True)
    )
    endings = []
    for session in rows:
        archived = session.status == "ended"
        ended_at = session.ended_at or session.last_activity_at or now
        end = SessionEndEvent(
            namespace=session.namespace,
            session_id=session.session_id,
            channel=session.channel or TRANSCRIPT_CHANNEL,
            user_id=session.user_id,
            ts=ended_at,
            ended_at=ended_at,
            reason=(session.end_reason or "archived") if archived else "idle",
            message_count=session.message_count,
            is_reminder=session.source.startswith("cron:"),
        )
        if not archived:
            session.status, session.ended_at, session.end_reason = "ended", ended_at, "idle"
        session.details = {**session.details, CLAIM: now.isoformat()}
        endings.append(_Ending(end.model_dump(mode="json"), session.namespace, session.session_id))
    return endings


def end_synced_sessions(namespaces: list[str], idle_ms: int, now: datetime | None = None) -> int:
    """Send `finish_session` for every synced session of `namespaces` that ended or went
    idle and was never finished; returns how many were sent."""
    with session_scope() as db:
        endings = _claim(db, now or datetime.now(UTC), idle_ms, namespaces)
    for sent, ending in enumerate(endings):
        try:
            dispatch.send(FINISH_SESSION, ending.payload)
        except Exception:
            _release(endings[sent:])  # claimed but not sent: the next run tries again
            raise
    return len(endings)


def _release(endings: list[_Ending]) -> None:
    with session_scope() as db:
        for ending in endings:
            session = db.scalar(
                select(Session)
                .where(
                    Session.namespace == ending.namespace,
                    Session.session_id == ending.session_id,
                )
                .with_for_update()
            )
            if session is not None:
                session.details = {k: v for k, v in session.details.items() if k != CLAIM}
