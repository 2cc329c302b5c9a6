"""Fault injection with real worker processes, real Redis and real Postgres (`make test-faults`).

Each scenario prints its figures (events sent, persisted, duplicates, recovery time).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psutil
import pytest
from sqlalchemy import text

from continuum.contract.client import EnqueueError, MemoryClient
from continuum.dev import embedding_writes
from continuum.dev.embedded import EmbeddedServers
from continuum.pipeline.outbox import pending_counts
from continuum.processes import kill
from continuum.redis_client import get_redis
from continuum.store.engine import session_scope
from tests.support.events import turn
from tests.support.paths import TEST_HOME
from tests.support.producers import produce, worst_wait_s
from tests.support.stored_events import (
    WHERE,
    assert_exactly_once,
    decisions,
    emit_batches,
    figures,
    rows_of,
)
from tests.support.wait import wait_for
from tests.support.worker_processes import FAULT_QUEUE

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _lean_workers(embeddings: bool) -> None:
    """Embeddings off (no model loading to skew timings) unless a scenario parametrizes
    `embeddings` on: then an `embed` worker group runs beside the others, as in production."""


# The scenarios that also run with the real embedding model and its own worker group.
WITH_AND_WITHOUT_EMBEDDINGS = pytest.mark.parametrize(
    "embeddings", [False, True], indirect=True, ids=["embeddings-off", "embeddings-on"]
)


EMBEDDED_ROWS = {"messages": f"{WHERE} AND message_id = ANY(:messages)", "memories": WHERE}


def embedded(events: list[dict[str, Any]]) -> dict[str, int]:
    """Of these events' messages and memories: rows, rows with no vector yet, vectors shared
    by two rows, rows written other than exactly once (see continuum.dev.embedding_writes)."""
    return embedding_writes.embedding_figures(EMBEDDED_ROWS, rows_of(events))


def assert_embedded_once(events: list[dict[str, Any]], timeout: float) -> None:
    """Every stored row of these events (each event's message and its decision memory) gets
    its vector, written exactly once, the right one; the outbox drains."""
    started = time.monotonic()

    def drained() -> dict[str, int]:  # empty (falsy) while a row waits for its vector
        found = embedded(events)
        return {} if found["messages_unembedded"] + found["memories_unembedded"] else found

    found = wait_for(drained, timeout=timeout, interval=0.5)
    print(f"embedded {time.monotonic() - started:.1f}s after all events were stored: {found}")
    sent = len(events)
    for table in ("messages", "memories"):
        assert found[f"{table}_rows"] == sent
        assert found[f"{table}_duplicate_vectors"] == 0
        assert found[f"{table}_not_once"] == 0
    assert pending_counts() == {"memories": 0, "messages": 0}
    assert embedding_writes.mismatched_vectors(EMBEDDED_ROWS, rows_of(events)) == []


def claim_open() -> bool:
    """Whether an embed worker is inside an outbox claim with vectors written but not yet
    committed: its open transaction's last statement wrote a batch of them."""
    with session_scope() as db:
        return bool(
            db.scalar(
                text(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                    " AND pid <> pg_backend_pid() AND xact_start IS NOT NULL"
                    " AND query LIKE '%SET embedding = v.e%'"
                )
            )
        )


@WITH_AND_WITHOUT_EMBEDDINGS
def test_sigkilled_worker_mid_batch_loses_and_duplicates_nothing(
    embeddings: bool, db: Any, start_worker: Any, start_embed_worker: Any, client: MemoryClient
) -> None:
    """With embeddings on, the embed worker is SIGKILLed too, holding a claim on the outbox
    (rows claimed, some vectors written, uncommitted): those rows go back to the outbox."""
    # Fewer events beside the model: it shares the machine's cores with the workers.
    events = decisions(1500 if embeddings else 3000, "k")
    first = start_worker("w1")
    embedder = start_embed_worker("embed1") if embeddings else None
    with ThreadPoolExecutor(1) as pool:  # a producer the workers keep up with (producers.py)
        producing = pool.submit(produce, client, events, 25)
        wait_for(lambda: figures(events)["processed"] >= 400, timeout=60)
        kill(first)
        killed_at = time.time()
        start_worker("w2")
        if embedder is not None:  # the model loads meanwhile; then kill it inside a claim
            wait_for(claim_open, timeout=60)
            kill(embedder)
            start_embed_worker("embed2")
        produced = producing.result(timeout=300)
    assert_exactly_once(events)
    worst_s = worst_wait_s(produced.accepted_at, since=killed_at)
    print(f"every event stored within {worst_s:.1f}s of the SIGKILL or of its acceptance")
    assert worst_s < 30  # redelivery ≈ visibility timeout (10 s) + restore sweep (2 s)
    if embeddings:
        assert_embedded_once(events, timeout=90)


def redelivered_after_kill(
    start_worker: Any, client: MemoryClient, mid_sweep: bool = False
) -> float:
    """Seconds from SIGKILLing the worker running a task to the task's second start; with
    `mid_sweep`, the killed worker left kombu's restore mutex held, as one killed inside a
    restore sweep does (the key set as its sweep set it, with the expiry the workers use)."""
    from kombu.transport.redis import Channel

    from continuum.redis_client import get_broker_redis
    from workers.app import app

    key = f"slow:{uuid.uuid4()}"
    first = start_worker("w1")
    client.app.send_task("tests.slow", args=[key, 3.0], queue=FAULT_QUEUE)
    wait_for(lambda: get_redis().llen(f"{key}:starts") == 1, timeout=60)
    kill(first)
    killed_at = time.time()
    if mid_sweep:
        options = app.conf.broker_transport_options
        expire = options.get("unacked_mutex_expire", Channel.unacked_mutex_expire)
        get_broker_redis().set(Channel.unacked_mutex_key, "the killed worker's", ex=expire)
    start_worker("w2")
    wait_for(lambda: get_redis().get(f"{key}:done"), timeout=60)
    starts = [float(entry.split(":")[0]) for entry in get_redis().lrange(f"{key}:starts", 0, -1)]
    assert len(starts) == 2
    return starts[1] - killed_at


def test_task_of_a_killed_worker_runs_again_within_15_seconds(
    db: Any, start_worker: Any, client: MemoryClient
) -> None:
    redelivered_s = redelivered_after_kill(start_worker, client)
    print(f"\nredelivered {redelivered_s:.1f}s after SIGKILL (visibility 10 s + sweep 2 s)")
    assert redelivered_s < 15


def test_a_worker_killed_inside_a_restore_sweep_holds_redelivery_back_seconds_not_minutes(
    db: Any, start_worker: Any, client: MemoryClient
) -> None:
    """kombu holds a mutex around each restore sweep; a worker SIGKILLed inside one (or a
    Redis stopped meanwhile) leaves it held until it expires, and no worker restores a message
    before: kombu's default expiry was 300 s, the workers' is the visibility timeout (10 s)."""
    redelivered_s = redelivered_after_kill(start_worker, client, mid_sweep=True)
    print(f"\nredelivered {redelivered_s:.1f}s after SIGKILL, the restore mutex left held")
    assert redelivered_s < 25  # visibility 10 s + the mutex's 10 s + sweep 2 s


def test_a_batch_a_frozen_worker_took_off_the_queue_is_published_again_within_seconds(
    db: Any, start_worker: Any, client: MemoryClient, tmp_path: Path
) -> None:
    """kombu's BRPOP window with the broker up: a worker frozen (SIGSTOP, or cut off, or
    killed) while blocked in BRPOP is handed the next batch by Redis, which then sits unread in
    its socket, neither queued nor recorded unacked, so kombu's restore never sees it. The
    workers' taken-batch check publishes it again within seconds, not beat's 360 s sweep; the
    frozen worker's own copy, run once it thaws, adds no row."""
    from continuum.contract import ledger
    from continuum.contract.queues import EVENTS
    from continuum.redis_client import get_broker_redis
    from continuum.store.broker import broker_state

    broker = get_broker_redis()
    frozen = start_worker("w1")
    warm = decisions(1, "warm")
    client.emit_many(warm)
    wait_for(lambda: figures(warm)["processed"] == 1, timeout=60)  # w1 consumes: in BRPOP
    for attempt in range(5):  # the batch reaches w1 only while its BRPOP is outstanding
        events = decisions(10, f"t{attempt}-")
        earlier = set(broker.zrange(ledger.INDEX, 0, -1))  # a batch run but not yet settled
        os.killpg(frozen.pid, signal.SIGSTOP)
        client.emit_many(events)
        taken_at = time.time()
        (batch,) = set(broker.zrange(ledger.INDEX, 0, -1)) - earlier
        # Not queued: Redis handed it to w1's BRPOP, and w1, frozen first, recorded nothing.
        if not broker_state().depths[EVENTS]:
            break
        os.killpg(frozen.pid, signal.SIGCONT)  # queued: w1 runs it; try again
        wait_for(lambda events=events: figures(events)["processed"] == 10, timeout=60)
    else:
        pytest.fail("the frozen worker never had a BRPOP outstanding")
    try:
        start_worker("w2")
        log = tmp_path / "w2.log"
        wait_for(lambda: "ready." in log.read_text(), timeout=60, interval=0.1)
        ready_at = time.time()
        wait_for(lambda: figures(events)["processed"] == 10, timeout=60, interval=0.1)
        stored_at = time.time()
    finally:
        os.killpg(frozen.pid, signal.SIGCONT)
    # Thawed, w1 reads the batch from its socket and runs it: found done, no second row.
    log = tmp_path / "w1.log"
    wait_for(lambda: f"[{batch}] succeeded" in log.read_text(), timeout=60, interval=0.1)
    print(f"\nthe taken batch was stored {stored_at - taken_at:.1f}s after the frozen worker"
          f" took it, {stored_at - ready_at:.1f}s after another worker was ready")  # fmt: skip
    assert_exactly_once(events)
    assert stored_at - ready_at < 10  # two or three rounds of the check, 2 s apart


def test_poison_message_is_dead_lettered_and_the_queue_keeps_flowing(
    db: Any, start_worker: Any, client: MemoryClient, settings_env: Any
) -> None:
    settings_env(max_deliveries=3)
    start_worker("w1")
    key = f"crash:{uuid.uuid4()}"
    crash = client.app.send_task("tests.crash", args=[key], queue=FAULT_QUEUE)
    events = decisions(200, "p")
    emit_batches(client, events, 20)

    def dead_letter() -> Any:
        with session_scope() as db_session:
            return db_session.execute(
                text("SELECT reason, attempts FROM dead_letters WHERE task_id = :id"),
                {"id": crash.id},
            ).one_or_none()

    assert tuple(wait_for(dead_letter, timeout=60)) == ("max_deliveries_exceeded", 3)
    assert get_redis().get(f"{key}:attempts") == "3"
    assert_exactly_once(events)


def test_a_worker_records_the_broker_run_id_as_soon_as_it_is_ready(
    db: Any, start_worker: Any, client: MemoryClient, settings_env: Any
) -> None:
    """Its broker watch's first round runs at start, not one interval later: on a broker no
    worker had watched, a restart in that interval passed for a first sight, and nothing the
    restart lost was published again until beat's sweep (360 s)."""
    from continuum.pipeline.redelivery import BROKER_STATE, broker_run_id
    from continuum.redis_client import get_broker_redis

    settings_env(broker_check_interval_s=60)
    start_worker("w1")
    events = decisions(1, "w")
    client.emit_many(events)
    wait_for(lambda: figures(events)["processed"] == 1, timeout=60)  # the worker is ready
    broker = get_broker_redis()
    assert broker.hget(BROKER_STATE, "run_id") == broker_run_id(broker)


@pytest.mark.parametrize("sigkill", [False, True], ids=["shutdown", "sigkill"])
def test_redis_restart_during_ingest(
    sigkill: bool, db: Any, start_worker: Any, client: MemoryClient
) -> None:
    """Every accepted event is stored within 30 s of Redis answering again (one accepted after
    that, within 30 s of its acceptance), with no sweep run by hand: a batch the restart took
    off the queue before a worker recorded it (kombu's BRPOP window) is published again by the
    workers' broker watch, backlog or not. SIGKILLed, Redis writes nothing on the way out
    and comes back with what its AOF file holds: every write it answered, unless a stalled
    disk had it hold writes back (docs/design.md, "Closing kombu's BRPOP window")."""
    start_worker("w1")
    events = decisions(1500, "r")
    with ThreadPoolExecutor(1) as pool:  # a producer the worker keeps up with (producers.py)
        producing = pool.submit(produce, client, events, 10)
        wait_for(lambda: figures(events)["processed"] >= 200, timeout=60)
        EmbeddedServers(TEST_HOME).restart_redis(down_s=2.0, kill=sigkill)
        answering = time.time()  # restart_redis returns once Redis answers
        produced = producing.result(timeout=180)  # a refused batch is resent until accepted
    assert_exactly_once(events)
    worst_s = worst_wait_s(produced.accepted_at, since=answering)
    print(f"worst latency: every accepted event stored within {worst_s:.1f}s of Redis answering"
          f" (or of its acceptance); {produced.refusals} send(s) refused and resent")  # fmt: skip
    assert worst_s <= 30


def test_a_worker_group_lives_through_redis_restarts(
    db: Any, spawned: Any, client: MemoryClient
) -> None:
    """The ingest group as `continuum worker` runs it (gossip, mingle), under a trickle of
    events, Redis restarted eight times: when the worker held a message as its connection
    broke, kombu 5.7 failed to restore it on a connection Celery had already dropped, and the
    worker exited ("Unrecoverable error"); a guard on the channel
    (workers/redis_channel.py) makes that a connection error it reconnects after."""
    from continuum.processes import group_argv

    worker = spawned(group_argv("ingest", hostname="ingest-restarts@%h"), "ingest")
    events = decisions(600, "i")
    accepted: list[dict[str, Any]] = []
    stop = threading.Event()

    def trickle() -> None:  # a batch of 3 every 50 ms or so, resent while refused
        for start in range(0, len(events), 3):
            while not stop.is_set():
                try:
                    client.emit_many(events[start : start + 3])
                except EnqueueError:
                    time.sleep(0.2)
                    continue
                accepted.extend(events[start : start + 3])
                break
            if stop.wait(0.05):
                return

    producer = threading.Thread(target=trickle, daemon=True)
    producer.start()
    servers = EmbeddedServers(TEST_HOME)
    try:
        wait_for(lambda: figures(events)["processed"] > 0, timeout=60)  # the worker is up
        for round_no in range(8):
            time.sleep(2)
            servers.restart_redis(down_s=2.0, kill=round_no % 2 == 1)
            time.sleep(3)  # Celery gives up on the lost connection within this
            assert worker.poll() is None, f"the worker exited after restart {round_no + 1}"
    finally:
        stop.set()
        producer.join()
    assert_exactly_once(accepted)  # and it works on


@WITH_AND_WITHOUT_EMBEDDINGS
def test_postgres_restart_during_ingest(
    embeddings: bool, db: Any, start_worker: Any, start_embed_worker: Any, client: MemoryClient
) -> None:
    start_worker("w1")
    if embeddings:
        start_embed_worker()
    events = decisions(1500, "g")
    # With embeddings on, a first wave lets the model load; Postgres restarts while the
    # second is ingested and the embed worker is inside a claim, vectors uncommitted.
    first_wave = 500 if embeddings else 0
    emit_batches(client, events[:first_wave], 10)
    if embeddings:
        wait_for(claim_open, timeout=60)
    emit_batches(client, events[first_wave:], 10)
    wait_for(lambda: figures(events)["processed"] >= first_wave + 200, timeout=60)
    if embeddings:
        wait_for(lambda: claim_open() and figures(events)["processed"] < len(events), timeout=30)
        print(f"\nPostgres restarts with {figures(events)['processed']} events stored")
    EmbeddedServers(TEST_HOME).restart_postgres()
    assert_exactly_once(events)
    if embeddings:
        assert_embedded_once(events, timeout=90)


def test_bounded_soak_drains_with_flat_memory(db: Any, start_worker: Any, servers: Any) -> None:
    worker = start_worker("w1")
    per_thread, threads = 1250, 8
    clients = [MemoryClient(servers["broker_url"]) for _ in range(threads)]
    batches = [decisions(per_thread, f"t{n}-") for n in range(threads)]
    everything = [event for events in batches for event in events]
    rss: list[int] = []

    def produce(n: int) -> None:
        emit_batches(clients[n], batches[n], 25)
        emit_batches(clients[n], batches[n][: per_thread // 5], 25)  # duplicate deliveries too

    def sample() -> int:
        procs = [psutil.Process(worker.pid), *psutil.Process(worker.pid).children()]
        return sum(p.memory_info().rss for p in procs)

    workers = [threading.Thread(target=produce, args=(n,)) for n in range(threads)]
    for thread in workers:
        thread.start()
    while any(t.is_alive() for t in workers) or figures(everything)["processed"] < len(everything):
        rss.append(sample())
        time.sleep(0.5)
    for thread in workers:
        thread.join()
    found = assert_exactly_once(everything)
    rss.append(sample())
    growth_mb = (rss[-1] - rss[len(rss) // 3]) / 2**20
    print(f"soak: {found['processed']} events, worker RSS {rss[-1] / 2**20:.0f} MiB, "
          f"growth after warm-up {growth_mb:.1f} MiB")  # fmt: skip
    assert growth_mb < 64


def test_a_redis_outage_has_documented_bounds(
    servers: Any, settings_env: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With Redis down, a producer fails within CONTINUUM_REDIS_WAIT_S (it blocked ~75 s),
    a Redis-backed API read answers 503 (was a 500 after 73 s), /metrics answers at once
    from what it can reach; all work again when Redis is back."""
    from fastapi.testclient import TestClient

    from continuum import redis_client
    from continuum.api import create_app
    from continuum.contract.client import EnqueueError
    from continuum.security.tokens import create_token

    monkeypatch.setattr(redis_client, "_clients", {})  # made with this test's patience
    settings_env(redis_wait_s=2)
    token, _ = create_token(["pearl"])
    headers = {"Authorization": f"Bearer {token}"}
    client = MemoryClient()
    with TestClient(create_app()) as api, EmbeddedServers(TEST_HOME).redis_stopped():
        started = time.monotonic()
        with pytest.raises(EnqueueError, match="broker unreachable"):
            client.emit(turn("Sent while Redis is down", message_id="down"))
        assert time.monotonic() - started < 8
        started = time.monotonic()
        active = api.get("/v1/sessions/active", headers=headers)
        assert active.status_code == 503 and "Redis unreachable" in active.text
        assert time.monotonic() - started < 8
        started = time.monotonic()
        scrape = api.get("/metrics")
        assert (
            scrape.status_code == 200 and 'continuum_source_up{source="redis"} 0.0' in scrape.text
        )
        assert 'continuum_source_up{source="postgres"} 1.0' in scrape.text
        assert time.monotonic() - started < 8
    wait_for(lambda: _emits(client), timeout=30)
    client.close()


def _emits(client: MemoryClient) -> bool:
    from continuum.contract.client import EnqueueError

    try:
        client.emit(turn("Sent after Redis came back", message_id="back"))
    except EnqueueError:
        return False
    return True


def test_a_hanging_llm_never_holds_back_ingestion(
    db: Any, servers: Any, settings_env: Any, tmp_path: Path, client: MemoryClient
) -> None:
    """`continuum worker` (no -Q) runs ingestion in its own worker: with every background
    child stuck in an LLM call (chunk judges and a session summary), turns still land at once
    (5 turns took 148 s before; with one worker on every queue this test fails)."""
    from continuum.contract.dispatch import send
    from continuum.contract.events import parse_event
    from continuum.contract.queues import EXTRACT_CHUNK, SUMMARIZE_SESSION
    from continuum.pipeline.ingest import ingest_batch
    from continuum.pipeline.sessions import finish_session
    from continuum.processes import spawn, stop
    from tests.support.events import session_end
    from tests.support.fake_llm import fake_llm_server

    with fake_llm_server() as fake:
        fake.mode, fake.delay_s = "slow", 60.0
        settings_env(llm_base_url=fake.url, llm_timeout_s=45)
        ingest_batch([turn(f"Earlier message {i} about the fence", message_id=f"e{i}", at=i,
                           session_id="old") for i in range(4)])  # fmt: skip
        ended = finish_session(parse_event(session_end(session_id="old", at=60)))  # type: ignore[arg-type]
        assert ended.summary_id is not None
        continuum = str(Path(sys.executable).parent / "continuum")
        supervisor = spawn([continuum, "worker", "-l", "WARNING"], tmp_path / "worker.log")
        try:
            client.emit(turn("Sentinel: the ingest worker is up", message_id="up", at=50))
            wait_for(lambda: stored(["up"]) == 1, timeout=120)  # the workers booted
            send(SUMMARIZE_SESSION, "pearl", "old", ended.summary_id)
            for i in range(3):
                send(EXTRACT_CHUNK, "pearl", "old", [f"e{i}"])
            wait_for(lambda: len(fake.requests) >= 2, timeout=90)  # the background is stuck
            prompts = [r["response_format"]["json_schema"]["name"] for r in fake.requests]
            started = time.monotonic()
            client.emit_many([turn(f"New turn {i} about the gate", message_id=f"n{i}", at=100 + i)
                              for i in range(5)])  # fmt: skip
            wait_for(lambda: stored([f"n{i}" for i in range(5)]) == 5, timeout=30)
            assert time.monotonic() - started < 20  # the LLM calls hang for 45 s
            assert "session_summary" in prompts, prompts
        finally:
            stop(supervisor, timeout=5)


def stored(message_ids: list[str]) -> int:
    """How many of these messages are stored (other tests' events may still be queued)."""
    with session_scope() as db:
        return int(
            db.execute(
                text("SELECT count(*) FROM messages WHERE message_id = ANY(:ids)"),
                {"ids": message_ids},
            ).scalar()
            or 0
        )
