"""Memory-change announcements on pub/sub (R43): a live runtime refreshes its context.

One channel per tenant (`continuum:<ns>:memory-changed`); each message is JSON with the
session the write came from (null for a memory tool used outside a session), the memory
ids, the action (`capture`, `stored`, `updated`, `forget`, `idle`, `end`, …) and the user
whose memories changed (null when not known or shared: any runtime of the tenant may be
concerned). Published after the write
committed, by ingest's capture, the memory tools, the idle sweep and session end; Pipecat's
`LiveContext` subscribes."""

from __future__ import annotations

import json

from continuum.ephemeral.keys import key
from continuum.redis_client import get_redis


def memory_changed_channel(namespace: str) -> str:
    return key(namespace, "memory-changed")


def notify_memory_changed(
    namespace: str,
    session_id: str | None,
    memory_ids: list[int],
    action: str,
    user_id: str | None = None,
) -> None:
    """Tell subscribed runtimes that memories changed, so they can refresh their context."""
    if memory_ids:
        message = {"session_id": session_id, "memory_ids": memory_ids, "action": action,
                   "user_id": user_id}  # fmt: skip
        get_redis().publish(memory_changed_channel(namespace), json.dumps(message))
