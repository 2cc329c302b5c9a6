"""Deleting memories for good: their rows (vectors with them), their log entries kept with
only their ids, and their Redis traces (the keys that name them, their ids as set members)."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import text
from sqlalchemy.orm import Session as DbSession

from continuum.redis_client import get_redis


def delete_memories(db: DbSession, namespace: str, ids: Sequence[int]) -> int:
    """Delete the memories `ids` of the tenant in the caller's transaction; their
    `memory_log` entries keep only their ids (and say `purged`). Returns rows deleted."""
    if not ids:
        return 0
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


def purge_redis(namespace: str, ids: Sequence[int]) -> int:
    """Remove Redis traces of memories: keys named `…memory:<id>…` under the tenant's prefix
    and the ids as members of its sets and sorted sets. Returns keys touched."""
    client = get_redis()
    members = [str(i) for i in ids]
    names = [f"memory:{i}" for i in ids]
    touched = 0
    for key in client.scan_iter(match=f"continuum:{namespace}:*", count=1000):
        if any(key.endswith(n) or f"{n}:" in key for n in names):
            touched += 1
            client.delete(key)
            continue
        kind = client.type(key)
        if kind == "set":
            touched += bool(client.srem(key, *members))
        elif kind == "zset":
            touched += bool(client.zrem(key, *members))
    return touched
