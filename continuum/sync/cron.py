"""Cron reports (R74): one row per cron session, from the session's last assistant text.

`event_at` is the report message's own transcript time (never the ingest time), so "cron
reports by day" (R77) lists runs on the day they happened. A session that grows later
updates its row.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, timezone

from sqlalchemy import func, or_
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session as DbSession

from continuum.domain.storable import clean_text
from continuum.recall import listings
from continuum.recall.listings import Window
from continuum.store.models import CronReport as CronReportRow
from continuum.transcripts import CronReport


def upsert_report(
    db: DbSession, namespace: str, session_id: str, report: CronReport, event_at: datetime
) -> bool:
    """Insert or refresh the session's report; True when a row was written or changed."""
    values = {
        "namespace": namespace,
        "session_id": session_id,
        "cron_name": clean_text(report.name),
        "summary": clean_text(report.text),
        "run_started_at": report.run_started_at,
        "run_ended_at": report.run_ended_at,
        "event_at": event_at,
    }
    stmt = insert(CronReportRow).values(values)
    new = stmt.excluded
    stmt = stmt.on_conflict_do_update(
        index_elements=["namespace", "session_id"],
        set_={
            "cron_name": new.cron_name,
            "summary": new.summary,
            "run_started_at": func.least(CronReportRow.run_started_at, new.run_started_at),
            "run_ended_at": func.greatest(CronReportRow.run_ended_at, new.run_ended_at),
            "event_at": new.event_at,
        },
        where=or_(
            CronReportRow.event_at.is_distinct_from(new.event_at),
            CronReportRow.summary.is_distinct_from(new.summary),
            CronReportRow.run_ended_at.is_distinct_from(
                func.greatest(CronReportRow.run_ended_at, new.run_ended_at)
            ),
        ),
    )
    return db.execute(stmt.returning(CronReportRow.id)).first() is not None


@dataclass(frozen=True)
class CronReportHit:
    """One cron run's report, as listed by `cron_reports`."""

    namespace: str
    cron_name: str
    session_id: str
    summary: str
    event_at: datetime | None
    run_started_at: datetime | None
    run_ended_at: datetime | None


def cron_reports(
    namespace: str,
    day: date | None = None,
    *,
    cron_name: str | None = None,
    limit: int = 100,
    tz: timezone = UTC,
) -> list[CronReportHit]:
    """Cron reports of a namespace, newest first; `day` keeps one day's runs (in `tz`)."""
    window = Window(limit)
    if day is not None:
        start = datetime.combine(day, time.min, tzinfo=tz)
        window = Window(limit, since=start, until=start + timedelta(days=1))
    return [
        CronReportHit(
            namespace=row.namespace,
            cron_name=row.cron_name,
            session_id=row.session_id,
            summary=row.summary,
            event_at=row.event_at,
            run_started_at=row.run_started_at,
            run_ended_at=row.run_ended_at,
        )
        for row in listings.cron_reports([namespace], window, cron_name, query=None)
    ]
