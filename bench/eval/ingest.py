"""Loading the conversations as a new user's would be: OpenClaw transcripts on disk, read by
`continuum.sync.sync` (which feeds capture through the `extract` queue), then real Celery
worker processes drain the `extract` and `embed` queues until nothing is waiting, running
or left to embed."""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import redis
from kombu.transport.redis import Channel
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from sqlalchemy import text

from continuum.contract.queues import EMBED, EXTRACT
from continuum.pipeline.outbox import EMBEDDED_TABLES, pending_counts
from continuum.processes import spawn, stop, worker_argv
from continuum.redis_client import SyncRedis
from continuum.store.broker import queue_keys
from continuum.store.engine import session_scope
from continuum.sync import SyncProgress, sync
from continuum.transcripts import openclaw

DRAIN_TIMEOUT_S = 1800.0
POLL_S = 0.5
SETTLED_POLLS = 2  # a message between the queue and the unacked set is in neither for a moment
WORKER_CONCURRENCY = 2


@dataclass(frozen=True)
class Ingested:
    messages: int
    memories: int
    chunks: int  # extract tasks the sync sent
    sync_s: float
    drain_s: float


@dataclass(frozen=True)
class _Backlog:
    extract: int  # waiting in the queue
    embed: int
    running: int  # delivered to the worker, not yet acknowledged (any queue)
    unembedded: int
    rows: int  # rows the outbox embeds

    @property
    def empty(self) -> bool:
        return not (self.extract or self.embed or self.running or self.unembedded)


def _waiting(broker: SyncRedis, queue: str) -> int:
    return sum(int(broker.llen(key)) for key in queue_keys(queue))


def _backlog(broker: SyncRedis) -> _Backlog:
    running = int(broker.hlen(Channel.unacked_key))
    with session_scope() as db:
        rows = sum(
            int(db.scalar(text(f"SELECT count(*) FROM {table}")) or 0) for table in EMBEDDED_TABLES
        )
    return _Backlog(
        _waiting(broker, EXTRACT),
        _waiting(broker, EMBED),
        running,
        sum(pending_counts().values()),
        rows,
    )


def _drain(
    broker: SyncRedis, chunks: int, worker: subprocess.Popen[bytes], log: Path, console: Console
) -> None:
    """Poll until the queues, the worker and the embedding outbox have been empty for
    SETTLED_POLLS polls in a row, showing capture and embedding progress."""
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TextColumn("{task.fields[note]}"), TimeElapsedColumn())  # fmt: skip
    deadline = time.monotonic() + DRAIN_TIMEOUT_S
    settled = 0
    with Progress(*columns, console=console) as progress:
        capture = progress.add_task("capture chunks", total=chunks, note="")
        embedding = progress.add_task("rows embedded", total=None, note="")
        while settled < SETTLED_POLLS:
            backlog = _backlog(broker)
            progress.update(capture, completed=chunks - backlog.extract,
                            note=f"{backlog.running} running")  # fmt: skip
            progress.update(embedding, total=backlog.rows,
                            completed=backlog.rows - backlog.unembedded,
                            note=f"{backlog.embed} embed task(s) queued")  # fmt: skip
            settled = settled + 1 if backlog.empty else 0
            if worker.poll() is not None:
                raise RuntimeError(f"the eval worker exited; see {log}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"queues not drained after {DRAIN_TIMEOUT_S:.0f}s: {backlog}")
            time.sleep(POLL_S)


def ingest(instances: list[Path], home: Path, broker_url: str, console: Console) -> Ingested:
    """Sync the OpenClaw instance directories `instances` and drain what it started with
    real worker processes (logs under `home/logs`)."""
    from tasks.embed import schedule_embedding  # the Celery app reads the broker URL on import

    log_file = home / "logs" / "eval-worker.log"
    argv = worker_argv([EXTRACT, EMBED], WORKER_CONCURRENCY, loglevel="WARNING",
                       hostname="eval@%h")  # fmt: skip
    worker = spawn(argv, log_file)
    console.print(f"[green]✓[/] worker started (pid {worker.pid}, log {log_file})")
    broker = redis.Redis.from_url(broker_url)
    try:
        columns = (TextColumn("sync"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        with Progress(*columns, console=console) as progress:
            files = progress.add_task("files", total=None)

            def advance(update: SyncProgress) -> None:
                progress.update(files, completed=update.done, total=update.total)

            summary = sync(home, roots=instances, kinds=(openclaw.KIND,), progress=advance)
        schedule_embedding()  # as the sync task does after a run that added rows
        console.print(
            f"[green]✓[/] synced {summary.messages_inserted:,} messages from "
            f"{summary.files_read} transcripts of {len(summary.instances)} instances in "
            f"{summary.seconds:.1f}s; {summary.chunks_dispatched} capture chunks sent"
        )
        started = time.perf_counter()
        _drain(broker, summary.chunks_dispatched, worker, log_file, console)
        drain_s = time.perf_counter() - started
    finally:
        stop(worker)
        broker.close()
    memories = ingested().memories
    console.print(f"[green]✓[/] queues drained in {drain_s:.1f}s: {memories:,} memories")
    return Ingested(summary.messages_inserted, memories, summary.chunks_dispatched,
                    summary.seconds, drain_s)  # fmt: skip


def ingested() -> Ingested:
    """What the database holds (messages, memories), without the sync's own figures."""
    with session_scope() as db:
        messages, memories = (
            int(db.scalar(text(f"SELECT count(*) FROM {table}")) or 0)
            for table in ("messages", "memories")
        )
    return Ingested(messages, memories, 0, 0.0, 0.0)
