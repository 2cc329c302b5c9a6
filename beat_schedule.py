"""Celery beat schedule: every periodic job, as crontab entries with `expires`.

Crontab (not intervals) so a beat restart does not shift the schedule; `expires` so a
backlog of missed runs is dropped instead of piling up.
"""

from __future__ import annotations

from typing import Any

from celery.schedules import crontab

from continuum.contract.queues import (
    EMBED_PENDING,
    END_IDLE_SESSIONS,
    REDELIVER_EVENTS,
    RUN_MAINTENANCE,
    SWEEP_IDLE,
    SYNC_TRANSCRIPTS,
    queue_for,
)


def _entry(task: str, schedule: crontab, expires: int) -> dict[str, Any]:
    """`task` on its queue at `schedule`; a run not started within `expires` s is dropped."""
    return {
        "task": task,
        "schedule": schedule,
        "options": {"queue": queue_for(task), "expires": expires},
    }


BEAT_SCHEDULE: dict[str, dict[str, Any]] = {
    # R92: transcript sync every five minutes (a Redis lock keeps runs from overlapping).
    "transcript-sync": _entry(SYNC_TRANSCRIPTS, crontab(minute="*/5"), expires=240),
    # Safety net for the embedding outbox: stragglers left by crashes or a full queue.
    "embed-sweep": _entry(EMBED_PENDING, crontab(minute="*"), expires=55),
    # Event batches lost between broker and worker are published again (continuum.contract.ledger).
    "redeliver-events": _entry(REDELIVER_EVENTS, crontab(minute="*"), expires=55),
    # R30: weekly consolidation and pruning (idempotent per ISO week, locked).
    "weekly-maintenance": _entry(
        RUN_MAINTENANCE, crontab(minute=30, hour=3, day_of_week="mon"), expires=6 * 3600
    ),
    # Server-side idle detection (R25): runtimes need not send heartbeats.
    "idle-sweep": _entry(SWEEP_IDLE, crontab(minute="*"), expires=55),
    # R9: sessions that never sent session_end are finished once CONTINUUM_SESSION_TIMEOUT_S idle.
    "session-timeout": _entry(END_IDLE_SESSIONS, crontab(minute="*"), expires=55),
}
