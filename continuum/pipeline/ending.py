"""Ending sessions nobody ended (R9): an evented session whose runtime never sent
`session_end` (a dropped call, a crashed bot) once it has been idle for
`CONTINUUM_SESSION_TIMEOUT_S`, and the synced sessions `continuum.sync.ending` picks. Each
is ended through the same path as a `session_end` event: `continuum.finish_session` with a
`session_end` built from the session's row (summary, extraction, narrative line, ephemeral
state cleared).

Each session is claimed once (`details.end_requested`, set in the transaction that selects
it, rows locked with SKIP LOCKED so overlapping runs never claim the same session) and its
task is sent after the commit; a send the broker refuses releases the claims not sent, so
the next run tries again. `finish_session` does the work at most once per session
(`details.finished`), so a task delivered twice, or a `session_end` arriving after the
session was ended here, summarizes nothing twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import ColumnElement, select
from sqlalchemy.orm import Session as DbSession

from continuum.config import get_settings
from continuum.contract import dispatch
from continuum.contract.events import SessionEndEvent
from continuum.contract.queues import FINISH_SESSION
from continuum.conversations.writer import EVENT_SOURCE
from continuum.store.engine import session_scope
from continuum.store.models import Session

CLAIM = "end_requested"
TRANSCRIPT_CHANNEL = "transcript"  # for a synced session whose channel is unknown


@dataclass(frozen=True)
class _Ending:
    payload: dict[str, object]
    namespace: str
    session_id: str


def _end_event(session: Session, now: datetime) -> SessionEndEvent:
    """The `session_end` the session never sent: `archived` for one its writer already
    ended (a transcript archived with no live file left), else `idle`."""
    archived = session.status == "ended"
    ended_at = session.ended_at or session.last_activity_at or now
    return SessionEndEvent(
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


def _claim(db: DbSession, where: Sequence[ColumnElement[bool]], now: datetime) -> list[_Ending]:
    rows = db.scalars(
        select(Session)
        .where(*where, ~Session.details.has_key("finished"), ~Session.details.has_key(CLAIM))
        .order_by(Session.id)
        .with_for_update(skip_locked=True)
    )
    endings = []
    for session in rows:
        end = _end_event(session, now)
        if session.status != "ended":
            session.status, session.ended_at, session.end_reason = "ended", end.ended_at, "idle"
        session.details = {**session.details, CLAIM: now.isoformat()}
        endings.append(_Ending(end.model_dump(mode="json"), session.namespace, session.session_id))
    return endings


def end_sessions(where: Sequence[ColumnElement[bool]], now: datetime | None = None) -> int:
    """Send `finish_session` for every session matching `where` that was never finished nor
    claimed; returns how many were sent."""
    with session_scope() as db:
        endings = _claim(db, where, now or datetime.now(UTC))
    for sent, ending in enumerate(endings):
        try:
            dispatch.send(FINISH_SESSION, ending.payload)
        except Exception:
            _release(endings[sent:])  # claimed but not sent: the next run tries again
            raise
    return len(endings)


def end_idle_sessions(now: datetime | None = None) -> int:
    """End every evented session that sent no `session_end` and no event for
    `CONTINUUM_SESSION_TIMEOUT_S` (beat, every minute); returns how many were sent."""
    now = now or datetime.now(UTC)
    idle_since = now - timedelta(seconds=get_settings().session_timeout_s)
    return end_sessions(
        [
            Session.source == EVENT_SOURCE,
            Session.status != "ended",  # a session_end came: its own finish is on its way
            Session.last_activity_at < idle_since,
        ],
        now,
    )


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
