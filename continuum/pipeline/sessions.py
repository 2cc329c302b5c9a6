"""What happens around a session (R25, R28, R9, R45, R6): idle snapshots, pre-compaction
dumps and the session-end write path.

At most one snapshot per idle period: the period is the session's last activity time in
Postgres; the session row is locked while a snapshot is made and remembers the period it
covered, so duplicate or concurrent idle signals (runtime event and server sweep) for the
same period store nothing twice.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session as DbSession

from continuum.capture import detect_key_moments, session_snapshot, summarize_session
from continuum.capture.topics import Vocabulary, topic_tags
from continuum.config import get_settings
from continuum.contract.events import ChatMessage, PreCompactionEvent, SessionEndEvent
from continuum.domain.kinds import KIND_SPECS
from continuum.domain.memory import CaptureTurn, MemoryCandidate, SessionSummary
from continuum.ephemeral.notify import notify_memory_changed
from continuum.ephemeral.sessions import idle_sessions, take_idle
from continuum.ephemeral.turns import add_stored_keys, clear_session, stored_keys, transcript
from continuum.memory.writer import WriteScope, store_candidates
from continuum.pipeline.turns import from_message
from continuum.store import metrics
from continuum.store.engine import session_scope
from continuum.store.models import Memory, Message, Session

log = logging.getLogger(__name__)
PERIOD_KEY = "snapshot_period_end"
VOCABULARY_TURNS = 500  # a summary's topics are weighed against the tenant's latest turns
VOCABULARY_CHARS = 1000  # of each (a pasted log says little about what the tenant talks about)


def session_turns(
    db: DbSession,
    namespace: str,
    session_id: str,
    after: datetime | None = None,
    channel: str | None = None,
) -> list[CaptureTurn]:
    """The session's user/assistant turns after `after`, in event-time order: from Postgres,
    or from the Redis transcript buffer when the tenant is in privacy mode."""
    if get_settings().is_private(namespace):
        return [
            CaptureTurn(
                message_id=turn.message_id,
                role="assistant" if turn.speaker == "assistant" else "user",
                content=turn.summary,
                created_at=datetime.fromisoformat(turn.timestamp),
                session_id=session_id,
                channel=channel,
            )
            for turn in transcript(namespace, session_id)
            if turn.speaker in ("user", "assistant")
            and (after is None or datetime.fromisoformat(turn.timestamp) > after)
        ]
    stmt = (
        select(Message)
        .where(
            Message.namespace == namespace,
            Message.session_id == session_id,
            Message.role.in_(("user", "assistant")),
        )
        .order_by(Message.created_at, Message.id)
    )
    if after is not None:
        stmt = stmt.where(Message.created_at > after)
    return [from_message(row) for row in db.scalars(stmt)]


def _lock_session(db: DbSession, namespace: str, session_id: str) -> Session | None:
    return db.scalar(
        select(Session)
        .where(Session.namespace == namespace, Session.session_id == session_id)
        .with_for_update()
    )


def _context(session: Session, at: datetime | None) -> WriteScope:
    return WriteScope(session.namespace, session.session_id, session.user_id, session.channel, at)


# -- idle (R25) ---------------------------------------------------------------------
def snapshot_idle(db: DbSession, namespace: str, session_id: str) -> int | None:
    """Store one session snapshot for the current idle period if anything happened since
    the last one; returns the new memory id, or None."""
    session = _lock_session(db, namespace, session_id)
    if session is None or session.last_activity_at is None:
        return None
    period_end = session.last_activity_at
    covered = session.details.get(PERIOD_KEY)
    after = datetime.fromisoformat(covered) if covered else None
    if after is not None and after >= period_end:
        return None  # nothing new since the last snapshot
    turns = session_turns(db, namespace, session_id, after, session.channel)
    session.details = {**session.details, PERIOD_KEY: period_end.isoformat()}
    snapshot = session_snapshot(turns, trigger=f"idle:{period_end.isoformat()}")
    if snapshot is None:
        return None
    ids = store_candidates(db, [(_context(session, period_end), snapshot)])
    return ids[0] if ids else None


def sweep_idle(idle_ms: int | None = None) -> list[int]:
    """Server-side idle detection: snapshot every session idle for longer than `idle_ms`."""
    stored = []
    for idle in idle_sessions(idle_ms or get_settings().idle_ms):
        if not take_idle(idle):
            continue  # a newer turn arrived meanwhile
        with session_scope() as db:
            memory_id = snapshot_idle(db, idle.namespace, idle.session_id)
        if memory_id is not None:
            stored.append(memory_id)
            notify_memory_changed(idle.namespace, idle.session_id, [memory_id], "idle")
    return stored


# -- pre-compaction (R28) -----------------------------------------------------------
def _chat_turns(messages: list[ChatMessage], session_id: str, prefix: str) -> list[CaptureTurn]:
    turns = []
    for index, message in enumerate(messages):
        content = message.content
        if isinstance(content, list):  # OpenAI content parts: keep the text ones
            content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
        if message.role not in ("user", "assistant") or not content or not message.ts:
            continue
        turns.append(
            CaptureTurn(
                message_id=message.message_id or f"{prefix}:{index:04d}",
                role=message.role,
                content=content,
                created_at=message.ts,
                session_id=session_id,
            )
        )
    return turns


def key_moments(
    turns: list[CaptureTurn], trigger: str, namespace: str | None = None
) -> list[MemoryCandidate]:
    """Each turn's key moments; with the tenant's `namespace`, also its statements, unless
    the tenant is in privacy mode (they are its words)."""
    said = namespace is not None and not get_settings().is_private(namespace)
    found: list[MemoryCandidate] = []
    previous = None
    for turn in turns:
        found += [
            c.model_copy(update={"trigger": trigger})
            for c in detect_key_moments(turn, previous=previous, with_statements=said)
        ]
        previous = turn
    return found


def compaction_turns(db: DbSession, event: PreCompactionEvent) -> list[CaptureTurn]:
    """The turns a compaction drops: those the event carries, else the session's."""
    prefix = f"pre_compaction:{event.compaction_id}"
    return _chat_turns(event.turns, event.session_id, prefix) or session_turns(
        db, event.namespace, event.session_id, channel=event.channel
    )


def pre_compaction_dump(db: DbSession, event: PreCompactionEvent) -> list[int]:
    """Key takeaways as small structured memories plus one snapshot, idempotent per
    compaction id (the trigger carries it, so a resent dump produces the same keys)."""
    trigger = f"pre_compaction:{event.compaction_id}"
    turns = compaction_turns(db, event)
    candidates = [c for c in key_moments(turns, trigger) if KIND_SPECS[c.kind].pre_compaction]
    snapshot = session_snapshot(turns, trigger=trigger)
    if snapshot is not None:
        candidates.append(snapshot)
    ctx = WriteScope(event.namespace, event.session_id, event.user_id, event.channel, event.ts)
    add_stored_keys(event.namespace, event.session_id, [c.key for c in candidates if c.key])
    return store_candidates(db, [(ctx, c) for c in candidates])


# -- session end (R9, R45, R6) --------------------------------------------------------
@dataclass
class SessionEndResult:
    status: str  # finished | skipped | waiting
    reason: str = ""
    summary_id: int | None = None
    memory_ids: list[int] = field(default_factory=list)
    narrative: dict[str, Any] | None = None


def end_conditions(end: SessionEndEvent, started_at: datetime | None) -> str | None:
    """Why a session-end gets no extraction (R45), or None when it qualifies."""
    if not end.connected:
        return "never connected"
    if end.is_reminder:
        return "automated reminder call"
    duration = end.duration_s
    if duration is None and started_at is not None:
        duration = (end.ended_at - started_at).total_seconds()
    minimum = get_settings().min_session_s
    if duration is not None and duration < minimum:
        return f"lasted {duration:.0f}s, under {minimum:.0f}s"
    return None


def _summary_candidate(summary: SessionSummary, source_ids: list[str]) -> MemoryCandidate:
    details = summary.model_dump(mode="json", exclude={"summary"})
    return MemoryCandidate(
        kind="conversation_summary",
        content=summary.summary[:1200],
        tags=[
            f"session:{summary.session_id}",
            "source:system",
            *topic_tags(summary.topics),
        ],
        importance=6,
        confidence=0.8,
        provenance="system",
        source_message_ids=source_ids,
        trigger="session_end",
        details=details,
    )


def tenant_vocabulary(db: DbSession, namespace: str) -> Vocabulary:
    """The tenant's own vocabulary: its words over its latest stored turns (none for a
    privacy-mode tenant, whose turns are not stored)."""
    # A sealed turn is opened whole (its ciphertext cannot be cut in SQL), then cut.
    encrypted = get_settings().is_encrypted(namespace)
    content = Message.content if encrypted else func.left(Message.content, VOCABULARY_CHARS)
    recent = db.scalars(
        select(content)
        .where(Message.namespace == namespace, Message.role.in_(("user", "assistant")))
        .order_by(Message.created_at.desc())
        .limit(VOCABULARY_TURNS)
    )
    return Vocabulary(text[:VOCABULARY_CHARS] for text in recent)


def existing_keys(db: DbSession, namespace: str, keys: set[str]) -> set[str]:
    """Which of `keys` (lower case) an active memory of the tenant has."""
    if not keys:
        return set()
    rows = db.scalars(
        select(func.lower(Memory.key)).where(
            Memory.namespace == namespace,
            Memory.status == "active",
            func.lower(Memory.key).in_(keys),
        )
    )
    return set(rows)


def not_stored(
    db: DbSession,
    namespace: str,
    session_id: str,
    candidates: list[MemoryCandidate],
    live: bool = True,
) -> list[MemoryCandidate]:
    """The candidates whose key no active memory has (nor an earlier candidate), and, for a
    live session, that the session has not stored already (the same kind from the same
    message, or a key it stored: capture, a dump, a memory tool)."""
    taken = existing_keys(db, namespace, {c.key.lower() for c in candidates if c.key})
    captured = captured_sources(db, namespace, session_id) if live else set()
    if live:
        taken |= stored_keys(namespace, session_id)
    fresh = []
    for candidate in candidates:
        key = candidate.key.lower() if candidate.key else None
        if key in taken or any(
            (candidate.kind, m) in captured for m in candidate.source_message_ids
        ):
            continue
        if key:
            taken.add(key)
        fresh.append(candidate)
    return fresh


def captured_sources(db: DbSession, namespace: str, session_id: str) -> set[tuple[str, str]]:
    """(kind, source message id) of every memory already captured from this session."""
    rows = db.execute(
        select(Memory.kind, func.unnest(Memory.source_message_ids)).where(
            Memory.namespace == namespace, Memory.session_id == session_id
        )
    )
    return {(kind, message_id) for kind, message_id in rows}


def finish_session(end: SessionEndEvent, waited_s: float = 0.0) -> SessionEndResult:
    """Summarize → conversation summary → extraction → (narrative line) → clear state."""
    settings = get_settings()
    with session_scope() as db:
        session = _lock_session(db, end.namespace, end.session_id)
        if session is None:
            return SessionEndResult("skipped", "unknown session")
        if session.details.get("finished"):
            return SessionEndResult("skipped", "already finished")
        turns = session_turns(db, end.namespace, end.session_id, channel=end.channel)
        if not turns and end.messages:
            turns = _chat_turns(end.messages, end.session_id, f"{end.session_id}:end")
        announced = end.message_count or 0
        if len(turns) < announced and waited_s < settings.session_end_wait_s:
            return SessionEndResult("waiting", f"{len(turns)}/{announced} turns arrived")
        reason = end_conditions(end, session.started_at)
        result = SessionEndResult("skipped", reason) if reason else SessionEndResult("finished")
        took = None  # seconds to summarize, when it did
        if reason is None and turns:
            started = time.monotonic()
            result = _write_session(db, session, end, turns)
            took = time.monotonic() - started
        session.details = {**session.details, "finished": result.status, "reason": result.reason}
        remembered = db.scalar(
            select(func.count())
            .select_from(Memory)
            .where(Memory.namespace == end.namespace, Memory.session_id == end.session_id)
        )
    if took is not None:  # R48, once committed
        metrics.observe(metrics.SUMMARIZATION_SECONDS, took)
    metrics.observe(metrics.SESSION_MEMORIES, remembered or 0)
    clear_session(end.namespace, end.session_id, end.channel)
    if result.memory_ids:
        notify_memory_changed(end.namespace, end.session_id, result.memory_ids, "end", end.user_id)
    return result


def _write_session(
    db: DbSession, session: Session, end: SessionEndEvent, turns: list[CaptureTurn]
) -> SessionEndResult:
    summary = summarize_session(turns, tenant_vocabulary(db, end.namespace))
    ctx = _context(session, end.ended_at)
    summary_ids = store_candidates(
        db, [(ctx, _summary_candidate(summary, [t.message_id for t in turns]))]
    )
    # R45: never update existing memories here; skip keys that exist or were stored live.
    candidates = key_moments(turns, "session_end", end.namespace)
    fresh = not_stored(db, end.namespace, end.session_id, candidates)
    memory_ids = store_candidates(db, [(ctx, c) for c in fresh])
    line = summary.summary.split(". ")[0].rstrip(".")
    return SessionEndResult(
        "finished",
        summary_id=summary_ids[0] if summary_ids else None,
        memory_ids=summary_ids + memory_ids,
        narrative={
            "namespace": end.namespace,
            "at": end.ended_at.isoformat(),
            "channel": end.channel,
            "line": line,
            "summary": summary.summary,
            "user_id": session.user_id,  # whose key seals the entries (R47)
        },
    )
