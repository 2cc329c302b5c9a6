"""The runtime-facing recall commands, run through typer against real servers and a worker."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from continuum.cli.recall import conversation_events, recall_app
from tests.recall.test_context import NOW, add_task, remember
from tests.support.wait import wait_for

runner = CliRunner()

CONVERSATION = {
    "namespace": "pearl",
    "session_id": "tg-7",
    "channel": "telegram",
    "user_id": "jason",
    "messages": [
        {"role": "user", "content": "We'll use Hoffmann for the garden.", "ts": NOW.isoformat()},
        {"role": "tool", "content": "ignored"},
        {"role": "assistant", "content": "Noted: Hoffmann.", "ts": NOW.isoformat()},
    ],
}


def invoke(*args: str, stdin: str | None = None) -> Any:
    result = runner.invoke(recall_app, list(args), input=stdin)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_context_and_listings_as_json(db: Any) -> None:
    remember("Prefers tea over coffee.", "preference", importance=7)
    remember("Picked Hoffmann.", "conversation_summary", details={"channel": "voice"})
    add_task("Call Hoffmann")
    block = invoke("context", "-n", "pearl", "--user", "jason", "--channel", "discord",
                   "--seed", "tea", "--max-tokens", "200", "--json", "--explain")  # fmt: skip
    assert block["tokens_used"] <= 200 and "Prefers tea" in block["block"]
    assert all(item["why"] for item in block["items"])
    tasks = invoke("active-tasks", "-n", "pearl", "--user", "jason", "--json")
    assert [(t["kind"], t["content"]) for t in tasks] == [("pending", "Call Hoffmann")]
    recent = invoke("recent-conversations", "-n", "pearl", "--json")
    assert [r["channel"] for r in recent] == ["voice"]
    shift = invoke("recall", "-n", "pearl", "--since-topic", block["topic"], "--seed", "garden",
                   "--json")  # fmt: skip
    assert shift["tokens_used"] <= 400


def test_conversation_events_are_idempotent_and_end_the_session() -> None:
    events = conversation_events(CONVERSATION)
    assert [e["kind"] for e in events] == ["turn", "turn", "session_end"]
    assert [e["message_id"] for e in events[:2]] == ["tg-7-0", "tg-7-1"]
    assert events == conversation_events(CONVERSATION)  # same ids on a re-save
    assert events[-1]["message_count"] == 2
    with pytest.raises(ValueError, match="messages"):
        conversation_events({**CONVERSATION, "messages": []})


def test_save_conversation_goes_through_the_pipeline(db: Any, worker: Any) -> None:
    from continuum.recall.queries import get_session, search_messages

    out = invoke("save-conversation", "--json", stdin=json.dumps(CONVERSATION))
    assert out["enqueued"] == 3
    wait_for(lambda: search_messages("pearl", "Hoffmann garden"))
    session = wait_for(lambda: get_session("pearl", "tg-7"))
    wait_for(lambda: (s := get_session("pearl", "tg-7")) and s.status == "ended")
    assert session.channel == "telegram"
    bad = runner.invoke(recall_app, ["save-conversation"], input="{not json")
    assert bad.exit_code == 2
