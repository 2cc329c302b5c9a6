"""`continuum sync` (transcripts from every runtime on this host, with progress, and every
problem found with its location), `continuum sync watch` (the same within seconds of each
write, until Ctrl-C), `continuum sync problems` (the problems kept from every run) and
`continuum cron-reports` (the cron runs found in them)."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from continuum.cli.common import (
    JsonOption,
    NamespaceOption,
    TzOption,
    console,
    escape,
    fail,
    local_zone,
    parse_day,
    parse_since,
    print_json,
)

if TYPE_CHECKING:
    from rich.table import Table

    from continuum.sync.run_report import SyncProgress, SyncSummary
    from continuum.sync.watch import WatchTotals

app = typer.Typer()
sync_app = typer.Typer(
    help="Sync transcripts from every runtime on this host into the database.",
    invoke_without_command=True,
)
app.add_typer(sync_app, name="sync")


def _summary_table(summary: SyncSummary) -> Table:
    from rich.table import Table

    table = Table("", "count", title="Transcript sync", show_header=False)
    rows = [
        (
            "files seen / read / unchanged / failed",
            f"{summary.files_seen} / {summary.files_read} / {summary.files_skipped} / "
            f"{summary.files_failed}",
        ),
        ("files re-read from the start", str(summary.files_restarted)),
        (
            "messages inserted / already stored",
            f"{summary.messages_inserted:,} / {summary.duplicates:,}",
        ),
        ("messages of private tenants (not stored)", f"{summary.messages_withheld:,}"),
        ("sessions with new messages", str(summary.sessions)),
        ("cron reports written", str(summary.cron_reports)),
        ("capture chunks sent", str(summary.chunks_dispatched)),
        ("sessions ended (summary, extraction)", str(summary.sessions_ended)),
        ("lines still being written", str(summary.partial_lines)),
        ("instances", ", ".join(summary.instances) or "-"),
        ("time", f"{summary.seconds:.2f}s ({summary.rate:,.0f} messages/s)"),
    ]
    rows += [(f"[yellow]{kind}[/]", str(count)) for kind, count in sorted(summary.errors.items())]
    for row in rows:
        table.add_row(*row)
    return table


def where(problem: dict[str, Any]) -> str:
    """A problem's place: `path:line (byte n)`, `path [session#seq]` or the path alone."""
    path = problem["source_path"]
    if problem["seq"] is not None:
        return f"{path} [{problem['session_id']}#{problem['seq']}]"
    if problem["line_no"] is not None:
        return f"{path}:{problem['line_no']} (byte {problem['byte_offset']})"
    return str(path)


def _print_problems(problems: list[dict[str, Any]]) -> None:
    for problem in problems:
        console().print(
            f"[yellow]{problem['kind']}[/] {where(problem)}: [dim]{problem['detail']}[/]",
            highlight=False,
        )


def _run_problems(run_id: str) -> list[dict[str, Any]]:
    from continuum.store.engine import session_scope
    from continuum.sync import problems

    with session_scope() as db:
        found = problems.listing(db, run_id=run_id, limit=100_000)
    return [problem.model_dump(mode="json") for problem in found]


@sync_app.callback()
def sync_command(
    ctx: typer.Context,
    backfill: bool = typer.Option(
        False, "--backfill", help="Re-read every source from the start (adds what is missing)."
    ),
    instance: str = typer.Option(None, "--instance", help="Only this instance (namespace)."),
    home: Path = typer.Option(None, "--home", help="Home directory to scan (default: ~)."),
    capture: bool = typer.Option(
        True, "--capture/--no-capture", help="Feed new messages to capture."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
) -> None:
    """Sync transcripts from every runtime on this host into the database, then list every
    problem it found (bad lines with file, line number and byte offset)."""
    if ctx.invoked_subcommand is not None:
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    from continuum.sync.engine import sync

    columns = (
        TextColumn("[bold]sync"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[messages]:,} new messages"),
        TextColumn("{task.fields[rate]:,.0f}/s"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console(), transient=True, disable=as_json) as bar:
        task = bar.add_task("files", total=None, messages=0, rate=0.0)

        def report(progress: SyncProgress) -> None:
            summary = progress.summary
            elapsed = bar.tasks[0].elapsed or 0.0
            rate = summary.messages_inserted / elapsed if elapsed else 0.0
            bar.update(
                task,
                completed=progress.done,
                total=progress.total,
                messages=summary.messages_inserted,
                rate=rate,
            )

        summary = sync(
            home, instance=instance, backfill=backfill, progress=report, feed_capture=capture
        )
    found = [] if summary.locked else _run_problems(summary.run_id)
    if as_json:
        print_json({**summary.as_dict(), "problems": found})
    elif summary.locked:
        console().print("[yellow]another sync is running; nothing done[/]")
    else:
        console().print(_summary_table(summary))
        _print_problems(found)
    if summary.locked:
        raise typer.Exit(3)
    if summary.files_failed:
        raise typer.Exit(1)


def _watch_status(totals: WatchTotals) -> str:
    count = len(totals.dirs)
    return (
        f"watching {count} director{'y' if count == 1 else 'ies'}: {totals.runs} runs, "
        f"{totals.messages_inserted:,} new messages (Ctrl-C stops)"
    )


def _run_line(summary: SyncSummary) -> str:
    """One line for a watcher's run that stored something or met a problem."""
    from datetime import datetime

    parts = [f"+{summary.messages_inserted:,} messages from {summary.files_read} files"]
    if summary.chunks_dispatched:
        parts.append(f"{summary.chunks_dispatched} capture chunks")
    parts += [f"[yellow]{kind}[/] {count}" for kind, count in sorted(summary.errors.items())]
    return f"[dim]{datetime.now():%H:%M:%S}[/] {', '.join(parts)} ({summary.seconds:.2f}s)"


@sync_app.command("watch")
def watch_command(
    home: Path = typer.Option(None, "--home", help="Home directory to watch (default: ~)."),
    debounce_ms: int = typer.Option(
        None,
        "--debounce-ms",
        min=10,
        help="Sync once writes pause this long (default: CONTINUUM_SYNC_WATCH_DEBOUNCE_MS).",
    ),
    capture: bool = typer.Option(
        True, "--capture/--no-capture", help="Feed new messages to capture."
    ),
    catch_up: bool = typer.Option(
        True, "--catch-up/--no-catch-up", help="Start with a full sync (what changed before)."
    ),
    as_json: bool = typer.Option(
        False, "--json", help="One line of JSON per event: directories, each run, the totals."
    ),
) -> None:
    """Sync transcripts within seconds of each write, beside beat's five-minute sync (the
    same cursors: no line read twice), until Ctrl-C. Needs the `watch` extra."""
    import io
    import signal
    import sys
    import threading

    from continuum.sync.watch import WatchUnavailable, watch

    stop = threading.Event()

    def interrupted(*_: object) -> None:
        """Stop between runs (a run under way commits or rolls back whole); a second
        Ctrl-C interrupts at once."""
        stop.set()
        signal.signal(signal.SIGINT, signal.default_int_handler)

    previous = signal.signal(signal.SIGINT, interrupted), signal.signal(signal.SIGTERM, interrupted)
    status = None if as_json else console().status("starting: a full sync first", spinner="dots")
    if as_json and isinstance(sys.stdout, io.TextIOWrapper):
        sys.stdout.reconfigure(line_buffering=True)  # each line as it happens, even in a pipe

    def on_dirs(dirs: list[Path]) -> None:
        if as_json:
            print_json({"watching": [str(path) for path in dirs]})
        else:
            where = ", ".join(escape(str(path)) for path in dirs) or "nothing yet"
            console().print(f"watching {where}", highlight=False)

    def on_run(summary: SyncSummary, totals: WatchTotals) -> None:
        if status is None:
            print_json(summary.as_dict())
            return
        if summary.locked:
            console().print("[dim]full sync skipped: beat's run holds the lock and covers it[/]")
        elif summary.messages_inserted or summary.errors:
            console().print(_run_line(summary), highlight=False)
        status.update(_watch_status(totals))

    try:
        if status is not None:
            status.start()
        totals = watch(
            home, debounce_ms=debounce_ms, feed_capture=capture, catch_up=catch_up, stop=stop,
            on_run=on_run, on_dirs=on_dirs,
        )  # fmt: skip
    except WatchUnavailable as exc:
        fail(str(exc))
    finally:
        if status is not None:
            status.stop()
        signal.signal(signal.SIGINT, previous[0])
        signal.signal(signal.SIGTERM, previous[1])
    if as_json:
        print_json({"stopped": True, **totals.as_dict()})
    else:
        console().print(
            f"stopped: {totals.runs} runs, {totals.messages_inserted:,} new messages, "
            f"{totals.chunks_dispatched} capture chunks"
        )


@sync_app.command("problems")
def problems_command(
    since: str = typer.Option(
        None, "--since", help="Only problems seen since: 24h, 7d, or an ISO date/time."
    ),
    include_resolved: bool = typer.Option(
        False, "--resolved", help="Also problems that a later sync found fixed."
    ),
    limit: int = typer.Option(1000, "--limit"),
    as_json: bool = JsonOption,
) -> None:
    """Bad input that sync found and is still there: where (file, line, byte offset; or
    SQLite session and seq), what, first and last seen, and the run that saw it last."""
    from continuum.store.engine import session_scope
    from continuum.sync import problems

    with session_scope() as db:
        rows = problems.listing(
            db,
            since=parse_since(since) if since else None,
            include_resolved=include_resolved,
            limit=limit,
        )
    found = [problem.model_dump(mode="json") for problem in rows]
    if as_json:
        print_json(found)
        return
    for problem in found:
        seen = problem["last_seen_at"][:19].replace("T", " ")
        console().print(f"[dim]{seen}[/] ", end="", highlight=False)
        _print_problems([problem])


@app.command("cron-reports")
def cron_reports_command(
    namespace: str = NamespaceOption,
    day: str = typer.Option(
        None, "--day", help="YYYY-MM-DD (the tenant's day, or --tz's); default: the latest runs."
    ),
    limit: int = typer.Option(50, "--limit"),
    as_json: bool = JsonOption,
    tz: str = TzOption,
) -> None:
    """Cron reports of an instance, newest first (R77)."""
    from continuum.sync.cron import cron_reports

    zone = local_zone(namespace, tz)
    reports = cron_reports(namespace, parse_day(day) if day else None, limit=limit, tz=zone)
    if as_json:
        print_json([asdict(r) for r in reports])
        return
    for report in reports:
        when = f"{report.event_at.astimezone(zone):%Y-%m-%d %H:%M}" if report.event_at else "-"
        console().print(f"[dim]{when}[/] [cyan]{report.cron_name}[/]", highlight=False)
        console().print(report.summary, highlight=False)
