"""Claude Code hooks: installing into its settings files, and the installed commands fed the
documented hook payloads against the real servers and a real worker."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from continuum.cli.main import app
from continuum.ephemeral.handoff import peek_handoff, send_handoff
from continuum.runtimes import spool
from continuum.runtimes.claude_code import EVENTS, last_assistant_turn
from tests.support.claude_code_hooks import (
    ANSWER,
    ANSWER_UUID,
    PROMPT,
    install,
    payload,
    run_hook,
    transcript,
)
from tests.support.wait import wait_for

runner = CliRunner()
OTHERS = {
    "model": "opus",
    "hooks": {
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "audit"}]}],
    },
}


def _ours(settings: dict[str, Any]) -> dict[str, list[str]]:
    return {event: [hook["command"] for group in groups for hook in group["hooks"]
                    if "continuum.runtimes.claude_code" in hook["command"]]
            for event, groups in settings["hooks"].items()}  # fmt: skip


def test_install_merges_once_keeps_a_backup_and_uninstall_removes_only_ours(
    tmp_path: Path,
) -> None:
    path = tmp_path / ".claude" / "settings.local.json"
    path.parent.mkdir()
    original = json.dumps(OTHERS, indent=4)
    path.write_text(original)

    install(tmp_path, "-n", "cc-test", "--user-id", "jason")
    settings = json.loads(path.read_text())
    assert (
        settings["model"] == "opus"
        and settings["hooks"]["PreToolUse"] == OTHERS["hooks"]["PreToolUse"]
    )
    assert settings["hooks"]["Stop"][0] == OTHERS["hooks"]["Stop"][0]  # theirs first, kept
    ours = _ours(settings)
    assert set(EVENTS) <= set(ours) and all(len(ours[event]) == 1 for event in EVENTS)
    assert "--namespace cc-test --user jason Stop" in ours["Stop"][0]
    assert (path.parent / "settings.local.json.bak").read_text() == original

    installed = path.read_text()
    again = runner.invoke(app, ["hooks", "install", "claude-code", "--project", str(tmp_path),
                                "-n", "cc-test", "--user-id", "jason"])  # fmt: skip
    assert again.exit_code == 0 and "already installed" in again.output
    assert path.read_text() == installed  # idempotent: not even rewritten

    install(tmp_path, "-n", "other-tenant")  # a new configuration replaces ours in place
    ours = _ours(json.loads(path.read_text()))
    assert all(len(ours[event]) == 1 and "other-tenant" in ours[event][0] for event in EVENTS)

    removed = runner.invoke(app, ["hooks", "uninstall", "claude-code", "--project", str(tmp_path)])
    assert removed.exit_code == 0 and "removed from" in removed.output
    assert json.loads(path.read_text()) == OTHERS


def test_user_settings_and_a_broken_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    done = runner.invoke(app, ["hooks", "install", "claude-code", "--user"])
    assert done.exit_code == 0, done.output
    user_settings = tmp_path / ".claude" / "settings.json"
    assert set(_ours(json.loads(user_settings.read_text()))) == set(EVENTS)
    assert not user_settings.with_name("settings.json.bak").exists()  # nothing to back up

    user_settings.write_text("{not json")
    broken = runner.invoke(app, ["hooks", "install", "claude-code", "--user"])
    assert broken.exit_code == 2 and "not valid JSON" in broken.output
    assert user_settings.read_text() == "{not json"
    both = runner.invoke(app, ["hooks", "install", "claude-code", "--user", "--project", "."])
    assert both.exit_code == 2


def test_the_assistant_turn_is_the_text_after_the_last_prompt(tmp_path: Path) -> None:
    path = transcript(tmp_path, "s")
    assert last_assistant_turn(path) == (ANSWER, ANSWER_UUID)
    with path.open("a") as handle:  # a new prompt: nothing answers it yet
        handle.write(json.dumps({"type": "user", "message": {"role": "user", "content": "Next?"}}))
    assert last_assistant_turn(path) == ("", None)


def test_a_hook_never_fails_claude_code(tmp_path: Path, settings_env: Any) -> None:
    settings_env(home=tmp_path / "home")
    commands = install(tmp_path)
    missing = payload("Stop", "s-missing", tmp_path / "no-such-transcript.jsonl")
    for command, body in ((commands["UserPromptSubmit"], "not json"),
                          (commands["Stop"], missing)):  # fmt: skip
        done = run_hook(command, body)
        assert done.returncode == 0 and done.stdout == "" and done.stderr == ""
    log = (tmp_path / "home" / spool.LOG_FILE).read_text()
    assert "JSONDecodeError" in log and "no-such-transcript.jsonl" in log


def test_hooks_send_the_turns_and_start_sessions_with_the_context_block(
    db: Any, worker: Any, tmp_path: Path, settings_env: Any
) -> None:
    from continuum.store.engine import session_scope
    from continuum.store.models import Message, Session

    home = tmp_path / "home"
    settings_env(home=home)
    commands = install(tmp_path, "-n", "cc-hooks", "--user-id", "jason")
    session = "0b7e9d2c-1f3a-4c5b-9d8e-7f6a5b4c3d2e"
    path = transcript(tmp_path, session)

    def hook(event: str, **fields: Any) -> str:
        done = run_hook(commands[event], payload(event, session, path, **fields))
        assert done.returncode == 0 and done.stderr == "", done.stderr
        return done.stdout

    assert hook("UserPromptSubmit", prompt=PROMPT) == ""
    assert hook("Stop", stop_hook_active=False) == ""

    def stored() -> list[tuple[str, str, str, str | None]]:
        with session_scope() as s:
            rows = s.execute(select(Message.role, Message.content, Message.message_id,
                                    Message.user_id)
                             .where(Message.namespace == "cc-hooks", Message.session_id == session)
                             .order_by(Message.created_at)).all()  # fmt: skip
        return [tuple(row) for row in rows]

    turns = wait_for(lambda: len(stored()) == 2 and stored())
    assert [(role, content, user) for role, content, _, user in turns] == [
        ("user", PROMPT, "jason"), ("assistant", ANSWER, "jason")]  # fmt: skip
    assert turns[1][2] == ANSWER_UUID  # the transcript's id: transcript sync would match it

    assert hook("PreCompact", trigger="manual", custom_instructions="") == ""
    assert hook("SessionEnd", reason="prompt_input_exit") == ""

    def ended() -> str | None:
        with session_scope() as s:
            return s.scalar(select(Session.end_reason).where(
                Session.namespace == "cc-hooks", Session.session_id == session))  # fmt: skip

    assert wait_for(ended) == "prompt_input_exit"
    assert spool.pending(home) == [] and not (home / spool.LOG_FILE).exists()

    output = run_hook(commands["SessionStart"],
                      payload("SessionStart", "next-session", path, source="startup"))  # fmt: skip
    assert output.returncode == 0, output.stderr
    shown = json.loads(output.stdout)
    assert shown["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert set(shown) == {"hookSpecificOutput"}
    assert "pytest-xdist" in shown["hookSpecificOutput"]["additionalContext"]


def test_a_session_starts_with_its_handoff_once_and_a_prompt_hands_off(
    db: Any, worker: Any, tmp_path: Path, settings_env: Any
) -> None:
    settings_env(home=tmp_path / "home")
    commands = install(tmp_path, "-n", "cc-hooks", "--user-id", "jason")
    path = transcript(tmp_path, "cc-1")
    send_handoff("cc-hooks", "jason", "voice", "claude-code", "Fix the flaky upload test next.")

    def start() -> str:
        done = run_hook(commands["SessionStart"],
                        payload("SessionStart", "cc-1", path, source="startup"))  # fmt: skip
        assert done.returncode == 0 and done.stderr == "", done.stderr
        return done.stdout

    shown = json.loads(start())["hookSpecificOutput"]["additionalContext"]
    assert "## Pending handoff" in shown and "Fix the flaky upload test next." in shown
    assert "flaky upload" not in start()  # read once

    prompt = payload(
        "UserPromptSubmit", "cc-1", path, prompt="Done for now, I'll continue on Discord."
    )
    assert run_hook(commands["UserPromptSubmit"], prompt).returncode == 0
    handoff = wait_for(lambda: peek_handoff("cc-hooks", "jason", "discord"), timeout=30)
    assert handoff["from_channel"] == "claude-code" and "continue on Discord" in str(handoff)
