"""Encryption and forgetting (R47): `continuum forget` (a user, everywhere, with a
verification report) and `continuum keys rotate` (re-wrap data keys under the current
key-encryption key; `--data` seals a tenant's rows again under new data keys)."""

from __future__ import annotations

import typer

from continuum.cli.common import JsonOption, NamespaceOption, console, escape, fail, print_json

app = typer.Typer()
keys_app = typer.Typer(help="Encryption keys.", no_args_is_help=True)
app.add_typer(keys_app, name="keys")


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
        print_json(report.model_dump(mode="json"))
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


@keys_app.command("rotate")
def rotate(
    data: bool = typer.Option(
        False, "--data", help="Retire the tenant's data keys and seal its rows again."
    ),
    destroy_retired: bool = typer.Option(
        False,
        "--destroy-retired",
        help="Erase the tenant's retired data keys (after a last pass over its rows).",
    ),
    namespace: str = typer.Option(
        None, "--namespace", "-n", help="Tenant (--data, --destroy-retired)."
    ),
    batch: int = typer.Option(500, "--batch", min=1, help="Rows per transaction."),
    max_batches: int = typer.Option(
        None, "--max-batches", min=1, help="Stop after this many batches (rerun resumes)."
    ),
    as_json: bool = JsonOption,
) -> None:
    """Re-wrap every data key under the current key-encryption key (CONTINUUM_ENCRYPTION_KEY;
    old ones in CONTINUUM_ENCRYPTION_OLD_KEYS), online. With --data -n NS: new data keys for
    the tenant, its rows sealed again in resumable batches. With --destroy-retired -n NS
    (later): the retired keys erased."""
    from dataclasses import asdict

    from continuum.security import rotation

    if (data or destroy_retired) and not namespace:
        fail("--data and --destroy-retired need --namespace")
    if data and destroy_retired:
        fail("--destroy-retired is a later step: run it once the rotation is done")
    if data:
        result = asdict(rotation.rotate_data(namespace, batch=batch, max_batches=max_batches))
    elif destroy_retired:
        result = asdict(rotation.destroy_retired(namespace, batch=batch))
    else:
        result = asdict(rotation.rewrap())
    if as_json:
        print_json(result)
        return
    for name, value in result.items():
        console().print(f"{name}: {escape(str(value))}", highlight=False)
