"""What the pipeline is doing right now (`continuum status`): messages waiting in every
queue and held unacknowledged by workers, rows waiting for an embedding, dead letters, the
secrets redacted from what was stored, the last transcript sync with the problems still
open, and each tenant's last message-retention prune (R80: counts, cutoff, when).

`drained` is true when nothing is queued, nothing is held by a worker and (unless
embeddings are switched off) no row waits for its embedding: everything synced or sent
so far is searchable.

`tenant_status(namespaces)` is the part of it that belongs to some tenants (Mission Control's
Status view for an API token): their rows waiting for an embedding, their dead letters, their
open sync problems, when sync last ran, and what the LLM cost them. The broker's queues and
the last run's own figures cover every tenant: only `pipeline_status` has them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import func, select

from continuum.config import get_settings
from continuum.inference.usage import Budget, Usage, budgets, usage_since
from continuum.maintenance.retention import LAST_KEY as RETENTION_KEY
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
    last_retention: dict[str, dict[str, Any]]  # by tenant (`continuum.maintenance.retention`)

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
        retained = db.get(SystemState, RETENTION_KEY)
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
        last_retention=dict(retained.value) if retained else {},
    )


@dataclass(frozen=True)
class TenantStatus:
    """The pipeline as some tenants see it: only figures of their own rows."""

    namespaces: list[str]
    embeddings_pending: dict[str, int]
    dead_letters: int
    problems_open: dict[str, int]
    last_sync_at: datetime | None  # when transcript sync last ran (for every tenant)
    llm_since: datetime
    llm: list[Usage]  # per tenant and model since `llm_since`
    llm_budgets: list[Budget]  # tokens today against the daily budget

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready (times as ISO-8601)."""
        data = asdict(self)
        for name in ("last_sync_at", "llm_since"):
            value = getattr(self, name)
            data[name] = value.isoformat() if value else None
        data["llm_budgets"] = [{**asdict(b), "exhausted": b.exhausted} for b in self.llm_budgets]
        return data


def tenant_status(
    namespaces: list[str], llm_window: timedelta = timedelta(hours=24)
) -> TenantStatus:
    """What `namespaces` have in the pipeline, from Postgres alone (no broker: its queues
    mix every tenant's messages)."""
    since = datetime.now(UTC) - llm_window
    with session_scope() as db:
        dead = db.scalar(
            select(func.count()).select_from(DeadLetter).where(DeadLetter.namespace.in_(namespaces))
        )
        last = db.get(SystemState, LAST_RUN_KEY)
        open_problems = problems.open_counts(db, namespaces)
        llm = usage_since(db, since, namespaces)
        spent = budgets(db, namespaces, only=True)
    return TenantStatus(
        namespaces=namespaces,
        embeddings_pending=pending_counts(namespaces),
        dead_letters=dead or 0,
        problems_open=open_problems,
        last_sync_at=last.updated_at if last else None,
        llm_since=since,
        llm=llm,
        llm_budgets=spent,
    )
