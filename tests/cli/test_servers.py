"""`continuum check` against the real servers."""

from __future__ import annotations

from typing import Any

from typer.testing import CliRunner

from continuum.cli.servers import app

runner = CliRunner()


def test_check_reports_each_server(servers: Any) -> None:
    result = runner.invoke(app, ["check"])
    assert result.exit_code == 0, result.output
    for name in ("postgres", "redis", "broker"):
        assert name in result.output
    assert "pgvector" in result.output
