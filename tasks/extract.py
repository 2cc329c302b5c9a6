"""`extract` queue: memories from a chunk of stored messages (deterministic + LLM)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from continuum.contract.queues import EXTRACT_CHUNK
from continuum.inference.llm import LLMUnavailable, get_llm
from continuum.pipeline.extraction import extract_chunk
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
