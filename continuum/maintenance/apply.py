"""Applying one planned step in Postgres: merge, supersede, quarantine, compress, decay,
prune, archive, expire raw messages past their retention, or rewrite `MEMORY.md`. Each step
re-checks its preconditions, so a row changed since planning is left alone; the caller's
transaction holds the step."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import text
from sqlalchemy.orm import Session as DbSession

from continuum.domain.kinds import MemoryKind
from continuum.domain.memory import MemoryCandidate
from continuum.maintenance.purge import purge_redis
from continuum.maintenance.retention import expire_messages
from continuum.maintenance.rules import (
    KIND_PARAMS,
    PRUNE_WHERE,
    TRIGGER,
    Action,
    MaintenanceConfig,
)
from continuum.maintenance.workspace import write_memory_md
from continuum.memory.claims import quarantine, reinforce, supersede
from continuum.memory.gone_turns import delete_memories
from continuum.memory.writer import WriteScope, store_memories
from continuum.store import lsn_tokens


def _compress(db: DbSession, namespace: str, action: Action) -> int:
    sources = db.scalars(
        text(
            "SELECT DISTINCT s FROM memories, unnest(source_message_ids) AS s "
            "WHERE namespace = :ns AND id = ANY(:ids) AND status = 'active' ORDER BY s"
        ),
        {"ns": namespace, "ids": action["ids"]},
    ).all()
    kind: MemoryKind = action["kind"]
    candidate = MemoryCandidate(
        kind=kind,
        content=action["content"],
        tags=[action["tag"], "source:system"],
        importance=5,
        confidence=0.8,
        provenance="system",
        source_message_ids=list(sources) or [f"memory:{i}" for i in action["ids"]],
        trigger="compress",
        details={"compressed": action["ids"]},
    )
    ctx = WriteScope(namespace, user_id=action["user_id"])
    # The summary is no observation itself: its corroboration is its members'.
    stored = store_memories(db, [(ctx, candidate)], {"corroboration": 0})
    if not stored:
        return 0
    reinforce(db, namespace, stored[0].id, action["ids"], TRIGGER)
    return len(action["ids"])


def _update_ids(db: DbSession, sql: str, params: dict[str, Any]) -> int:
    return int(db.execute(text(sql), params).rowcount or 0)  # type: ignore[attr-defined]


def _prune(db: DbSession, namespace: str, action: Action) -> int:
    """Delete rows for good: their vectors go with them, log entries keep only ids, and a
    forgotten memory's tasks and Redis traces go too."""
    reason = action["reason"]
    params = {
        "ns": namespace,
        "ids": action["ids"],
        "cutoff": datetime.fromisoformat(action["cutoff"]),
        **KIND_PARAMS,
    }
    ids = db.scalars(
        text(
            "SELECT id FROM memories WHERE namespace = :ns AND id = ANY(:ids) "
            f"AND {PRUNE_WHERE[reason]} FOR UPDATE"
        ),
        params,
    ).all()
    if not ids:
        return 0
    if reason == "forgotten":
        db.execute(
            text("DELETE FROM tasks WHERE namespace = :ns AND tags && :tags"),
            {"ns": namespace, "tags": [f"memory:{i}" for i in ids]},
        )
        purge_redis(namespace, ids)
    return delete_memories(db, namespace, ids)


def apply_step(
    db: DbSession, namespace: str, action: Action, config: MaintenanceConfig
) -> int | dict[str, int]:
    """Apply one planned step (as planned: opened, `opened_step`) in the caller's
    transaction; returns rows it changed (by what they count under, for a step with several
    effects)."""
    lsn_tokens.wrote(db, [namespace])
    op = action["op"]
    if op == "merge":
        merged = reinforce(db, namespace, action["keep"], action["ids"], TRIGGER)
        return len(action["ids"]) if merged else 0
    if op == "supersede":
        return int(supersede(db, namespace, action["id"], action["by"], TRIGGER))
    if op == "quarantine":
        return int(quarantine(db, namespace, action["id"], action["conflicts_with"], TRIGGER))
    if op == "compress":
        return _compress(db, namespace, action)
    if op == "decay":
        return _update_ids(
            db,
            "UPDATE memories SET importance = :to, details = details || jsonb_build_object("
            "'importance_base', coalesce(CAST(details->>'importance_base' AS int), importance)) "
            "WHERE namespace = :ns AND id = ANY(:ids) AND status = 'active'",
            {"ns": namespace, "to": action["to"], "ids": action["ids"]},
        )
    if op == "prune":
        return _prune(db, namespace, action)
    if op == "archive":
        return _update_ids(
            db,
            "UPDATE memories SET status = 'archived', updated_at = now() "
            "WHERE namespace = :ns AND id = ANY(:ids) AND status = 'active'",
            {"ns": namespace, "ids": action["ids"]},
        )
    if op == "expire_messages":
        return expire_messages(db, namespace, action)
    if op == "memory_md":
        return write_memory_md(db, namespace, Path(action["path"]), config.memory_md_items)
    raise ValueError(f"unknown maintenance step {op!r}")
