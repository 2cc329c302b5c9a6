"""Polling helpers for asynchronous outcomes (no fixed sleeps in tests)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(check: Callable[[], T], timeout: float = 60.0, interval: float = 0.05) -> T:
    """Call `check` until it returns something truthy; fail with its last value on timeout."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s (last value {value!r})")
        time.sleep(interval)


def waiting_on_a_lock() -> bool:
    """Whether some session of the test database is waiting on a lock (a row another
    transaction has not committed yet, say)."""
    from sqlalchemy import text

    from continuum.store.engine import session_scope

    with session_scope() as db:
        waiting = db.scalar(
            text(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                " AND wait_event_type = 'Lock'"
            )
        )
    return bool(waiting)


def query_thread_settled() -> None:
    """Every query embedding this process has scheduled so far is done: the query thread is
    one thread and runs them in order, so a no-op submitted now runs after them."""
    from continuum.inference.embedding import _query_batcher

    _query_batcher().pool.submit(lambda: None).result(timeout=30)
