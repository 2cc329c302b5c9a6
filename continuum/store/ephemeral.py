"""The ephemeral layer (R1–R5, R44) in Redis: minutes-to-hours state that expires by itself.

Per tenant (every key starts `continuum:{namespace}:`):
- session registry per channel (TTL 1 h, refreshed by activity),
- current topic per channel (TTL 30 min),
- recent-message buffer per channel (last 10, TTL 2 h),
- handoff per user (TTL 10 min, announced on pub/sub, consumed exactly once),
- per-session transcript buffer (sorted by event time, 30-minute window, ≤ 200 turns) and
  the set of memory keys stored during the session — never written to Postgres,
- a global idle index (last activity per session) for the server-side idle sweep.

Every write is idempotent (sorted sets keyed by message id, scored by event time), so a
redelivered turn changes nothing.

For an encrypted tenant (R47) topics, buffer entries and handoffs are stored sealed under the
user's data key (`continuum.sealing.envelope`); buffer entries deterministically, so a
redelivered turn still re-adds the same member.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import redis

from continuum.redis_client import get_redis
from continuum.sealing.envelope import open_text, seal

SEALED_KIND = "redis"

SESSION_TTL_S = 3600
TOPIC_TTL_S = 1800
RECENT_TTL_S = 7200
RECENT_SIZE = 10
HANDOFF_TTL_S = 600
TRANSCRIPT_WINDOW_S = 1800
TRANSCRIPT_MAX_TURNS = 200
TRANSCRIPT_TTL_S = 7200
SUMMARY_CHARS = 500
IDLE_INDEX = "continuum:idle-index"
_SEP = "\x1f"


def key(namespace: str, *parts: str) -> str:
    return ":".join(("continuum", namespace, *parts))


def _ms(when: datetime) -> int:
    return int(when.timestamp() * 1000)


def _from_ms(ms: float) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


@dataclass(frozen=True)
class BufferedTurn:
    """One turn of the transcript buffer (R44)."""

    message_id: str
    timestamp: str
    speaker: str
    summary: str
    intent: str  # question | request | statement | response
    entities: list[str]


_REQUEST = re.compile(r"^(please|can you|could you|would you|remind me|let's|tell me)\b", re.I)


def classify_intent(role: str, text: str) -> str:
    if role == "assistant":
        return "response"
    stripped = text.strip()
    if stripped.endswith("?"):
        return "question"
    return "request" if _REQUEST.match(stripped) else "statement"


def summarize_text(text: str, limit: int = SUMMARY_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


@dataclass(frozen=True)
class LiveTurn:
    """One turn as the ephemeral layer records it."""

    namespace: str
    session_id: str
    channel: str
    user_id: str | None
    message_id: str
    role: str
    content: str
    at: datetime
    topic: str | None
    entities: list[str]


def _sealed(turn: LiveTurn, value: str | None) -> str:
    """`value` as stored for the turn's tenant: deterministically sealed when encrypted, so a
    redelivered turn re-adds the same member."""
    return seal(turn.namespace, turn.user_id, SEALED_KIND, value or "", deterministic=True)


def _recent_entry(turn: LiveTurn) -> str:
    entry = {"message_id": turn.message_id, "role": turn.role,
             "content_summary": summarize_text(turn.content), "timestamp": turn.at.isoformat()}  # fmt: skip
    return json.dumps(entry, sort_keys=True)


def _buffered(turn: LiveTurn) -> str:
    buffered = BufferedTurn(turn.message_id, turn.at.isoformat(), turn.role,
                            summarize_text(turn.content), classify_intent(turn.role, turn.content),
                            turn.entities)  # fmt: skip
    return json.dumps(vars(buffered), sort_keys=True)  # its fields (asdict would deep-copy them)


def record_turns(turns: Sequence[LiveTurn], pipe: redis.client.Pipeline | None = None) -> None:
    """Apply turns, given in event-time order, to registry, topic, recent buffer, transcript
    buffer and idle index (idempotent). The end state is that of applying them one at a time,
    in a few commands per channel and per session rather than ~14 per turn: the registry
    keeps the first start and the last session, a topic the last one, and each buffer is
    trimmed once, by the batch's latest turn."""
    p = pipe if pipe is not None else get_redis().pipeline(transaction=False)
    channels: dict[tuple[str, str], list[LiveTurn]] = defaultdict(list)
    sessions: dict[tuple[str, str], list[LiveTurn]] = defaultdict(list)
    for turn in turns:
        channels[(turn.namespace, turn.channel)].append(turn)
        sessions[(turn.namespace, turn.session_id)].append(turn)

    for (namespace, channel), group in channels.items():
        first, last = group[0], group[-1]
        registry = key(namespace, "session", channel)
        p.hsetnx(registry, "started_at", first.at.isoformat())
        p.hset(registry, mapping={"session_id": last.session_id, "user_id": last.user_id or ""})
        # last_active only moves forward: out-of-order turns must not age a live session.
        p.zadd(key(namespace, "last-active"), {channel: max(_ms(t.at) for t in group)}, gt=True)
        p.expire(registry, SESSION_TTL_S)
        p.expire(key(namespace, "last-active"), SESSION_TTL_S)
        topics = [turn for turn in group if turn.topic]
        if topics:
            topic = topics[-1]
            p.set(key(namespace, "topic", channel), _sealed(topic, topic.topic), ex=TOPIC_TTL_S)
        recent = key(namespace, "recent", channel)
        p.zadd(recent, {_sealed(turn, _recent_entry(turn)): _ms(turn.at) for turn in group})
        p.zremrangebyrank(recent, 0, -(RECENT_SIZE + 1))
        p.expire(recent, RECENT_TTL_S)
    for (namespace, session_id), group in sessions.items():
        latest_ms = max(_ms(turn.at) for turn in group)
        transcript = key(namespace, "transcript", session_id)
        p.zadd(transcript, {_sealed(turn, _buffered(turn)): _ms(turn.at) for turn in group})
        p.zremrangebyscore(transcript, "-inf", latest_ms - TRANSCRIPT_WINDOW_S * 1000 - 1)
        p.zremrangebyrank(transcript, 0, -(TRANSCRIPT_MAX_TURNS + 1))
        p.expire(transcript, TRANSCRIPT_TTL_S)
        p.zadd(IDLE_INDEX, {f"{namespace}{_SEP}{session_id}": latest_ms}, gt=True)
    if pipe is None:
        p.execute()


# -- reads --------------------------------------------------------------------------
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
    now_ms = _ms(datetime.now(UTC))
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
            last_active=_from_ms(score).isoformat(),
            topic=open_text(topic, SEALED_KIND) if topic else topic,
        )
        for (channel, score), info, topic in zip(channels, replies[::2], replies[1::2], strict=True)
        if info
    ]


def topics(namespace: str) -> dict[str, str]:
    """Current topic of every active channel (R3)."""
    return {s.channel: s.topic for s in active_sessions(namespace) if s.topic}


def recent_messages(namespace: str, channel: str) -> list[dict[str, Any]]:
    """The last 10 messages of a channel, oldest first (R4)."""
    raw = get_redis().zrange(key(namespace, "recent", channel), 0, -1)
    return [json.loads(open_text(item, SEALED_KIND)) for item in raw]


def transcript(namespace: str, session_id: str) -> list[BufferedTurn]:
    """The session's transcript buffer in event-time order (R44)."""
    raw = get_redis().zrange(key(namespace, "transcript", session_id), 0, -1)
    return [BufferedTurn(**json.loads(open_text(item, SEALED_KIND))) for item in raw]


def add_stored_keys(
    namespace: str, session_id: str, keys: list[str], pipe: redis.client.Pipeline | None = None
) -> None:
    """Remember memory keys stored during a live session (R45); batchable in `pipe`."""
    if keys:
        stored = key(namespace, "stored-keys", session_id)
        p = pipe if pipe is not None else get_redis().pipeline(transaction=False)
        p.sadd(stored, *(k.lower() for k in keys))
        p.expire(stored, TRANSCRIPT_TTL_S)
        if pipe is None:
            p.execute()


def stored_keys(namespace: str, session_id: str) -> set[str]:
    return set(get_redis().smembers(key(namespace, "stored-keys", session_id)))


def clear_session(namespace: str, session_id: str, channel: str) -> None:
    """Forget a finished session: buffer, stored keys, idle entry, and the
    channel's registry entry if it still points at this session."""
    client = get_redis()
    registry = key(namespace, "session", channel)
    if client.hget(registry, "session_id") == session_id:
        client.delete(registry)
        client.zrem(key(namespace, "last-active"), channel)
    client.delete(
        key(namespace, "transcript", session_id),
        key(namespace, "stored-keys", session_id),
    )
    client.zrem(IDLE_INDEX, f"{namespace}{_SEP}{session_id}")


# -- idle index ---------------------------------------------------------------------
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
    ceiling = _ms(now or datetime.now(UTC)) - idle_ms
    found = []
    for member, score in get_redis().zrangebyscore(IDLE_INDEX, "-inf", ceiling, withscores=True):
        namespace, _, session_id = member.partition(_SEP)
        found.append(IdleSession(namespace, session_id, _from_ms(score), int(score)))
    return found


def take_idle(session: IdleSession) -> bool:
    """Remove a session from the idle index unless a newer turn moved it; True if taken."""
    member = f"{session.namespace}{_SEP}{session.session_id}"
    return bool(get_redis().eval(_TAKE_IF_UNCHANGED, 1, IDLE_INDEX, member, session.score))


# -- handoff (R5) ---------------------------------------------------------------------
def send_handoff(
    namespace: str, user_id: str, from_channel: str, to_channel: str, context_summary: str
) -> dict[str, str]:
    """Record "user is switching channels" for 10 minutes and announce it on pub/sub."""
    handoff = {
        "from_channel": from_channel,
        "to_channel": to_channel,
        "context_summary": summarize_text(context_summary, 2000),
        "timestamp": datetime.now(UTC).isoformat(),
    }
    payload = seal(namespace, user_id, SEALED_KIND, json.dumps(handoff))
    client = get_redis()
    client.set(key(namespace, "handoff", user_id), payload, ex=HANDOFF_TTL_S)
    client.publish(key(namespace, "handoff"), json.dumps({"user_id": user_id, **handoff}))
    return handoff


def peek_handoff(namespace: str, user_id: str | None) -> dict[str, str] | None:
    """The pending handoff for a user, without consuming it."""
    if not user_id:
        return None
    raw = get_redis().get(key(namespace, "handoff", user_id))
    return json.loads(open_text(raw, SEALED_KIND)) if raw else None


def consume_handoff(namespace: str, user_id: str) -> dict[str, str] | None:
    """Read the pending handoff once: the first caller gets it, later callers get None."""
    raw = get_redis().getdel(key(namespace, "handoff", user_id))
    return json.loads(open_text(raw, SEALED_KIND)) if raw else None


# -- change notification (R43) ------------------------------------------------------
def memory_changed_channel(namespace: str) -> str:
    return key(namespace, "memory-changed")


def notify_memory_changed(
    namespace: str, session_id: str | None, memory_ids: list[int], action: str
) -> None:
    """Tell subscribed runtimes that memories changed, so they can refresh their context."""
    if memory_ids:
        message = {"session_id": session_id, "memory_ids": memory_ids, "action": action}
        get_redis().publish(memory_changed_channel(namespace), json.dumps(message))


# -- forgetting a user (R47) ----------------------------------------------------------
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
        if client.zscore(IDLE_INDEX, f"{namespace}{_SEP}{session_id}") is not None
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
            pipe.zrem(IDLE_INDEX, f"{namespace}{_SEP}{name.removeprefix(f'{IDLE_INDEX}:')}")
        else:
            pipe.delete(name)
            if name.startswith(session_prefix):
                pipe.zrem(key(namespace, "last-active"), name.removeprefix(session_prefix))
    replies = pipe.execute()
    return sum(1 for index in counted if replies[index])
