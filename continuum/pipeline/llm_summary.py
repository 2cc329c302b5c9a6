"""The LLM session summary (R6, R9): a follow-up of session end, on the `extract` queue.

Session end writes the deterministic conversation summary first, under the session row lock
(`continuum.pipeline.sessions`). This follow-up, without that lock, asks the LLM for the
`session_summary` prompt (topics, decisions, action items with due times, key facts,
sentiment) and, once the answer validates, stores it as a new conversation summary that
supersedes the deterministic one, in one transaction. A redelivered or repeated run finds
the deterministic summary no longer active and does nothing; an invalid answer, or a
tenant past its daily token budget, keeps the deterministic summary. Privacy-mode tenants
are skipped: their turns are not in Postgres, and session end has cleared their buffer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select

from continuum.capture.topics import topic_tags
from continuum.config import get_settings
from continuum.domain.memory import MemoryCandidate
from continuum.inference.llm import LLMBadOutput, LLMOverBudget, OpenAICompatibleLLM
from continuum.inference.prompts import summary
from continuum.inference.prompts.base import numbered_lines
from continuum.memory.claims import supersede
from continuum.memory.writer import WriteScope, store_candidates
from continuum.pipeline.sessions import session_turns
from continuum.store.engine import session_scope
from continuum.store.models import Memory, Session

TRIGGER = "session_end_llm"


@dataclass
class LLMSummaryResult:
    status: str  # replaced | kept | skipped
    reason: str = ""
    memory_ids: list[int] = field(default_factory=list)


def _due(item: summary.ActionItem) -> str:
    return f"{item.text} (due {item.due})" if item.due else item.text


def summary_candidate(
    answer: summary.LLMSessionSummary, replaced: Memory, source_ids: list[str]
) -> MemoryCandidate:
    """The conversation summary memory for a validated answer; it keeps the deterministic
    one's session facts (channel, user, times, message count) and names what it replaces."""
    details: dict[str, Any] = {
        **replaced.details,
        "topics": answer.topics,
        "key_decisions": answer.decisions,
        "action_items": [_due(item) for item in answer.action_items],
        "actions": [item.model_dump() for item in answer.action_items],
        "key_facts": answer.key_facts,
        "sentiment": answer.sentiment,
        "source": "llm",
        "prompt": f"{summary.PROMPT.name}@{summary.PROMPT.version}",
        "replaces": replaced.id,
    }
    return MemoryCandidate(
        kind="conversation_summary",
        content=answer.summary,
        tags=[t for t in replaced.tags if not t.startswith(("topic:", "source:"))]
        + ["source:llm"]
        + topic_tags(answer.topics),
        importance=replaced.importance,
        confidence=0.8,
        provenance="inference",
        source_message_ids=source_ids,
        trigger=TRIGGER,
        details=details,
    )


def summarize_with_llm(
    namespace: str, session_id: str, summary_id: int, llm: OpenAICompatibleLLM | None
) -> LLMSummaryResult:
    """Replace the deterministic summary `summary_id` of a finished session with the LLM's.
    Raises `LLMUnavailable` (the task retries later; the deterministic summary stands)."""
    if llm is None:
        return LLMSummaryResult("skipped", "no LLM configured")
    if get_settings().is_private(namespace):
        return LLMSummaryResult("skipped", "privacy mode")
    with session_scope() as db:
        replaced = db.get(Memory, (summary_id, namespace))
        if replaced is None or replaced.status != "active":
            return LLMSummaryResult("skipped", "the deterministic summary is no longer active")
        session = db.scalar(
            select(Session).where(Session.namespace == namespace, Session.session_id == session_id)
        )
        turns = session_turns(db, namespace, session_id)
    if session is None or not turns:
        return LLMSummaryResult("skipped", "no turns")
    first, last = turns[0].created_at, turns[-1].created_at
    context = (
        f"The conversation ran from {first:%A %Y-%m-%d %H:%M} to {last:%A %Y-%m-%d %H:%M} UTC; "
        "resolve due times against these dates."
    )
    try:
        answer = llm.ask(
            summary.PROMPT,
            numbered_lines(turns),
            namespace=namespace,
            session_id=session_id,
            context=context,
        )
    except (LLMBadOutput, LLMOverBudget) as exc:
        return LLMSummaryResult("kept", str(exc)[:200])
    candidate = summary_candidate(answer, replaced, [t.message_id for t in turns])
    ctx = WriteScope(namespace, session_id, session.user_id, session.channel, replaced.created_at)
    with session_scope() as db:
        active = db.scalar(
            select(Memory.id)
            .where(Memory.namespace == namespace, Memory.id == summary_id)
            .where(Memory.status == "active")
            .with_for_update()
        )
        ids = store_candidates(db, [(ctx, candidate)]) if active else []
        if not ids:
            return LLMSummaryResult("skipped", "replaced meanwhile")
        supersede(db, namespace, summary_id, ids[0], TRIGGER)
    return LLMSummaryResult("replaced", memory_ids=ids)
