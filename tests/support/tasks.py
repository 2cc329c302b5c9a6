"""Test-only tasks on the real app, to exercise the retry and dead-letter machinery."""

from __future__ import annotations

import os
import signal

from sqlalchemy.exc import OperationalError

from continuum.redis_client import get_redis
from workers.app import app
from workers.base import ReliableTask


@app.task(name="tests.flaky", base=ReliableTask, bind=True)
def flaky(self: ReliableTask, key: str, failures: int) -> None:
    """Fail with a transient database error `failures` times, then record success."""
    attempts = get_redis().incr(f"{key}:attempts")
    if attempts <= failures:
        raise OperationalError("SELECT 1", {}, Exception("server closed the connection"))
    get_redis().set(f"{key}:done", self.request.retries)


@app.task(name="tests.poison", base=ReliableTask, bind=True)
def poison(self: ReliableTask, key: str) -> None:
    """Always fails with a permanent error."""
    get_redis().incr(f"{key}:attempts")
    raise ValueError("this input can never be processed")


@app.task(name="tests.crash", base=ReliableTask, bind=True)
def crash(self: ReliableTask, key: str) -> None:
    """Kills the worker process running it, every time (a poison message). Only ever sent to
    the `faults` queue, which only subprocess workers of the fault tests consume."""
    get_redis().incr(f"{key}:attempts")
    os.kill(os.getpid(), signal.SIGKILL)


@app.task(name="tests.slow", base=ReliableTask, bind=True)
def slow(self: ReliableTask, key: str, seconds: float) -> None:
    """Records each start (time, pid), then works for `seconds`."""
    import time

    get_redis().rpush(f"{key}:starts", f"{time.time()}:{os.getpid()}")
    time.sleep(seconds)
    get_redis().set(f"{key}:done", "1")
