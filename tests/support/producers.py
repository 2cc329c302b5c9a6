"""A producer for the fault scenarios that keeps pace with the workers, and how long its
events waited to be stored.

A scenario that queued all its events at once timed the drain of that backlog, at whatever
speed the shared cores allowed, instead of the recovery it meant to time (which is how
`test_redis_restart_during_ingest` once failed its 30 s bound). This one keeps the `events` queue short, so a fault finds
events queued, held by workers and in flight, and an event's wait is the recovery's.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import redis
from sqlalchemy import text

from continuum.contract.client import EnqueueError, MemoryClient
from continuum.contract.queues import EVENTS
from continuum.store.broker import broker_state
from continuum.store.engine import session_scope


@dataclass
class Produced:
    """When each event was accepted (epoch seconds, by event id) and how many sends the
    broker refused (each resent until accepted)."""

    accepted_at: dict[str, float] = field(default_factory=dict)
    refusals: int = 0


def _queued() -> int | None:
    try:
        return broker_state(timeout_s=1.0).depths[EVENTS]
    except redis.RedisError:
        return None  # the broker is down: the send below waits for it


def produce(
    client: MemoryClient, events: list[dict[str, Any]], size: int, max_queued: int = 20
) -> Produced:
    """Send `events` in batches of `size`, each once fewer than `max_queued` messages wait in
    the `events` queue; a batch the broker refuses (down longer than the client waits) is
    resent, as a caller does, until it is accepted."""
    produced = Produced()
    for start in range(0, len(events), size):
        batch = events[start : start + size]
        while (queued := _queued()) is not None and queued >= max_queued:
            time.sleep(0.01)
        while True:
            try:
                client.emit_many(batch)
            except EnqueueError:
                produced.refusals += 1
                time.sleep(0.1)
                continue
            break
        accepted = time.time()
        produced.accepted_at.update((event["event_id"], accepted) for event in batch)
    return produced


def worst_wait_s(accepted_at: dict[str, float], since: float) -> float:
    """The longest any of these events waited to be stored: from when it was accepted, or from
    `since` (a fault's end) for one accepted before. Every event must be stored already."""
    with session_scope() as db:
        stored = dict(
            db.execute(
                text(
                    "SELECT event_id::text, extract(epoch FROM processed_at) FROM processed_events"
                    " WHERE event_id = ANY(CAST(:ids AS uuid[]))"
                ),
                {"ids": list(accepted_at)},
            ).all()
        )
    assert len(stored) == len(accepted_at), "every event must be stored first"
    return max(float(stored[event]) - max(at, since) for event, at in accepted_at.items())
