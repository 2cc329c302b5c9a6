"""Read-plane commands any runtime can exec (R10, R14, R27): `continuum context`, `recall`,
`recent-conversations` and `active-tasks`, each a thin shell over a function of
`continuum.recall.context` (the block) or `continuum.recall.sections` (its sections as lists),
each with `--json`."""

from __future__ import annotations

import sys
from datetime import datetime, tzinfo
from typing import TYPE_CHECKING, Any

import typer

from continuum.cli.common import (
    JsonOption,
    NamespaceOption,
    TzOption,
    UserOption,
    console,
    escape,
    local_zone,
    print_json,
)

if TYPE_CHECKING:
    from continuum.recall.items import ContextResult

app = typer.Typer()
SessionChannelOption = typer.Option(
    None, "--channel", help="The session's channel; main/dm/direct show the user's private items."
)
ExplainOption = typer.Option(False, "--explain", help="Why each item was kept or dropped.")


def _print_result(result: ContextResult, as_json: bool, explain: bool) -> None:
    if as_json:
        print_json(result.as_dict())
        return
    sys.stdout.write(result.block + "\n")
    if explain:
        for item in result.items:
            console().print(
                f"[green]+[/] {escape(item.ref)} ({item.tokens} tok) {escape(item.why)}",
                highlight=False,
            )
        for gone in result.excluded:
            console().print(f"[red]-[/] {escape(gone.ref)}: {escape(gone.reason)}", highlight=False)
        console().print(f"[dim]{result.tokens_used} tokens, query {result.query_id}[/]")


def _print_listing(rows: list[dict[str, Any]], as_json: bool, zone: tzinfo) -> None:
    """Rows dated as the block dates them, on the clock of `zone` (the tenant's or --tz)."""
    from continuum.recall.render import render_when

    if as_json:
        print_json(rows)
        return
    now = datetime.now(zone)
    for row in rows:
        when = row["created_at"] and render_when(datetime.fromisoformat(row["created_at"]), now)
        console().print(
            f"[dim]{when or ''}[/] [cyan]{escape(row['channel'] or '-')}[/] "
            f"[bold]{escape(row['kind'])}[/] {escape(row['content'])}",
            highlight=False,
        )


@app.command("context")
def context_command(
    namespace: str = NamespaceOption,
    channel: str = SessionChannelOption,
    user_id: str = UserOption,
    seed: str = typer.Option("", "--seed", help="First user message or task."),
    max_tokens: int = typer.Option(800, "--max-tokens", min=0),
    as_json: bool = JsonOption,
    explain: bool = ExplainOption,
    tz: str = TzOption,
) -> None:
    """The context block a runtime injects at session start (cross-session, R10)."""
    from continuum.recall.context import context

    result = context(namespace, seed, max_tokens, user_id=user_id, channel=channel,
                     explain=explain, tz=local_zone(namespace, tz))  # fmt: skip
    _print_result(result, as_json, explain)


@app.command("recall")
def recall_command(
    seed: str = typer.Option(..., "--seed", help="Text of the new topic."),
    since_topic: str = typer.Option(..., "--since-topic", help="Slug of the previous topic."),
    namespace: str = NamespaceOption,
    channel: str = SessionChannelOption,
    user_id: str = UserOption,
    max_tokens: int = typer.Option(400, "--max-tokens", min=0),
    as_json: bool = JsonOption,
    explain: bool = ExplainOption,
    tz: str = TzOption,
) -> None:
    """Topic shift mid-session: what is relevant to the new topic and not yet injected."""
    from continuum.recall.context import recall_since_topic

    result = recall_since_topic(namespace, since_topic, seed, max_tokens, user_id=user_id,
                                channel=channel, explain=explain,
                                tz=local_zone(namespace, tz))  # fmt: skip
    _print_result(result, as_json, explain)


@app.command("recent-conversations")
def recent_conversations_command(
    namespace: str = NamespaceOption,
    user_id: str = UserOption,
    channel: str = SessionChannelOption,
    in_channel: str = typer.Option(
        None, "--in-channel", help="Only conversations held on this channel, e.g. voice."
    ),
    limit: int = typer.Option(10, "--limit", min=1),
    as_json: bool = JsonOption,
    tz: str = TzOption,
) -> None:
    """Summaries of recent conversations across channels (or one), newest first."""
    from continuum.recall.sections import recent_conversations

    zone = local_zone(namespace, tz)
    rows = recent_conversations(
        namespace, limit=limit, user_id=user_id, channel=channel, in_channel=in_channel
    )
    _print_listing(rows, as_json, zone)


@app.command("active-tasks")
def active_tasks_command(
    namespace: str = NamespaceOption,
    user_id: str = UserOption,
    limit: int = typer.Option(100, "--limit", min=1),
    as_json: bool = JsonOption,
    tz: str = TzOption,
) -> None:
    """Tasks pending, in progress or blocked, from every channel."""
    from continuum.recall.sections import active_tasks

    zone = local_zone(namespace, tz)
    _print_listing(active_tasks(namespace, limit=limit, user_id=user_id, tz=zone), as_json, zone)
