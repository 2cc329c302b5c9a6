"""Pipeline counters (R48) kept in Redis, so every worker process adds to the same totals."""

from __future__ import annotations

import logging

import redis

from continuum.redis_client import SyncRedis, get_redis

log = logging.getLogger(__name__)
PREFIX = "continuum:metrics:"

MEMORIES_STORED = "memories_stored"
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


def incr(name: str, amount: int = 1) -> None:
    """Add to a counter; a Redis hiccup never fails the work being counted."""
    if amount == 0:
        return
    try:
        get_redis().incrby(PREFIX + name, amount)
    except redis.RedisError as exc:
        log.warning("metric %s not counted: %s", name, exc)


def snapshot(client: SyncRedis | None = None) -> dict[str, int]:
    """Every counter by name (from `client`, default the process's Redis client)."""
    client = client or get_redis()
    keys = sorted(client.scan_iter(match=PREFIX + "*"))
    values = client.mget(keys) if keys else []
    return {
        key.removeprefix(PREFIX): int(value or 0) for key, value in zip(keys, values, strict=True)
    }
