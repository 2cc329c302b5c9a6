"""Forgetting (R47): `continuum forget` (a user, everywhere, with a verification report)."""

from __future__ import annotations

import typer

from continuum.cli.common import JsonOption, NamespaceOption, console, escape, fail, print_json

app = typer.Typer()


@app.command()
def forget(
    namespace: str = NamespaceOption,
    user_id: str = typer.Option(..., "--user", help="The user to forget."),
    as_json: bool = JsonOption,
) -> None:
    """Forget a user: destroy their data keys, delete their rows in every store, re-scan.
    Exits 1 if a store still holds something of theirs."""
    from rich.table import Table

    from continuum.config import get_settings
    from continuum.security.forget import forget_user

    try:
        get_settings().check_namespace(namespace)
    except ValueError as exc:
        fail(str(exc))
    report = forget_user(namespace, user_id)
    if as_json:
        print_json(report.as_dict())
    else:
        table = Table("store", "found", "removed", "re-scan")
        for store, counts in report.stores.items():
            table.add_row(store, str(counts.found), str(counts.removed), str(counts.remaining))
        console().print(f"forgot {escape(user_id)} of {escape(namespace)}: "
                        f"{report.keys_destroyed} data key(s) destroyed", highlight=False)  # fmt: skip
        console().print(table)
        console().print("complete: every store re-scanned empty" if report.complete
                        else "[red]incomplete[/]: a store still holds rows of the user")  # fmt: skip
    if not report.complete:
        raise typer.Exit(1)
