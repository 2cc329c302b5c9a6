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
EXTRACT_CHUNK = "continuum.extract_chunk"
COMPACTION_TAKEAWAYS = "continuum.compaction_takeaways"
SYNC_TRANSCRIPTS = "continuum.sync_transcripts"
RUN_MAINTENANCE = "continuum.run_maintenance"
FINISH_SESSION = "continuum.finish_session"
SUMMARIZE_SESSION = "continuum.summarize_session"
SWEEP_IDLE = "continuum.sweep_idle"
END_IDLE_SESSIONS = "continuum.end_idle_sessions"
NARRATIVE_APPEND = "continuum.narrative_append"
REDELIVER_EVENTS = "continuum.redeliver_events"
REFINE_HANDOFF = "continuum.refine_handoff"

# Redis flag: an outbox run is queued and has not started yet.
EMBED_SCHEDULED_KEY = "continuum:embed:scheduled"

TASK_QUEUES: dict[str, str] = {
    INGEST_EVENTS: EVENTS,
    EMBED_PENDING: EMBED,
    EXTRACT_CHUNK: EXTRACT,
    COMPACTION_TAKEAWAYS: EXTRACT,
    SYNC_TRANSCRIPTS: MAINTENANCE,
    FINISH_SESSION: EXTRACT,
    SUMMARIZE_SESSION: EXTRACT,
    SWEEP_IDLE: MAINTENANCE,
    END_IDLE_SESSIONS: MAINTENANCE,
    NARRATIVE_APPEND: NARRATIVE,
    RUN_MAINTENANCE: MAINTENANCE,
    REDELIVER_EVENTS: MAINTENANCE,
    REFINE_HANDOFF: EXTRACT,
}


def queue_for(task_name: str) -> str:
    """The queue a named task is routed to."""
    return TASK_QUEUES[task_name]
