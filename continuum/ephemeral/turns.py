"""What a turn leaves in the ephemeral layer (registry, topic, recent buffer, transcript
buffer, idle index), the buffers read back, the keys stored during a session (R45), and a
finished session's state cleared."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import redis

from continuum.capture.intent import classify_intent
from continuum.domain.text import clip
from continuum.ephemeral.keys import (
    IDLE_INDEX,
    RECENT_SIZE,
    RECENT_TTL_S,
    SESSION_TTL_S,
    SUMMARY_CHARS,
    TOPIC_TTL_S,
    TRANSCRIPT_MAX_TURNS,
    TRANSCRIPT_TTL_S,
    TRANSCRIPT_WINDOW_S,
    idle_member,
    key,
    ms,
    opened,
    sealed,
)
from continuum.redis_client import get_redis

# The channel's registry entry names the session of its latest turn; a session that takes
# the channel over brings its own start, a turn of the session it names keeps the first one.
_REGISTER = """
if ARGV[4] == '' and redis.call('hget', KEYS[1], 'session_id') == ARGV[1] then
  redis.call('hsetnx', KEYS[1], 'started_at', ARGV[3])
else
  redis.call('hset', KEYS[1], 'session_id', ARGV[1], 'started_at', ARGV[3])
end
redis.call('hset', KEYS[1], 'user_id', ARGV[2])
"""


@dataclass(frozen=True)
class BufferedTurn:
    """One turn of the transcript buffer (R44)."""

    message_id: str
    timestamp: str
    speaker: str
    summary: str
    intent: str  # question | request | statement | response
    entities: list[str]


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


def _sealed(turn: LiveTurn, value: str | None, at: str) -> str:
    """`value` as stored at the key `at` for the turn's tenant: deterministically sealed when
    encrypted, so a redelivered turn re-adds the same member."""
    return sealed(turn.namespace, turn.user_id, value or "", at, deterministic=True)


def _recent_entry(turn: LiveTurn) -> str:
    entry = {"message_id": turn.message_id, "role": turn.role,
             "content_summary": clip(turn.content, SUMMARY_CHARS), "timestamp": turn.at.isoformat()}  # fmt: skip
    return json.dumps(entry, sort_keys=True)


def _buffered(turn: LiveTurn) -> str:
    buffered = BufferedTurn(turn.message_id, turn.at.isoformat(), turn.role,
                            clip(turn.content, SUMMARY_CHARS), classify_intent(turn.role, turn.content),
                            turn.entities)  # fmt: skip
    return json.dumps(vars(buffered), sort_keys=True)  # its fields (asdict would deep-copy them)


def record_turns(turns: Sequence[LiveTurn], pipe: redis.client.Pipeline | None = None) -> None:
    """Apply turns, given in event-time order, to registry, topic, recent buffer, transcript
    buffer and idle index (idempotent). The end state is that of applying them one at a time,
    in a few commands per channel and per session rather than ~14 per turn: the registry
    names the last session and its first turn's time (a new session on the channel replaces
    the start of the one before), a topic the last one, and each buffer is
    trimmed once, by the batch's latest turn."""
    p = pipe if pipe is not None else get_redis().pipeline(transaction=False)
    channels: dict[tuple[str, str], list[LiveTurn]] = defaultdict(list)
    sessions: dict[tuple[str, str], list[LiveTurn]] = defaultdict(list)
    for turn in turns:
        channels[(turn.namespace, turn.channel)].append(turn)
        sessions[(turn.namespace, turn.session_id)].append(turn)

    for (namespace, channel), group in channels.items():
        last = group[-1]
        others = (i for i, turn in enumerate(reversed(group)) if turn.session_id != last.session_id)
        run = next(others, len(group))  # the last session's turns at the end of the batch
        registry = key(namespace, "session", channel)
        taken_over = "1" if run < len(group) else ""  # another session came between
        p.eval(_REGISTER, 1, registry, last.session_id, last.user_id or "",
               group[-run].at.isoformat(), taken_over)  # fmt: skip
        # last_active only moves forward: out-of-order turns must not age a live session.
        p.zadd(key(namespace, "last-active"), {channel: max(ms(t.at) for t in group)}, gt=True)
        p.expire(registry, SESSION_TTL_S)
        p.expire(key(namespace, "last-active"), SESSION_TTL_S)
        topics = [turn for turn in group if turn.topic]
        if topics:
            topic = topics[-1]
            topic_key = key(namespace, "topic", channel)
            p.set(topic_key, _sealed(topic, topic.topic, topic_key), ex=TOPIC_TTL_S)
        recent = key(namespace, "recent", channel)
        p.zadd(recent, {_sealed(turn, _recent_entry(turn), recent): ms(turn.at) for turn in group})
        p.zremrangebyrank(recent, 0, -(RECENT_SIZE + 1))
        p.expire(recent, RECENT_TTL_S)
    for (namespace, session_id), group in sessions.items():
        latest_ms = max(ms(turn.at) for turn in group)
        transcript = key(namespace, "transcript", session_id)
        p.zadd(
            transcript, {_sealed(turn, _buffered(turn), transcript): ms(turn.at) for turn in group}
        )
        p.zremrangebyscore(transcript, "-inf", latest_ms - TRANSCRIPT_WINDOW_S * 1000 - 1)
        p.zremrangebyrank(transcript, 0, -(TRANSCRIPT_MAX_TURNS + 1))
        p.expire(transcript, TRANSCRIPT_TTL_S)
        p.zadd(IDLE_INDEX, {idle_member(namespace, session_id): latest_ms}, gt=True)
    if pipe is None:
        p.execute()


def recent_messages(namespace: str, channel: str) -> list[dict[str, Any]]:
    """The last 10 messages of a channel, oldest first (R4)."""
    recent = key(namespace, "recent", channel)
    return [json.loads(opened(item, recent)) for item in get_redis().zrange(recent, 0, -1)]


def transcript(namespace: str, session_id: str) -> list[BufferedTurn]:
    """The session's transcript buffer in event-time order (R44)."""
    buffer = key(namespace, "transcript", session_id)
    return [
        BufferedTurn(**json.loads(opened(item, buffer)))
        for item in get_redis().zrange(buffer, 0, -1)
    ]


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
    client.zrem(IDLE_INDEX, idle_member(namespace, session_id))
