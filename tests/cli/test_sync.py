"""`continuum sync` and `continuum cron-reports` through the typer app, on real servers."""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from continuum.cli.sync import app
from tests.support.transcripts import FIXTURE_MESSAGES, copy_home, message_line

runner = CliRunner()
TELEGRAM = "b96c88e2-b875-4762-a8c3-fd495a27f5bd"


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


def test_sync_watch_syncs_a_write_and_stops_clean_on_ctrl_c(db: Any, home: Path) -> None:
    """`continuum sync watch` as a person runs it: a full sync first, a line appended is
    synced while it watches, and Ctrl-C (SIGINT) ends it with exit 0 and its totals."""
    pytest.importorskip("watchfiles")
    command = [sys.executable, "-m", "continuum.cli.main", "sync", "watch", "--home", str(home),
               "--no-capture", "--json", "--debounce-ms", "100"]  # fmt: skip
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: queue.SimpleQueue[dict[str, Any]] = queue.SimpleQueue()
    threading.Thread(target=lambda: [lines.put(json.loads(line)) for line in proc.stdout or ()],
                     daemon=True).start()  # fmt: skip

    def next_line() -> dict[str, Any]:
        return lines.get(timeout=60)

    try:
        assert next_line()["messages_inserted"] == FIXTURE_MESSAGES  # the full sync
        assert str(home / ".claude" / "projects") in next_line()["watching"]
        path = home / ".openclaw" / "agents" / "main" / "sessions" / f"{TELEGRAM}.jsonl"
        with path.open("a") as handle:
            handle.write(message_line("w1", "f568cb80", "2026-02-27T09:00:00.000Z", "user",
                                      "Order the blue tiles."))  # fmt: skip
        run = next_line()
        assert (run["messages_inserted"], run["files_seen"], run["locked"]) == (1, 1, False)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0, proc.stderr.read() if proc.stderr else ""
    finally:
        if proc.poll() is None:
            proc.kill()
    totals = next_line()
    assert totals["stopped"] is True
    assert (totals["runs"], totals["messages_inserted"]) == (2, FIXTURE_MESSAGES + 1)
