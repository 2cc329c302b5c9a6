"""`events` queue: persist a batch of producer events."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from continuum.config import get_settings
from continuum.contract import ledger
from continuum.contract.client import MemoryClient
from continuum.contract.dispatch import producer, send
from continuum.contract.queues import (
    COMPACTION_TAKEAWAYS,
    EXTRACT_CHUNK,
    FINISH_SESSION,
    INGEST_EVENTS,
    REDELIVER_EVENTS,
    REFINE_HANDOFF,
)
from continuum.pipeline import redelivery
from continuum.pipeline.ingest import ingest_batch
from continuum.redis_client import get_broker_redis
from tasks.embed import schedule_embedding
from workers.app import app
from workers.base import ReliableTask


class IngestTask(ReliableTask):
    """Ingest touches its batch's ledger entry when it starts it and while it waits to retry."""

    def on_retry(self, exc: Exception, task_id: str, args: Any, kwargs: Any, einfo: Any) -> None:
        ledger.touch(get_broker_redis(), task_id)


@app.task(name=INGEST_EVENTS, base=IngestTask, bind=True)
def ingest_events(self: IngestTask, payloads: list[Any]) -> dict[str, Any]:
    ledger.touch(get_broker_redis(), self.request.id)  # started: no restart recovery copies it
    result = ingest_batch(payloads, task_id=self.request.id)
    ledger.settle(get_broker_redis(), self.request.id)
    if result.messages_inserted or result.memories_stored:
        schedule_embedding()
    for chunk in result.chunks:  # before the session ends: a private buffer is cleared then
        send(EXTRACT_CHUNK, chunk.namespace, chunk.session_id, chunk.message_ids, True)
    for payload in result.compactions:
        send(COMPACTION_TAKEAWAYS, payload)
    for request in result.handoffs:  # before the session ends: its buffer is cleared then
        send(REFINE_HANDOFF, request)
    for payload in result.finish:
        send(FINISH_SESSION, payload)
    return asdict(result)


@app.task(name=REDELIVER_EVENTS, base=ReliableTask, bind=True)
def redeliver_events(self: ReliableTask) -> dict[str, Any]:
    """Re-publish event batches that never reached a worker (see continuum.contract.ledger)."""
    client = MemoryClient(app=producer())
    result = redelivery.sweep(get_broker_redis(), client.emit_many, get_settings().inflight_grace_s)
    return asdict(result)
