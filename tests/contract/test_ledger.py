"""The in-flight ledger closes kombu's BRPOP → unacked window: a batch that vanished between
the broker and a worker is published again; processed or dead-lettered ones never are."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from sqlalchemy import func, select

from continuum.contract import ledger
from continuum.pipeline import redelivery
from continuum.redis_client import get_broker_redis
from continuum.store.engine import session_scope
from continuum.store.models import Message
from tests.support.events import turn
from tests.support.wait import wait_for


def messages() -> int:
    with session_scope() as db:
        return int(db.scalar(select(func.count()).select_from(Message)) or 0)


def test_published_batches_are_settled_by_the_worker(db: Any, worker: Any, client: Any) -> None:
    broker = get_broker_redis()
    before = ledger.pending(broker)
    client.emit_many([turn("Let's go with the oak table.", message_id="a1")])
    wait_for(lambda: messages() == 1)
    wait_for(lambda: ledger.pending(broker) == before)


def test_a_lost_batch_is_resent_once(db: Any, worker: Any, client: Any) -> None:
    broker = get_broker_redis()
    lost = [turn(f"Lost message {i} about the oak table", message_id=f"l{i}") for i in range(3)]
    # What the BRPOP window leaves behind: a ledger entry whose message no worker will see.
    ledger.record(broker, str(uuid.uuid4()), lost)
    result = redelivery.sweep(broker, client.emit_many, grace_s=0)
    assert (result.resent_events, result.settled) == (3, 1)
    wait_for(lambda: messages() == 3)
    wait_for(lambda: ledger.pending(broker) == 0)
    again = redelivery.sweep(broker, client.emit_many, grace_s=0)
    assert (again.checked, again.resent_events) == (0, 0)


def test_processed_and_dead_lettered_batches_are_only_settled(
    db: Any, worker: Any, client: Any
) -> None:
    from continuum.pipeline import deadletters

    broker = get_broker_redis()
    done = turn("Already stored message", message_id="d1")
    client.emit(done)
    wait_for(lambda: messages() == 1)
    ledger.record(broker, "batch-done", [done])
    deadletters.record_now(task_name="continuum.ingest_events", task_id="batch-dead",
                          payload={}, reason="max_deliveries_exceeded")  # fmt: skip
    ledger.record(broker, "batch-dead", [turn("poison", message_id="p1")])
    sent: list[Any] = []
    result = redelivery.sweep(broker, sent.extend, grace_s=0)
    assert sent == [] and result.settled == 2


def test_sweep_waits_while_the_queue_has_a_backlog(db: Any) -> None:
    broker = get_broker_redis()
    ledger.record(broker, "batch-x", [turn("queued message", message_id="q1")])
    backlog = "test-backlog"  # stands in for the events queue, which a live worker drains
    broker.lpush(backlog, "queued message")
    try:
        result = redelivery.sweep(broker, lambda _: None, grace_s=0, queue=backlog)
        assert result.skipped_busy and ledger.pending(broker) == 1
    finally:
        broker.delete(backlog)
        ledger.settle(broker, "batch-x")


def test_a_batch_waiting_to_retry_is_never_resent(
    db: Any, worker: Any, client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A retry renews the batch's ledger time, so the sweep leaves it to its worker."""
    import tasks.events
    from workers.base import TransientError

    broker = get_broker_redis()
    real = tasks.events.ingest_batch
    attempts: list[float] = []

    def flaky(payloads: Any, task_id: str | None = None) -> Any:
        attempts.append(time.time())
        if len(attempts) == 1:
            time.sleep(1.0)  # the batch ages in the ledger meanwhile
            raise TransientError("database restarting")
        return real(payloads, task_id)

    monkeypatch.setattr(tasks.events, "ingest_batch", flaky)
    earlier = set(broker.zrange(ledger.INDEX, 0, -1))
    client.emit_many([turn("Retried message about the oak table", message_id="r1")])
    (batch_id,) = set(broker.zrange(ledger.INDEX, 0, -1)) - earlier
    recorded = float(broker.zscore(ledger.INDEX, batch_id) or 0)
    wait_for(lambda: float(broker.zscore(ledger.INDEX, batch_id) or 0) > recorded + 0.9)
    sent: list[Any] = []
    assert redelivery.sweep(broker, sent.extend, grace_s=0.5).resent_events == 0 and sent == []
    wait_for(lambda: messages() == 1)
    wait_for(lambda: broker.zscore(ledger.INDEX, batch_id) is None)  # settled
    assert len(attempts) == 2
