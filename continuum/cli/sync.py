"""`continuum sync` (transcripts from every runtime on this host, with progress) and
`continuum cron-reports` (the cron runs found in them)."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from continuum.cli.common import JsonOption, NamespaceOption, console, parse_day, print_json

if TYPE_CHECKING:
    from rich.table import Table

    from continuum.sync.summary import SyncProgress, SyncSummary

app = typer.Typer()


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
        ("sessions with new messages", str(summary.sessions)),
        ("cron reports written", str(summary.cron_reports)),
        ("capture chunks sent", str(summary.chunks_dispatched)),
        ("lines still being written", str(summary.partial_lines)),
        ("instances", ", ".join(summary.instances) or "-"),
        ("time", f"{summary.seconds:.2f}s ({summary.rate:,.0f} messages/s)"),
    ]
    rows += [(f"[yellow]{kind}[/]", str(count)) for kind, count in sorted(summary.errors.items())]
    for row in rows:
        table.add_row(*row)
    return table


@app.command("sync")
def sync_command(
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
    """Sync transcripts from every runtime on this host into the database."""
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
    if as_json:
        print_json(summary.as_dict())
    elif summary.locked:
        console().print("[yellow]another sync is running; nothing done[/]")
    else:
        console().print(_summary_table(summary))
        for sample in summary.error_samples[:5]:
            console().print(
                f"[dim]{sample.kind}: {sample.path}: {sample.detail}[/]", highlight=False
            )
    if summary.locked:
        raise typer.Exit(3)
    if summary.files_failed:
        raise typer.Exit(1)


@app.command("cron-reports")
def cron_reports_command(
    namespace: str = NamespaceOption,
    day: str = typer.Option(None, "--day", help="YYYY-MM-DD (UTC); default: the latest runs."),
    limit: int = typer.Option(50, "--limit"),
    as_json: bool = JsonOption,
) -> None:
    """Cron reports of an instance, newest first (R77)."""
    from continuum.sync.cron import cron_reports

    reports = cron_reports(namespace, parse_day(day) if day else None, limit=limit)
    if as_json:
        print_json([asdict(r) for r in reports])
        return
    for report in reports:
        when = f"{report.event_at:%Y-%m-%d %H:%M}" if report.event_at else "-"
        console().print(f"[dim]{when}[/] [cyan]{report.cron_name}[/]", highlight=False)
        console().print(report.summary, highlight=False)
