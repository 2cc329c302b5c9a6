"""`extract` queue: memories from a chunk of messages (deterministic + LLM), the LLM's
takeaways of a pre-compaction dump, and the LLM's view of a turn that may hand off."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from continuum.contract.events import PreCompactionEvent, parse_event
from continuum.contract.queues import COMPACTION_TAKEAWAYS, EXTRACT_CHUNK, REFINE_HANDOFF
from continuum.inference.llm import LLMUnavailable, get_llm
from continuum.pipeline.extraction import compaction_takeaways, extract_chunk
from continuum.pipeline.handoffs import handoff_with_llm
from tasks.embed import schedule_embedding
from workers.app import app
from workers.base import ReliableTask, TransientError


@app.task(name=EXTRACT_CHUNK, base=ReliableTask, bind=True)
def extract_chunk_task(
    self: ReliableTask, namespace: str, session_id: str, message_ids: list[str], live: bool = False
) -> dict[str, Any]:
    try:
        result = extract_chunk(namespace, session_id, message_ids, llm=get_llm(), live=live)
    except LLMUnavailable as exc:
        # Deterministic memories are stored; retry only buys the LLM's (idempotent) extras.
        raise TransientError(str(exc)) from exc
    finally:
        schedule_embedding()
    return asdict(result)


@app.task(name=COMPACTION_TAKEAWAYS, base=ReliableTask, bind=True)
def compaction_takeaways_task(self: ReliableTask, payload: dict[str, Any]) -> dict[str, Any]:
    event = parse_event(payload)
    assert isinstance(event, PreCompactionEvent)
    try:
        result = compaction_takeaways(event, get_llm())
    except LLMUnavailable as exc:
        raise TransientError(str(exc)) from exc
    if result.llm:
        schedule_embedding()
    return asdict(result)


@app.task(name=REFINE_HANDOFF, base=ReliableTask, bind=True)
def refine_handoff_task(self: ReliableTask, request: dict[str, Any]) -> dict[str, Any]:
    # No retry on LLM failures: the rule's handoff stands, and a handoff lives 10 minutes.
    return asdict(handoff_with_llm(request, get_llm()))
