"""Producer commands for runtimes in any language: `continuum emit` (events as JSON) and
`continuum save-conversation` (a finished conversation as JSON on stdin → turn events and a
session_end). Both validate, enqueue through `MemoryClient` and print the event ids.

`emit` is the hot path of every non-Python runtime, so nothing beyond the client is imported.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable
from typing import Any

import typer

from continuum.cli.common import JsonOption, console, fail, print_json, read_stdin

app = typer.Typer()
_TURN_ROLES = ("user", "assistant", "system")


def _enqueue(batches: Iterable[list[dict[str, Any]]]) -> list[str]:
    """Enqueue each batch as one task message, in order; exit 2 on invalid events, 3 when
    the broker cannot take them."""
    from continuum.contract.client import EnqueueError, MemoryClient
    from continuum.contract.events import EventError

    client = MemoryClient()
    ids: list[str] = []
    try:
        for batch in batches:
            ids += client.emit_many(batch)
    except EventError as exc:
        fail(str(exc))
    except EnqueueError as exc:
        fail(str(exc), code=3)
    finally:
        client.close()
    return ids


@app.command()
def emit(
    kind: str = typer.Argument(..., help="turn | idle | pre_compaction | session_end"),
    json_text: str = typer.Option(
        None, "--json", help="An event object or an array of them; read from stdin if omitted."
    ),
) -> None:
    """Validate and enqueue events (for runtimes in other languages). Prints the event ids."""
    raw = json_text if json_text is not None else read_stdin()
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        fail(f"input is not JSON: {exc}")
    except RecursionError:
        fail("input is nested too deeply to read")
    items = data if isinstance(data, list) else [data]
    for index, item in enumerate(items):
        if isinstance(item, dict) and item.setdefault("kind", kind) != kind:
            fail(f"event #{index}: kind {item['kind']!r} does not match {kind!r}")
    ids = _enqueue([items])
    print_json({"enqueued": len(ids), "event_ids": ids})


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


@app.command("save-conversation")
def save_conversation(as_json: bool = JsonOption) -> None:
    """Enqueue a conversation read from stdin as JSON: {namespace, session_id, channel,
    user_id, messages: [{role, content, ts}], ended_at?, reason?, duration_s?}."""
    from continuum.config import get_settings

    try:
        events = conversation_events(json.loads(read_stdin()))
    except (json.JSONDecodeError, ValueError, AttributeError, TypeError) as exc:
        fail(f"input is not a conversation: {exc}")
    size = get_settings().max_batch_events
    # session_end is the last event, so it goes in the last batch, after all its turns
    ids = _enqueue(events[start : start + size] for start in range(0, len(events), size))
    if as_json:
        print_json({"enqueued": len(ids), "event_ids": ids})
    else:
        console().print(f"[green]✓[/] enqueued {len(ids) - 1} turns and a session_end")
