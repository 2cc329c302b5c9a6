"""Pipeline counters and observations (R48) kept in Redis, so every worker process adds to
the same totals. A count of rows a transaction writes is added once it commits
(`incr_on_commit`), so a rolled-back or retried transaction is not counted twice; an
observation (`observe`) keeps a count and a sum, exported as a Prometheus summary."""

from __future__ import annotations

import logging
from collections import Counter

import redis
from sqlalchemy import event
from sqlalchemy.orm import Session as DbSession

from continuum.redis_client import SyncRedis, get_redis

log = logging.getLogger(__name__)
PREFIX = "continuum:metrics:"

MEMORIES_STORED = "memories_stored"
MEMORIES_UPDATED = "memories_updated"  # by update_memory: a new version of a key
MEMORIES_SUPERSEDED = "memories_superseded"  # by a newer claim, an update, an LLM summary
LLM_CALLS = "llm_calls"
LLM_FALLBACKS = "llm_fallbacks"
LLM_BAD_OUTPUT = "llm_bad_output"
LLM_REPAIRS = "llm_repairs"
LLM_ERRORS = "llm_errors"
LLM_TIMEOUTS = "llm_timeouts"
LLM_PROMPT_TOKENS = "llm_prompt_tokens"
LLM_COMPLETION_TOKENS = "llm_completion_tokens"
LLM_BUDGET_SKIPS = "llm_budget_skips"
DEAD_LETTERS = "dead_letters"
SECRETS_REDACTED = "secrets_redacted"  # in messages and memories, as they are stored
EVENTS_REDELIVERED = "events_redelivered"  # published again from the in-flight ledger
# Observations: `<name>_count` and `<name>_sum` each.
SUMMARIZATION_SECONDS = "summarization_seconds"  # a session end's summary and extraction
SESSION_MEMORIES = "session_memories"  # memories of a session when it is finished
OBSERVATIONS = (SUMMARIZATION_SECONDS, SESSION_MEMORIES)
_PENDING = "continuum_metrics"  # the counts a transaction adds once it commits


def incr(name: str, amount: int = 1) -> None:
    """Add to a counter; a Redis hiccup never fails the work being counted."""
    if amount == 0:
        return
    try:
        get_redis().incrby(PREFIX + name, amount)
    except redis.RedisError as exc:
        log.warning("metric %s not counted: %s", name, exc)


def incr_on_commit(db: DbSession, name: str, amount: int = 1) -> None:
    """Add to a counter when `db`'s transaction commits (not at all if it rolls back)."""
    db.info.setdefault(_PENDING, Counter())[name] += amount


@event.listens_for(DbSession, "after_commit")
def _add_committed(db: DbSession) -> None:
    for name, amount in db.info.pop(_PENDING, {}).items():
        incr(name, amount)


@event.listens_for(DbSession, "after_rollback")
def _drop_rolled_back(db: DbSession) -> None:
    db.info.pop(_PENDING, None)


def observe(name: str, value: float) -> None:
    """Count one observation of `name` and add `value` to its sum (never fails the work)."""
    try:
        pipe = get_redis().pipeline()
        pipe.incrbyfloat(f"{PREFIX}{name}_sum", value)
        pipe.incr(f"{PREFIX}{name}_count")
        pipe.execute()
    except redis.RedisError as exc:
        log.warning("metric %s not observed: %s", name, exc)


def count(name: str) -> int:
    """One counter's total (0 before anything was counted)."""
    return int(get_redis().get(PREFIX + name) or 0)


def snapshot(client: SyncRedis | None = None) -> dict[str, float]:
    """Every counter by name, and each observation's `_count` and `_sum` (from `client`,
    default the process's Redis client)."""
    client = client or get_redis()
    keys = sorted(client.scan_iter(match=PREFIX + "*"))
    values = client.mget(keys) if keys else []
    return {
        key.removeprefix(PREFIX): float(value) if "." in (value or "") else int(value or 0)
        for key, value in zip(keys, values, strict=True)
    }
