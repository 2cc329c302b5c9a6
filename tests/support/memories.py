"""Memories and tasks written straight to the store through the real write path, dated
relative to NOW (a fixed Tuesday), for the recall and CLI tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import text

from continuum.domain.memory import MemoryCandidate
from continuum.memory.writer import WriteScope, store_candidates
from continuum.store.engine import session_scope

NOW = datetime(2026, 11, 24, 9, 30, tzinfo=UTC)  # a Tuesday


def remember(
    content: str,
    kind: str = "fact",
    *,
    importance: int = 6,
    days_ago: float = 1,
    namespace: str = "pearl",
    user_id: str | None = "jason",
    tags: tuple[str, ...] = (),
    status: str = "active",
    private: bool = False,
    details: dict[str, Any] | None = None,
    source: str | None = None,
    channel: str = "voice",
) -> int:
    """Store one memory written `days_ago` days before NOW; returns its id."""
    candidate = MemoryCandidate(
        kind=kind,  # type: ignore[arg-type]
        content=content,
        tags=list(tags),
        importance=importance,
        confidence=0.8,
        provenance="user_explicit",
        source_message_ids=[source or f"src-{abs(hash(content)) % 10**8}"],
        details=details or {},
    )
    ctx = WriteScope(namespace, "s1", user_id, channel, NOW - timedelta(days=days_ago))
    with session_scope() as db:
        (memory_id,) = store_candidates(db, [(ctx, candidate)])
        db.execute(
            text("UPDATE memories SET status = :s, private = :p WHERE id = :id"),
            {"s": status, "p": private, "id": memory_id},
        )
    return memory_id


def add_task(title: str, status: str = "pending", user_id: str | None = "jason") -> None:
    """A task of tenant `pearl`, created two days before NOW."""
    with session_scope() as db:
        db.execute(
            text(
                "INSERT INTO tasks (namespace, user_id, title, status, created_at) "
                "VALUES ('pearl', :u, :t, :s, :c)"
            ),
            {"u": user_id, "t": title, "s": status, "c": NOW - timedelta(days=2)},
        )
