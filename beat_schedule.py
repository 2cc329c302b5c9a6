"""Celery beat schedule: every periodic job, as crontab entries with `expires`.

Crontab (not intervals) so a beat restart does not shift the schedule; `expires` so a
backlog of missed runs is dropped instead of piling up.
"""

from __future__ import annotations

from typing import Any

from celery.schedules import crontab

from continuum.queues import (
    EMBED_PENDING,
    REDELIVER_EVENTS,
    RUN_MAINTENANCE,
    SWEEP_IDLE,
    SYNC_TRANSCRIPTS,
    queue_for,
)

BEAT_SCHEDULE: dict[str, dict[str, Any]] = {
    # R92: transcript sync every five minutes (a Redis lock keeps runs from overlapping).
    "transcript-sync": {
        "task": SYNC_TRANSCRIPTS,
        "schedule": crontab(minute="*/5"),
        "options": {"queue": queue_for(SYNC_TRANSCRIPTS), "expires": 240},
    },
    # Safety net for the embedding outbox: stragglers left by crashes or a full queue.
    "embed-sweep": {
        "task": EMBED_PENDING,
        "schedule": crontab(minute="*"),
        "options": {"queue": queue_for(EMBED_PENDING), "expires": 55},
    },
    # Event batches lost between broker and worker are published again (continuum.ledger).
    "redeliver-events": {
        "task": REDELIVER_EVENTS,
        "schedule": crontab(minute="*"),
        "options": {"queue": queue_for(REDELIVER_EVENTS), "expires": 55},
    },
    # R30: weekly consolidation and pruning (idempotent per ISO week, locked).
    "weekly-maintenance": {
        "task": RUN_MAINTENANCE,
        "schedule": crontab(minute=30, hour=3, day_of_week="mon"),
        "options": {"queue": queue_for(RUN_MAINTENANCE), "expires": 6 * 3600},
    },
    # Server-side idle detection (R25): runtimes need not send heartbeats.
    "idle-sweep": {
        "task": SWEEP_IDLE,
        "schedule": crontab(minute="*"),
        "options": {"queue": queue_for(SWEEP_IDLE), "expires": 55},
    },
}
