"""`continuum sessions`, `topic` and `handoff send|check` on the real Redis."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from typer.testing import CliRunner

from continuum.cli.sessions import app
from tests.support.events import T0, turn

runner = CliRunner()


def test_sessions_and_topic_show_a_live_session(db: Any) -> None:
    from continuum.pipeline.ingest import ingest_batch

    a_minute_ago = (datetime.now(UTC) - T0).total_seconds() - 60
    ingest_batch([turn("Let's plan the garden renovation together.", message_id="m1",
                       at=a_minute_ago)])  # fmt: skip
    listed = runner.invoke(app, ["sessions", "-n", "pearl", "--json"])
    assert listed.exit_code == 0, listed.output
    [session] = json.loads(listed.stdout)
    assert (session["channel"], session["session_id"], session["user_id"]) == (
        "voice",
        "voice-1",
        "jason",
    )
    assert session["topic"]
    table = runner.invoke(app, ["sessions", "-n", "pearl"])
    assert table.exit_code == 0 and "voice-1" in table.stdout and "jason" in table.stdout
    topics = runner.invoke(app, ["topic", "-n", "pearl", "--json"])
    assert json.loads(topics.stdout) == {"voice": session["topic"]}
    other = runner.invoke(app, ["topic", "-n", "pearl", "--channel", "discord", "--json"])
    assert json.loads(other.stdout) == {}
    assert json.loads(runner.invoke(app, ["sessions", "-n", "elsewhere", "--json"]).stdout) == []


def test_sessions_are_only_the_last_hour(db: Any) -> None:
    from continuum.pipeline.ingest import ingest_batch

    ingest_batch([turn("Let's plan the garden renovation together.", message_id="m1")])
    listed = runner.invoke(app, ["sessions", "-n", "pearl", "--json"])
    assert listed.exit_code == 0 and json.loads(listed.stdout) == []  # last turn > 1 h ago
    topics = runner.invoke(app, ["topic", "-n", "pearl", "--json"])
    assert topics.exit_code == 0 and json.loads(topics.stdout) == {}


def test_a_handoff_is_read_once(db: Any) -> None:
    sent = runner.invoke(app, ["handoff", "send", "-n", "pearl", "--user", "jason", "--from",
                               "voice", "--to", "discord", "--summary", "Garden plan"])  # fmt: skip
    assert sent.exit_code == 0 and json.loads(sent.stdout)["to_channel"] == "discord"
    peek = runner.invoke(app, ["handoff", "check", "-n", "pearl", "--user", "jason", "--peek"])
    taken = runner.invoke(app, ["handoff", "check", "-n", "pearl", "--user", "jason"])
    again = runner.invoke(app, ["handoff", "check", "-n", "pearl", "--user", "jason"])
    assert (peek.exit_code, taken.exit_code, again.exit_code) == (0, 0, 1)
    assert json.loads(peek.stdout) == json.loads(taken.stdout)
    assert json.loads(taken.stdout)["context_summary"] == "Garden plan"
    assert again.stdout == ""


def test_a_handoff_without_target_is_taken_by_another_channel_only(db: Any) -> None:
    sent = runner.invoke(app, ["handoff", "send", "-n", "pearl", "--user", "jason", "--from",
                               "claude-code", "--summary", "Upload test fixed"])  # fmt: skip
    assert sent.exit_code == 0 and json.loads(sent.stdout)["to_channel"] == ""
    check = ["handoff", "check", "-n", "pearl", "--user", "jason", "--channel"]
    assert runner.invoke(app, [*check, "claude-code"]).exit_code == 1  # where it came from
    taken = runner.invoke(app, [*check, "discord"])
    assert (
        taken.exit_code == 0 and json.loads(taken.stdout)["context_summary"] == "Upload test fixed"
    )
    assert runner.invoke(app, [*check, "telegram"]).exit_code == 1  # read once
