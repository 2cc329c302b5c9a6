"""The lifecycle commands as a runtime or a person runs them (JSON out, exit codes)."""

from __future__ import annotations

import json
from typing import Any

from typer.testing import CliRunner

from continuum.cli.memory import app

runner = CliRunner()


def _json(*args: str, code: int = 0) -> Any:
    result = runner.invoke(app, list(args))
    assert result.exit_code == code, result.output
    return json.loads(result.stdout)


def test_memory_tools_preferences_and_tasks(db: Any) -> None:
    stored = _json("memory", "store_memory", '{"memory_type": "preference", "key": "volume_level",'
                   ' "value": "75%"}', "-n", "pearl")  # fmt: skip
    assert stored["success"] and isinstance(stored["memoryId"], int)
    bad = _json("memory", "store_memory", '{"key": "x"}', "-n", "pearl", code=1)
    assert "missing required field 'memory_type'" in bad["message"]
    prefs = _json("preferences", "-n", "pearl", "--json")
    assert [(p["key"], p["value"], p["learned_from"]["provenance"]) for p in prefs] == [
        ("volume_level", "75%", "user_explicit")
    ]
    task = _json("tasks", "add", "Call the plumber", "-n", "pearl", "--json")[0]
    assert [t["title"] for t in _json("tasks", "list", "-n", "pearl", "--json")] == [
        "Call the plumber"
    ]
    assert (
        _json("tasks", "done", task["task_id"][:6], "-n", "pearl", "--json")[0]["status"] == "done"
    )
    assert _json("tasks", "list", "-n", "pearl", "--json") == []
    assert runner.invoke(app, ["tasks", "done", "ffffffff", "-n", "pearl"]).exit_code == 2


def test_tools_conflicts_and_maintenance(db: Any, settings_env: Any, tmp_path: Any) -> None:
    settings_env(workspace_dir=tmp_path)
    names = [d["name"] for d in _json("tools", "--format", "anthropic")]
    assert names[0] == "store_memory" and len(names) == 5
    assert _json("conflicts", "-n", "pearl", "--json") == []
    dry = _json("maintenance", "-n", "pearl", "--dry-run", "--json")
    assert dry[0]["status"] == "dry_run" and dry[0]["plan"][-1]["op"] == "memory_md"
    assert _json("maintenance", "-n", "pearl", "--json")[0]["status"] == "done"
