"""`continuum messages search|recent|day` over messages stored by the real ingest."""

from __future__ import annotations

import json
from typing import Any

from typer.testing import CliRunner

from continuum.cli.messages import app
from tests.support.events import T0, turn

runner = CliRunner()


def invoke(*args: str) -> Any:
    result = runner.invoke(app, ["messages", *args])
    assert result.exit_code == 0, result.output
    return result


def test_search_recent_and_day(db: Any) -> None:
    from continuum.pipeline.ingest import ingest_batch

    ingest_batch([turn("We'll use Postgres for the event store.", message_id="m1"),
                  turn("Noted.", role="assistant", channel="discord", at=60, message_id="m2")])  # fmt: skip
    found = json.loads(invoke("search", "event store", "-n", "pearl", "--json").stdout)
    assert [m["message_id"] for m in found] == ["m1"]
    assert json.loads(invoke("search", "event store", "-n", "pearl", "--channel", "discord",
                             "--json").stdout) == []  # fmt: skip
    recent = json.loads(invoke("recent", "-n", "pearl", "--limit", "1", "--json").stdout)
    assert [m["content"] for m in recent] == ["Noted."]
    day = invoke("day", T0.date().isoformat(), "-n", "pearl").stdout
    assert "We'll use Postgres" in day and "discord" in day
    assert json.loads(invoke("day", "2020-01-01", "-n", "pearl", "--json").stdout) == []


def test_a_bad_day_is_refused_and_printed_as_given() -> None:
    bad = runner.invoke(app, ["messages", "day", "[bold]tuesday", "-n", "pearl"])
    assert bad.exit_code == 2 and bad.stdout == ""
    assert "error: '[bold]tuesday' is not a date; use YYYY-MM-DD" in bad.stderr


def test_stored_text_with_markup_is_printed_as_stored(db: Any) -> None:
    """Content, channels and topics are data: `[/bold]` in them never reaches rich's parser
    (it crashed the readers with MarkupError)."""
    from continuum.cli.main import app as main_app
    from continuum.pipeline.ingest import ingest_batch

    text = "a closing [/bold] tag and [red]colour[/red] in a message"
    ingest_batch([turn(text, message_id="m1")])
    for args in (["messages", "recent", "-n", "pearl"], ["messages", "search", "closing tag",
                 "-n", "pearl"], ["messages", "day", T0.date().isoformat(), "-n", "pearl"],
                 ["search", "closing tag", "-n", "pearl"], ["topic", "-n", "pearl"],
                 ["sessions", "-n", "pearl"]):  # fmt: skip
        result = runner.invoke(main_app, args, terminal_width=200)
        assert result.exit_code == 0, (args, result.output)
        if args[0] != "sessions" and args[0] != "topic":
            assert text in " ".join(result.stdout.split()), args
