"""Deleting memories for good: their rows (vectors with them) and their log entries kept with
only their ids (`continuum.memory.gone_turns.delete_memories`), and their Redis traces (the
keys that name them, their ids as set members)."""

from __future__ import annotations

from collections.abc import Sequence

from continuum.redis_client import get_redis


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
