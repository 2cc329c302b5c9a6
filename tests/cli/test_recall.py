"""The runtime-facing recall commands, run through typer against real servers."""

from __future__ import annotations

import json
from typing import Any

from typer.testing import CliRunner

from continuum.cli.recall import app
from tests.support.memories import add_task, remember

runner = CliRunner()


def invoke(*args: str) -> Any:
    result = runner.invoke(app, list(args))
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


def test_recent_conversations_of_one_channel(db: Any) -> None:
    """'What did we say in voice?': the summaries of one channel, newest first."""
    remember("Voice call: picked Hoffmann.", "conversation_summary", days_ago=3)
    remember("Discord chat: the fence.", "conversation_summary", days_ago=2, channel="discord")
    remember("Voice call: drainage price.", "conversation_summary", days_ago=1)
    voice = invoke("recent-conversations", "-n", "pearl", "--in-channel", "voice", "--json")
    assert [r["content"] for r in voice] == ["Voice call: drainage price.",
                                             "Voice call: picked Hoffmann."]  # fmt: skip
    every = invoke("recent-conversations", "-n", "pearl", "--json")
    assert [r["channel"] for r in every] == ["voice", "discord", "voice"]
