"""`continuum messages search|recent|day`: raw conversation messages, as stored."""

from __future__ import annotations

from dataclasses import asdict
from datetime import tzinfo
from typing import TYPE_CHECKING

import typer

from continuum.cli.common import (
    ChannelOption,
    JsonOption,
    NamespaceOption,
    TzOption,
    console,
    escape,
    local_zone,
    parse_day,
    print_json,
)

if TYPE_CHECKING:
    from continuum.recall.namespace_queries import MessageHit

app = typer.Typer()
messages_app = typer.Typer(help="Raw conversation messages.")
app.add_typer(messages_app, name="messages")


def _print_hits(hits: list[MessageHit], as_json: bool, zone: tzinfo) -> None:
    """Each hit with its time on the clock of `zone` (the tenant's, or --tz)."""
    if as_json:
        print_json([asdict(hit) for hit in hits])
        return
    for hit in hits:
        console().print(
            f"[dim]{hit.created_at.astimezone(zone):%Y-%m-%d %H:%M}[/] [cyan]{escape(hit.channel or '-')}[/] "
            f"[bold]{escape(hit.role)}[/] {escape(hit.content)}",
            highlight=False,
        )


@messages_app.command("search")
def messages_search(
    query: str,
    namespace: str = NamespaceOption,
    limit: int = typer.Option(20, "--limit"),
    channel: str = ChannelOption,
    as_json: bool = JsonOption,
) -> None:
    """Full-text search of raw messages."""
    from continuum.recall.namespace_queries import search_messages

    hits = search_messages(namespace, query, limit=limit, channel=channel)
    _print_hits(hits, as_json, local_zone(namespace, None))


@messages_app.command("recent")
def messages_recent(
    namespace: str = NamespaceOption,
    limit: int = typer.Option(20, "--limit"),
    as_json: bool = JsonOption,
) -> None:
    """The last N messages, oldest first."""
    from continuum.recall.namespace_queries import recent_messages

    _print_hits(recent_messages(namespace, limit=limit), as_json, local_zone(namespace, None))


@messages_app.command("day")
def messages_day(
    day: str = typer.Argument(..., help="YYYY-MM-DD, a day of the tenant's time zone or --tz's"),
    namespace: str = NamespaceOption,
    as_json: bool = JsonOption,
    tz: str = TzOption,
) -> None:
    """One day's conversation across sessions and channels."""
    from continuum.recall.namespace_queries import day_messages

    zone = local_zone(namespace, tz)
    _print_hits(day_messages(namespace, parse_day(day), zone), as_json, zone)
