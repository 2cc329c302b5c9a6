"""What the cluster scenarios (`make test-cluster`, tests/cluster) read of the cluster
(`continuum.dev.cluster`): which host ran which event batch (from each host's worker log),
the CPU its workers spent, the producer host's run, and the tables the scenarios print."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterable
from typing import Any

import psutil
from rich.console import Console
from rich.table import Table
from sqlalchemy import text

from continuum.contract.queues import EVENTS, INGEST_EVENTS
from continuum.dev.cluster import Cluster
from continuum.redis_client import get_broker_redis
from continuum.store.broker import UNACKED_KEY, broker_state
from continuum.store.engine import session_scope
from tests.support import cluster_producer
from tests.support.producers import Produced
from tests.support.wait import wait_for

SUCCEEDED = re.compile(rf"Task {re.escape(INGEST_EVENTS)}\[([0-9a-f-]+)\] succeeded")


def batches_run(cluster: Cluster, host: str) -> set[str]:
    """The ids of the event batches `host`'s workers finished (Celery logs each at INFO)."""
    log = cluster.log(host, "worker")
    return set(SUCCEEDED.findall(log.read_text(errors="replace"))) if log.exists() else set()


def start_worker_hosts(cluster: Cluster, hosts: Iterable[str], **settings: Any) -> None:
    """`continuum worker` on each host, returning once every host's ingest worker is ready."""
    hosts = list(hosts)
    for host in hosts:
        cluster.start_workers(host, **settings)
    for host in hosts:
        log = cluster.log(host, "worker")
        wait_for(lambda log=log, host=host: f"ingest@{host} ready." in log.read_text(),
                 timeout=120, interval=0.2)  # fmt: skip


def stop_worker_hosts(cluster: Cluster, hosts: Iterable[str]) -> None:
    for host in hosts:
        cluster.stop(host, "worker")


def cpu_seconds(cluster: Cluster, hosts: Iterable[str]) -> dict[int, float]:
    """User + system CPU seconds of every worker process on `hosts` (supervisor, group
    workers and their pools), by pid."""
    spent: dict[int, float] = {}
    for host in hosts:
        top = psutil.Process(cluster.process(host, "worker").pid)
        for proc in [top, *top.children(recursive=True)]:
            try:
                times = proc.cpu_times()
            except psutil.NoSuchProcess:
                continue
            spent[proc.pid] = times.user + times.system
    return spent


def cpu_spent(before: dict[int, float], after: dict[int, float]) -> float:
    return sum(seconds - before.get(pid, 0.0) for pid, seconds in after.items())


def start_producer(
    cluster: Cluster, events: list[dict[str, Any]], name: str, size: int = 10, max_queued: int = 20
) -> subprocess.Popen[bytes]:
    """The producer host sends `events` (tests.support.cluster_producer)."""
    events_file = cluster.directory / f"{name}.events.json"
    events_file.write_text(json.dumps(events))
    argv = [sys.executable, "-m", "tests.support.cluster_producer", str(events_file),
            str(cluster.directory / f"{name}.accepted.json"), str(size), str(max_queued)]  # fmt: skip
    return cluster.start("producer", argv, name)


def produced(cluster: Cluster, name: str, timeout: float = 300) -> Produced:
    """Wait for the producer `name` to have sent everything; when each event was accepted."""
    proc = cluster.process("producer", name)
    code = proc.wait(timeout)
    assert code == 0, f"producer {name} exited {code}: {cluster.log('producer', name).read_text()}"
    return cluster_producer.read(cluster.directory / f"{name}.accepted.json")


def ingest_in_flight() -> int:
    """Event batches queued or held by a worker (a late duplicate still running included)."""
    broker = get_broker_redis()
    held = sum(json.loads(raw)[2] == EVENTS for raw in broker.hvals(UNACKED_KEY))
    return int(broker_state().depths[EVENTS]) + held


def dead_letters_after(last_id: int) -> int:
    with session_scope() as db:
        return int(db.scalar(text("SELECT count(*) FROM dead_letters WHERE id > :id"),
                             {"id": last_id}) or 0)  # fmt: skip


def last_dead_letter() -> int:
    with session_scope() as db:
        return int(db.scalar(text("SELECT coalesce(max(id), 0) FROM dead_letters")) or 0)


def first_acceptance_after(produced: Produced, moment: float) -> float:
    """Seconds from `moment` until the producer next got an event accepted."""
    return min(at for at in produced.accepted_at.values() if at > moment) - moment


def show(title: str, columns: list[str], rows: list[list[Any]]) -> None:
    """Print a scenario's figures as a rich table."""
    table = Table(title=title, title_justify="left", min_width=len(title) + 4)
    for column in columns:
        table.add_column(column, justify="right" if column != columns[0] else "left")
    for row in rows:
        table.add_row(*(f"{cell:.1f}" if isinstance(cell, float) else str(cell) for cell in row))
    Console(width=120).print(table)


def last_stored_at(events: list[dict[str, Any]]) -> float:
    """When the last of these events was stored (epoch seconds, the database's clock)."""
    with session_scope() as db:
        return float(db.scalar(
            text("SELECT extract(epoch FROM max(processed_at)) FROM processed_events"
                 " WHERE event_id = ANY(CAST(:ids AS uuid[]))"),
            {"ids": [event["event_id"] for event in events]},
        ))  # fmt: skip
