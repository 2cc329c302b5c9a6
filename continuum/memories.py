"""Writing memories: idempotent inserts of capture candidates, each logged in `memory_log`.

A candidate's idempotency key (trigger + source ids + normalised content) makes a retried or
redelivered write a no-op. Every stored memory records its provenance, the trust that
follows from it (R29) and its claim (R24), and the ids of the messages it came from.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session as DbSession

from continuum.capture.models import MemoryCandidate
from continuum.db.bulk import execute_many, insert_ignore
from continuum.db.models import Memory, MemoryLog

# R29: user_explicit > system > inference > tool_output
TRUST = {"user_explicit": 4, "system": 3, "inference": 2, "tool_output": 1}
LOGGED_COLUMNS = (
    Memory.id,
    Memory.namespace,
    Memory.trigger,
    Memory.kind,
    Memory.key,
    Memory.tags,
    Memory.importance,
    Memory.provenance,
    Memory.source_message_ids,
)


@dataclass(frozen=True)
class WriteContext:
    namespace: str
    session_id: str | None = None
    user_id: str | None = None
    channel: str | None = None
    occurred_at: datetime | None = None  # event time of the source turns (never ingest time)


def _row(ctx: WriteContext, candidate: MemoryCandidate, now: datetime) -> dict[str, Any]:
    claim = candidate.claim
    details = dict(candidate.details)
    if candidate.time_expression:
        details["time_expression"] = candidate.time_expression
    return {
        "namespace": ctx.namespace,
        "user_id": ctx.user_id,
        "session_id": ctx.session_id,
        "channel": ctx.channel,
        "kind": candidate.kind,
        "key": candidate.key,
        "content": candidate.content,
        "details": details,
        "tags": candidate.tags,
        "importance": candidate.importance,
        "confidence": candidate.confidence,
        "provenance": candidate.provenance,
        "trust": TRUST[candidate.provenance],
        "claim_subject": claim.subject if claim else None,
        "claim_predicate": claim.predicate if claim else None,
        "claim_value": claim.value if claim else None,
        "claim_scope": claim.scope if claim else None,
        "valid_from": claim.valid_from if claim else None,
        "valid_until": claim.valid_until if claim else None,
        "source_message_ids": candidate.source_message_ids,
        "trigger": candidate.trigger,
        "idempotency_key": candidate.idempotency_key(ctx.namespace),
        "created_at": ctx.occurred_at or now,
        "updated_at": ctx.occurred_at or now,
    }


def store_candidates(
    db: DbSession, items: Sequence[tuple[WriteContext, MemoryCandidate]]
) -> list[int]:
    """Insert candidates inside the caller's transaction; returns ids of new memories."""
    if not items:
        return []
    rows = {}
    now = datetime.now(UTC)
    for ctx, candidate in items:
        row = _row(ctx, candidate, now)
        rows[(row["namespace"], row["idempotency_key"])] = row
    inserted = insert_ignore(
        db, Memory, list(rows.values()), ["namespace", "idempotency_key"], LOGGED_COLUMNS
    )
    if inserted:
        execute_many(
            db,
            insert(MemoryLog.__table__),
            [
                {
                    "namespace": row.namespace,
                    "action": "write",
                    "memory_id": row.id,
                    "trigger": row.trigger,
                    "details": {
                        "kind": row.kind,
                        "key": row.key,
                        "tags": row.tags,
                        "importance": row.importance,
                        "provenance": row.provenance,
                        "source_message_ids": row.source_message_ids,
                    },
                }
                for row in inserted
            ],
        )
    return [row.id for row in inserted]
