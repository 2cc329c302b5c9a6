"""Raw-message retention (R80): a tenant's raw messages are kept forever unless its retention
says otherwise (`Settings.message_retention`: CONTINUUM_TENANT_MESSAGE_RETENTION, else
CONTINUUM_MESSAGE_RETENTION_DAYS); then the weekly maintenance deletes those older than it.

- **Planned** with the run: the messages whose event time (`created_at`) is before `now -
  days` are counted, and the plan gets one `expire_messages` step per `step_size` of them
  (one with no rows when there is nothing to delete, so the run still reports the tenant's
  retention). The cutoff is fixed in the plan: a resumed run deletes what was planned.
- **Applied** a step at a time, each in its transaction: the oldest messages before the
  cutoff are deleted, their vectors, full-text terms and sealed details with them. What
  cites them is settled in the same transaction, as for turns a runtime erases
  (`continuum.memory.gone_turns`): statements go with their turns, other memories stay,
  marked `details.sources_pruned_at`. Sessions keep their row: times, counts, end and summary.
- **Recorded** once the run is done: a log line with the tenant's counts (never text), a
  `memory_log` row (action `retention`) and the tenant's entry in `system_state`
  (`retention:last`), which `continuum status` shows.

Forgetting a user afterwards works the same: their remaining rows are found, removed and
re-scanned; what retention already deleted is simply not found.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import func, text
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session as DbSession

from continuum.config import get_settings
from continuum.maintenance.rules import TRIGGER, Action
from continuum.memory.gone_turns import settle_gone_turns
from continuum.store.models import MemoryLog, SystemState

log = logging.getLogger(__name__)

OP = "expire_messages"
STATEMENTS = f"{OP}:statements"  # statements deleted with their turns
MARKED = f"{OP}:memories_marked"  # memories kept, marked `sources_pruned_at`
LAST_KEY = "retention:last"  # system_state: each tenant's last prune


def plan_expiry(db: DbSession, namespace: str, now: datetime, step_size: int) -> list[Action]:
    """The steps that delete the tenant's messages past its retention (none when it keeps
    them forever)."""
    days = get_settings().message_retention(namespace)
    if days is None:
        return []
    cutoff = now - timedelta(days=days)
    count = int(
        db.scalar(
            text("SELECT count(*) FROM messages WHERE namespace = :ns AND created_at < :cutoff"),
            {"ns": namespace, "cutoff": cutoff},
        )
        or 0
    )
    step = {"op": OP, "days": days, "cutoff": cutoff.isoformat()}
    return [
        {**step, "rows": min(step_size, count - start)} for start in range(0, count, step_size)
    ] or [{**step, "rows": 0}]


_DELETE = text(
    "DELETE FROM messages WHERE namespace = :ns AND id = ANY(ARRAY(SELECT id FROM messages "
    "WHERE namespace = :ns "
    "AND created_at < :cutoff ORDER BY created_at, id LIMIT :n)) "
    "RETURNING session_id, message_id"
)


def expire_messages(db: DbSession, namespace: str, step: Action) -> dict[str, int]:
    """Apply one planned step: delete up to its `rows` oldest messages before its cutoff, the
    statements indexing them, and mark the other memories citing them."""
    if not step["rows"]:
        return {OP: 0}
    cutoff = datetime.fromisoformat(step["cutoff"])
    params = {"ns": namespace, "cutoff": cutoff, "n": step["rows"]}
    gone = db.execute(_DELETE, params).all()
    settled = settle_gone_turns(db, namespace, gone)
    return {OP: len(gone), STATEMENTS: settled.statements, MARKED: settled.marked}


def record(
    db: DbSession, namespace: str, run_id: int, plan: list[Action], applied: Mapping[str, int]
) -> dict[str, Any] | None:
    """Log and keep what the run's retention did to the tenant (counts only); None when the
    run had no retention step."""
    step = next((step for step in plan if step["op"] == OP), None)
    if step is None:
        return None
    done = {
        "days": step["days"],
        "cutoff": step["cutoff"],
        "messages": applied.get(OP, 0),
        "statements": applied.get(STATEMENTS, 0),
        "memories_marked": applied.get(MARKED, 0),
        "run_id": run_id,
    }
    log.info(
        "retention of %s (%s days, before %s): %d messages deleted, %d statements deleted, "
        "%d memories marked sources_pruned_at",
        namespace, done["days"], done["cutoff"], done["messages"], done["statements"],
        done["memories_marked"],
    )  # fmt: skip
    db.add(MemoryLog(namespace=namespace, action="retention", trigger=TRIGGER, details=done))
    stmt = insert(SystemState).values(
        key=LAST_KEY, value={namespace: {**done, "at": datetime.now(UTC).isoformat()}}
    )
    merged = {"value": SystemState.value.op("||")(stmt.excluded.value), "updated_at": func.now()}
    db.execute(stmt.on_conflict_do_update(index_elements=["key"], set_=merged))
    return done
