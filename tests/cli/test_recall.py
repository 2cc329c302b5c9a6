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
