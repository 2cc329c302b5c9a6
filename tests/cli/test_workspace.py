"""`continuum workspace show`: a tenant's narrative file as written (an encrypted tenant's
sealed entries opened), and a clear refusal for a file it does not have or one outside it."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from continuum.cli.main import app
from continuum.pipeline.narrative import record_session

runner = CliRunner()
AT = datetime(2026, 3, 2, 9, 15, tzinfo=UTC)


def test_show_prints_a_file_as_written_and_refuses_what_is_not_there(
    db: Any, encrypted: str, settings_env: Any, tmp_path: Path
) -> None:
    settings_env(workspace_dir=tmp_path)
    for namespace in (encrypted, "open"):
        record_session(namespace, AT, "voice", "Booked the ferry", "Booked the ferry.", "jason")
    sealed = (tmp_path / encrypted / "memory" / "2026-03-02.md").read_text()
    assert "ferry" not in sealed and sealed.startswith("# 2026-03-02\n\nenc2:")
    for namespace in (encrypted, "open"):
        shown = runner.invoke(app, ["workspace", "show", "memory/2026-03-02.md", "-n", namespace])
        assert shown.exit_code == 0, shown.output
        assert shown.output == (tmp_path / "open" / "memory" / "2026-03-02.md").read_text()

    missing = runner.invoke(app, ["workspace", "show", "MEMORY.md", "-n", "open"])
    assert missing.exit_code == 2
    assert "no file 'MEMORY.md'" in missing.output and "memory/2026-03-02.md" in missing.output
    outside = runner.invoke(
        app, ["workspace", "show", f"../{encrypted}/activity-log.md", "-n", "open"]
    )
    assert outside.exit_code == 2 and "Booked" not in outside.output
