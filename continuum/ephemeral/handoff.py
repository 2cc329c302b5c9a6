"""Handoff between channels per user (R5): recorded for 10 minutes, announced on pub/sub,
shown only where the user arrives and read once.

A handoff names the channel it came from and, usually, the one it goes to (`to_channel`).
It is for a channel when that channel is the target, or, with no target, when it is any
channel but the one it came from. Channels are compared by family, the part before the first
":" ("discord:dm" is on Discord). Reading one for a channel takes it atomically: of two
concurrent readers, only one gets it. Sending is idempotent per handoff id (a redelivered
event sends its handoff once, even after it was read). A pending handoff can be revised in
place (a better summary, from the LLM), never brought back once read."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime

import redis

from continuum.domain.text import channel_family, clip
from continuum.ephemeral.keys import HANDOFF_TTL_S, key, opened, sealed
from continuum.redis_client import get_redis

Handoff = dict[str, str]

# Record and announce the handoff unless this id was already sent (within the TTL).
_SEND_ONCE = """
if redis.call('set', KEYS[2], '1', 'NX', 'EX', ARGV[2]) then
  redis.call('set', KEYS[1], ARGV[1], 'EX', ARGV[2])
  redis.call('publish', KEYS[3], ARGV[3])
  return 1
end
return 0
"""


def is_for_channel(handoff: Handoff, channel: str | None) -> bool:
    """Whether `channel` is where the handoff arrives; None (any channel) always is."""
    if channel is None:
        return True
    target = handoff.get("to_channel") or ""
    if target:
        return channel_family(channel) == channel_family(target)
    return channel_family(channel) != channel_family(handoff["from_channel"])


def send_handoff(
    namespace: str,
    user_id: str,
    from_channel: str,
    to_channel: str | None,
    context_summary: str,
    *,
    handoff_id: str | None = None,
    at: datetime | None = None,
) -> Handoff:
    """Record "user is switching channels" for 10 minutes from `at` (default: now) and
    announce it on pub/sub. `to_channel` None or "": any channel but `from_channel`. A
    `handoff_id` already sent is not sent again (the pending handoff stays as it is)."""
    now = datetime.now(UTC)
    when = min(at or now, now)
    handoff = {
        "id": handoff_id or str(uuid.uuid4()),
        "from_channel": from_channel,
        "to_channel": to_channel or "",
        "context_summary": clip(context_summary, 2000),
        "timestamp": when.isoformat(),
    }
    ttl_s = max(1, HANDOFF_TTL_S - int((now - when).total_seconds()))
    get_redis().eval(
        _SEND_ONCE,
        3,
        key(namespace, "handoff", user_id),
        key(namespace, "handoff-sent", handoff["id"]),
        key(namespace, "handoff"),
        sealed(namespace, user_id, json.dumps(handoff), key(namespace, "handoff", user_id)),
        ttl_s,
        json.dumps({"user_id": user_id, **handoff}),
    )
    return handoff


def peek_handoff(namespace: str, user_id: str | None, channel: str | None = None) -> Handoff | None:
    """The user's pending handoff for `channel` (None: whatever the target), not consumed."""
    if not user_id:
        return None
    handoff_key = key(namespace, "handoff", user_id)
    raw = get_redis().get(handoff_key)
    handoff: Handoff | None = json.loads(opened(raw, handoff_key)) if raw else None
    return handoff if handoff is not None and is_for_channel(handoff, channel) else None


def consume_handoff(
    namespace: str, user_id: str, channel: str | None = None, *, handoff_id: str | None = None
) -> Handoff | None:
    """Take the user's pending handoff for `channel` (None: whatever the target) once: of
    concurrent callers, the first gets it, the others None. With `handoff_id`, only that
    handoff is taken (a newer one sent meanwhile stays pending)."""
    handoff_key = key(namespace, "handoff", user_id)

    def take(pipe: redis.client.Pipeline) -> Handoff | None:
        raw: str | None = pipe.get(handoff_key)  # type: ignore[assignment]  # watching: runs now
        handoff: Handoff | None = json.loads(opened(raw, handoff_key)) if raw else None
        if handoff is None or not is_for_channel(handoff, channel):
            return None
        if handoff_id is not None and handoff.get("id") != handoff_id:
            return None
        pipe.multi()
        pipe.delete(handoff_key)
        return handoff

    taken: Handoff | None = get_redis().transaction(take, handoff_key, value_from_callable=True)
    return taken


def revise_handoff(
    namespace: str, user_id: str, handoff_id: str, summary: str, to_channel: str | None = None
) -> bool:
    """Give the user's pending handoff `handoff_id` a new summary (and target, if given),
    keeping its time and lifetime; False when it is no longer pending (read, expired, or
    replaced by a newer one): a handoff read is never brought back."""
    handoff_key = key(namespace, "handoff", user_id)

    def revise(pipe: redis.client.Pipeline) -> bool:
        raw: str | None = pipe.get(handoff_key)  # type: ignore[assignment]  # watching: runs now
        handoff: Handoff | None = json.loads(opened(raw, handoff_key)) if raw else None
        if handoff is None or handoff.get("id") != handoff_id:
            return False
        handoff["context_summary"] = clip(summary, 2000)
        if to_channel:
            handoff["to_channel"] = to_channel
        pipe.multi()
        value = sealed(namespace, user_id, json.dumps(handoff), handoff_key)
        pipe.set(handoff_key, value, keepttl=True)
        return True

    revised: bool = get_redis().transaction(revise, handoff_key, value_from_callable=True)
    return revised
