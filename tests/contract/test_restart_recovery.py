"""After a broker restart the batches kombu's BRPOP window lost are published again within
seconds, backlog or not; a queued, held (running or retrying) or started batch never is.

Each test plays the broker on a scratch database of the test Redis, so the in-process
worker's broker watch (on the real broker database) never sees these restarts."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from continuum.contract import ledger
from continuum.contract.client import MemoryClient
from continuum.contract.queues import EVENTS, INGEST_EVENTS
from continuum.pipeline import redelivery
from continuum.redis_client import SyncRedis, get_broker_redis, get_redis
from continuum.store.broker import UNACKED_KEY
from tests.support.events import turn
from tests.support.wait import wait_for


@pytest.fixture
def broker(servers: dict[str, str]) -> Iterator[tuple[SyncRedis, MemoryClient]]:
    """A scratch broker database and a producer publishing into it (no worker consumes it)."""
    url = servers["broker_url"].rsplit("/", 1)[0] + "/3"
    client = get_redis(url)
    client.flushdb()
    producer = MemoryClient(url)
    yield client, producer
    producer.close()
    client.flushdb()


def publish(producer: MemoryClient, client: SyncRedis, text: str) -> tuple[str, str]:
    """Publish a one-turn batch; returns its batch id and its event id."""
    event_id = producer.emit(turn(text, message_id=text))
    raw = client.lindex(EVENTS, 0)  # the newest message (LPUSH)
    return json.loads(raw)["headers"]["id"], event_id


def ids(payloads: list[Any]) -> list[str]:
    return [payload["event_id"] for payload in payloads]


def take(client: SyncRedis) -> dict[str, Any]:
    """What a worker's BRPOP does: the oldest message leaves the queue."""
    return dict(json.loads(client.rpop(EVENTS)))


def test_a_restart_is_recorded_once_by_one_watcher(broker: Any) -> None:
    client, _ = broker
    assert not redelivery.observe_restart(client, "run-1", time.time())  # first sight
    assert not redelivery.observe_restart(client, "run-1", time.time())
    assert redelivery.observe_restart(client, "run-2", time.time())
    assert not redelivery.observe_restart(client, "run-2", time.time())  # another worker


def test_only_lost_batches_are_resent_after_the_grace(db: Any, broker: Any) -> None:
    client, producer = broker
    lost_id, lost = publish(producer, client, "lost")
    take(client)  # Redis went down before kombu recorded it as unacked
    held_id, _ = publish(producer, client, "held")
    message = take(client)
    client.hset(UNACKED_KEY, "tag-1", json.dumps([message, "", EVENTS]))  # kombu's record
    started_id, _ = publish(producer, client, "started")
    take(client)
    publish(producer, client, "queued")  # behind a backlog: still queued
    restarted_at = time.time()
    assert not redelivery.observe_restart(client, "run-1", restarted_at - 1)
    assert redelivery.observe_restart(client, "run-2", restarted_at)
    time.sleep(0.01)
    ledger.touch(client, started_id)  # a worker started it after the restart
    sent: list[Any] = []
    early = redelivery.recover_after_restart(client, sent.extend, 5, restarted_at + 4)
    assert early is None and sent == []
    result = redelivery.recover_after_restart(client, sent.extend, 5, restarted_at + 5)
    assert result is not None and (result.settled, result.resent_events) == (1, 1)
    assert ids(sent) == [lost] and client.hget(ledger.ENTRIES, lost_id) is None
    assert ledger.pending(client) == 3 and client.hget(ledger.ENTRIES, held_id)
    assert redelivery.recover_after_restart(client, sent.extend, 5, restarted_at + 60) is None


def test_a_recovery_that_fails_stays_pending(db: Any, broker: Any) -> None:
    client, producer = broker
    _, lost = publish(producer, client, "lost")
    take(client)
    redelivery.observe_restart(client, "run-1", 0)
    redelivery.observe_restart(client, "run-2", time.time() + 1)

    def unreachable(payloads: list[Any]) -> None:
        raise ConnectionError("broker unreachable")

    with pytest.raises(ConnectionError):
        redelivery.recover_after_restart(client, unreachable, 0, time.time() + 1)
    sent: list[Any] = []
    assert redelivery.recover_after_restart(client, sent.extend, 0, time.time() + 1)
    assert ids(sent) == [lost]


def test_the_watch_reads_the_broker_run_id(db: Any, broker: Any) -> None:
    client, producer = broker
    _, lost = publish(producer, client, "lost")
    take(client)
    client.hset(redelivery.BROKER_STATE, "run_id", "the run before the restart")
    time.sleep(0.01)
    sent: list[Any] = []
    assert redelivery.watch_broker(client, sent.extend, grace_s=0) is not None
    assert ids(sent) == [lost]
    assert client.hget(redelivery.BROKER_STATE, "run_id") == redelivery.broker_run_id(client)
    assert redelivery.watch_broker(client, sent.extend, grace_s=0) is None


def test_a_worker_touches_a_batch_when_it_starts_it(
    db: Any, worker: Any, client: MemoryClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tasks.events

    real = tasks.events.ingest_batch
    seen: list[float | None] = []

    def observed(payloads: Any, task_id: str | None = None) -> Any:
        seen.append(get_broker_redis().zscore(ledger.INDEX, task_id))
        return real(payloads, task_id)

    monkeypatch.setattr(tasks.events, "ingest_batch", observed)
    payloads = [turn("Touched when started", message_id="t1")]
    ledger.record(get_broker_redis(), "batch-started", payloads)
    get_broker_redis().zadd(ledger.INDEX, {"batch-started": 1.0})  # recorded long ago
    client.app.send_task(INGEST_EVENTS, args=[payloads], task_id="batch-started", queue=EVENTS)
    wait_for(lambda: seen)
    assert seen[0] is not None and seen[0] > 1.0
