"""Benchmark-only task: the Celery per-message ceiling on this machine (one Redis INCR so the
benchmark can count completions; no database, no capture)."""

from __future__ import annotations

from continuum.redis_client import get_redis
from workers.app import app


@app.task(name="bench.noop", ignore_result=True)
def noop(counter: str) -> None:
    get_redis().incr(counter)
