"""`make demo`: servers up, migrate, a real worker, sample conversations in, results out."""

from __future__ import annotations

import json
import time
import uuid
from datetime import datetime, timedelta
from importlib import resources
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from sqlalchemy import func, select

from continuum.config import get_settings
from continuum.contract.client import MemoryClient
from continuum.dev.embedded import EmbeddedServers
from continuum.pipeline.outbox import pending_counts
from continuum.processes import spawn, stop, worker_argv
from continuum.recall.context import context
from continuum.recall.namespace_queries import list_sessions, recent_memories
from continuum.recall.search import search
from continuum.store import migrate
from continuum.store.engine import session_scope
from continuum.store.models import ProcessedEvent, Session

DEMO_ID_NAMESPACE = uuid.UUID("6f1d9a52-0c3b-4e8e-9a51-3f0b1d3f9c11")
PROCESS_TIMEOUT_S = 120


def sample_events() -> tuple[str, list[list[dict[str, Any]]]]:
    """The sample conversations as event batches, one batch per session.

    Event ids are derived from content, so running the demo twice stores nothing twice.
    """
    data = json.loads(
        resources.files("continuum.dev.samples").joinpath("conversations.json").read_text()
    )
    namespace, user_id = data["namespace"], data["user_id"]
    batches = []
    for session in data["sessions"]:
        start = datetime.fromisoformat(session["started_at"])
        sid, channel = session["session_id"], session["channel"]
        events: list[dict[str, Any]] = []
        previous = None
        for index, (role, text, offset) in enumerate(session["turns"]):
            message_id = f"{sid}:{index:04d}"
            events.append({
                "kind": "turn", "namespace": namespace, "session_id": sid, "channel": channel,
                "user_id": user_id, "ts": (start + timedelta(seconds=offset)).isoformat(),
                "role": role, "content": text, "message_id": message_id, "parent_id": previous,
                "event_id": str(uuid.uuid5(DEMO_ID_NAMESPACE, message_id)),
            })  # fmt: skip
            previous = message_id
        ended = start + timedelta(seconds=session["turns"][-1][2] + 5)
        events.append({
            "kind": "session_end", "namespace": namespace, "session_id": sid, "channel": channel,
            "user_id": user_id, "ts": ended.isoformat(), "ended_at": ended.isoformat(),
            "reason": session["reason"], "duration_s": (ended - start).total_seconds(),
            "message_count": len(session["turns"]),
            "event_id": str(uuid.uuid5(DEMO_ID_NAMESPACE, f"{sid}:end")),
        })  # fmt: skip
        batches.append(events)
    return namespace, batches


def _processed(event_ids: list[str]) -> int:
    """Events stored, plus sessions whose end-of-session work (summary, narrative) is done."""
    with session_scope() as db:
        events = db.scalar(
            select(func.count())
            .select_from(ProcessedEvent)
            .where(ProcessedEvent.event_id.in_([uuid.UUID(e) for e in event_ids]))
        )
        finished = db.scalar(
            select(func.count()).select_from(Session).where(Session.details.has_key("finished"))
        )
        return int(events or 0) + int(finished or 0)


def run_demo(console: Console, keep_running: bool = False) -> None:
    settings = get_settings()
    servers = EmbeddedServers(settings.home)
    was_running = all(s.running for s in servers.status())
    with console.status("Starting embedded Postgres + Redis…"):
        urls = servers.up()
    console.print(f"[green]✓[/] Postgres  {urls['database_url']}")
    console.print(f"[green]✓[/] Redis     {urls['redis_url']}")
    with console.status("Migrating the database…"):
        migrate.upgrade(urls["database_url"])
    console.print("[green]✓[/] Schema at head")
    log_file = settings.home / "logs" / "demo-worker.log"
    worker = spawn(worker_argv(concurrency=2, hostname="demo@%h"), log_file)
    console.print(f"[green]✓[/] Worker started (pid {worker.pid}, log {log_file})")
    try:
        namespace, batches = sample_events()
        user_id = str(batches[0][0]["user_id"])
        client = MemoryClient(urls["broker_url"])
        event_ids: list[str] = []
        latencies = []
        for batch in batches:
            for event in batch:
                began = time.perf_counter()
                event_ids.append(client.emit(event))
                latencies.append((time.perf_counter() - began) * 1000)
        latencies.sort()
        p95 = latencies[int(len(latencies) * 0.95) - 1]
        console.print(
            f"[green]✓[/] Enqueued {len(event_ids)} events from {len(batches)} sessions "
            f"(enqueue p50 {latencies[len(latencies) // 2]:.2f} ms, p95 {p95:.2f} ms)"
        )
        _wait(console, event_ids, len(batches), worker)
        _wait_embedded(console, worker)
        _report(console, namespace, user_id)
    finally:
        stop(worker)
        console.print("[green]✓[/] Worker stopped")
        if not was_running and not keep_running:
            servers.down()
            console.print("[green]✓[/] Embedded servers stopped (data kept in .continuum/)")


def _wait(console: Console, event_ids: list[str], sessions: int, worker: Any) -> None:
    columns = (TextColumn("Processing"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console) as progress:
        total = len(event_ids) + sessions
        bar = progress.add_task("events", total=total)
        deadline = time.monotonic() + PROCESS_TIMEOUT_S
        while (done := _processed(event_ids)) < total:
            progress.update(bar, completed=done)
            if worker.poll() is not None:
                raise RuntimeError("the worker exited; see .continuum/logs/demo-worker.log")
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"only {done}/{total} events and session ends done after {PROCESS_TIMEOUT_S}s; "
                    "see .continuum/logs/demo-worker.log"
                )
            time.sleep(0.2)
        progress.update(bar, completed=total)


def _wait_embedded(console: Console, worker: Any) -> None:
    """Wait for the worker's embed stage to drain the outbox (it loads the model first)."""
    total = sum(pending_counts().values())
    columns = (TextColumn("Embedding"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console) as progress:
        bar = progress.add_task("rows", total=total)
        deadline = time.monotonic() + PROCESS_TIMEOUT_S
        while (left := sum(pending_counts().values())) > 0:
            progress.update(bar, completed=total - left)
            if worker.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{left} rows not embedded; see .continuum/logs/demo-worker.log")
            time.sleep(0.3)
        progress.update(bar, completed=total)


def _report(console: Console, namespace: str, user_id: str) -> None:
    table = Table(title=f"Sessions in namespace '{namespace}'")
    for column in ("session", "channel", "messages", "started", "status"):
        table.add_column(column)
    for session in list_sessions(namespace):
        table.add_row(
            session.session_id,
            session.channel or "",
            str(session.message_count),
            f"{session.started_at:%Y-%m-%d %H:%M}" if session.started_at else "",
            session.status,
        )
    console.print(table)
    memories = Table(title="Memories captured (deterministic, no LLM)")
    for column in ("kind", "imp", "content", "from"):
        memories.add_column(column)
    for memory in recent_memories(namespace):
        memories.add_row(
            memory.kind,
            str(memory.importance),
            memory.content,
            ", ".join(memory.source_message_ids),
        )
    console.print(memories)
    query = "which contractor is doing the backyard?"
    console.print(f"\n[bold]Hybrid search:[/] {query!r}")
    for hit in search(namespace, query, limit=3):
        line = (
            f"  {hit.score:.4f} [{hit.created_at:%Y-%m-%d %H:%M}] [{hit.channel}] "
            f"{hit.source}:{hit.kind}: {hit.content}  ← {', '.join(hit.source_message_ids)}"
        )
        console.print(escape(line), highlight=False)
    seed = "What did we decide about the garden?"
    recall = context(namespace, seed, 600, user_id=user_id, channel="discord")
    console.print(
        f"\n[bold]Recall:[/] the context block a new Discord session starts with "
        f"(seed {seed!r}, {recall.tokens_used}/600 tokens)"
    )
    console.print(Panel(escape(recall.block), expand=False))
