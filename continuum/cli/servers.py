"""Development and readiness commands: `continuum dev up|down|status` (embedded Postgres and
Redis), `db upgrade`, `check` and `demo`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from continuum.cli.common import console, fail

if TYPE_CHECKING:
    from continuum.dev.embedded import EmbeddedServers

app = typer.Typer()
dev_app = typer.Typer(help="Embedded Postgres + Redis for development, demo and tests.")
db_app = typer.Typer(help="Database schema.")
app.add_typer(dev_app, name="dev")
app.add_typer(db_app, name="db")


def _servers() -> EmbeddedServers:
    from continuum.config import get_settings
    from continuum.dev.embedded import EmbeddedServers

    return EmbeddedServers(get_settings().home)


@dev_app.command("up")
def dev_up() -> None:
    """Start the embedded servers (idempotent) and write their URLs to servers.json."""
    from continuum.dev.embedded import EmbeddedError

    try:
        with console().status("Starting embedded Postgres + Redis…"):
            urls = _servers().up()
    except EmbeddedError as exc:
        fail(str(exc))
    for name, url in urls.items():
        console().print(f"[green]✓[/] {name:<13} {url}")


@dev_app.command("down")
def dev_down() -> None:
    """Stop the embedded servers (data is kept)."""
    _servers().down()
    console().print("[green]✓[/] embedded servers stopped")


@dev_app.command("status")
def dev_status() -> None:
    """Show whether each embedded server runs, and where."""
    from rich.table import Table

    table = Table("server", "running", "url", "data")
    statuses = _servers().status()
    for status in statuses:
        table.add_row(
            status.name, "yes" if status.running else "no", status.url or "", status.detail
        )
    console().print(table)
    if not all(status.running for status in statuses):
        raise typer.Exit(1)


@db_app.command("upgrade")
def db_upgrade(revision: str = typer.Argument("head")) -> None:
    """Apply the Alembic migrations up to REVISION."""
    from continuum.store import migrate

    migrate.upgrade(revision=revision)
    console().print(f"[green]✓[/] database at {revision}")


@app.command()
def check() -> None:
    """Check that Postgres (with pgvector), Redis and the broker answer; exit 1 if not."""
    from continuum.store.health import run_checks

    checks = run_checks()
    for item in checks:
        mark = "[green]✓[/]" if item.ok else "[red]✗[/]"
        console().print(f"{mark} {item.name:<9} {item.detail}", highlight=False)
    if not all(item.ok for item in checks):
        raise typer.Exit(1)


@app.command()
def demo(keep_running: bool = typer.Option(False, help="Leave the servers running after.")) -> None:
    """Run the whole pipeline on sample conversations and print what it stored."""
    from continuum.dev.demo import run_demo

    run_demo(console(), keep_running=keep_running)
