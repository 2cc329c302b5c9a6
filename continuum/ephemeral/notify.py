"""Memory-change announcements on pub/sub (R43): a live runtime refreshes its context."""

from __future__ import annotations

import json

from continuum.ephemeral.keys import key
from continuum.redis_client import get_redis


def memory_changed_channel(namespace: str) -> str:
    return key(namespace, "memory-changed")


def notify_memory_changed(
    namespace: str, session_id: str | None, memory_ids: list[int], action: str
) -> None:
    """Tell subscribed runtimes that memories changed, so they can refresh their context."""
    if memory_ids:
        message = {"session_id": session_id, "memory_ids": memory_ids, "action": action}
        get_redis().publish(memory_changed_channel(namespace), json.dumps(message))
