"""Read-plane commands any runtime can exec (R10, R14, R27): `context`, `recall`,
`recent-conversations`, `active-tasks`, and `save-conversation` (a finished
conversation as JSON on stdin → turn events + a session_end). Every command has `--json`.

Mounted on the main app by `continuum.cli.main` with `app.add_typer(recall_app)` (no name: the
commands join the top level, `continuum context ...`); each is a thin shell over a
`continuum.recall.context` function.
"""

from __future__ import annotations

import json
import sys
import uuid
from datetime import datetime
from typing import Any

import typer

recall_app = typer.Typer(help="Context and recall for agent runtimes.")
NamespaceOption = typer.Option(..., "--namespace", "-n", help="Tenant (instance) to query.")
UserOption = typer.Option(None, "--user", help="The user the session belongs to.")
ChannelOption = typer.Option(
    None, "--channel", help="The session's channel; main/dm/direct show the user's private items."
)
JsonOption = typer.Option(False, "--json", help="Print JSON.")
_TURN_ROLES = ("user", "assistant", "system")


def _print_result(result: Any, as_json: bool, explain: bool) -> None:
    from continuum.cli.main import console, print_json

    if as_json:
        print_json(result.as_dict())
        return
    sys.stdout.write(result.block + "\n")
    if explain:
        for item in result.items:
            console.print(f"[green]+[/] {item.ref} ({item.tokens} tok) {item.why}", highlight=False)
        for gone in result.excluded:
            console.print(f"[red]-[/] {gone.ref}: {gone.reason}", highlight=False)
        console.print(f"[dim]{result.tokens_used} tokens, query {result.query_id}[/]")


def _print_listing(rows: list[dict[str, Any]], as_json: bool) -> None:
    from continuum.cli.main import console, print_json
    from continuum.recall.context import render_when

    if as_json:
        print_json(rows)
        return
    now = datetime.now().astimezone()
    for row in rows:
        when = row["created_at"] and render_when(datetime.fromisoformat(row["created_at"]), now)
        console.print(
            f"[dim]{when or ''}[/] [cyan]{row['channel'] or '-'}[/] [bold]{row['kind']}[/] "
            f"{row['content']}",
            highlight=False,
        )


@recall_app.command("context")
def context_command(
    namespace: str = NamespaceOption,
    channel: str = ChannelOption,
    user_id: str = UserOption,
    seed: str = typer.Option("", "--seed", help="First user message or task."),
    max_tokens: int = typer.Option(800, "--max-tokens", min=0),
    as_json: bool = JsonOption,
    explain: bool = typer.Option(False, "--explain", help="Why each item was kept or dropped."),
) -> None:
    """The context block a runtime injects at session start (cross-session, R10)."""
    from continuum.recall.context import context

    result = context(namespace, seed, max_tokens, user_id=user_id, channel=channel,
                     explain=explain)  # fmt: skip
    _print_result(result, as_json, explain)


@recall_app.command("recall")
def recall_command(
    seed: str = typer.Option(..., "--seed", help="Text of the new topic."),
    since_topic: str = typer.Option(..., "--since-topic", help="Slug of the previous topic."),
    namespace: str = NamespaceOption,
    channel: str = ChannelOption,
    user_id: str = UserOption,
    max_tokens: int = typer.Option(400, "--max-tokens", min=0),
    as_json: bool = JsonOption,
    explain: bool = typer.Option(False, "--explain"),
) -> None:
    """Topic shift mid-session: what is relevant to the new topic and not yet injected."""
    from continuum.recall.context import recall_since_topic

    result = recall_since_topic(namespace, since_topic, seed, max_tokens, user_id=user_id,
                                channel=channel, explain=explain)  # fmt: skip
    _print_result(result, as_json, explain)


@recall_app.command("recent-conversations")
def recent_conversations_command(
    namespace: str = NamespaceOption,
    user_id: str = UserOption,
    channel: str = ChannelOption,
    limit: int = typer.Option(10, "--limit", min=1),
    as_json: bool = JsonOption,
) -> None:
    """Summaries of recent conversations across channels, newest first."""
    from continuum.recall.context import recent_conversations

    rows = recent_conversations(namespace, limit=limit, user_id=user_id, channel=channel)
    _print_listing(rows, as_json)


@recall_app.command("active-tasks")
def active_tasks_command(
    namespace: str = NamespaceOption,
    user_id: str = UserOption,
    limit: int = typer.Option(100, "--limit", min=1),
    as_json: bool = JsonOption,
) -> None:
    """Tasks pending, in progress or blocked, from every channel."""
    from continuum.recall.context import active_tasks

    _print_listing(active_tasks(namespace, limit=limit, user_id=user_id), as_json)


def conversation_events(conversation: dict[str, Any]) -> list[dict[str, Any]]:
    """A saved conversation → turn events and one session_end. Event and message ids derive
    from namespace, session and position, so saving the same conversation twice is a no-op."""
    base = {key: conversation.get(key) for key in ("namespace", "session_id", "channel")}
    base["user_id"] = conversation.get("user_id")
    scope = f"{base['namespace']}/{base['session_id']}"
    messages = [m for m in conversation.get("messages") or [] if m.get("role") in _TURN_ROLES]
    if not messages:
        raise ValueError("messages: at least one user/assistant/system message is required")
    events = []
    for index, message in enumerate(messages):
        message_id = message.get("message_id") or f"{base['session_id']}-{index}"
        events.append({
            **base, "kind": "turn", "event_id": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{scope}/{message_id}")),
            "ts": message.get("ts") or conversation.get("ended_at"), "role": message["role"],
            "content": message.get("content"), "message_id": message_id,
        })  # fmt: skip
    ended_at = conversation.get("ended_at") or events[-1]["ts"]
    end: dict[str, Any] = {key: conversation[key] for key in ("reason", "duration_s", "connected", "is_reminder")
           if key in conversation}  # fmt: skip
    events.append({
        **base, **end, "kind": "session_end", "ts": ended_at, "ended_at": ended_at,
        "event_id": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{scope}/session_end")),
        "message_count": len(messages),
    })  # fmt: skip
    return events


@recall_app.command("save-conversation")
def save_conversation_command(as_json: bool = JsonOption) -> None:
    """Enqueue a conversation read from stdin as JSON: {namespace, session_id, channel,
    user_id, messages: [{role, content, ts}], ended_at?, reason?, duration_s?}."""
    from continuum.cli.main import console, fail, print_json
    from continuum.config import get_settings
    from continuum.contract.client import EnqueueError, MemoryClient
    from continuum.contract.events import EventError

    try:
        events = conversation_events(json.loads(sys.stdin.read()))
    except (json.JSONDecodeError, ValueError, AttributeError, TypeError) as exc:
        fail(f"input is not a conversation: {exc}")
    batch = get_settings().max_batch_events
    client = MemoryClient()
    ids: list[str] = []
    try:
        for start in range(0, len(events), batch):  # session_end goes last, after its turns
            ids += client.emit_many(events[start : start + batch])
    except EventError as exc:
        fail(str(exc))
    except EnqueueError as exc:
        fail(str(exc), code=3)
    finally:
        client.close()
    if as_json:
        print_json({"enqueued": len(ids), "event_ids": ids})
    else:
        console.print(f"[green]✓[/] enqueued {len(ids) - 1} turns and a session_end")
