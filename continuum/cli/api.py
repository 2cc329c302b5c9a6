"""`continuum api` (serve the HTTP API and Mission Control), `continuum openapi` (its OpenAPI
document) and `continuum tokens create|list|revoke` (its bearer tokens). FastAPI, uvicorn and
the database load inside the commands."""

from __future__ import annotations

import os

import typer

from continuum.api.limits import DEFAULT_MAX_BODY_BYTES
from continuum.cli.common import JsonOption, console, fail, print_json

app = typer.Typer()
tokens_app = typer.Typer(help="Bearer tokens of the HTTP API, each bound to namespaces.")
app.add_typer(tokens_app, name="tokens")


@app.command("api")
def serve(
    host: str = typer.Option("127.0.0.1", "--host", help="Interface to listen on."),
    port: int = typer.Option(8000, "--port"),
    max_body_bytes: int = typer.Option(
        DEFAULT_MAX_BODY_BYTES,
        "--max-body-bytes",
        envvar="CONTINUUM_API_MAX_BODY_BYTES",
        help="Larger request bodies are refused with 413.",
    ),
    workers: int | None = typer.Option(
        None,
        "--workers",
        min=1,
        help="uvicorn worker processes (default: CONTINUUM_API_WORKERS, one per CPU core).",
    ),
) -> None:
    """Serve the HTTP API (/v1, /docs, /metrics) and Mission Control (/)."""
    from continuum.api.serving import serve as serve_api
    from continuum.config import get_settings
    from continuum.security.logs import server_log_config

    # Every worker imports continuum.api.asgi, which reads the limit from here.
    os.environ["CONTINUUM_API_MAX_BODY_BYTES"] = str(max_body_bytes)
    raise typer.Exit(
        serve_api(host, port, workers or get_settings().api_workers, server_log_config())
    )


@app.command("openapi")
def openapi() -> None:
    """Print the API's OpenAPI document (what `/openapi.json` serves), for client generators:
    `continuum openapi > sdk/typescript/openapi.json`."""
    import sys

    from continuum.api.app import openapi_json

    sys.stdout.write(openapi_json())


@tokens_app.command("create")
def tokens_create(
    namespace: list[str] = typer.Option(
        ..., "--namespace", "-n", help="Namespace (instance) the token covers; repeatable."
    ),
    name: str = typer.Option("", "--name", help="A label (default: the namespaces)."),
    ops: bool = typer.Option(
        False, "--ops", help="An operator's: also the pipeline's global figures (/v1/status)."
    ),
    as_json: bool = JsonOption,
) -> None:
    """Create a token and print it once (only its hash is stored)."""
    from continuum.security.tokens import create_token

    try:
        token, info = create_token(namespace, name, ops=ops)
    except ValueError as exc:
        fail(str(exc))
    if as_json:
        print_json({"id": info.id, "name": info.name, "namespaces": info.namespaces,
                    "ops": info.ops, "token": token})  # fmt: skip
        return
    role = " (operator)" if info.ops else ""
    console().print(
        f"[green]✓[/] token {info.id} ({info.name}) for {', '.join(info.namespaces)}{role}"
    )
    console().print(token, highlight=False, soft_wrap=True)
    console().print(
        "[yellow]Shown once: store it now. Send it as `Authorization: Bearer <token>`.[/]"
    )


@tokens_app.command("list")
def tokens_list(as_json: bool = JsonOption) -> None:
    """List tokens (never the tokens themselves)."""
    from rich.table import Table

    from continuum.security.tokens import list_tokens

    tokens = list_tokens()
    if as_json:
        print_json(
            [
                {
                    "id": t.id,
                    "name": t.name,
                    "namespaces": t.namespaces,
                    "ops": t.ops,
                    "created_at": t.created_at.isoformat(),
                    "last_used_at": t.last_used_at and t.last_used_at.isoformat(),
                    "revoked_at": t.revoked_at and t.revoked_at.isoformat(),
                }
                for t in tokens
            ]
        )
        return
    table = Table("id", "name", "namespaces", "ops", "created", "last used", "revoked")
    for t in tokens:
        table.add_row(
            str(t.id),
            t.name,
            ", ".join(t.namespaces),
            "yes" if t.ops else "",
            f"{t.created_at:%Y-%m-%d %H:%M}",
            f"{t.last_used_at:%Y-%m-%d %H:%M}" if t.last_used_at else "",
            f"{t.revoked_at:%Y-%m-%d %H:%M}" if t.revoked_at else "",
        )
    console().print(table)


@tokens_app.command("revoke")
def tokens_revoke(
    token_id: int = typer.Argument(..., help="The id shown by `tokens list`."),
) -> None:
    """Revoke a token: it stops working at once."""
    from continuum.security.tokens import revoke_token

    if not revoke_token(token_id):
        fail(f"no live token with id {token_id}", code=1)
    console().print(f"[green]✓[/] token {token_id} revoked")
