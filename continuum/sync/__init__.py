"""Transcript sync (R70–R77): every runtime's transcripts into Postgres, losing nothing.

`sync()` discovers the sources of every enabled transcript format (OpenClaw instances,
Claude Code and Codex sessions: `continuum.transcripts.formats`), reads each source
from its stored cursor, bulk-writes new messages, session rows and cron reports in one
transaction per batch, keeps per-instance views, and feeds capture with what is new.
`continuum.sync.watch` runs it on the sources a write touched, within seconds, beside beat.
"""

from continuum.sync.cron import CronReportHit, cron_reports
from continuum.sync.engine import namespace_for, sync
from continuum.sync.run_report import ErrorSample, SyncProgress, SyncSummary
from continuum.sync.views import view_names

__all__ = [
    "CronReportHit",
    "ErrorSample",
    "SyncProgress",
    "SyncSummary",
    "cron_reports",
    "namespace_for",
    "sync",
    "view_names",
]
