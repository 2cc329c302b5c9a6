"""Runtime integrations: `continuum hooks install|uninstall claude-code` (Claude Code's hook
entries in its settings), `continuum spool flush` (send the events hooks spooled),
`continuum mcp` (the MCP server, stdio or streamable HTTP) and `continuum claude-code ...`,
what the Claude Code plugin runs (integrations/claude-code-plugin/): its hooks, its MCP
server and its slash commands, each in the hooks' tenant and user (CONTINUUM_HOOK_NAMESPACE,
CONTINUUM_HOOK_USER) unless told otherwise."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path

import typer

from continuum.cli.common import JsonOption, console, escape, fail, print_json

app = typer.Typer()
hooks_app = typer.Typer(help="Hooks of agent runtimes that send their turns to Continuum.")
spool_app = typer.Typer(help="Events runtime hooks wrote to disk before the broker took them.")
claude_app = typer.Typer(
    help="What the Claude Code plugin runs: its hooks, MCP server and slash commands.",
    no_args_is_help=True,
)
app.add_typer(hooks_app, name="hooks")
app.add_typer(spool_app, name="spool")
app.add_typer(claude_app, name="claude-code")


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


def _hook_caller(namespace: str | None, user: str | None) -> tuple[str, str | None]:
    """The tenant and user of the hooks and the plugin's commands: the options given, else
    CONTINUUM_HOOK_NAMESPACE / CONTINUUM_HOOK_USER; an invalid tenant exits 2."""
    from continuum.config import get_settings

    settings = get_settings()
    tenant = namespace or settings.hook_namespace
    try:
        settings.check_namespace(tenant)
    except ValueError as exc:
        fail(str(exc))
    return tenant, user or settings.hook_user


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

    tenant, hook_user = _hook_caller(namespace, user_id)
    path = _settings_path(project, user)
    try:
        changed = install_hooks(path, get_settings().home, tenant, hook_user)
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
            + (f", dropped {report['paused']} (capture paused)" if report["paused"] else "")
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


HookNamespaceOption = typer.Option(
    None, "--namespace", "-n", help="Tenant (default CONTINUUM_HOOK_NAMESPACE)."
)
HookUserOption = typer.Option(None, "--user", help="The user (default CONTINUUM_HOOK_USER).")
SessionOption = typer.Option(
    ..., "--session", help="Claude Code's session id (the plugin passes ${CLAUDE_SESSION_ID})."
)


def _run(commands: typer.Typer, argv: list[str]) -> None:
    """Run another `continuum` command in this process as if it were typed (its own defaults
    apply); its exit code is this command's."""
    from typer.main import get_command

    code = get_command(commands).main(argv, prog_name="continuum", standalone_mode=False)
    if code:
        raise typer.Exit(code)


def _session(session_id: str) -> str:
    if not session_id.strip():
        fail("no session id: give --session (the plugin's commands pass ${CLAUDE_SESSION_ID})")
    return session_id


@claude_app.command("hook")
def claude_hook(
    event: str = typer.Argument(
        ..., help="SessionStart | UserPromptSubmit | Stop | PreCompact | SessionEnd"
    ),
) -> None:
    """Run one Claude Code hook (its JSON payload on stdin) with the home, tenant and user of
    the configuration. Like the installed hooks it always exits 0; errors go to
    <home>/hooks.log."""
    from continuum.runtimes import spool
    from continuum.runtimes.claude_code import hook_argv, run

    try:
        from continuum.config import get_settings

        settings = get_settings()
        argv = hook_argv(event, settings.home, settings.hook_namespace, settings.hook_user)
    except Exception as exc:  # a hook never fails Claude Code, even misconfigured
        spool.log_error(Path("."), f"claude-code hook {event}: {exc}")
        return
    run(argv)


@claude_app.command("mcp")
def claude_mcp() -> None:
    """The MCP server over stdio, in the hooks' tenant and user (CONTINUUM_HOOK_NAMESPACE,
    CONTINUUM_HOOK_USER), so the plugin's tools see what its hooks stored."""
    from continuum.runtimes.mcp_server import Caller, serve

    serve("stdio", "", 0, Caller(*_hook_caller(None, None)))


@claude_app.command("search")
def claude_search(
    query: str = typer.Argument(..., help="What to look for."),
    limit: int = typer.Option(10, "--limit"),
    memories_only: bool = typer.Option(False, "--memories-only"),
    namespace: str = HookNamespaceOption,
    user: str = HookUserOption,
    as_json: bool = JsonOption,
) -> None:
    """Hybrid search over the memories and conversations of the hooks' tenant and user
    (`/continuum:search`): `continuum search` with those as its tenant and user."""
    from continuum.cli import search

    tenant, user_id = _hook_caller(namespace, user)
    if not query.strip():
        fail("nothing to search for: give a query, e.g. /continuum:search postgres decision")
    _run(search.app, ["search", "--namespace", tenant, "--limit", str(limit),
                      *(["--user", user_id] if user_id else []),
                      *(["--memories-only"] if memories_only else []),
                      *(["--json"] if as_json else []), "--", query])  # fmt: skip


@claude_app.command("forget")
def claude_forget(
    memory_id: int = typer.Option(None, "--id", help="The memory's id (from search --json)."),
    key: str = typer.Option(None, "--key", help="The memory's key: every version of it."),
    namespace: str = HookNamespaceOption,
    user: str = HookUserOption,
) -> None:
    """Forget a memory of the hooks' tenant and user by id or key (`/continuum:forget`): hidden
    at once, purged by the next maintenance. Prints the tool's answer; exit 1 if nothing
    matched."""
    from continuum.cli import memory

    tenant, user_id = _hook_caller(namespace, user)
    if (memory_id is None) == (key is None):
        fail("give exactly one of --id or --key")
    target = {"memory_id": memory_id} if memory_id is not None else {"key": key}
    _run(memory.app, ["memory", "forget_memory", json.dumps(target), "--namespace", tenant,
                      *(["--user", user_id] if user_id else [])])  # fmt: skip


@claude_app.command("pause")
def claude_pause(session: str = SessionOption, namespace: str = HookNamespaceOption) -> None:
    """Stop capturing a Claude Code session (`/continuum:pause`): the turns its hooks send
    from now on are dropped, until `resume`."""
    from continuum.ephemeral.pause import pause

    tenant, _ = _hook_caller(namespace, None)
    changed = pause(tenant, _session(session))
    state = "paused" if changed else "was already paused"
    console().print(
        f"Continuum capture {state} for session {escape(session)} ({escape(tenant)}): nothing "
        "said in it from now on is stored. Resume with /continuum:resume "
        f"(`continuum claude-code resume --session {escape(session)}`).",
        highlight=False,
        soft_wrap=True,
    )


@claude_app.command("resume")
def claude_resume(session: str = SessionOption, namespace: str = HookNamespaceOption) -> None:
    """Capture a paused Claude Code session again (`/continuum:resume`); what was said while
    it was paused stays unstored."""
    from continuum.ephemeral.pause import resume

    tenant, _ = _hook_caller(namespace, None)
    changed = resume(tenant, _session(session))
    state = "resumed" if changed else "was not paused"
    console().print(
        f"Continuum capture {state} for session {escape(session)} ({escape(tenant)}): turns "
        "from now on are stored; nothing said while it was paused is.",
        highlight=False,
        soft_wrap=True,
    )
