"""Handoff between channels per user (R5): recorded for 10 minutes, announced on pub/sub,
read once."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from continuum.domain.text import clip
from continuum.ephemeral.keys import HANDOFF_TTL_S, key, opened, sealed
from continuum.redis_client import get_redis


def send_handoff(
    namespace: str, user_id: str, from_channel: str, to_channel: str, context_summary: str
) -> dict[str, str]:
    """Record "user is switching channels" for 10 minutes and announce it on pub/sub."""
    handoff = {
        "from_channel": from_channel,
        "to_channel": to_channel,
        "context_summary": clip(context_summary, 2000),
        "timestamp": datetime.now(UTC).isoformat(),
    }
    payload = sealed(namespace, user_id, json.dumps(handoff))
    client = get_redis()
    client.set(key(namespace, "handoff", user_id), payload, ex=HANDOFF_TTL_S)
    client.publish(key(namespace, "handoff"), json.dumps({"user_id": user_id, **handoff}))
    return handoff


def peek_handoff(namespace: str, user_id: str | None) -> dict[str, str] | None:
    """The pending handoff for a user, without consuming it."""
    if not user_id:
        return None
    raw = get_redis().get(key(namespace, "handoff", user_id))
    return json.loads(opened(raw)) if raw else None


def consume_handoff(namespace: str, user_id: str) -> dict[str, str] | None:
    """Read the pending handoff once: the first caller gets it, later callers get None."""
    raw = get_redis().getdel(key(namespace, "handoff", user_id))
    return json.loads(opened(raw)) if raw else None
