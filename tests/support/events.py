"""Builders for realistic test events."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

T0 = datetime(2026, 11, 21, 9, 30, tzinfo=UTC)


def now_at() -> float:
    """Seconds from T0 to now: the `at` of a turn said just now."""
    return (datetime.now(UTC) - T0).total_seconds()


# A long turn that answers one question in one of its sentences (statements, focused lines).
LONG_TURN = (
    "The trip was long and the weather was grey most days. We visited three museums and ate "
    "far too much pasta. My daughter wants to study marine biology after school. Anyway the "
    "flights home were delayed twice."
)


def turn(
    content: str,
    *,
    namespace: str = "pearl",
    session_id: str = "voice-1",
    channel: str = "voice",
    role: str = "user",
    at: float = 0.0,
    message_id: str | None = None,
    user_id: str | None = "jason",
    event_id: str | None = None,
    metadata: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "kind": "turn",
        "event_id": event_id or str(uuid.uuid4()),
        "namespace": namespace,
        "session_id": session_id,
        "channel": channel,
        "user_id": user_id,
        "ts": (T0 + timedelta(seconds=at)).isoformat(),
        "role": role,
        "content": content,
        **({"message_id": message_id} if message_id else {}),
        **({"metadata": metadata} if metadata else {}),
    }


# A short voice call: a decision, an open thread and a preference among small talk.
VOICE = [
    ("user", "Let's go with Hoffmann Landscaping for the garden, they start December 2nd."),
    ("assistant", "Great, Hoffmann it is."),
    ("user", "I'm still waiting for Hoffmann to confirm whether the price includes drainage."),
    ("user", "Please keep the volume at 75%, it was too loud yesterday."),
]


def voice_turns(start: int = 0, namespace: str = "pearl") -> list[dict[str, Any]]:
    """The VOICE call as turns 20 s apart, message ids v<start>, v<start+1>, ..."""
    return [
        turn(text, role=role, message_id=f"v{start + i}", at=(start + i) * 20, namespace=namespace)
        for i, (role, text) in enumerate(VOICE)
    ]


def session_end(
    *, namespace: str = "pearl", session_id: str = "voice-1", channel: str = "voice", at: float = 60
) -> dict[str, Any]:
    ended = (T0 + timedelta(seconds=at)).isoformat()
    return {
        "kind": "session_end",
        "event_id": str(uuid.uuid4()),
        "namespace": namespace,
        "session_id": session_id,
        "channel": channel,
        "ts": ended,
        "ended_at": ended,
        "reason": "client_disconnected",
        "duration_s": at,
    }
