"""Session lifecycle tasks: session end and its LLM summary (extract queue), the idle sweep
and ending sessions that never sent session_end (maintenance, beat), and narrative file
appends (narrative queue, on the host that has the workspace files)."""

from __future__ import annotations

import time
from dataclasses import asdict
from datetime import datetime
from typing import Any

from continuum.contract.dispatch import send
from continuum.contract.events import SessionEndEvent, parse_event
from continuum.contract.queues import (
    END_IDLE_SESSIONS,
    FINISH_SESSION,
    NARRATIVE_APPEND,
    SUMMARIZE_SESSION,
    SWEEP_IDLE,
)
from continuum.inference.llm import LLMUnavailable, get_llm
from continuum.pipeline import narrative
from continuum.pipeline.ending import end_idle_sessions
from continuum.pipeline.llm_summary import summarize_with_llm
from continuum.pipeline.sessions import finish_session, sweep_idle
from tasks.embed import schedule_embedding
from workers.app import app
from workers.base import ReliableTask, TransientError

WAIT_STEP_S = 2.0  # how often a session end looks again for the turns it announced


@app.task(name=FINISH_SESSION, base=ReliableTask, bind=True)
def finish_session_task(
    self: ReliableTask,
    payload: dict[str, Any],
    waited_s: float = 0.0,
    waiting_since: float | None = None,
) -> dict[str, Any]:
    end = parse_event(payload)
    assert isinstance(end, SessionEndEvent)
    now = time.time()
    if waiting_since is not None:  # messages published before it existed carry waited_s only
        waited_s = now - waiting_since
    result = finish_session(end, waited_s=waited_s)
    if result.status == "waiting":
        # The wait is bounded by CONTINUUM_SESSION_END_WAIT_S of wall-clock time (checked by
        # finish_session), not by the task's retry budget, which is kept for faults (Celery
        # reads max_retries=None as "the task's default", hence one more than so far).
        raise self.retry(
            args=[payload],
            kwargs={"waiting_since": now - waited_s},
            countdown=WAIT_STEP_S,
            max_retries=self.request.retries + 1,
        )
    if result.narrative:
        send(NARRATIVE_APPEND, result.narrative)
    if result.summary_id is not None and get_llm() is not None:
        send(SUMMARIZE_SESSION, end.namespace, end.session_id, result.summary_id)
    if result.memory_ids:
        schedule_embedding()
    return asdict(result)


@app.task(name=SUMMARIZE_SESSION, base=ReliableTask, bind=True)
def summarize_session_task(
    self: ReliableTask, namespace: str, session_id: str, summary_id: int
) -> dict[str, Any]:
    try:
        result = summarize_with_llm(namespace, session_id, summary_id, get_llm())
    except LLMUnavailable as exc:
        # The deterministic summary stands meanwhile; a retry only buys the LLM's.
        raise TransientError(str(exc)) from exc
    if result.memory_ids:
        schedule_embedding()
    return asdict(result)


@app.task(name=SWEEP_IDLE, base=ReliableTask, bind=True)
def sweep_idle_task(self: ReliableTask) -> dict[str, Any]:
    stored = sweep_idle()
    if stored:
        schedule_embedding()
    return {"snapshots": stored}


@app.task(name=END_IDLE_SESSIONS, base=ReliableTask, bind=True)
def end_idle_sessions_task(self: ReliableTask) -> dict[str, int]:
    return {"sessions_ended": end_idle_sessions()}


@app.task(name=NARRATIVE_APPEND, base=ReliableTask, bind=True)
def narrative_append_task(self: ReliableTask, entry: dict[str, Any]) -> None:
    narrative.record_session(
        entry["namespace"],
        datetime.fromisoformat(entry["at"]),
        entry["channel"],
        entry["line"],
        entry["summary"],
        entry.get("user_id"),  # absent from a message sent before it was added
    )
