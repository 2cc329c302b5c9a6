"""`continuum status` through the typer app, against real servers and a real worker."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from continuum.cli.main import app
from continuum.sync import sync
from tests.support.transcripts import ADVERSARIAL

runner = CliRunner()


def test_status_reports_the_last_sync_and_waits_until_the_pipeline_is_drained(
    db: Any, worker: Any, tmp_path: Path, settings_env: Any
) -> None:
    settings_env(workspace_dir=tmp_path / "workspace")
    never = json.loads(runner.invoke(app, ["status", "--json"]).stdout)
    assert never["last_sync"] is None and never["problems_open"] == {}
    shutil.copytree(ADVERSARIAL, tmp_path / "home")
    summary = sync(tmp_path / "home")  # capture chunks, session ends, embeddings to come
    result = runner.invoke(app, ["status", "--wait", "--timeout", "120", "--json"])
    assert result.exit_code == 0, result.output
    status = json.loads(result.stdout)
    assert status["drained"] and status["unacked"] == 0 and not any(status["queues"].values())
    assert not any(status["embeddings_pending"].values())
    assert status["last_sync"]["run_id"] == summary.run_id
    assert status["last_sync"]["messages_inserted"] == summary.messages_inserted > 0
    assert status["problems_open"] == {"binary_file": 1, "malformed_json": 1, "not_an_object": 1}
    text = runner.invoke(app, ["status"]).stdout
    assert "drained" in text and "binary_file 1" in text
