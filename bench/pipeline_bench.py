"""Ingest benchmarks with real worker processes: how fast 1 and 2 worker processes consume
turn events (raw turns persisted, key moments stored) in batches of 25 as producers send
them, beside the same Celery setup running a no-op task (the per-message ceiling), with and
without task events (Flower's cost), and the peak RSS of a worker. Each load is queued before
its worker starts and timed from the worker's first completion: the worker's rate alone,
neither its start-up nor the producer's."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import psutil
from sqlalchemy import func, select

from bench.capture_bench import _events
from bench.common import Options, Section, logs_of
from continuum.contract.client import MemoryClient
from continuum.contract.queues import EVENTS
from continuum.processes import child_env, spawn, stop
from continuum.redis_client import get_redis
from continuum.store.engine import session_scope
from continuum.store.models import ProcessedEvent

BATCH = 25


@dataclass(frozen=True)
class WorkerSetup:
    """How a benchmark worker is launched: the module `python -m` runs (celery, or a wrapper
    of it) and environment variables added to the usual ones."""

    launcher: str = "celery"
    env: dict[str, str] = field(default_factory=dict)


def _worker(
    concurrency: int, events: bool, log_dir: Path, setup: WorkerSetup = WorkerSetup()
) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", setup.launcher, "-A", "workers", "worker", "-Q", EVENTS,
            "-P", "prefork", "-c", str(concurrency), "--include", "bench.tasks",
            "--loglevel", "WARNING", "--without-gossip", "--without-mingle",
            "-n", f"bench-{uuid.uuid4().hex[:6]}@%h"] + (["-E"] if events else [])  # fmt: skip
    env = {**child_env(), **setup.env}
    return spawn(argv, log_dir / f"worker-c{concurrency}{'-E' if events else ''}.log", env)


def _processes(proc: subprocess.Popen[bytes]) -> list[psutil.Process]:
    try:
        parent = psutil.Process(proc.pid)
        return [parent, *parent.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def _rss(proc: subprocess.Popen[bytes]) -> int:
    try:
        return sum(p.memory_info().rss for p in _processes(proc))
    except psutil.NoSuchProcess:
        return 0


def _cpu_s(proc: subprocess.Popen[bytes]) -> float:
    """CPU seconds (user + system) the worker and its pool processes have used so far."""
    try:
        return sum(sum(p.cpu_times()[:2]) for p in _processes(proc))
    except psutil.NoSuchProcess:
        return 0.0


@dataclass(frozen=True)
class Drained:
    """How a worker drained its load: completions a second, its peak RSS, and the CPU
    seconds its processes spent a completion (what other load on the machine slows down
    but does not add to)."""

    rate: float
    peak_rss: int
    cpu_s_each: float


def _drain(
    concurrency: int,
    events: bool,
    logs: Path,
    done: Callable[[], int],
    total: int,
    setup: WorkerSetup = WorkerSetup(),
) -> Drained:
    """Start a worker on a queue that already holds the whole load; measure how it
    completes the load (counted from its first completion, so start-up is not timed, nor
    the producer: both benchmarks measure how fast the worker consumes)."""
    proc = _worker(concurrency, events, logs, setup)
    try:
        deadline, peak = time.monotonic() + 120, 0
        while (first := done()) < 1:
            if time.monotonic() > deadline:
                raise TimeoutError("benchmark worker did not start")
            time.sleep(0.01)
        started, cpu = time.perf_counter(), _cpu_s(proc)
        while done() < total:
            peak = max(peak, _rss(proc))
            if time.perf_counter() - started > 300:
                raise TimeoutError(f"only {done()}/{total} done after 300 s")
            time.sleep(0.05)
        seconds, cpu = time.perf_counter() - started, _cpu_s(proc) - cpu
        return Drained((total - first) / seconds, max(peak, _rss(proc)), cpu / (total - first))
    finally:
        stop(proc)


def noop_ceiling(client: MemoryClient, concurrency: int, events: bool, n: int, logs: Path) -> float:
    counter = f"bench:noop:{uuid.uuid4()}"
    for _ in range(n):
        client.app.send_task("bench.noop", args=[counter], queue=EVENTS)
    return _drain(concurrency, events, logs, lambda: int(get_redis().get(counter) or 0), n).rate


def _processed() -> int:
    with session_scope() as db:
        return int(db.scalar(select(func.count()).select_from(ProcessedEvent)) or 0)


def ingest(
    client: MemoryClient, concurrency: int, n: int, logs: Path, setup: WorkerSetup = WorkerSetup()
) -> Drained:
    base = _processed()
    events = _events(n, namespace=f"ingest-{uuid.uuid4().hex[:6]}")
    for start in range(0, n, BATCH):
        client.emit_many(events[start : start + BATCH])
    return _drain(concurrency, False, logs, lambda: _processed() - base, n, setup)


def run(urls: dict[str, str], options: Options) -> list[Section]:
    quick = options.quick
    os.environ["CONTINUUM_EMBEDDING_PROVIDER"] = "none"  # the embed stage is measured apart
    n_events, n_tasks = (1000, 1000) if quick else (5000, 3000)
    client = MemoryClient(urls["broker_url"])
    logs = logs_of("pipeline")
    section = Section(
        f"Ingest with real worker processes ({n_events} turn events, batches of {BATCH})"
    )
    peaks = {}
    for concurrency in (1, 2):
        ceiling = noop_ceiling(client, concurrency, False, n_tasks, logs)
        drained = ingest(client, concurrency, n_events, logs)
        rate, peaks[concurrency] = drained.rate, drained.peak_rss
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
