"""Runtime integrations: `continuum hooks install|uninstall claude-code` (Claude Code's hook
entries in its settings), `continuum spool flush` (send the events hooks spooled) and
`continuum mcp` (the MCP server, stdio or streamable HTTP)."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

import typer

from continuum.cli.common import JsonOption, console, fail, print_json

app = typer.Typer()
hooks_app = typer.Typer(help="Hooks of agent runtimes that send their turns to Continuum.")
spool_app = typer.Typer(help="Events runtime hooks wrote to disk before the broker took them.")
app.add_typer(hooks_app, name="hooks")
app.add_typer(spool_app, name="spool")


class Runtime(StrEnum):
    claude_code = "claude-code"


RuntimeArgument = typer.Argument(..., help="The runtime: claude-code.")
ProjectOption = typer.Option(
    None, "--project", help="This project's .claude/settings.local.json (default: current dir)."
)
UserSettingsOption = typer.Option(False, "--user", help="~/.claude/settings.json: every project.")


def _settings_path(project: Path | None, user: bool) -> Path:
    from continuum.runtimes.claude_settings import settings_path

    if project is not None and user:
        fail("choose --project DIR or --user, not both")
    return settings_path(project, user)


@hooks_app.command("install")
def install(
    runtime: Runtime = RuntimeArgument,
    project: Path = ProjectOption,
    user: bool = UserSettingsOption,
    namespace: str = typer.Option(
        None, "--namespace", "-n", help="Tenant (default CONTINUUM_HOOK_NAMESPACE)."
    ),
    user_id: str = typer.Option(
        None, "--user-id", help="The events' user (default CONTINUUM_HOOK_USER)."
    ),
) -> None:
    """Add Continuum's hooks to Claude Code's settings: the context block at session start,
    every user and assistant turn, pre-compaction and session end. Idempotent."""
    from continuum.config import get_settings
    from continuum.runtimes.claude_settings import SettingsError
    from continuum.runtimes.claude_settings import install as install_hooks

    settings = get_settings()
    tenant = namespace or settings.hook_namespace
    try:
        settings.check_namespace(tenant)
    except ValueError as exc:
        fail(str(exc))
    path = _settings_path(project, user)
    try:
        changed = install_hooks(path, settings.home, tenant, user_id or settings.hook_user)
    except SettingsError as exc:
        fail(str(exc))
    state = "installed in" if changed else "already installed in"
    console().print(f"[green]✓[/] {runtime.value} hooks {state} {path} (namespace {tenant})")


@hooks_app.command("uninstall")
def uninstall(
    runtime: Runtime = RuntimeArgument,
    project: Path = ProjectOption,
    user: bool = UserSettingsOption,
) -> None:
    """Remove Continuum's hooks (only those) from Claude Code's settings."""
    from continuum.runtimes.claude_settings import SettingsError
    from continuum.runtimes.claude_settings import uninstall as uninstall_hooks

    path = _settings_path(project, user)
    try:
        changed = uninstall_hooks(path)
    except SettingsError as exc:
        fail(str(exc))
    state = "removed from" if changed else "were not in"
    console().print(f"[green]✓[/] {runtime.value} hooks {state} {path}")


@spool_app.command("flush")
def flush(as_json: bool = JsonOption) -> None:
    """Send every spooled event now (exit 3 if the broker cannot take them)."""
    from continuum.config import get_settings
    from continuum.runtimes import spool

    report = spool.flush(get_settings().home)
    if as_json:
        print_json(report)
    else:
        console().print(
            f"sent {report['sent']}, rejected {report['rejected']}, pending {report['pending']}"
            + (" (another flush is running)" if report["busy"] else "")
        )
    if report["error"]:
        fail(report["error"], code=3)


@app.command("mcp")
def mcp(
    http: bool = typer.Option(False, "--http", help="Streamable HTTP (bearer tokens) on /mcp."),
    host: str = typer.Option("127.0.0.1", "--host"),
    port: int = typer.Option(8765, "--port"),
) -> None:
    """The MCP server: memory tools for any agent. Stdio by default (tenant and user from
    CONTINUUM_MCP_NAMESPACE / _USER); --http serves http://HOST:PORT/mcp, each call in its
    bearer token's namespace."""
    from continuum.runtimes.mcp_server import serve

    serve("http" if http else "stdio", host, port)
