"""After a broker restart the batches kombu's BRPOP window lost are published again within
seconds, backlog or not; a queued, held (running or retrying) or started batch never is. With
the broker up, the taken check does the same for a batch a lost worker took (found neither
queued nor held in two rounds in a row).

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
from continuum.store import metrics
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


EVERY_S = 0.05  # the taken check's interval here: its claim expires between two rounds


def taken_round(client: SyncRedis, sent: list[Any]) -> redelivery.SweepResult:
    time.sleep(EVERY_S + 0.01)  # the previous round's claim has expired
    result = redelivery.check_taken(client, sent.extend, EVERY_S, time.time())
    assert result is not None
    return result


def test_a_batch_taken_and_never_held_is_resent_once_two_rounds_found_it(
    db: Any, broker: Any
) -> None:
    client, producer = broker
    lost_id, lost = publish(producer, client, "lost")
    take(client)  # the worker that took it was frozen before kombu recorded it as unacked
    late_id, _ = publish(producer, client, "late")
    late = take(client)  # a live worker, recording it as unacked after the first round
    held_id, _ = publish(producer, client, "held")
    client.hset(UNACKED_KEY, "tag-1", json.dumps([take(client), "", EVENTS]))
    started_id, _ = publish(producer, client, "started")
    take(client)
    queued_id, _ = publish(producer, client, "queued")
    sent: list[Any] = []
    first = taken_round(client, sent)
    assert (first.settled, sent) == (0, [])
    assert redelivery.check_taken(client, sent.extend, EVERY_S, time.time()) is None  # claimed
    client.hset(UNACKED_KEY, "tag-2", json.dumps([late, "", EVENTS]))
    ledger.touch(client, started_id)  # a worker started it after the first round
    take(client)  # a live worker's BRPOP takes the queued one just before the second round
    second = taken_round(client, sent)
    assert (second.settled, second.resent_events) == (1, 1)
    assert metrics.count(metrics.EVENTS_REDELIVERED) == 1
    assert ids(sent) == [lost] and client.hget(ledger.ENTRIES, lost_id) is None
    assert ledger.pending(client) == 4 and client.hget(ledger.ENTRIES, late_id)
    assert client.hget(ledger.ENTRIES, queued_id)
    assert client.hget(ledger.ENTRIES, held_id) and client.hget(ledger.ENTRIES, started_id)


def test_a_taken_batch_is_confirmed_only_by_the_round_just_before(db: Any, broker: Any) -> None:
    """A round over 3 intervals old is forgotten: what it found absent then may have been
    queued or held since, and is absent now for a new reason, to be checked anew."""
    client, producer = broker
    _, lost = publish(producer, client, "lost")
    take(client)
    sent: list[Any] = []
    taken_round(client, sent)
    time.sleep(3 * EVERY_S)
    assert taken_round(client, sent).settled == 0  # a first round again
    assert taken_round(client, sent).settled == 1 and ids(sent) == [lost]


def test_the_taken_check_skips_a_backlog_it_would_have_to_read(
    db: Any, broker: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    client, producer = broker
    monkeypatch.setattr(redelivery, "TAKEN_SCAN_LIMIT", 1)
    _, lost = publish(producer, client, "lost")
    take(client)
    sent: list[Any] = []
    taken_round(client, sent)
    publish(producer, client, "queued 1")
    publish(producer, client, "queued 2")
    assert taken_round(client, sent).skipped_busy and sent == []
    for tag in ("tag-1", "tag-2"):  # the backlog drained: two rounds again before a resend
        client.hset(UNACKED_KEY, tag, json.dumps([take(client), "", EVENTS]))
    assert taken_round(client, sent).settled == 0
    assert taken_round(client, sent).settled == 1 and ids(sent) == [lost]


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
