"""`continuum export` and `continuum import`: a tenant (or one user of it) as an archive file
and back (`continuum.portability`), with progress bars."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from continuum.cli.common import (
    JsonOption,
    NamespaceOption,
    console,
    err_console,
    escape,
    fail,
    print_json,
)

if TYPE_CHECKING:
    from rich.progress import Progress

app = typer.Typer()


def _bar(**fields: Any) -> Progress:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    columns = (TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn())  # fmt: skip
    return Progress(*columns, console=err_console(), transient=True, **fields)


@app.command("export")
def export(
    namespace: str = NamespaceOption,
    user: str = typer.Option(None, "--user", help="Only this user's rows."),
    output: Path = typer.Option(
        None, "--output", "-o", dir_okay=False, help="File to write (default: standard output)."
    ),
    plaintext: bool = typer.Option(
        False,
        "--plaintext",
        help="Export an encrypted tenant: the archive holds its text opened.",
    ),
) -> None:
    """Write a tenant's archive (JSON Lines: sessions, messages, memories with their
    provenance, tasks, cron reports; a manifest with counts and a SHA-256 last). The
    archive is plaintext: keep it as secret as the database."""
    from continuum.config import get_settings
    from continuum.portability.exporting import ExportRefused, check_exportable
    from continuum.sealing.envelope import SealBroken

    try:
        get_settings().check_namespace(namespace)
        check_exportable(namespace, plaintext=plaintext)
    except (ValueError, ExportRefused) as exc:
        fail(str(exc))
    try:
        _export(namespace, user, output)
    except SealBroken as exc:
        fail(
            f"{exc}: export stopped (an archive cut short has no manifest, and import refuses it); restore or delete the row"
        )


def _export(namespace: str, user: str | None, output: Path | None) -> None:
    from continuum.portability.exporting import Export, count

    with _bar() as bar:
        task = bar.add_task("export", total=count(namespace, user))
        archive = Export(namespace, user, lambda n: bar.advance(task, n))
        if output is None:
            for chunk in archive.chunks():
                sys.stdout.buffer.write(chunk)
            sys.stdout.buffer.flush()
        else:
            partial = output.with_name(output.name + ".partial")  # never a complete-looking half
            try:
                with partial.open("wb") as out:
                    for chunk in archive.chunks():
                        out.write(chunk)
            except BaseException:
                partial.unlink(missing_ok=True)
                raise
            os.replace(partial, output)
    if output is not None and archive.manifest is not None:
        counts = ", ".join(f"{n:,} {kind}s" for kind, n in archive.manifest.counts.items())
        console().print(f"exported {namespace} to {escape(str(output))}: {counts}", highlight=False)


@app.command("import")
def import_(
    archive: Path = typer.Argument(..., exists=True, dir_okay=False, readable=True),
    namespace: str = typer.Option(
        None, "--namespace", "-n", help="Tenant to import into (default: the archive's)."
    ),
    as_json: bool = JsonOption,
) -> None:
    """Import an archive: all of it or nothing (a truncated, altered or newer-version
    archive is refused, exit 1); importing it twice is importing it once. Rows are sealed
    under the target tenant's keys when it is encrypted."""
    from rich.table import Table

    from continuum.portability.archive import RECORD_TYPES, ArchiveRefused
    from continuum.portability.importing import import_archive

    class Bars:
        def __init__(self, bar: Progress) -> None:
            self.bar = bar
            self.check = bar.add_task("check", total=archive.stat().st_size)
            self.write = bar.add_task("import", total=None, visible=False)

        def checked(self, size: int) -> None:
            self.bar.advance(self.check, size)

        def started(self, records: int) -> None:
            self.bar.update(self.write, total=records, visible=True)

        def imported(self, records: int) -> None:
            self.bar.advance(self.write, records)

    with _bar(disable=as_json) as bar, archive.open("rb") as file:
        try:
            report = import_archive(file, namespace, progress=Bars(bar))
        except ArchiveRefused as exc:
            fail(f"{archive}: {exc}; nothing was imported", 1)
    if as_json:
        print_json(report.model_dump(mode="json"))
        return
    table = Table("record", "inserted", "already there", "not written")
    for kind in RECORD_TYPES:
        table.add_row(kind, *(f"{counts[kind]:,}" for counts in
                              (report.inserted, report.existing, report.skipped)))  # fmt: skip
    console().print(f"imported {escape(str(archive))} into {report.namespace} "
                    f"(exported from {escape(report.source)})", highlight=False)  # fmt: skip
    console().print(table)
