"""The Claude Code plugin (integrations/claude-code-plugin/, listed by the repository's
.claude-plugin/marketplace.json): its manifests carry what Claude Code requires, and every
hook, MCP server and slash command of it runs a real `continuum` command, against the real
servers and a real worker; /continuum:pause stops capture of that session only."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from sqlalchemy import select

from continuum.runtimes import spool
from continuum.runtimes.claude_code import EVENTS
from continuum.runtimes.claude_settings import with_ours
from tests.support.claude_code_hooks import ANSWER, PROMPT, payload, run_hook, transcript
from tests.support.paths import ROOT
from tests.support.wait import wait_for

PLUGIN = ROOT / "integrations" / "claude-code-plugin"
MARKETPLACE = ROOT / ".claude-plugin" / "marketplace.json"
KEBAB = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")
SEMVER = re.compile(r"\d+\.\d+\.\d+")
# Claude Code's hook events (its hooks reference); a hooks.json key outside them never fires.
HOOK_EVENTS = {"PreToolUse", "PostToolUse", "UserPromptSubmit", "Notification", "Stop",
               "SubagentStop", "SessionStart", "SessionEnd", "PreCompact"}  # fmt: skip
COMMANDS = {"search", "forget", "pause", "resume"}
BACKGROUND = ("UserPromptSubmit", "Stop")
NAMESPACE, USER = "cc-plugin", "jason"
SHELL_COMMAND = re.compile(r"!`([^`]+)`")
ALLOWED_BASH = re.compile(r"Bash\(([^:)]+):\*\)")


def _json(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text())
    assert isinstance(data, dict), path
    return data


def _command(name: str) -> tuple[dict[str, str], str]:
    """A slash command's frontmatter (one `key: value` a line) and its prompt."""
    text = (PLUGIN / "commands" / f"{name}.md").read_text()
    _, front, body = text.split("---\n", 2)
    fields = dict(line.split(": ", 1) for line in front.strip().splitlines())
    return fields, body


def _plugin_env(home: Path) -> dict[str, str]:
    """The environment Claude Code runs the plugin in: `continuum` on PATH, the hooks' tenant
    and user configured."""
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return {**os.environ, "PATH": path, "CONTINUUM_HOME": str(home),
            "CONTINUUM_HOOK_NAMESPACE": NAMESPACE, "CONTINUUM_HOOK_USER": USER}  # fmt: skip


def _slash(name: str, env: dict[str, str], arguments: str = "", session: str = "") -> list[str]:
    """Run the shell commands of a slash command as Claude Code does (its `$ARGUMENTS` and
    `${CLAUDE_SESSION_ID}` substituted, each allowed by the command's `allowed-tools`); their
    outputs."""
    fields, body = _command(name)
    allowed = ALLOWED_BASH.findall(fields["allowed-tools"])
    outputs = []
    for shell in SHELL_COMMAND.findall(body):
        line = shell.replace("$ARGUMENTS", arguments).replace("${CLAUDE_SESSION_ID}", session)
        assert any(line.startswith(prefix + " ") for prefix in allowed), (line, allowed)
        done = subprocess.run(["bash", "-c", line], env=env, capture_output=True, text=True,
                              timeout=120)  # fmt: skip
        assert done.returncode == 0, (line, done.stdout, done.stderr)
        outputs.append(done.stdout)
    return outputs


def _stored(session: str) -> list[tuple[str, str]]:
    from continuum.store.engine import session_scope
    from continuum.store.models import Message

    with session_scope() as db:
        rows = db.execute(select(Message.role, Message.content)
                          .where(Message.namespace == NAMESPACE, Message.session_id == session)
                          .order_by(Message.created_at)).all()  # fmt: skip
    return [(role, content) for role, content in rows]


def test_the_manifests_carry_what_claude_code_requires(tmp_path: Path) -> None:
    market = _json(MARKETPLACE)
    assert KEBAB.fullmatch(market["name"]) and market["owner"]["name"]
    [entry] = market["plugins"]
    # A relative source starts with ./ and resolves from the marketplace root (the directory
    # holding .claude-plugin/), here the repository's root.
    assert entry["source"].startswith("./")
    assert (ROOT / entry["source"]).resolve() == PLUGIN
    manifest = _json(PLUGIN / ".claude-plugin" / "plugin.json")
    assert manifest["name"] == entry["name"] == "continuum"  # commands are /continuum:<name>
    assert SEMVER.fullmatch(manifest["version"]) and manifest["description"]
    # Only the manifest sits in .claude-plugin/; the components are at the plugin's root.
    assert [p.name for p in (PLUGIN / ".claude-plugin").iterdir()] == ["plugin.json"]

    hooks = _json(PLUGIN / "hooks" / "hooks.json")["hooks"]
    assert set(hooks) == set(EVENTS) <= HOOK_EVENTS
    commands = {event: f"continuum claude-code hook {event}" for event in EVENTS}
    installed = with_ours({}, commands)["hooks"]  # the events and timeouts of an install
    for event in BACKGROUND:  # per turn, in the background: Claude Code does not wait
        installed[event][0]["hooks"][0]["async"] = True
    assert hooks == installed

    [server] = _json(PLUGIN / ".mcp.json")["mcpServers"].values()
    assert server == {"command": "continuum", "args": ["claude-code", "mcp"]}

    assert {p.stem for p in (PLUGIN / "commands").glob("*.md")} == COMMANDS
    for name in COMMANDS:
        fields, body = _command(name)
        assert fields["description"] and SHELL_COMMAND.search(body), name
        for prefix in ALLOWED_BASH.findall(fields["allowed-tools"]):
            argv = shlex.split(prefix)
            assert argv[0] == "continuum", prefix
            env = _plugin_env(tmp_path)
            done = subprocess.run([*argv, "--help"], env=env, capture_output=True, text=True)
            assert done.returncode == 0, (prefix, done.stderr)


def test_every_plugin_hook_runs_and_sends_the_session(db: Any, worker: Any, tmp_path: Path) -> None:
    from continuum.store.engine import session_scope
    from continuum.store.models import Session

    home = tmp_path / "home"
    env = _plugin_env(home)
    hooks = _json(PLUGIN / "hooks" / "hooks.json")["hooks"]
    session = "5d1c7a0e-2b3f-4e6a-8c9d-0e1f2a3b4c5d"
    path = transcript(tmp_path, session)

    def hook(event: str, session_id: str = session, **fields: Any) -> str:
        [group] = hooks[event]
        [entry] = group["hooks"]
        done = run_hook(entry["command"], payload(event, session_id, path, **fields), env)
        assert done.returncode == 0 and done.stderr == "", done.stderr
        return done.stdout

    assert hook("UserPromptSubmit", prompt=PROMPT) == ""
    assert hook("Stop", stop_hook_active=False) == ""
    turns = wait_for(lambda: len(_stored(session)) == 2 and _stored(session))
    assert turns == [("user", PROMPT), ("assistant", ANSWER)]
    assert hook("PreCompact", trigger="auto", custom_instructions="") == ""
    assert hook("SessionEnd", reason="clear") == ""

    def ended() -> str | None:
        with session_scope() as db:
            return db.scalar(select(Session.end_reason).where(
                Session.namespace == NAMESPACE, Session.session_id == session,
                Session.user_id == USER))  # fmt: skip

    assert wait_for(ended) == "clear"
    started = hook("SessionStart", "next-session", source="startup")
    log = home / spool.LOG_FILE
    assert started, log.read_text() if log.exists() else "SessionStart printed nothing"
    shown = json.loads(started)
    assert "pytest-xdist" in shown["hookSpecificOutput"]["additionalContext"]
    assert spool.pending(home) == [] and not (home / spool.LOG_FILE).exists()


def test_the_plugin_mcp_server_works_in_the_hooks_tenant(db: Any, tmp_path: Path) -> None:
    from continuum.store.engine import session_scope
    from continuum.store.models import Memory

    [server] = _json(PLUGIN / ".mcp.json")["mcpServers"].values()
    env = _plugin_env(tmp_path / "home")
    command = str(Path(sys.executable).parent / server["command"])  # what PATH finds

    async def session() -> dict[str, Any]:
        params = StdioServerParameters(command=command, args=server["args"], env=env)
        async with Client(params) as client:
            result = await client.call_tool(
                "update_memory", {"existing_key": "editor", "new_value": "Jason uses Helix."}
            )
            assert not result.is_error, result.content
            return dict(result.structured_content or {})

    answer = anyio.run(session)
    with session_scope() as db:
        memory = db.get(Memory, (answer["memoryId"], NAMESPACE))
        assert memory is not None
        assert (memory.namespace, memory.user_id) == (NAMESPACE, USER)
        assert memory.content.endswith("Jason uses Helix.")


def test_every_slash_command_runs_its_continuum_commands(
    db: Any, worker: Any, tmp_path: Path
) -> None:
    from continuum.memory.tool_calls import MemoryTools

    env = _plugin_env(tmp_path / "home")
    stored = MemoryTools(NAMESPACE, user_id=USER).call(
        "store_memory", {"memory_type": "fact", "key": "garden_contractor",
                         "value": "Hoffmann does the garden."})  # fmt: skip
    assert stored["success"], stored

    [found] = _slash("search", env, "garden contractor")
    assert "Hoffmann does the garden." in found
    [listed] = _slash("forget", env, "garden")
    hits = json.loads(listed)
    assert [hit["id"] for hit in hits] == [stored["memoryId"]]
    # The forget prompt has Claude run `continuum claude-code forget --id <id>`:
    forget = f"continuum claude-code forget --id {hits[0]['id']}"
    assert forget.rsplit(" --id", 1)[0] in _command("forget")[1]
    done = subprocess.run(["bash", "-c", forget], env=env, capture_output=True, text=True)
    assert done.returncode == 0 and json.loads(done.stdout)["success"] is True, done.stderr
    assert _slash("search", env, "garden contractor") == [""]  # forgotten: found no more

    [paused] = _slash("pause", env, session="s-1")
    assert "capture paused for session s-1" in paused
    assert "was already paused" in _slash("pause", env, session="s-1")[0]
    [resumed] = _slash("resume", env, session="s-1")
    assert "capture resumed for session s-1" in resumed
    assert "was not paused" in _slash("resume", env, session="s-1")[0]
    missing = subprocess.run(["bash", "-c", "continuum claude-code pause --session ''"],
                             env=env, capture_output=True, text=True)  # fmt: skip
    assert missing.returncode == 2 and "no session id" in missing.stderr


def test_pause_stops_capture_of_that_session_only(db: Any, worker: Any, tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = _plugin_env(home)
    hooks = _json(PLUGIN / "hooks" / "hooks.json")["hooks"]
    paused_session, other = "cc-paused", "cc-other"
    path = transcript(tmp_path, paused_session)

    def prompt(session: str, text: str) -> None:
        command = hooks["UserPromptSubmit"][0]["hooks"][0]["command"]
        body = payload("UserPromptSubmit", session, path, prompt=text)
        assert run_hook(command, body, env).returncode == 0

    prompt(paused_session, "Before the pause: the deploy runs on Fridays.")
    wait_for(lambda: _stored(paused_session))
    assert "capture paused" in _slash("pause", env, session=paused_session)[0]
    during = datetime.now(UTC)
    prompt(paused_session, "My bank PIN is in the drawer, don't keep this.")
    stop = hooks["Stop"][0]["hooks"][0]["command"]
    assert run_hook(stop, payload("Stop", paused_session, path), env).returncode == 0
    prompt(other, "The other session still talks about the release.")
    wait_for(lambda: _stored(other))
    assert "capture resumed" in _slash("resume", env, session=paused_session)[0]
    prompt(paused_session, "After the resume: ship it on Monday.")

    # The queue is first in, first out: the turn after the resume landing means no turn said
    # during the pause is still on its way.
    wait_for(lambda: len(_stored(paused_session)) == 2)
    assert _stored(paused_session) == [
        ("user", "Before the pause: the deploy runs on Fridays."),
        ("user", "After the resume: ship it on Monday."),
    ]
    assert _stored(other) == [("user", "The other session still talks about the release.")]

    # A turn said during the pause but flushed only after the resume (Redis was down, say)
    # is judged by its own time: dropped, never sent.
    late = {"event_id": "7f1f3c52-45a8-4d0c-9a53-1d2b4f6e8a90", "kind": "turn",
            "namespace": NAMESPACE, "session_id": paused_session, "channel": "claude-code",
            "user_id": USER, "ts": during.isoformat(), "role": "user",
            "content": "Said while paused, flushed late."}  # fmt: skip
    elsewhere = tmp_path / "another-home"  # a spool no background flush of the hooks holds
    spool.write(elsewhere, late)
    report = spool.flush(elsewhere)
    assert (report["paused"], report["sent"], report["pending"]) == (1, 0, 0), report
    assert not (home / spool.LOG_FILE).exists() and not (elsewhere / spool.LOG_FILE).exists()
