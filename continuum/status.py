"""What the pipeline is doing right now (`continuum status`): messages waiting in every
queue and held unacknowledged by workers, rows waiting for an embedding, dead letters, the
secrets redacted from what was stored, and the last transcript sync with the problems still
open.

`drained` is true when nothing is queued, nothing is held by a worker and (unless
embeddings are switched off) no row waits for its embedding: everything synced or sent
so far is searchable.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, select

from continuum.config import get_settings
from continuum.pipeline.outbox import pending_counts
from continuum.store import metrics
from continuum.store.broker import broker_state
from continuum.store.engine import session_scope
from continuum.store.models import DeadLetter, SystemState
from continuum.sync import problems
from continuum.sync.run_report import LAST_RUN_KEY


@dataclass(frozen=True)
class PipelineStatus:
    queues: dict[str, int]
    unacked: int
    embeddings_pending: dict[str, int]
    dead_letters: int
    secrets_redacted: int
    last_sync: dict[str, Any] | None
    last_sync_at: datetime | None
    problems_open: dict[str, int]

    @property
    def drained(self) -> bool:
        embedding = get_settings().embedding_provider != "none"
        waiting = sum(self.embeddings_pending.values()) if embedding else 0
        return not self.unacked and not any(self.queues.values()) and not waiting

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready (times as ISO-8601), with `drained`."""
        data = asdict(self)
        data["last_sync_at"] = self.last_sync_at.isoformat() if self.last_sync_at else None
        data["drained"] = self.drained
        return data


def pipeline_status() -> PipelineStatus:
    """Read the broker (a down broker raises `redis.RedisError`) and Postgres once."""
    broker = broker_state()
    with session_scope() as db:
        dead = db.scalar(select(func.count()).select_from(DeadLetter)) or 0
        last = db.get(SystemState, LAST_RUN_KEY)
        open_problems = problems.open_counts(db)
    return PipelineStatus(
        queues=broker.depths,
        unacked=broker.unacked,
        embeddings_pending=pending_counts(),
        dead_letters=dead,
        secrets_redacted=metrics.count(metrics.SECRETS_REDACTED),
        last_sync=last.value if last else None,
        last_sync_at=last.updated_at if last else None,
        problems_open=open_problems,
    )
