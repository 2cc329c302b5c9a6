"""The indexes the migrations add are usable by the queries they were added for: each query
is run as the code runs it, its statement caught on the engine, then explained with
sequential scans priced out (on a few test rows the planner would rightly scan anyway). On a
partitioned table the index read is the one the migration's index made on the partition."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import text

from continuum.pipeline.ending import end_idle_sessions
from continuum.recall import listings
from continuum.store.engine import Sent, get_engine, session_scope, statements_run
from tests.support.plans import reads_index
from tests.support.seed import seed


def reading(sent: list[Sent], table: str) -> list[Sent]:
    """The statements of `sent` that read `table`."""
    return [statement for statement in sent if f"FROM {table}" in statement.sql]


def plan(statement: str, parameters: Any) -> str:
    with get_engine().connect() as conn:
        conn.exec_driver_sql("SET enable_seqscan = off")
        rows = conn.exec_driver_sql(f"EXPLAIN {statement}", parameters).scalars()
        conn.rollback()
        return "\n".join(rows)


def test_cron_report_search_reads_the_full_text_index(db: Any) -> None:
    seed("pearl", sessions=4, turns=2)  # four daily reports among a year of sweeps
    with session_scope() as db_session:
        db_session.execute(
            text(
                "INSERT INTO cron_reports (namespace, cron_name, session_id, summary, event_at)"
                " SELECT 'pearl', 'inbox-sweep', 'sweep-' || n, 'Inbox sweep: nothing new.',"
                " now() - n * interval '1 hour' FROM generate_series(1, 8000) AS n"
            )
        )
        db_session.execute(text("ANALYZE cron_reports"))
    with statements_run() as sent:
        window = listings.Window(limit=20)
        found = listings.cron_reports(["pearl"], window, None, "daily report")
    assert len(found) == 4
    [(statement, parameters)] = reading(sent, "cron_reports")
    assert reads_index(plan(statement, parameters), "cron_reports_tsv")


def test_the_session_timeout_sweep_reads_only_open_sessions(db: Any) -> None:
    seed("pearl", sessions=4, turns=2)
    with statements_run() as sent:
        end_idle_sessions(now=datetime(2020, 1, 1, tzinfo=UTC))  # nothing that old: no send
    [(statement, parameters)] = reading(sent, "sessions")
    assert reads_index(plan(statement, parameters), "sessions_open")
