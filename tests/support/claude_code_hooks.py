"""Claude Code as the hooks see it: its documented hook payloads, a session transcript, and
running a hook's command the way Claude Code does: those `continuum hooks install
claude-code` wrote into a settings file, and those of the Claude Code plugin."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from continuum.cli.main import app
from tests.support.paths import FIXTURES

TRANSCRIPT = next((FIXTURES / "transcripts/home/.claude/projects").rglob("*.jsonl"))
# The fixture's first exchange: a prompt, then thinking, text, a tool call, its result, text.
PROMPT = "Let's switch the test suite to pytest-xdist; CI takes 3 minutes and that's too slow."
ANSWER = (
    "Sure: I'll add pytest-xdist and run with `-n auto`.\n\n"
    "Done: the suite runs in 41s with xdist (was 3m10s)."
)
ANSWER_UUID = "09334a8b-ad73-435e-a165-1475e823f992"


def transcript(directory: Path, session_id: str) -> Path:
    """A transcript ending with the answer to PROMPT (the fixture's first 7 lines)."""
    path = directory / f"{session_id}.jsonl"
    path.write_text("".join(TRANSCRIPT.read_text().splitlines(keepends=True)[:7]))
    return path


def payload(event: str, session_id: str, path: Path, **fields: Any) -> dict[str, Any]:
    """A hook's stdin as Claude Code documents it: the common fields plus the event's own."""
    return {"session_id": session_id, "transcript_path": str(path), "cwd": str(path.parent),
            "permission_mode": "default", "hook_event_name": event, **fields}  # fmt: skip


def install(project: Path, *args: str) -> dict[str, str]:
    """`continuum hooks install claude-code --project DIR ARGS`; our command per event."""
    result = CliRunner().invoke(app, ["hooks", "install", "claude-code", "--project",
                                      str(project), *args])  # fmt: skip
    assert result.exit_code == 0, result.output
    settings = json.loads((project / ".claude" / "settings.local.json").read_text())
    return {event: group["hooks"][-1]["command"]
            for event, groups in settings["hooks"].items() for group in groups[-1:]}  # fmt: skip


def run_hook(
    command: str, body: dict[str, Any] | str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run a hook's command the way Claude Code does: through the shell, JSON on stdin (in
    `env`, default this process's environment)."""
    stdin = body if isinstance(body, str) else json.dumps(body)
    return subprocess.run(command, shell=True, input=stdin, capture_output=True, text=True,
                          timeout=120, executable=shutil.which("bash"), env=env)  # fmt: skip
