"""Queue and task names: the wire contract shared by producers and workers.

Producers enqueue by name, so they import this module and never any worker code.
"""

from __future__ import annotations

EVENTS = "events"
EXTRACT = "extract"
EMBED = "embed"
MAINTENANCE = "maintenance"
NARRATIVE = "narrative"
ALL_QUEUES = (EVENTS, EXTRACT, EMBED, MAINTENANCE, NARRATIVE)

INGEST_EVENTS = "continuum.ingest_events"
EMBED_PENDING = "continuum.embed_pending"

TASK_QUEUES: dict[str, str] = {
    INGEST_EVENTS: EVENTS,
    EMBED_PENDING: EMBED,
}


def queue_for(task_name: str) -> str:
    """The queue a named task is routed to."""
    return TASK_QUEUES[task_name]
