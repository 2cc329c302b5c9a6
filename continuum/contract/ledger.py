"""The in-flight ledger: no event batch is lost between the broker and a worker.

kombu's Redis transport takes a message off the queue with BRPOP and only then records it
as unacknowledged; a Redis shutdown between the two steps loses the message (seen in our
fault tests). So every batch a producer publishes is also written to this ledger (a hash
plus a time index, in the broker's Redis) and settled by the worker that processed it. A
sweep re-publishes batches that stayed unsettled past a grace period while the queue is
drained — only the events not already processed, which are idempotent anyway.

Producers only `record` (Redis); the database, which the sweep alone reads, is imported
inside it, so publishing an event never loads SQLAlchemy.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from typing import Any

from continuum.contract.queues import EVENTS
from continuum.redis_client import SyncRedis

ENTRIES = "continuum:inflight"
INDEX = "continuum:inflight:index"


def record(client: SyncRedis, batch_id: str, payloads: list[dict[str, Any]]) -> None:
    pipe = client.pipeline(transaction=True)
    pipe.hset(ENTRIES, batch_id, json.dumps(payloads))
    pipe.zadd(INDEX, {batch_id: time.time()})
    pipe.execute()


def touch(client: SyncRedis, batch_id: str) -> None:
    """A worker still holds the batch (it is waiting to retry): restart its grace period, so
    the sweep never publishes a second copy of a batch that is retrying."""
    client.zadd(INDEX, {batch_id: time.time()}, xx=True)


def settle(client: SyncRedis, batch_id: str) -> None:
    pipe = client.pipeline(transaction=True)
    pipe.hdel(ENTRIES, batch_id)
    pipe.zrem(INDEX, batch_id)
    pipe.execute()


def pending(client: SyncRedis) -> int:
    return int(client.zcard(INDEX))


@dataclass
class SweepResult:
    checked: int = 0
    settled: int = 0
    resent_events: int = 0
    skipped_busy: bool = False


def _unfinished(batch_id: str, payloads: list[Any]) -> list[Any]:
    """The payloads of a batch that no worker has processed or dead-lettered."""
    from sqlalchemy import select, tuple_

    from continuum.store.engine import session_scope
    from continuum.store.models import DeadLetter, ProcessedEvent

    keys: dict[tuple[str, uuid.UUID], Any] = {}
    unkeyed = []  # no valid namespace + event id: a worker will dead-letter them
    for payload in payloads:
        if not isinstance(payload, dict):
            continue
        try:
            keys[(str(payload["namespace"]), uuid.UUID(str(payload["event_id"])))] = payload
        except (KeyError, ValueError):
            unkeyed.append(payload)
    with session_scope() as db:
        if db.scalar(select(DeadLetter.id).where(DeadLetter.task_id == batch_id).limit(1)):
            return []
        pairs = tuple_(ProcessedEvent.namespace, ProcessedEvent.event_id)
        query = select(ProcessedEvent.namespace, ProcessedEvent.event_id).where(
            pairs.in_(list(keys))
        )
        done = {(row.namespace, row.event_id) for row in db.execute(query)} if keys else set()
    return [payload for key, payload in keys.items() if key not in done] + unkeyed


def sweep(client: SyncRedis, resend: Any, grace_s: float, queue: str = EVENTS) -> SweepResult:
    """Re-publish batches unsettled for `grace_s` (only when the events queue is empty, so a
    backlog is never mistaken for loss). `resend(payloads)` publishes a new batch."""
    result = SweepResult()
    if client.llen(queue):
        result.skipped_busy = True
        return result
    for raw_id in client.zrangebyscore(INDEX, "-inf", time.time() - grace_s):
        batch_id = raw_id.decode() if isinstance(raw_id, bytes) else str(raw_id)
        raw = client.hget(ENTRIES, batch_id)
        result.checked += 1
        missing = _unfinished(batch_id, json.loads(raw)) if raw else []
        if missing:
            resend(missing)
            result.resent_events += len(missing)
        settle(client, batch_id)
        result.settled += 1
    return result
