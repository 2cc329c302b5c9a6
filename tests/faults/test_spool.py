"""Runtimes while Redis is down. A Claude Code hook still returns at once with exit 0, its
events wait in the local spool, and `continuum spool flush` replays them once Redis is back,
with no second effect when replayed again. A Pipecat call goes on, its events wait in the same
spool, and the same flush sends them."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from continuum.dev.embedded import EmbeddedServers
from continuum.runtimes import spool
from tests.support.claude_code_hooks import ANSWER, PROMPT, install, payload, run_hook, transcript
from tests.support.paths import ROOT, TEST_HOME
from tests.support.wait import wait_for

pytestmark = pytest.mark.slow


def _count(namespace: str, content: str) -> int:
    from continuum.store.engine import session_scope
    from continuum.store.models import Message

    with session_scope() as s:
        return s.scalar(select(func.count()).select_from(Message).where(
            Message.namespace == namespace, Message.content == content)) or 0  # fmt: skip


def _flush(code: int = 0) -> dict[str, Any]:
    """`continuum spool flush --json`: its report; exit 3 when the broker cannot take them."""
    done = subprocess.run([sys.executable, "-m", "continuum.cli.main", "spool", "flush", "--json"],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == code, done.stderr
    return json.loads(done.stdout)


def test_hooks_spool_while_redis_is_down_and_flush_replays_once(
    db: Any, tmp_path: Path, settings_env: Any, start_worker: Any
) -> None:
    home = tmp_path / "home"
    settings_env(home=home, redis_wait_s=1)
    commands = install(tmp_path, "-n", "cc-spool")
    path = transcript(tmp_path, "spooled-session")

    with EmbeddedServers(TEST_HOME).redis_stopped():
        for event, fields in (("UserPromptSubmit", {"prompt": PROMPT}), ("Stop", {})):
            started = time.monotonic()
            done = run_hook(commands[event], payload(event, "spooled-session", path, **fields))
            assert done.returncode == 0 and done.stdout == "" and done.stderr == ""
            assert time.monotonic() - started < 3  # the hook never waits for Redis
        # each hook's background flush gives up after CONTINUUM_REDIS_WAIT_S and logs why
        wait_for(lambda: (home / spool.LOG_FILE).exists()
                 and "Redis unreachable" in (home / spool.LOG_FILE).read_text(), timeout=60)  # fmt: skip
        assert len(spool.pending(home)) == 2
        down = _flush(code=3)
        assert (down["sent"], down["pending"]) == (0, 2) and "Redis unreachable" in down["error"]
        kept = tmp_path / "kept"
        kept.mkdir()
        for file in spool.pending(home):
            shutil.copy2(file, kept / file.name)

    start_worker(concurrency=1)
    wait_for(lambda: _flush()["pending"] == 0, timeout=60)
    wait_for(lambda: _count("cc-spool", PROMPT) and _count("cc-spool", ANSWER), timeout=60)

    for file in kept.iterdir():  # the same events spooled again (a flush that died mid-way)
        shutil.copy2(file, spool.spool_dir(home) / file.name)
    assert _flush()["sent"] == 2
    done = run_hook(commands["UserPromptSubmit"],
                    payload("UserPromptSubmit", "spooled-session", path, prompt="Sentinel turn."))  # fmt: skip
    assert done.returncode == 0
    wait_for(lambda: _count("cc-spool", "Sentinel turn."), timeout=60)
    assert (_count("cc-spool", PROMPT), _count("cc-spool", ANSWER)) == (1, 1)


# A bot is a process of its own (in this one, an in-process test worker may have made Redis
# calls wait as long as a worker's): the call runs in a child and prints how long it took.
BOT = """
import time
from pipecat.frames.frames import ClientConnectedFrame, EndFrame
from continuum.runtimes.pipecat import ContinuumObserver
from tests.support.claude_code_hooks import ANSWER, PROMPT
from tests.support.pipecat_calls import answer, call, heard

started = time.monotonic()
call(ContinuumObserver(namespace="pc-spool", user_id="jason", session_id="call-down"),
     [ClientConnectedFrame(), heard(PROMPT), *answer(ANSWER), EndFrame(reason="hung up")])
print(time.monotonic() - started)
"""


def test_a_voice_call_goes_on_while_redis_is_down_and_its_events_wait_in_the_spool(
    db: Any, tmp_path: Path, settings_env: Any, start_worker: Any
) -> None:
    pytest.importorskip("pipecat")
    from tests.support.pipecat_calls import ended, stored

    home = tmp_path / "home"
    settings_env(home=home, redis_wait_s=1)
    with EmbeddedServers(TEST_HOME).redis_stopped():
        done = subprocess.run([sys.executable, "-c", BOT], capture_output=True, text=True,
                              timeout=120, cwd=ROOT)  # fmt: skip
        assert done.returncode == 0, done.stderr
        # Every frame went through; the call's end waited only for its last flush to give up.
        assert float(done.stdout) < 10
        assert len(spool.pending(home)) == 3  # user turn, assistant turn, session end
        assert "Redis unreachable" in (home / spool.LOG_FILE).read_text()

    start_worker(concurrency=1)
    wait_for(lambda: _flush()["pending"] == 0, timeout=60)
    assert wait_for(lambda: ended("pc-spool", "call-down"), timeout=60)[0] == "hung up"
    assert [row[:2] for row in stored("pc-spool", "call-down")] == [
        ("user", PROMPT), ("assistant", ANSWER)]  # fmt: skip
