"""`continuum sync` and `continuum cron-reports` through the typer app, on real servers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from continuum.cli.sync import app
from tests.support.transcripts import FIXTURE_MESSAGES, copy_home

runner = CliRunner()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return copy_home(tmp_path)


def test_sync_then_cron_reports_of_a_day(db: Any, home: Path) -> None:
    result = runner.invoke(app, ["sync", "--home", str(home), "--no-capture", "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert (summary["messages_inserted"], summary["files_failed"]) == (FIXTURE_MESSAGES, 0)

    table = runner.invoke(app, ["sync", "--home", str(home), "--no-capture"])
    assert table.exit_code == 0 and "0 / 9 / 0" in table.stdout  # read / unchanged / failed

    reports = runner.invoke(app, ["cron-reports", "-n", "default", "--day", "2026-02-27", "--json"])
    [report] = json.loads(reports.stdout)
    assert (report["cron_name"], report["event_at"]) == (
        "Daily Standup Digest",
        "2026-02-27 16:00:09.060000+00:00",
    )
    other_day = runner.invoke(app, ["cron-reports", "-n", "default", "--day", "2026-02-28"])
    assert other_day.exit_code == 0 and other_day.stdout == ""
    bad_day = runner.invoke(app, ["cron-reports", "-n", "default", "--day", "tuesday"])
    assert bad_day.exit_code == 2 and "'tuesday' is not a date" in bad_day.stderr


def test_sync_lists_every_problem_with_its_location_and_sync_problems_keeps_them(
    db: Any, home: Path
) -> None:
    sessions = home / ".openclaw" / "agents" / "main" / "sessions"
    bad = sessions / "b96c88e2-b875-4762-a8c3-fd495a27f5bd.jsonl"
    good = bad.read_bytes()
    bad.write_bytes(good + b"{broken\n")
    result = runner.invoke(
        app, ["sync", "--home", str(home), "--no-capture"], env={"COLUMNS": "300"}
    )
    assert result.exit_code == 0, result.output
    index = home / ".openclaw-DTeam" / "agents" / "ops" / "sessions" / "sessions.json"
    lines = len(good.splitlines())
    assert f"malformed_json {bad}:{lines + 1} (byte {len(good)})" in result.stdout
    assert f"bad_sessions_index {index}:1" in result.stdout  # the fixture's malformed index

    listed = runner.invoke(app, ["sync", "problems", "--since", "1h", "--json"])
    kept = {(p["kind"], p["source_path"], p["line_no"]) for p in json.loads(listed.stdout)}
    assert kept == {("malformed_json", str(bad), lines + 1), ("bad_sessions_index", str(index), 1)}
    later = runner.invoke(app, ["sync", "problems", "--since", "2999-01-01", "--json"])
    assert json.loads(later.stdout) == []
    assert runner.invoke(app, ["sync", "problems", "--since", "soon"]).exit_code == 2
