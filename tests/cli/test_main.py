"""The `continuum` console command as a whole, run as real processes: what loading it costs,
that every command is mounted, configuration errors, and the container entrypoint."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from continuum.cli.main import app
from tests.support.events import turn
from tests.support.wait import wait_for

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()
# Modules that cost hundreds of ms to import and that no command needs before it runs.
HEAVY = ("fastapi", "torch", "sentence_transformers", "sqlalchemy", "celery", "psycopg",
         "pydantic_settings")  # fmt: skip
COMMANDS = {
    "dev": {"up", "down", "status"},
    "db": {"upgrade"},
    "check": None,
    "demo": None,
    "emit": None,
    "save-conversation": None,
    "worker": None,
    "beat": None,
    "flower": None,
    "messages": {"search", "recent", "day"},
    "search": None,
    "embed": None,
    "reembed": None,
    "sessions": None,
    "topic": None,
    "handoff": {"send", "check"},
    "sync": {"problems", "watch"},
    "status": None,
    "usage": None,
    "cron-reports": None,
    "context": None,
    "recall": None,
    "recent-conversations": None,
    "active-tasks": None,
    "preferences": None,
    "tasks": {"add", "done", "status", "list", "suggestions", "confirm", "dismiss"},
    "memory": None,
    "tools": None,
    "conflicts": None,
    "maintenance": None,
    "forget": None,
    "keys": {"rotate"},
    "workspace": {"show"},
    "export": None,
    "import": None,
    "api": None,
    "openapi": None,
    "tokens": {"create", "list", "revoke"},
    "hooks": {"install", "uninstall"},
    "spool": {"flush"},
    "mcp": None,
    "claude-code": {"hook", "mcp", "search", "forget", "pause", "resume"},
}


def loaded_heavy_modules(code: str) -> list[str]:
    """The HEAVY modules in `sys.modules` after running `code` in a fresh interpreter."""
    done = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport json, sys\n"
         f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def listed_commands(help_text: str) -> set[str]:
    """The names in the Commands panel of a rich --help screen."""
    panel = help_text[help_text.index("Commands") :]
    return set(re.findall(r"^│ (\S+) ", panel, flags=re.MULTILINE))


def test_loading_the_command_line_imports_nothing_heavy() -> None:
    assert loaded_heavy_modules("import continuum.cli.main") == []


def test_emit_imports_only_what_publishing_needs(db: Any, worker: Any) -> None:
    from continuum.recall.namespace_queries import search_messages

    event = json.dumps(turn("The command line starts fast."))
    code = ("import sys\nfrom continuum.cli.main import main\n"
            f"sys.argv = ['continuum', 'emit', 'turn', '--json', {event!r}]\n"
            "try:\n    main()\nexcept SystemExit as exit:\n    assert not exit.code, exit.code")  # fmt: skip
    # the publisher and the settings it reads, nothing else
    assert set(loaded_heavy_modules(code)) <= {"celery", "pydantic_settings"}
    wait_for(lambda: search_messages("pearl", "command line starts fast"))  # a worker took it


def test_help_lists_every_command() -> None:
    shown = subprocess.run([sys.executable, "-m", "continuum.cli.main", "--help"],
                           capture_output=True, text=True, timeout=120, cwd=ROOT)  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    assert listed_commands(shown.stdout) == set(COMMANDS)
    for group, subcommands in COMMANDS.items():
        if subcommands:
            result = runner.invoke(app, [group, "--help"])
            assert result.exit_code == 0 and listed_commands(result.stdout) == subcommands


def test_a_configuration_error_exits_2_with_its_message(tmp_path: Path) -> None:
    unconfigured = {"CONTINUUM_HOME": str(tmp_path), "CONTINUUM_REDIS_URL": "",
                    "CONTINUUM_BROKER_URL": "", "CONTINUUM_DATABASE_URL": ""}  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "continuum.cli.main", "emit", "turn", "--json", "{}"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
        env={**os.environ, **unconfigured},
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "error: No Redis configured" in done.stderr and "Traceback" not in done.stderr


def test_a_setting_that_does_not_parse_is_named_without_its_value(tmp_path: Path) -> None:
    """(It was pydantic's traceback, input value included: the value may be a secret.)"""
    done = subprocess.run(
        [sys.executable, "-m", "continuum.cli.main", "tokens", "list"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
        env={**os.environ, "CONTINUUM_API_THREADS": "s3cret-ish"},
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "error: CONTINUUM_API_THREADS: Input should be a valid integer" in done.stderr
    assert "Traceback" not in done.stderr and "s3cret-ish" not in done.stderr


def entrypoint(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    return subprocess.run(
        ["sh", str(ROOT / "docker" / "entrypoint.sh"), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PATH": path, **env},
    )


def test_container_entrypoint_roles(servers: Any) -> None:
    assert entrypoint("check").returncode == 0
    unknown = entrypoint("dance")
    assert unknown.returncode == 64 and "unknown role 'dance'" in unknown.stderr
    down = entrypoint(
        "check",
        CONTINUUM_DATABASE_URL=f"postgresql+psycopg://x@/nope?host=/tmp/{uuid.uuid4().hex}",
        CONTINUUM_WAIT_TRIES="1",
    )
    assert down.returncode == 69 and "postgres" in down.stderr
