"""A forgotten user's ephemeral state (R47): found, deleted, and found again as proof."""

from __future__ import annotations

from continuum.ephemeral.keys import IDLE_INDEX, idle_member, key
from continuum.redis_client import get_redis


def user_state(namespace: str, user_id: str, session_ids: list[str]) -> list[str]:
    """Keys (and `index:member` entries) holding state of the user: their sessions' buffers,
    stored keys and idle entries, the registry, topic and recent buffer of channels whose
    session is theirs, and their handoff."""
    client = get_redis()
    found = [
        name
        for session_id in session_ids
        for name in (
            key(namespace, "transcript", session_id),
            key(namespace, "stored-keys", session_id),
        )
        if client.exists(name)
    ]
    found += [
        f"{IDLE_INDEX}:{session_id}"
        for session_id in session_ids
        if client.zscore(IDLE_INDEX, idle_member(namespace, session_id)) is not None
    ]
    for registry in client.scan_iter(key(namespace, "session", "*")):
        info = client.hgetall(registry)
        if info.get("user_id") == user_id or info.get("session_id") in session_ids:
            channel = registry.removeprefix(key(namespace, "session", ""))
            found.append(registry)
            found += [
                name
                for name in (key(namespace, "topic", channel), key(namespace, "recent", channel))
                if client.exists(name)
            ]
    handoff = key(namespace, "handoff", user_id)
    return found + ([handoff] if client.exists(handoff) else [])


def remove_user_state(namespace: str, found: list[str]) -> int:
    """Delete what `user_state` found; returns how many entries were removed."""
    client = get_redis()
    pipe = client.pipeline(transaction=False)
    session_prefix = key(namespace, "session", "")
    counted: list[int] = []  # replies of the entries themselves (not of the side cleanups)
    for name in found:
        counted.append(len(pipe))
        if name.startswith(f"{IDLE_INDEX}:"):
            pipe.zrem(IDLE_INDEX, idle_member(namespace, name.removeprefix(f"{IDLE_INDEX}:")))
        else:
            pipe.delete(name)
            if name.startswith(session_prefix):
                pipe.zrem(key(namespace, "last-active"), name.removeprefix(session_prefix))
    replies = pipe.execute()
    return sum(1 for index in counted if replies[index])
