"""Claude Code hooks while Redis is down: the hook still returns at once with exit 0, its
events wait in the local spool, and `continuum spool flush` replays them once Redis is back,
with no second effect when replayed again."""

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
from tests.conftest import TEST_HOME
from tests.runtimes.hooks import ANSWER, PROMPT, install, payload, run_hook, transcript
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
                 and "broker unreachable" in (home / spool.LOG_FILE).read_text(), timeout=60)  # fmt: skip
        assert len(spool.pending(home)) == 2
        down = _flush(code=3)
        assert (down["sent"], down["pending"]) == (0, 2) and "broker unreachable" in down["error"]
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
