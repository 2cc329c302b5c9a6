"""What becomes of memories when the turns they came from are deleted, by either door:
retention (`continuum.maintenance.retention`) or a runtime erasing its own turns
(`erase_turns`, behind `DELETE /v1/sessions/{id}/messages`). A `statement` memory (one
sentence of its turn, an index of it and its very words) goes with its turn; every other
memory citing a deleted turn (summaries, key moments, facts) stays, marked
`details.sources_pruned_at`, its `source_message_ids` naming turns no longer stored.

Also deleting memories for good (`delete_memories`), which maintenance's purge uses too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, func, text, update
from sqlalchemy.orm import Session as DbSession

from continuum.store import lsn_tokens
from continuum.store.engine import session_scope
from continuum.store.models import Message, Session


def delete_memories(db: DbSession, namespace: str, ids: Sequence[int]) -> int:
    """Delete the memories `ids` of the tenant in the caller's transaction; their
    `memory_log` entries keep only their ids (and say `purged`). Returns rows deleted."""
    if not ids:
        return 0
    lsn_tokens.wrote(db, [namespace])
    db.execute(
        text(
            "UPDATE memory_log SET details = coalesce((SELECT jsonb_object_agg(k, v) FROM "
            "jsonb_each(details) AS e(k, v) WHERE k ~ '(^|_)ids?$'), '{}') || '{\"purged\": true}' "
            "WHERE namespace = :ns AND memory_id = ANY(:ids)"
        ),
        {"ns": namespace, "ids": list(ids)},
    )
    deleted = db.execute(
        text("DELETE FROM memories WHERE namespace = :ns AND id = ANY(:ids)"),
        {"ns": namespace, "ids": list(ids)},
    )
    return int(deleted.rowcount or 0)  # type: ignore[attr-defined]


# The tenant's memories citing any of the deleted turns (a turn is its session's message id).
_CITING = text(
    "WITH gone AS (SELECT sid, array_agg(mid) AS mids "
    "FROM unnest(CAST(:sids AS text[]), CAST(:mids AS text[])) AS g(sid, mid) GROUP BY sid) "
    "SELECT m.id, m.kind FROM memories m JOIN gone ON m.session_id = gone.sid "
    "WHERE m.namespace = :ns AND m.source_message_ids && gone.mids"
)


@dataclass(frozen=True)
class Settled:
    """What deleting turns did to the memories citing them."""

    statements: int  # deleted with their turns
    marked: int  # kept, marked `sources_pruned_at`


def settle_gone_turns(db: DbSession, namespace: str, gone: Sequence[Any]) -> Settled:
    """In the caller's transaction, after it deleted the turns `gone` (rows with their
    `session_id` and `message_id`): delete their statements, mark the other memories citing
    them."""
    if not gone:
        return Settled(0, 0)
    sids, mids = [g.session_id for g in gone], [g.message_id for g in gone]
    citing = db.execute(_CITING, {"ns": namespace, "sids": sids, "mids": mids}).all()
    statements = [row.id for row in citing if row.kind == "statement"]
    kept = [row.id for row in citing if row.kind != "statement"]
    if kept:
        db.execute(
            text(
                "UPDATE memories SET details = details || "
                "jsonb_build_object('sources_pruned_at', CAST(now() AS text)) "
                "WHERE namespace = :ns AND id = ANY(:ids)"
            ),
            {"ns": namespace, "ids": kept},
        )
    return Settled(delete_memories(db, namespace, statements), len(kept))


def erase_turns(namespace: str, session_id: str, message_ids: Sequence[str] | None = None) -> int:
    """Delete the session's turns (only `message_ids` when given), their vectors with them,
    the session's count, and what cites them (`settle_gone_turns`); returns how many turns
    went. What Redis holds of the live session (its recent turns and transcript buffer)
    expires within 2 hours. Forgetting a user everywhere is `continuum.security.forget`."""
    stmt = delete(Message).where(Message.namespace == namespace, Message.session_id == session_id)
    if message_ids is not None:
        stmt = stmt.where(Message.message_id.in_(list(message_ids)))
    with session_scope() as db:
        gone = db.execute(stmt.returning(Message.session_id, Message.message_id)).all()
        if gone:
            lsn_tokens.wrote(db, [namespace])
            db.execute(
                update(Session)
                .where(Session.namespace == namespace, Session.session_id == session_id)
                .values(message_count=func.greatest(Session.message_count - len(gone), 0))
            )
            settle_gone_turns(db, namespace, gone)
    return len(gone)
