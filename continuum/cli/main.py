"""The `continuum` command: dev servers, migrations, emitting events, Celery processes,
queries. Every subcommand is a thin shell over a `continuum.*` function."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict
from datetime import date
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from continuum.cli import api as api_cli
from continuum.cli import sync as sync_cli
from continuum.cli.memory import register as register_lifecycle
from continuum.cli.recall import recall_app
from continuum.config import ConfigError, get_settings

app = typer.Typer(help="Continuum: durable memory for AI agents.", no_args_is_help=True)
dev_app = typer.Typer(help="Embedded Postgres + Redis for development, demo and tests.")
db_app = typer.Typer(help="Database schema.")
messages_app = typer.Typer(help="Raw conversation messages.")
handoff_app = typer.Typer(help="Channel handoffs (voice → Discord …), read once, 10 min TTL.")
app.add_typer(dev_app, name="dev")
app.add_typer(db_app, name="db")
app.add_typer(messages_app, name="messages")
app.add_typer(handoff_app, name="handoff")
app.add_typer(sync_cli.app)
app.add_typer(recall_app)
register_lifecycle(app)
app.command("api")(api_cli.serve)
app.add_typer(api_cli.tokens_app, name="tokens")

console = Console()
err_console = Console(stderr=True)


def fail(message: str, code: int = 2) -> None:
    err_console.print(f"[red]error:[/] {message}")
    raise typer.Exit(code)


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, default=str, ensure_ascii=False) + "\n")


# -- dev ---------------------------------------------------------------------------
def _servers() -> Any:
    from continuum.dev.embedded import EmbeddedServers

    return EmbeddedServers(get_settings().home)


@dev_app.command("up")
def dev_up() -> None:
    """Start the embedded servers (idempotent) and write their URLs to servers.json."""
    from continuum.dev.embedded import EmbeddedError

    try:
        with console.status("Starting embedded Postgres + Redis…"):
            urls = _servers().up()
    except EmbeddedError as exc:
        fail(str(exc))
    for name, url in urls.items():
        console.print(f"[green]✓[/] {name:<13} {url}")


@dev_app.command("down")
def dev_down() -> None:
    """Stop the embedded servers (data is kept)."""
    _servers().down()
    console.print("[green]✓[/] embedded servers stopped")


@dev_app.command("status")
def dev_status() -> None:
    """Show whether each embedded server runs, and where."""
    table = Table("server", "running", "url", "data")
    statuses = _servers().status()
    for status in statuses:
        table.add_row(
            status.name, "yes" if status.running else "no", status.url or "", status.detail
        )
    console.print(table)
    if not all(status.running for status in statuses):
        raise typer.Exit(1)


@app.command()
def check() -> None:
    """Check that Postgres (with pgvector), Redis and the broker answer; exit 1 if not."""
    from continuum.store.health import run_checks

    checks = run_checks()
    for item in checks:
        mark = "[green]✓[/]" if item.ok else "[red]✗[/]"
        console.print(f"{mark} {item.name:<9} {item.detail}", highlight=False)
    if not all(item.ok for item in checks):
        raise typer.Exit(1)


# -- db ----------------------------------------------------------------------------
@db_app.command("upgrade")
def db_upgrade(revision: str = typer.Argument("head")) -> None:
    """Apply the Alembic migrations up to REVISION."""
    from continuum.store import migrate

    migrate.upgrade(revision=revision)
    console.print(f"[green]✓[/] database at {revision}")


# -- producers ---------------------------------------------------------------------
@app.command()
def emit(
    kind: str = typer.Argument(..., help="turn | idle | pre_compaction | session_end"),
    json_text: str = typer.Option(
        None, "--json", help="An event object or an array of them; read from stdin if omitted."
    ),
) -> None:
    """Validate and enqueue events (for runtimes in other languages). Prints the event ids."""
    from continuum.contract.client import EnqueueError, MemoryClient
    from continuum.contract.events import EventError

    raw = json_text if json_text is not None else sys.stdin.read()
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        fail(f"input is not JSON: {exc}")
    items = data if isinstance(data, list) else [data]
    for index, item in enumerate(items):
        if isinstance(item, dict) and item.setdefault("kind", kind) != kind:
            fail(f"event #{index}: kind {item['kind']!r} does not match {kind!r}")
    try:
        ids = MemoryClient().emit_many(items)
    except EventError as exc:
        fail(str(exc))
    except EnqueueError as exc:
        fail(str(exc), code=3)
    print_json({"enqueued": len(ids), "event_ids": ids})


# -- celery processes --------------------------------------------------------------
def _exec(argv: list[str]) -> None:
    from continuum.cli.processes import child_env

    os.execvpe(argv[0], argv, child_env())


@app.command()
def worker(
    queues: str = typer.Option(None, "--queues", "-Q", help="Comma separated; default all."),
    concurrency: int = typer.Option(None, "--concurrency", "-c"),
    pool: str = typer.Option("prefork", "--pool", "-P"),
    events: bool = typer.Option(False, "--events", "-E", help="Send task events (Flower)."),
    loglevel: str = typer.Option("INFO", "--loglevel", "-l"),
) -> None:
    """Run a Celery worker with Continuum's configuration."""
    from continuum.cli.processes import worker_argv

    try:
        argv = worker_argv(
            queues.split(",") if queues else None, concurrency, pool, loglevel, events=events
        )
    except ConfigError as exc:
        fail(str(exc))
    _exec(argv)


@app.command()
def beat(loglevel: str = typer.Option("INFO", "--loglevel", "-l")) -> None:
    """Run Celery beat (periodic sync, sweeps, weekly maintenance)."""
    from continuum.cli.processes import beat_argv

    settings = get_settings()
    settings.home.mkdir(parents=True, exist_ok=True)
    _exec(beat_argv(settings.home / "celerybeat-schedule", loglevel))


@app.command()
def flower(port: int = typer.Option(None, "--port")) -> None:
    """Run Flower with basic auth (CONTINUUM_FLOWER_USER / CONTINUUM_FLOWER_PASSWORD)."""
    from continuum.cli.processes import flower_argv

    try:
        argv = flower_argv(port)
    except ConfigError as exc:
        fail(str(exc))
    _exec(argv)


# -- queries -----------------------------------------------------------------------
NamespaceOption = typer.Option(..., "--namespace", "-n", help="Tenant (instance) to query.")


def _print_hits(hits: list[Any], as_json: bool) -> None:
    if as_json:
        print_json([asdict(hit) for hit in hits])
        return
    for hit in hits:
        console.print(
            f"[dim]{hit.created_at:%Y-%m-%d %H:%M}[/] [cyan]{hit.channel or '-'}[/] "
            f"[bold]{hit.role}[/] {hit.content}",
            highlight=False,
        )


@messages_app.command("search")
def messages_search(
    query: str,
    namespace: str = NamespaceOption,
    limit: int = typer.Option(20, "--limit"),
    channel: str = typer.Option(None, "--channel"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Full-text search of raw messages."""
    from continuum.recall.queries import search_messages

    _print_hits(search_messages(namespace, query, limit=limit, channel=channel), as_json)


@messages_app.command("recent")
def messages_recent(
    namespace: str = NamespaceOption,
    limit: int = typer.Option(20, "--limit"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """The last N messages, oldest first."""
    from continuum.recall.queries import recent_messages

    _print_hits(recent_messages(namespace, limit=limit), as_json)


@messages_app.command("day")
def messages_day(
    day: str = typer.Argument(..., help="YYYY-MM-DD (UTC)"),
    namespace: str = NamespaceOption,
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """One day's conversation across sessions and channels."""
    from continuum.recall.queries import day_messages

    try:
        parsed = date.fromisoformat(day)
    except ValueError:
        fail(f"{day!r} is not a date; use YYYY-MM-DD")
    _print_hits(day_messages(namespace, parsed), as_json)


@app.command()
def sessions(
    namespace: str = NamespaceOption, as_json: bool = typer.Option(False, "--json")
) -> None:
    """Active sessions across channels (registry, last hour), with their current topic."""
    from continuum.store.ephemeral import active_sessions

    active = active_sessions(namespace)
    if as_json:
        print_json([asdict(s) for s in active])
        return
    table = Table("channel", "session", "user", "started", "last active", "topic")
    for s in active:
        table.add_row(s.channel, s.session_id, s.user_id or "", s.started_at or "",
                      s.last_active, s.topic or "")  # fmt: skip
    console.print(table)


@app.command()
def topic(
    namespace: str = NamespaceOption,
    channel: str = typer.Option(None, "--channel"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Current topic per active channel (or of one channel)."""
    from continuum.store.ephemeral import topics

    found = topics(namespace)
    if channel:
        found = {channel: found[channel]} if channel in found else {}
    if as_json:
        print_json(found)
        return
    for name, slug in found.items():
        console.print(f"[cyan]{name}[/] {slug}")


@handoff_app.command("send")
def handoff_send(
    namespace: str = NamespaceOption,
    user_id: str = typer.Option(..., "--user"),
    from_channel: str = typer.Option(..., "--from"),
    to_channel: str = typer.Option(..., "--to"),
    summary: str = typer.Option(..., "--summary", help="What the next channel should know."),
) -> None:
    """Announce that a user is switching channels."""
    from continuum.store.ephemeral import send_handoff

    print_json(send_handoff(namespace, user_id, from_channel, to_channel, summary))


@handoff_app.command("check")
def handoff_check(
    namespace: str = NamespaceOption,
    user_id: str = typer.Option(..., "--user"),
    peek: bool = typer.Option(False, "--peek", help="Look without consuming."),
) -> None:
    """Take the pending handoff for a user (once); exit 1 when there is none."""
    from continuum.store.ephemeral import consume_handoff, peek_handoff

    found = peek_handoff(namespace, user_id) if peek else consume_handoff(namespace, user_id)
    if found is None:
        raise typer.Exit(1)
    print_json(found)


@app.command()
def search(
    query: str,
    namespace: str = NamespaceOption,
    limit: int = typer.Option(10, "--limit"),
    user_id: str = typer.Option(None, "--user"),
    kind: list[str] = typer.Option([], "--kind", help="Memory kind (repeatable)."),
    tag: list[str] = typer.Option([], "--tag", help="Required tag (repeatable)."),
    memories_only: bool = typer.Option(False, "--memories-only"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Hybrid search (meaning + words) over memories and messages, with source message ids."""
    from continuum.recall.search import SearchFilters, Source
    from continuum.recall.search import search as hybrid_search

    filters = SearchFilters(user_id=user_id, kinds=tuple(kind), tags=tuple(tag))
    sources: tuple[Source, ...] = ("memory",) if memories_only else ("memory", "message")
    hits = hybrid_search(namespace, query, limit=limit, filters=filters, sources=sources)
    if as_json:
        print_json([hit.as_dict() for hit in hits])
        return
    for hit in hits:
        console.print(
            f"[dim]{hit.score:.4f} {hit.created_at:%Y-%m-%d %H:%M}[/] [cyan]{hit.source}:{hit.kind}[/] "
            f"{escape(hit.content)} [dim]← {', '.join(hit.source_message_ids)}[/]",
            highlight=False,
        )


@app.command()
def embed(time_budget: float = typer.Option(600.0, help="Seconds to spend at most.")) -> None:
    """Fill the embedding outbox inline (workers do this on their own)."""
    from continuum.pipeline.outbox import embed_pending

    with console.status("Embedding…"):
        result = embed_pending(time_budget_s=time_budget)
    console.print(f"[green]✓[/] embedded {result.embedded} in {result.seconds:.1f}s")


@app.command()
def reembed() -> None:
    """Clear every vector (e.g. after changing the embedding model); workers refill them."""
    from continuum.contract.dispatch import send
    from continuum.contract.queues import EMBED_PENDING
    from continuum.pipeline.outbox import reset_embeddings

    cleared = reset_embeddings()
    send(EMBED_PENDING)
    console.print(f"[green]✓[/] cleared {cleared}; re-embedding queued")


@app.command()
def demo(keep_running: bool = typer.Option(False, help="Leave the servers running after.")) -> None:
    """Run the whole pipeline on sample conversations and print what it stored."""
    from continuum.dev.demo import run_demo

    run_demo(console, keep_running=keep_running)


def main() -> None:
    try:
        app()
    except ConfigError as exc:
        err_console.print(f"[red]error:[/] {exc}")
        sys.exit(2)


if __name__ == "__main__":
    main()
