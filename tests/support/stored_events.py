"""The events of a fault scenario and what the database holds of them: turns that each yield
one decision memory, sent in batches, then counted by their own ids (processed, stored,
duplicated), so a batch an earlier scenario left late in the broker never skews a count."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import text

from continuum.contract import ledger
from continuum.contract.client import MemoryClient
from continuum.contract.queues import EVENTS
from continuum.pipeline import redelivery
from continuum.redis_client import get_broker_redis
from continuum.store.engine import session_scope
from tests.support.events import turn
from tests.support.wait import wait_for

# The rows of a scenario's own events: their sessions (memories) and message ids (messages).
WHERE = "WHERE namespace = 'pearl' AND session_id = ANY(:sessions)"


def rows_of(events: list[dict[str, Any]]) -> dict[str, list[str]]:
    return {
        "events": sorted({event["event_id"] for event in events}),
        "messages": sorted({event["message_id"] for event in events}),
        "sessions": sorted({event["session_id"] for event in events}),
    }


def figures(events: list[dict[str, Any]]) -> dict[str, int]:
    """What the database holds of these events: a scenario asserts on its own event ids (and
    the message ids and sessions they carry), so a batch an earlier scenario left late in
    the broker can never skew it."""
    where = WHERE
    with session_scope() as db:
        row = db.execute(
            text(
                "SELECT (SELECT count(*) FROM processed_events WHERE namespace = 'pearl'"
                "  AND event_id = ANY(CAST(:events AS uuid[]))) AS processed,"
                f" (SELECT count(*) FROM messages {where}"
                "  AND message_id = ANY(:messages)) AS messages,"
                " (SELECT count(*) - count(DISTINCT (namespace, session_id, message_id))"
                f"  FROM messages {where} AND message_id = ANY(:messages)) AS duplicate_messages,"
                f" (SELECT count(*) FROM memories {where}) AS memories,"
                " (SELECT count(*) - count(DISTINCT (namespace, idempotency_key)) FROM memories"
                f"  {where}) AS duplicate_memories"
            ),
            rows_of(events),
        ).one()
    return dict(row._mapping)


def decisions(count: int, prefix: str) -> list[dict[str, Any]]:
    """Turns that each yield exactly one decision memory, spread over 20 sessions."""
    return [
        turn(
            f"Let's go with supplier {prefix}{i} for the garden fence.",
            message_id=f"{prefix}{i}",
            session_id=f"{prefix}-s{i % 20}",
            at=i,
        )
        for i in range(count)
    ]


def emit_batches(client: MemoryClient, events: list[dict[str, Any]], size: int) -> None:
    for start in range(0, len(events), size):
        client.emit_many(events[start : start + size])


def whereabouts(events: list[dict[str, Any]]) -> str:
    """Where the events not stored yet are, by the ledger batches that hold them: queued,
    held by a worker (kombu's unacked hash), or neither (taken off the queue and lost)."""
    with session_scope() as db:
        done = set(db.scalars(
            text("SELECT CAST(event_id AS text) FROM processed_events WHERE namespace = 'pearl'"
                 " AND event_id = ANY(CAST(:events AS uuid[]))"), rows_of(events),
        ))  # fmt: skip
    missing = {event["event_id"] for event in events} - done
    broker = get_broker_redis()
    batches = {
        batch_id
        for batch_id, raw in broker.hscan_iter(ledger.ENTRIES)
        if missing & {payload.get("event_id") for payload in json.loads(raw)}
    }
    queued, held = set(redelivery.queued_ids(broker, EVENTS)), set(redelivery.held_ids(broker))
    return (f"{len(missing)} event(s) not stored, in {len(batches)} ledger batch(es): "
            f"{len(batches & queued)} queued, {len(batches & held)} held by a worker, "
            f"{len(batches - queued - held)} neither (taken off the queue and lost)")  # fmt: skip


def assert_exactly_once(events: list[dict[str, Any]]) -> dict[str, int]:
    """Each of these distinct events stored once, with its one decision memory."""
    sent = len({event["event_id"] for event in events})
    try:
        wait_for(lambda: figures(events)["processed"] >= sent, timeout=120, interval=0.25)
    except AssertionError:
        raise AssertionError(f"not stored within 120 s: {whereabouts(events)}") from None
    found = figures(events)
    print(f"\nsent={sent} {found}")
    assert found["processed"] == sent
    assert found["messages"] == sent and found["duplicate_messages"] == 0
    assert found["memories"] == sent and found["duplicate_memories"] == 0
    return found
