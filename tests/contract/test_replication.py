"""Accepted means replicated (CONTINUUM_REDIS_WAIT_REPLICAS): with real Redis servers on
loopback, a master, its replica and three sentinels, reached through a `sentinel://` URL."""

from __future__ import annotations

import logging
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from continuum.contract import dispatch, ledger
from continuum.contract.client import (
    EnqueueError,
    MemoryClient,
    NotReplicatedError,
    producer_app,
)
from continuum.contract.queues import EMBED_PENDING, INGEST_EVENTS, queue_for
from continuum.redis_client import get_broker_redis
from continuum.runtimes import spool
from tests.support.events import turn


def test_the_replica_check_covers_the_publish_kombu_made_on_its_own_connection(
    redis_ha: Any, settings_env: Any
) -> None:
    """WAIT counts only the writes of the connection it runs on. The ledger's connection
    wrote the record, kombu published on another: a plain WAIT after the publish confirms a
    batch no replica has. `ledger.replicated` stamps the record after the publish first."""
    settings_env(broker_url=redis_ha.url(0), redis_url=redis_ha.url(1))
    client, app = get_broker_redis(), producer_app()
    batch_id, payloads = str(uuid.uuid4()), [turn("Let's go with the blue tiles.")]
    ledger.record(client, batch_id, payloads, confirm=True)
    assert client.wait(1, 1000) == 1  # the record is on the replica
    redis_ha.freeze("replica1")  # from here on the replica takes nothing
    try:
        app.send_task(INGEST_EVENTS, args=[payloads], task_id=batch_id,
                      queue=queue_for(INGEST_EVENTS))  # fmt: skip
        assert client.wait(1, 200) == 1  # the trap: this connection's writes are all there
        assert ledger.replicated(client, batch_id, 1, 200) == 0
    finally:
        redis_ha.thaw("replica1")
        app.close()
    assert ledger.replicated(client, batch_id, 1, 5000) == 1
    with redis_ha.client("replica1", decode_responses=True) as replica:
        assert replica.llen("events") == 1  # the publish, on the replica


def test_a_batch_a_fast_worker_settled_before_the_replica_check_is_accepted(
    redis_ha: Any, settings_env: Any
) -> None:
    """A worker may process and settle a batch (its ledger record deleted) between the
    producer's publish and its replica check: the batch is done, so it is accepted. A batch
    of which the master has nothing left (a failover to a replica that never had it) is not."""
    settings_env(broker_url=redis_ha.url(0), redis_url=redis_ha.url(1))
    client, app = get_broker_redis(), producer_app()
    done, lost, payloads = str(uuid.uuid4()), str(uuid.uuid4()), [turn("The gate code is 4471.")]
    try:
        ledger.record(client, done, payloads, confirm=True)
        app.send_task(INGEST_EVENTS, args=[payloads], task_id=done, queue=queue_for(INGEST_EVENTS))
        ledger.settle(client, done)  # the worker was faster than the check
        assert ledger.replicated(client, done, 1, 1000) == 1
        ledger.record(client, lost, payloads, confirm=True)
        client.delete(ledger.CONFIRMING + lost)  # what the promoted replica has of it: nothing
        ledger.settle(client, lost)
        assert ledger.replicated(client, lost, 1, 1000) == 0
    finally:
        app.close()


def test_a_hand_off_to_the_next_stage_waits_for_the_replicas(
    redis_ha: Any, settings_env: Any, caplog: Any
) -> None:
    """A worker's send to the next stage (`dispatch`) returns once the replicas have it, as
    an accepted event does: while the replica is frozen it waits; past its patience it goes
    on with an error logged (the message on the master alone), never dropping the send."""
    settings_env(
        broker_url=redis_ha.url(0),
        redis_url=redis_ha.url(1),
        redis_wait_replicas=1,
        redis_wait_timeout_ms=200,
        redis_wait_s=3,  # the patience with Redis of this process (a worker's: 75 s)
        worker_redis_wait_s=3,
    )
    caplog.set_level(logging.ERROR, logger="continuum.contract.dispatch")
    queue = queue_for(EMBED_PENDING)
    dispatch.producer.cache_clear()  # the process's publishing app, on this broker
    try:
        redis_ha.freeze("replica1")
        with ThreadPoolExecutor(1) as pool:
            sending = pool.submit(dispatch.send, EMBED_PENDING)
            time.sleep(1.0)
            assert not sending.done()  # held until a replica has the message
            redis_ha.thaw("replica1")
            sending.result(timeout=10)
        assert not caplog.records
        with redis_ha.client("replica1") as replica:
            assert replica.llen(queue) == 1  # confirmed: the replica has it
        redis_ha.freeze("replica1")
        try:
            started = time.monotonic()
            dispatch.send(EMBED_PENDING)  # past the patience: sent, not confirmed
            assert time.monotonic() - started >= 3
        finally:
            redis_ha.thaw("replica1")
    finally:
        dispatch.producer().close()
        dispatch.producer.cache_clear()
    [line] = [record.getMessage() for record in caplog.records]
    assert "0 of 1 broker replica(s) confirmed it within 3 s" in line
    with redis_ha.client("master") as master:
        assert master.llen(queue) == 2


def test_with_wait_on_and_the_replica_stopped_events_are_refused_or_stay_spooled(
    redis_ha: Any, settings_env: Any, tmp_path: Path
) -> None:
    settings_env(
        broker_url=redis_ha.url(0),
        redis_url=redis_ha.url(1),
        redis_wait_replicas=1,
        redis_wait_timeout_ms=300,
    )
    client = MemoryClient()
    try:
        client.emit(turn("Accepted while the replica answers."))
        redis_ha.kill("replica1")
        with pytest.raises(NotReplicatedError, match=r"not accepted: 0 of 1 broker replica"):
            client.emit(turn("Not on any replica."))
        # What the hooks and Pipecat bots send goes through the spool: it stays there.
        spool.write(tmp_path, turn("Spooled while the replica is down."))
        report = spool.flush(tmp_path)
        assert report["pending"] == 1 and report["sent"] == 0
        assert "not accepted: 0 of 1" in str(report["error"])
        assert "not accepted" in (tmp_path / spool.LOG_FILE).read_text()
        settings_env(redis_wait_replicas=0)  # WAIT off: a single Redis, accepted at once
        client.emit(turn("Accepted without asking a replica."))
        settings_env(redis_wait_replicas=1)
        redis_ha.start("replica1")
        redis_ha.wait_in_sync()
        report = spool.flush(tmp_path)
        assert (report["sent"], report["pending"], report["error"]) == (1, 0, None)
    finally:
        client.close()


def test_a_master_short_of_replicas_refuses_writes_a_worker_would_retry(
    servers: Any, redis_ha: Any, settings_env: Any
) -> None:
    """`min-replicas-to-write` (docs/deploy.md): the master refuses every write while no
    replica is in sync. A producer says so; a worker's task would retry, not dead-letter."""
    from workers.base import is_transient  # imports the app: before the URLs change below

    settings_env(broker_url=redis_ha.url(0), redis_url=redis_ha.url(1))
    with redis_ha.client("master") as master:
        master.config_set("min-replicas-to-write", 1)
        master.config_set("min-replicas-max-lag", 10)
    client = MemoryClient()
    try:
        client.emit(turn("Accepted: the replica is in sync."))
        redis_ha.kill("replica1")
        with pytest.raises(EnqueueError, match="NOREPLICAS") as refused:
            client.emit(turn("Refused by the master itself."))
    finally:
        client.close()
    assert is_transient(refused.value.__cause__)


def test_an_api_write_a_master_short_of_replicas_refuses_is_a_503(
    db: Any, redis_ha: Any, settings_env: Any
) -> None:
    """A Redis refusal that passes (`continuum.store.faults`: NOREPLICAS here) is a 503 with
    Retry-After and a fixed message: Redis's own text may quote the command it refused."""
    from fastapi.testclient import TestClient

    from continuum.api import create_app
    from continuum.security.tokens import create_token

    settings_env(broker_url=redis_ha.url(0), redis_url=redis_ha.url(1))
    token, _ = create_token(["pearl"])
    with redis_ha.client("master") as master:
        master.config_set("min-replicas-to-write", 2)  # one replica: every write refused
    body = {"user_id": "jason", "from_channel": "voice", "context_summary": "Moving to Discord."}
    with TestClient(create_app()) as api:
        refused = api.post("/v1/handoff", json=body, headers={"Authorization": f"Bearer {token}"})
    assert refused.status_code == 503 and refused.headers["Retry-After"] == "5"
    assert refused.json()["detail"][0]["msg"] == (
        "Redis is failing over or short of replicas; retry later"
    )
