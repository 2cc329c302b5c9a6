"""`continuum emit` and `continuum save-conversation`: validated, enqueued, consumed by a real
worker."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from continuum.cli.events import app, conversation_events
from tests.support.events import turn
from tests.support.memories import NOW
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


def test_emit_enqueues_a_batch_from_stdin(db: Any, worker: Any) -> None:
    from continuum.recall.namespace_queries import search_messages

    events = [turn("We'll use Postgres for the event store.", message_id="m1"), turn("ok", at=1)]
    for event in events:
        del event["kind"]  # the kind argument fills it in
    result = runner.invoke(app, ["emit", "turn"], input=json.dumps(events))
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["enqueued"] == 2 and len(out["event_ids"]) == 2
    wait_for(lambda: search_messages("pearl", "event store"))


def test_emit_explains_bad_input(servers: Any) -> None:
    bad_json = runner.invoke(app, ["emit", "turn", "--json", "{not json"])
    assert bad_json.exit_code == 2 and "input is not JSON" in bad_json.stderr
    missing = runner.invoke(
        app, ["emit", "turn", "--json", json.dumps({"namespace": "pearl", "role": "user"})]
    )
    assert missing.exit_code == 2
    assert "session_id" in missing.stderr and "content" in missing.stderr
    mismatch = runner.invoke(app, ["emit", "idle", "--json", json.dumps(turn("hello there"))])
    assert mismatch.exit_code == 2 and "does not match 'idle'" in mismatch.stderr
    assert mismatch.stdout == ""


def test_conversation_events_are_idempotent_and_end_the_session() -> None:
    events = conversation_events(CONVERSATION)
    assert [e["kind"] for e in events] == ["turn", "turn", "session_end"]
    assert [e["message_id"] for e in events[:2]] == ["tg-7-0", "tg-7-1"]
    assert events == conversation_events(CONVERSATION)  # same ids on a re-save
    assert events[-1]["message_count"] == 2
    with pytest.raises(ValueError, match="messages"):
        conversation_events({**CONVERSATION, "messages": []})


def test_save_conversation_goes_through_the_pipeline(db: Any, worker: Any) -> None:
    from continuum.recall.namespace_queries import get_session, search_messages

    saved = runner.invoke(app, ["save-conversation", "--json"], input=json.dumps(CONVERSATION))
    assert saved.exit_code == 0, saved.output
    assert json.loads(saved.stdout)["enqueued"] == 3
    wait_for(lambda: search_messages("pearl", "Hoffmann garden"))
    session = wait_for(lambda: get_session("pearl", "tg-7"))
    wait_for(lambda: (s := get_session("pearl", "tg-7")) and s.status == "ended")
    assert session.channel == "telegram"
    bad = runner.invoke(app, ["save-conversation"], input="{not json")
    assert bad.exit_code == 2 and "input is not a conversation" in bad.stderr
