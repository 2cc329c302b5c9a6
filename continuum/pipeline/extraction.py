"""The `extract` stage: memories from a chunk of messages (R60, R61, R62).

A synced chunk gets deterministic key-moment detection first (the fallback and the
baseline); a live chunk (evented turns, `continuum.pipeline.live_chunks`) had it turn by turn
at ingest. When an LLM endpoint is configured it also judges the chunk (category +
importance; stored only if ≥ 5) and proposes compact memories; a key an active memory of
the tenant already has is never stored again, and for a live chunk neither is what
deterministic capture already stored (same kind from the same message, or a key stored
during the session by capture, a dump or a memory tool). A privacy-mode tenant's chunk is read from the Redis
transcript buffer. A pre-compaction dump gets the LLM's takeaways the same way, as a
follow-up of the deterministic dump that ingest stored. LLM failures never lose the chunk: an unavailable
endpoint raises `LLMUnavailable` after the deterministic memories are stored, so the task
retries the LLM part later (idempotent keys make the rerun harmless); an unusable answer
stores nothing from the LLM, and neither does a tenant past its daily token budget.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select

from continuum.capture import STORE_THRESHOLD
from continuum.capture.topics import topic_slug
from continuum.config import get_settings
from continuum.contract.events import PreCompactionEvent
from continuum.domain.memory import CaptureTurn, MemoryCandidate
from continuum.inference.llm import LLMBadOutput, LLMOverBudget, OpenAICompatibleLLM
from continuum.inference.prompts import chunk, takeaways
from continuum.inference.prompts.base import numbered_lines
from continuum.memory.writer import WriteScope, store_candidates
from continuum.pipeline.sessions import compaction_turns, key_moments, not_stored, session_turns
from continuum.pipeline.turns import from_message
from continuum.store.engine import session_scope
from continuum.store.models import Message, Session


@dataclass
class ExtractResult:
    messages: int = 0
    deterministic: int = 0
    llm: int = 0
    # off | stored | below_threshold | already_captured | none | bad_output | over_budget
    llm_status: str = "off"
    already_captured: int = 0  # LLM memories already stored (their key, or by capture)


def load_turns(namespace: str, session_id: str, message_ids: list[str]) -> list[CaptureTurn]:
    """The chunk's user/assistant turns in time order (privacy mode: from the buffer)."""
    with session_scope() as db:
        if get_settings().is_private(namespace):
            session = db.scalar(
                select(Session).where(
                    Session.namespace == namespace, Session.session_id == session_id
                )
            )
            owner = {"user_id": session.user_id, "channel": session.channel} if session else {}
            return [
                t.model_copy(update=owner)
                for t in session_turns(db, namespace, session_id)
                if t.message_id in message_ids
            ]
        rows = db.scalars(
            select(Message)
            .where(
                Message.namespace == namespace,
                Message.session_id == session_id,
                Message.message_id.in_(message_ids),
                Message.role.in_(("user", "assistant")),
            )
            .order_by(Message.created_at, Message.id)
        ).all()
        return [from_message(row) for row in rows]


def cited_candidates(
    memories: Sequence[chunk.LLMMemory],
    turns: list[CaptureTurn],
    trigger: str,
    details: dict[str, Any] | None = None,
) -> list[MemoryCandidate]:
    """Memory candidates of the LLM's memories, with the ids of the lines each cites; one
    that cites no line we gave it is not trustworthy and is dropped."""
    candidates = []
    for memory in memories:
        sources = [turns[n].message_id for n in memory.lines if 0 <= n < len(turns)]
        if not sources:
            continue
        candidates.append(
            MemoryCandidate(
                kind=memory.kind,
                key=memory.key,
                content=memory.content,
                tags=[f"topic:{topic_slug(memory.content)}", "source:llm"],
                importance=memory.importance,
                confidence=memory.confidence,
                provenance="inference",
                source_message_ids=sources,
                trigger=trigger,
                details=dict(details or {}),
            )
        )
    return candidates


def llm_candidates(
    llm: OpenAICompatibleLLM, namespace: str, turns: list[CaptureTurn]
) -> list[MemoryCandidate]:
    """Judge and extract with the LLM; [] when the chunk is below the storing threshold."""
    verdict = llm.ask(
        chunk.PROMPT,
        numbered_lines(turns),
        namespace=namespace,
        session_id=turns[0].session_id,
    )
    if verdict.importance < STORE_THRESHOLD:
        return []
    details = {"category": verdict.category, "chunk_importance": verdict.importance}
    return cited_candidates(verdict.memories, turns, "llm_chunk", details)


def _no_answer_status(exc: LLMBadOutput | LLMOverBudget) -> str:
    """The `llm_status` of a chunk whose LLM gave nothing to store."""
    return "over_budget" if isinstance(exc, LLMOverBudget) else "bad_output"


def extract_chunk(
    namespace: str,
    session_id: str,
    message_ids: list[str],
    llm: OpenAICompatibleLLM | None = None,
    live: bool = False,
) -> ExtractResult:
    """Store memories for one chunk (`live`: evented turns, captured at ingest already).
    Raises LLMUnavailable (after storing the deterministic memories) when the LLM should be
    retried later."""
    turns = load_turns(namespace, session_id, message_ids)
    result = ExtractResult(messages=len(turns))
    if not turns:
        return result
    first, last = turns[0], turns[-1]
    ctx = WriteScope(namespace, session_id, first.user_id, first.channel, last.created_at)
    if not live:
        with session_scope() as db:
            stored = store_candidates(
                db, [(ctx, c) for c in key_moments(turns, "chunk", namespace)]
            )
        result.deterministic = len(stored)
    if llm is None:
        return result
    try:
        from_llm = llm_candidates(llm, namespace, turns)
    except (LLMBadOutput, LLMOverBudget) as exc:
        result.llm_status = _no_answer_status(exc)
        return result
    with session_scope() as db:
        fresh = not_stored(db, namespace, session_id, from_llm, live)
    result.already_captured = len(from_llm) - len(fresh)
    from_llm = fresh
    if not from_llm:
        result.llm_status = "already_captured" if result.already_captured else "below_threshold"
        return result
    with session_scope() as db:
        result.llm = len(store_candidates(db, [(ctx, c) for c in from_llm]))
    result.llm_status = "stored"
    return result


def compaction_takeaways(
    event: PreCompactionEvent, llm: OpenAICompatibleLLM | None
) -> ExtractResult:
    """The LLM's takeaways of a compaction (R28), beside the deterministic dump ingest
    stored: idempotent per compaction id; what capture or the dump already stored from the
    same messages is skipped. Raises LLMUnavailable when the LLM should be retried later."""
    with session_scope() as db:
        turns = compaction_turns(db, event)
    result = ExtractResult(messages=len(turns))
    if llm is None or not turns:
        return result
    try:
        answer = llm.ask(
            takeaways.PROMPT, numbered_lines(turns), namespace=event.namespace,
            session_id=event.session_id,
        )  # fmt: skip
    except (LLMBadOutput, LLMOverBudget) as exc:
        result.llm_status = _no_answer_status(exc)
        return result
    trigger = f"pre_compaction_llm:{event.compaction_id}"
    found = cited_candidates(answer.takeaways, turns, trigger)
    with session_scope() as db:
        fresh = not_stored(db, event.namespace, event.session_id, found)
    result.already_captured = len(found) - len(fresh)
    ctx = WriteScope(event.namespace, event.session_id, event.user_id, event.channel, event.ts)
    with session_scope() as db:
        result.llm = len(store_candidates(db, [(ctx, c) for c in fresh]))
    if result.llm:
        result.llm_status = "stored"
    else:
        result.llm_status = "already_captured" if result.already_captured else "none"
    return result
