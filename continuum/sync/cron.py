"""Cron reports (R74): one row per cron session, from the session's last assistant text.

`event_at` is the report message's own transcript time (never the ingest time), so "cron
reports by day" (R77) lists runs on the day they happened. A session that grows later
updates its row.

An encrypted tenant's summary is sealed (R47) under the tenant's key, bound to the report's
session (its row is upserted, so the session id is the identity known before the write),
deterministically: a report synced again unchanged writes nothing. Its search terms are
keyed (`tsv_keyed`, `continuum.sealing.terms`), so full-text search still finds it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, tzinfo

from sqlalchemy import func, or_
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session as DbSession

from continuum.config import get_settings
from continuum.domain.storable import clean_text
from continuum.recall import listings
from continuum.recall.listings import Window
from continuum.recall.timeparse import day_span
from continuum.sealing.envelope import seal
from continuum.sealing.terms import terms_for
from continuum.store import lsn_tokens
from continuum.store.models import CronReport as CronReportRow
from continuum.transcripts import CronReport

SUMMARY_KIND = "cron_reports.summary"


def upsert_report(
    db: DbSession, namespace: str, session_id: str, report: CronReport, event_at: datetime
) -> bool:
    """Insert or refresh the session's report; True when a row was written or changed."""
    summary = clean_text(report.text)
    lsn_tokens.wrote(db, [namespace])
    values = {
        "namespace": namespace,
        "session_id": session_id,
        "cron_name": clean_text(report.name),
        "summary": seal(namespace, None, SUMMARY_KIND, summary, session_id, deterministic=True),
        "tsv_keyed": terms_for(db, namespace, [summary])[0],
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
            "tsv_keyed": new.tsv_keyed,
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
    tz: str | tzinfo | None = None,
) -> list[CronReportHit]:
    """Cron reports of a namespace, newest first; `day` keeps one day's runs, a day of the
    tenant's time zone (`Settings.zone_for`) or of `tz`."""
    window = Window(limit)
    if day is not None:
        since, until = day_span(day, get_settings().zone_for(namespace, tz))
        window = Window(limit, since=since, until=until)
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
