"""Sections of the context block as plain listings for runtimes (R14): recent
conversations and active tasks, behind `continuum recent-conversations` and `active-tasks`.

They are read by the block's own channels (`recall.candidates`) under the same scoping
(R16), so a runtime's list never shows what its block would hide, nor misses what it would
show. Unlike the block they are not scored, packed or logged: a list, newest first.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, tzinfo
from typing import Any

from continuum.config import get_settings
from continuum.recall.candidates import (
    SUMMARY_KINDS,
    MemoryChannel,
    context_scope,
    memory_candidates,
    task_candidates,
)
from continuum.recall.items import Candidate, RecallConfig
from continuum.store.reads import read_scope


def _listing(candidates: list[Candidate]) -> list[dict[str, Any]]:
    return [
        {
            "ref": c.ref,
            "kind": c.kind,
            "content": c.content,
            "created_at": c.created_at.isoformat() if c.created_at else None,
            "channel": c.channel,
            "importance": c.importance,
            "source_message_ids": c.source_message_ids,
        }
        for c in candidates
    ]


def _list_memories(
    namespace: str,
    spec: MemoryChannel,
    user_id: str | None,
    channel: str | None,
    in_channel: str | None = None,
) -> list[dict[str, Any]]:
    config = RecallConfig()
    scope = replace(context_scope(user_id, channel, config), channel=in_channel)
    with read_scope(namespace) as db:
        (found,) = memory_candidates(db, namespace, scope, [spec], datetime.now(UTC), config)
    return _listing(found)


def recent_conversations(
    namespace: str,
    *,
    limit: int = 10,
    user_id: str | None = None,
    channel: str | None = None,
    in_channel: str | None = None,
) -> list[dict[str, Any]]:
    """Conversation summaries across channels, or only those held on `in_channel`, newest
    first (scoped like `context` for a caller on `channel`)."""
    spec = MemoryChannel("summaries", "", SUMMARY_KINDS, limit)
    return _list_memories(namespace, spec, user_id, channel, in_channel)


def active_tasks(
    namespace: str,
    *,
    limit: int = 100,
    user_id: str | None = None,
    tz: str | tzinfo | None = None,
) -> list[dict[str, Any]]:
    """Tasks pending, in progress or blocked, visible from every channel (R8); due days
    are the tenant's (or `tz`'s)."""
    zone = get_settings().zone_for(namespace, tz)
    with read_scope(namespace) as db:
        return _listing(task_candidates(db, namespace, user_id, limit, zone))
