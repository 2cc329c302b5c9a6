"""`continuum status`: what the pipeline is doing (queues, unacked, embeddings waiting, dead
letters, the last sync and its open problems, each tenant's last retention prune); `--wait`
returns once it is drained."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import typer

from continuum.cli.common import JsonOption, console, fail, print_json

if TYPE_CHECKING:
    from continuum.status import PipelineStatus

app = typer.Typer()
POLL_S = 1.0


def _show(status: PipelineStatus) -> None:
    out = console()
    queues = ", ".join(f"{queue} {count}" for queue, count in status.queues.items())
    out.print(f"queues: {queues}; unacked {status.unacked}", highlight=False)
    pending = ", ".join(f"{table} {n}" for table, n in status.embeddings_pending.items())
    out.print(f"embeddings pending: {pending}", highlight=False)
    out.print(f"dead letters: {status.dead_letters}", highlight=False)
    out.print(f"secrets redacted: {status.secrets_redacted}", highlight=False)
    last = status.last_sync
    if last is None or status.last_sync_at is None:
        out.print("last sync: never", highlight=False)
    else:
        out.print(
            f"last sync: {status.last_sync_at:%Y-%m-%d %H:%M:%S} UTC, "
            f"{last['messages_inserted']} new messages, {last['files_read']} files read, "
            f"{last['sessions_ended']} sessions ended, {last['seconds']:.1f}s",
            highlight=False,
        )
    for tenant, pruned in sorted(status.last_retention.items()):
        out.print(
            f"retention of {tenant}: {pruned['at'][:16]} UTC, {pruned['messages']} messages "
            f"older than {pruned['days']} days deleted, {pruned['statements']} statements, "
            f"{pruned['memories_marked']} memories marked",
            highlight=False,
        )
    found = ", ".join(f"{kind} {n}" for kind, n in sorted(status.problems_open.items()))
    out.print(f"open sync problems: {found or 'none'} (continuum sync problems)", highlight=False)
    out.print("[green]drained[/]" if status.drained else "[yellow]working[/]")


@app.command("status")
def status_command(
    wait: bool = typer.Option(
        False, "--wait", help="Return once nothing is queued, held or waiting for embedding."
    ),
    timeout: float = typer.Option(
        3600.0, "--timeout", help="With --wait: give up after this many seconds (exit 1)."
    ),
    as_json: bool = JsonOption,
) -> None:
    """Queues, unacked messages, embeddings pending, dead letters, the last sync and its
    problems."""
    import redis

    from continuum.status import pipeline_status

    deadline = time.monotonic() + timeout
    try:
        status = pipeline_status()
        while wait and not status.drained and time.monotonic() < deadline:
            time.sleep(POLL_S)
            status = pipeline_status()
    except redis.RedisError as exc:
        fail(f"broker unreachable: {exc}", code=1)
    if as_json:
        print_json(status.as_dict())
    else:
        _show(status)
    if wait and not status.drained:
        raise typer.Exit(1)
