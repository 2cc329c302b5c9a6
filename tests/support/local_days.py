"""Rows said late on a UTC evening, for the local-day tests: Tuesday 23:30 UTC is already
Wednesday 08:30 in Tokyo."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import text

from continuum.pipeline.ingest import ingest_batch
from continuum.store.engine import session_scope
from tests.support.events import turn

LATE_TUESDAY_UTC = datetime(2026, 11, 24, 23, 30, tzinfo=UTC)  # Wednesday 08:30 in Tokyo


def said(namespace: str, message_id: str, content: str, at: datetime) -> None:
    """Ingest one user turn of `namespace` said at `at`, in a session named as the turn."""
    event = turn(content, namespace=namespace, session_id=message_id, message_id=message_id)
    event["ts"] = at.isoformat()
    ingest_batch([event])


def cron_report(namespace: str, session_id: str, at: datetime) -> None:
    """A cron run's report of `namespace` made at `at`."""
    with session_scope() as db:
        db.execute(
            text(
                "INSERT INTO cron_reports (namespace, cron_name, session_id, summary, event_at) "
                "VALUES (:ns, 'ferry-check', :sid, 'Ferry to Naoshima confirmed.', :at)"
            ),
            {"ns": namespace, "sid": session_id, "at": at},
        )
