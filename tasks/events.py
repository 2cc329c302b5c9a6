"""`events` queue: persist a batch of producer events."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from continuum.dispatch import send
from continuum.ingest import ingest_batch
from continuum.queues import FINISH_SESSION, INGEST_EVENTS
from tasks.embed import schedule_embedding
from workers.app import app
from workers.base import ReliableTask


@app.task(name=INGEST_EVENTS, base=ReliableTask, bind=True)
def ingest_events(self: ReliableTask, payloads: list[Any]) -> dict[str, Any]:
    result = ingest_batch(payloads, task_id=self.request.id)
    if result.messages_inserted or result.memories_stored:
        schedule_embedding()
    for payload in result.finish:
        send(FINISH_SESSION, payload)
    return asdict(result)
