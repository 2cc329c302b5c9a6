"""Live cross-channel state in Redis: `continuum sessions` (active sessions), `topic` (the
current topic per channel) and `handoff send|check` (a user switching channels)."""

from __future__ import annotations

from dataclasses import asdict

import typer

from continuum.cli.common import (
    ChannelOption,
    JsonOption,
    NamespaceOption,
    console,
    escape,
    print_json,
)

app = typer.Typer()
handoff_app = typer.Typer(help="Channel handoffs (voice → Discord …), read once, 10 min TTL.")
app.add_typer(handoff_app, name="handoff")
HandoffUserOption = typer.Option(..., "--user", help="The user switching channels.")


@app.command()
def sessions(namespace: str = NamespaceOption, as_json: bool = JsonOption) -> None:
    """Active sessions across channels (registry, last hour), with their current topic."""
    from rich.table import Table

    from continuum.ephemeral.sessions import active_sessions

    active = active_sessions(namespace)
    if as_json:
        print_json([asdict(s) for s in active])
        return
    table = Table("channel", "session", "user", "started", "last active", "topic")
    for s in active:
        cells = (s.channel, s.session_id, s.user_id or "", s.started_at or "", s.last_active,
                 s.topic or "")  # fmt: skip
        table.add_row(*map(escape, cells))
    console().print(table)


@app.command()
def topic(
    namespace: str = NamespaceOption, channel: str = ChannelOption, as_json: bool = JsonOption
) -> None:
    """Current topic per active channel (or of one channel)."""
    from continuum.ephemeral.sessions import topics

    found = topics(namespace)
    if channel:
        found = {channel: found[channel]} if channel in found else {}
    if as_json:
        print_json(found)
        return
    for name, slug in found.items():
        console().print(f"[cyan]{escape(name)}[/] {escape(slug)}")


@handoff_app.command("send")
def handoff_send(
    namespace: str = NamespaceOption,
    user_id: str = HandoffUserOption,
    from_channel: str = typer.Option(..., "--from"),
    to_channel: str | None = typer.Option(
        None, "--to", help="Where the user goes (default: any channel but --from)."
    ),
    summary: str = typer.Option(..., "--summary", help="What the next channel should know."),
) -> None:
    """Announce that a user is switching channels: the next context block (or `check`) for
    --to shows it, once."""
    from continuum.ephemeral.handoff import send_handoff

    print_json(send_handoff(namespace, user_id, from_channel, to_channel, summary))


@handoff_app.command("check")
def handoff_check(
    namespace: str = NamespaceOption,
    user_id: str = HandoffUserOption,
    peek: bool = typer.Option(False, "--peek", help="Look without consuming."),
    channel: str | None = typer.Option(
        None, "--channel", help="Only a handoff for this channel (the one arriving)."
    ),
) -> None:
    """Take the pending handoff for a user (once); exit 1 when there is none."""
    from continuum.ephemeral.handoff import consume_handoff, peek_handoff

    take = peek_handoff if peek else consume_handoff
    found = take(namespace, user_id, channel)
    if found is None:
        raise typer.Exit(1)
    print_json(found)
