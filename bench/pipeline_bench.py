"""Ingest benchmarks with real worker processes: end-to-end turn events/s (enqueue → raw
persisted → key moments stored) with 1 and 2 processes, beside the same Celery setup running
a no-op task (the per-message ceiling), with and without task events (Flower's cost), and
the peak RSS of a worker."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import psutil
from sqlalchemy import func, select

from bench.capture_bench import _events
from bench.common import Options, Section
from continuum.cli.processes import spawn, stop
from continuum.contract.client import MemoryClient
from continuum.contract.queues import EVENTS
from continuum.store.engine import session_scope
from continuum.store.models import ProcessedEvent
from continuum.store.redis_client import get_redis

BATCH = 25


def _worker(concurrency: int, events: bool, log_dir: Path) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", "celery", "-A", "workers", "worker", "-Q", EVENTS,
            "-P", "prefork", "-c", str(concurrency), "--include", "bench.tasks",
            "--loglevel", "WARNING", "--without-gossip", "--without-mingle",
            "-n", f"bench-{uuid.uuid4().hex[:6]}@%h"] + (["-E"] if events else [])  # fmt: skip
    return spawn(argv, log_dir / f"worker-c{concurrency}{'-E' if events else ''}.log")


def _rss(proc: subprocess.Popen[bytes]) -> int:
    try:
        parent = psutil.Process(proc.pid)
        return sum(p.memory_info().rss for p in [parent, *parent.children(recursive=True)])
    except psutil.NoSuchProcess:
        return 0


def _run(
    proc: subprocess.Popen[bytes], done: Any, total: int, timeout: float = 300
) -> tuple[float, int]:
    """Seconds until `done() >= total`, and the peak RSS seen meanwhile."""
    started, peak = time.perf_counter(), 0
    while done() < total:
        peak = max(peak, _rss(proc))
        if time.perf_counter() - started > timeout:
            raise TimeoutError(f"only {done()}/{total} done after {timeout}s")
        time.sleep(0.05)
    return time.perf_counter() - started, max(peak, _rss(proc))


def _warm(client: MemoryClient) -> None:
    """One task through the worker so start-up is not timed."""
    counter = f"bench:warm:{uuid.uuid4()}"
    client.app.send_task("bench.noop", args=[counter], queue=EVENTS)
    deadline = time.monotonic() + 60
    while not get_redis().get(counter):
        if time.monotonic() > deadline:
            raise TimeoutError("benchmark worker did not start")
        time.sleep(0.05)


def noop_ceiling(client: MemoryClient, concurrency: int, events: bool, n: int, logs: Path) -> float:
    proc = _worker(concurrency, events, logs)
    try:
        _warm(client)
        counter = f"bench:noop:{uuid.uuid4()}"
        for _ in range(n):
            client.app.send_task("bench.noop", args=[counter], queue=EVENTS)
        seconds, _ = _run(proc, lambda: int(get_redis().get(counter) or 0), n)
        return n / seconds
    finally:
        stop(proc)


def _processed() -> int:
    with session_scope() as db:
        return int(db.scalar(select(func.count()).select_from(ProcessedEvent)) or 0)


def ingest(client: MemoryClient, concurrency: int, n: int, logs: Path) -> tuple[float, int]:
    proc = _worker(concurrency, False, logs)
    try:
        _warm(client)
        base = _processed()
        events = _events(n, namespace=f"ingest-{uuid.uuid4().hex[:6]}")
        started = time.perf_counter()
        for start in range(0, n, BATCH):
            client.emit_many(events[start : start + BATCH])
        _seconds, peak = _run(proc, lambda: _processed() - base, n)
        return n / (time.perf_counter() - started), peak
    finally:
        stop(proc)


def run(urls: dict[str, str], options: Options) -> list[Section]:
    quick = options.quick
    os.environ["CONTINUUM_EMBEDDING_PROVIDER"] = "none"  # the embed stage is measured apart
    n_events, n_tasks = (1000, 1000) if quick else (5000, 3000)
    client = MemoryClient(urls["broker_url"])
    logs = Path(tempfile.mkdtemp(prefix="continuum-bench-logs-"))
    section = Section(
        f"Ingest with real worker processes ({n_events} turn events, batches of {BATCH})"
    )
    peaks = {}
    for concurrency in (1, 2):
        ceiling = noop_ceiling(client, concurrency, False, n_tasks, logs)
        rate, peaks[concurrency] = ingest(client, concurrency, n_events, logs)
        section.add(f"events/s, {concurrency} process(es)", rate, ceiling, "events/s",
                    f"no-op tasks/s, same setup ({concurrency} proc)")  # fmt: skip
    with_events = noop_ceiling(client, 2, True, n_tasks, logs)
    without = noop_ceiling(client, 2, False, n_tasks, logs)
    section.add("no-op tasks/s with task events (-E, Flower)", with_events, without, "tasks/s",
                "same, without task events")  # fmt: skip
    memory = Section("Worker memory")
    for concurrency, peak in peaks.items():
        memory.add(f"peak RSS, {concurrency} process(es) (main + pool)", peak / 2**20, None, "MiB")
    client.close()
    del os.environ["CONTINUUM_EMBEDDING_PROVIDER"]
    return [section, memory]
