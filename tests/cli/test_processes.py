"""`continuum worker|flower` refuse a bad configuration before exec'ing Celery."""

from __future__ import annotations

from typing import Any

from typer.testing import CliRunner

from continuum.cli.processes import app

runner = CliRunner()


def test_flower_refuses_to_run_without_auth(servers: Any, settings_env: Any) -> None:
    settings_env(flower_password=None)
    result = runner.invoke(app, ["flower"])
    assert result.exit_code == 2 and "CONTINUUM_FLOWER_PASSWORD" in result.stderr


def test_worker_refuses_unknown_queues() -> None:
    result = runner.invoke(app, ["worker", "-Q", "events,bogus"])
    assert result.exit_code == 2 and "unknown queue(s) bogus" in result.stderr
