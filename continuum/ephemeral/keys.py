"""The key schema of the ephemeral layer, its lifetimes, and how its values are sealed (each
bound to the key it is stored at)."""

from __future__ import annotations

from datetime import UTC, datetime

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
SEP = "\x1f"  # between namespace and session id in the idle index


def key(namespace: str, *parts: str) -> str:
    return ":".join(("continuum", namespace, *parts))


def idle_member(namespace: str, session_id: str) -> str:
    """A session's member of the idle index."""
    return f"{namespace}{SEP}{session_id}"


def ms(when: datetime) -> int:
    return int(when.timestamp() * 1000)


def from_ms(value: float) -> datetime:
    return datetime.fromtimestamp(value / 1000, tz=UTC)


def sealed(
    namespace: str, user_id: str | None, value: str, at: str, *, deterministic: bool = False
) -> str:
    """`value` as stored at the Redis key `at` for the tenant: sealed under the user's key
    when encrypted, bound to that key (a value moved to another key does not open)."""
    return seal(namespace, user_id, SEALED_KIND, value, at, deterministic=deterministic)


def opened(value: str, at: str) -> str:
    """A value stored at the Redis key `at`, as plaintext."""
    return open_text(value, SEALED_KIND, at)
