"""Chunks of live turns for the LLM (R60, R61): evented sessions reach the chunk judge too.

Turns that arrive as events are captured turn by turn at ingest (deterministic key
moments); with an LLM endpoint configured they are also gathered per session, in the
ingest transaction, into chunks as sync makes them (10 messages, or the next message more
than 5 minutes after the chunk's first: `continuum.capture.chunking`). The session row
keeps the open chunk (`details.llm_pending`: message ids and times, never content); a
chunk that closes, and the open one when the session has ended, is returned for the
caller to send to the `extract` queue after the commit. The session row is locked by the
ingest's upsert, so concurrent batches of one session take turns and claim each message
once.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session as DbSession

from continuum.capture.chunking import DEFAULT_MAX_MESSAGES, chunk_messages
from continuum.contract.events import TurnEvent
from continuum.store.models import Session

PENDING_KEY = "llm_pending"


@dataclass(frozen=True)
class _Pending:
    message_id: str
    created_at: datetime


@dataclass(frozen=True)
class LiveChunk:
    namespace: str
    session_id: str
    message_ids: list[str]


def claim_chunks(
    db: DbSession, turns: list[TurnEvent], ended: set[tuple[str, str]]
) -> list[LiveChunk]:
    """Add the conversation turns to their session's open chunk; return the chunks that
    closed (all of a session in `ended` or already ended)."""
    fresh: dict[tuple[str, str], list[_Pending]] = defaultdict(list)
    for turn in turns:
        if turn.role in ("user", "assistant"):
            fresh[(turn.namespace, turn.session_id)].append(
                _Pending(turn.effective_message_id, turn.ts)
            )
    closed: list[LiveChunk] = []
    for namespace, session_id in sorted(fresh.keys() | ended):
        session = db.scalar(
            select(Session)
            .where(Session.namespace == namespace, Session.session_id == session_id)
            .with_for_update()
        )
        if session is None:
            continue
        known = [
            _Pending(message_id, datetime.fromisoformat(at))
            for message_id, at in session.details.get(PENDING_KEY, [])
        ]
        seen = {p.message_id for p in known}
        pending = known + [p for p in fresh[(namespace, session_id)] if p.message_id not in seen]
        if not pending:
            continue
        chunks = chunk_messages(pending)
        finished = (namespace, session_id) in ended or session.status == "ended"
        open_chunk = not finished and len(chunks[-1]) < DEFAULT_MAX_MESSAGES
        keep = chunks.pop() if open_chunk else []
        closed += [LiveChunk(namespace, session_id, [p.message_id for p in c]) for c in chunks]
        session.details = {
            **session.details,
            PENDING_KEY: [[p.message_id, p.created_at.isoformat()] for p in keep],
        }
    return closed
