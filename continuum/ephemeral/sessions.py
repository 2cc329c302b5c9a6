"""Reading the session registry (active sessions and their topics across channels, R2, R3)
and the idle index the server-side idle sweep walks (R25)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from continuum.ephemeral.keys import (
    IDLE_INDEX,
    SEP,
    SESSION_TTL_S,
    from_ms,
    idle_member,
    key,
    ms,
    opened,
)
from continuum.redis_client import get_redis


@dataclass(frozen=True)
class ActiveSession:
    channel: str
    session_id: str
    user_id: str | None
    started_at: str | None
    last_active: str
    topic: str | None


def active_sessions(namespace: str) -> list[ActiveSession]:
    """Sessions active in the last hour across channels, most recent first (R2, R3)."""
    client = get_redis()
    now_ms = ms(datetime.now(UTC))
    channels = client.zrevrangebyscore(
        key(namespace, "last-active"), "+inf", now_ms - SESSION_TTL_S * 1000, withscores=True
    )
    pipe = client.pipeline(transaction=False)
    for channel, _ in channels:
        pipe.hgetall(key(namespace, "session", channel))
        pipe.get(key(namespace, "topic", channel))
    replies = pipe.execute()
    return [
        ActiveSession(
            channel=channel,
            session_id=info.get("session_id", ""),
            user_id=info.get("user_id") or None,
            started_at=info.get("started_at"),
            last_active=from_ms(score).isoformat(),
            topic=opened(topic, key(namespace, "topic", channel)) if topic else topic,
        )
        for (channel, score), info, topic in zip(channels, replies[::2], replies[1::2], strict=True)
        if info
    ]


def topics(namespace: str) -> dict[str, str]:
    """Current topic of every active channel (R3)."""
    return {s.channel: s.topic for s in active_sessions(namespace) if s.topic}


_TAKE_IF_UNCHANGED = """
local score = redis.call('zscore', KEYS[1], ARGV[1])
if score and tonumber(score) == tonumber(ARGV[2]) then
  return redis.call('zrem', KEYS[1], ARGV[1])
end
return 0
"""


@dataclass(frozen=True)
class IdleSession:
    namespace: str
    session_id: str
    last_activity_at: datetime
    score: int


def idle_sessions(idle_ms: int, now: datetime | None = None) -> list[IdleSession]:
    """Sessions with no turn for `idle_ms` (from the idle index)."""
    ceiling = ms(now or datetime.now(UTC)) - idle_ms
    found = []
    for member, score in get_redis().zrangebyscore(IDLE_INDEX, "-inf", ceiling, withscores=True):
        namespace, _, session_id = member.partition(SEP)
        found.append(IdleSession(namespace, session_id, from_ms(score), int(score)))
    return found


def take_idle(session: IdleSession) -> bool:
    """Remove a session from the idle index unless a newer turn moved it; True if taken."""
    member = idle_member(session.namespace, session.session_id)
    return bool(get_redis().eval(_TAKE_IF_UNCHANGED, 1, IDLE_INDEX, member, session.score))
