"""Redelivery from the in-flight ledger (`continuum.contract.ledger`), on the worker side: a
per-minute beat job re-publishes the batches a producer recorded that no worker settled
within a grace period, only while the events queue is empty (so a backlog is never mistaken
for loss), and only the events not already processed or dead-lettered (which are idempotent
anyway)."""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select, tuple_

from continuum.contract import ledger
from continuum.contract.queues import EVENTS
from continuum.redis_client import SyncRedis
from continuum.store.engine import session_scope
from continuum.store.models import DeadLetter, ProcessedEvent


@dataclass
class SweepResult:
    checked: int = 0
    settled: int = 0
    resent_events: int = 0
    skipped_busy: bool = False


def _unfinished(batch_id: str, payloads: list[Any]) -> list[Any]:
    """The payloads of a batch that no worker has processed or dead-lettered."""
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
    for raw_id in client.zrangebyscore(ledger.INDEX, "-inf", time.time() - grace_s):
        batch_id = raw_id.decode() if isinstance(raw_id, bytes) else str(raw_id)
        raw = client.hget(ledger.ENTRIES, batch_id)
        result.checked += 1
        missing = _unfinished(batch_id, json.loads(raw)) if raw else []
        if missing:
            resend(missing)
            result.resent_events += len(missing)
        ledger.settle(client, batch_id)
        result.settled += 1
    return result
