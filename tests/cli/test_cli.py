"""The `continuum` command and the container entrypoint, run for real."""

from __future__ import annotations

import json
import os
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


def test_emit_enqueues_a_batch_from_stdin(db: Any, worker: Any) -> None:
    from continuum.recall.queries import search_messages

    events = [turn("We'll use Postgres for the event store.", message_id="m1"), turn("ok", at=1)]
    for event in events:
        del event["kind"]  # the kind argument fills it in
    result = runner.invoke(app, ["emit", "turn"], input=json.dumps(events))
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["enqueued"] == 2 and len(out["event_ids"]) == 2
    wait_for(lambda: search_messages("pearl", "event store"))


def test_emit_explains_bad_input(servers: Any) -> None:
    bad_json = runner.invoke(app, ["emit", "turn", "--json", "{not json"])
    assert bad_json.exit_code == 2 and "input is not JSON" in bad_json.output
    missing = runner.invoke(
        app, ["emit", "turn", "--json", json.dumps({"namespace": "pearl", "role": "user"})]
    )
    assert missing.exit_code == 2
    assert "session_id" in missing.output and "content" in missing.output
    mismatch = runner.invoke(app, ["emit", "idle", "--json", json.dumps(turn("hello there"))])
    assert mismatch.exit_code == 2 and "does not match 'idle'" in mismatch.output


def test_check_reports_each_server(servers: Any) -> None:
    result = runner.invoke(app, ["check"])
    assert result.exit_code == 0, result.output
    for name in ("postgres", "redis", "broker"):
        assert name in result.output
    assert "pgvector" in result.output


def test_flower_refuses_to_run_without_auth(servers: Any, settings_env: Any) -> None:
    settings_env(flower_password=None)
    result = runner.invoke(app, ["flower"])
    assert result.exit_code == 2 and "CONTINUUM_FLOWER_PASSWORD" in result.output


def test_worker_refuses_unknown_queues() -> None:
    result = runner.invoke(app, ["worker", "-Q", "events,bogus"])
    assert result.exit_code == 2 and "unknown queue(s) bogus" in result.output


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


def test_handoff_and_sessions_commands(db: Any) -> None:
    from continuum.pipeline.ingest import ingest_batch

    ingest_batch([turn("Let's plan the garden renovation together.", message_id="m1")])
    sent = runner.invoke(app, ["handoff", "send", "-n", "pearl", "--user", "jason", "--from",
                               "voice", "--to", "discord", "--summary", "Garden plan"])  # fmt: skip
    assert sent.exit_code == 0 and json.loads(sent.stdout)["to_channel"] == "discord"
    peek = runner.invoke(app, ["handoff", "check", "-n", "pearl", "--user", "jason", "--peek"])
    taken = runner.invoke(app, ["handoff", "check", "-n", "pearl", "--user", "jason"])
    again = runner.invoke(app, ["handoff", "check", "-n", "pearl", "--user", "jason"])
    assert (peek.exit_code, taken.exit_code, again.exit_code) == (0, 0, 1)
    assert json.loads(taken.stdout)["context_summary"] == "Garden plan"
    topics = runner.invoke(app, ["topic", "-n", "pearl", "--json"])
    assert topics.exit_code == 0 and json.loads(topics.stdout) == {}  # last turn > 1 h ago
