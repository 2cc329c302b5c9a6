"""User preferences (R7): the active `preference` memories, read as key → value.

A preference is a memory of kind `preference` with a key and a claim value, so a newer value
supersedes the older one like any claim (R24). Its category is the one it was set with, or
follows from its key (`rule_*`, `favorite_*`, settings such as `volume_level`...).
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import func, or_, select

from continuum.domain.records import Preference
from continuum.domain.text import snake
from continuum.memory.writer import WriteScope, explicit_candidate, store_memories
from continuum.store.engine import session_scope
from continuum.store.models import Memory
from continuum.store.reads import read_scope

_PREFIX_CATEGORIES = (
    ("rule_", "assistant_rules"),
    ("favorite_", "favorites"),
    ("likes_", "likes"),
    ("preferred_", "choices"),
)
SETTING_KEYS = frozenset({"volume_level", "brightness_level", "font_size", "speech_rate"})


def category_of(key: str | None, details: dict[str, Any]) -> str:
    """The stored category, else one that follows from the key, else `general`."""
    if details.get("category"):
        return str(details["category"])
    key = (key or "").lower()
    if key in SETTING_KEYS:
        return "settings"
    return next((cat for prefix, cat in _PREFIX_CATEGORIES if key.startswith(prefix)), "general")


def _preference(memory: Memory) -> Preference:
    confirmed = memory.details.get("last_confirmed")
    return Preference(
        memory_id=memory.id,
        user_id=memory.user_id,
        category=category_of(memory.key, memory.details),
        key=memory.key or "",
        value=memory.claim_value or memory.content,
        content=memory.content,
        confidence=memory.confidence,
        learned_from={
            "provenance": memory.provenance,
            "channel": memory.channel,
            "session_id": memory.session_id,
            "source_message_ids": list(memory.source_message_ids),
        },
        last_confirmed=datetime.fromisoformat(confirmed) if confirmed else memory.created_at,
        private=memory.private,
    )


def _query(namespace: str, user_id: str | None, include_private: bool) -> Any:
    stmt = select(Memory).where(
        Memory.namespace == namespace,
        Memory.kind == "preference",
        Memory.status == "active",
        Memory.key.is_not(None),
    )
    if user_id:
        stmt = stmt.where(or_(Memory.user_id == user_id, Memory.user_id.is_(None)))
    if not include_private:
        stmt = stmt.where(Memory.private.is_(False))
    return stmt.order_by(Memory.created_at.desc(), Memory.id.desc())


def get_preferences(
    namespace: str,
    user_id: str | None = None,
    category: str | None = None,
    *,
    include_private: bool = False,
) -> list[Preference]:
    """Every active preference (newest per key), optionally of one category, sorted by key."""
    with read_scope(namespace) as db:
        found = [_preference(m) for m in db.scalars(_query(namespace, user_id, include_private))]
    newest: dict[str, Preference] = {}
    for pref in found:
        newest.setdefault(pref.key.lower(), pref)
    return sorted(
        (p for p in newest.values() if category is None or p.category == category),
        key=lambda p: (p.category, p.key),
    )


def get_preference(
    namespace: str, key: str, user_id: str | None = None, *, include_private: bool = False
) -> Preference | None:
    """The active preference under `key` (case-insensitive), or None."""
    stmt = _query(namespace, user_id, include_private).where(func.lower(Memory.key) == snake(key))
    with read_scope(namespace) as db:
        memory = db.scalars(stmt.limit(1)).first()
        return _preference(memory) if memory else None


def set_preference(
    namespace: str,
    key: str,
    value: str,
    *,
    user_id: str | None = None,
    category: str | None = None,
    confidence: float = 1.0,
    channel: str | None = None,
    session_id: str | None = None,
) -> Preference:
    """Set a preference as the user stated it (trust user_explicit): the new value supersedes
    the old one, the same value reinforces it."""
    ctx = WriteScope(namespace, session_id, user_id, channel, datetime.now(UTC))
    candidate = explicit_candidate(
        "preference",
        snake(key),
        value,
        confidence=confidence,
        provenance="user_explicit",
        source_id=f"set:{uuid.uuid4().hex}",
        session_id=session_id,
        details={"category": category} if category else None,
    )
    with session_scope() as db:
        store_memories(db, [(ctx, candidate)])
    found = get_preference(namespace, candidate.key or key, user_id, include_private=True)
    if found is None:  # only possible if a concurrent writer removed it meanwhile
        raise LookupError(f"preference {key!r} was not stored")
    return found
