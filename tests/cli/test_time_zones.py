"""The read commands show and take days in the tenant's time zone, or in `--tz`; an unknown
`--tz` exits 2 naming it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from continuum.cli.main import app
from tests.support.local_days import LATE_TUESDAY_UTC, cron_report, said

runner = CliRunner()


def output(*args: str) -> str:
    result = runner.invoke(app, list(args), terminal_width=200)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_a_day_and_its_times_are_the_tenants_unless_tz_says(db: Any, settings_env: Any) -> None:
    settings_env(tenant_timezones="tokyo=Asia/Tokyo")
    said("tokyo", "late", "I booked the ferry to Naoshima.", LATE_TUESDAY_UTC)
    cron_report("tokyo", "cron-1", LATE_TUESDAY_UTC)
    wednesday = output("messages", "day", "2026-11-25", "-n", "tokyo")
    assert "2026-11-25 08:30" in wednesday and "Naoshima" in wednesday
    assert json.loads(output("messages", "day", "2026-11-24", "-n", "tokyo", "--json")) == []
    utc = json.loads(
        output("messages", "day", "2026-11-24", "-n", "tokyo", "--tz", "UTC", "--json")
    )
    assert [m["message_id"] for m in utc] == ["late"]
    assert "2026-11-25 08:30" in output("cron-reports", "-n", "tokyo", "--day", "2026-11-25")
    assert "2026-11-24 23:30" in output("cron-reports", "-n", "tokyo", "--day", "2026-11-24",
                                        "--tz", "UTC")  # fmt: skip
    block = output("context", "-n", "tokyo", "--seed", "ferry", "--tz", "America/New_York")
    assert block.splitlines()[0].endswith(" America/New_York)")


@pytest.mark.parametrize(
    "args",
    [["messages", "day", "2026-11-25"], ["context"], ["search", "ferry"], ["cron-reports"],
     ["recent-conversations"], ["active-tasks"]],
)  # fmt: skip
def test_an_unknown_tz_exits_2_naming_it(args: list[str]) -> None:
    result = runner.invoke(app, [*args, "-n", "pearl", "--tz", "Mars/Olympus"])
    assert result.exit_code == 2 and result.stdout == ""
    assert "error: --tz: unknown time zone 'Mars/Olympus'" in " ".join(result.stderr.split())
