"""The process-wide Redis client for ephemeral state, counters and locks."""

from __future__ import annotations

import os
from typing import Any

import redis
from redis.backoff import ExponentialBackoff, NoBackoff
from redis.retry import Retry

from continuum.config import get_settings

# redis-py types every command as returning `Awaitable[Any] | Any` (one signature for its sync
# and async clients), which makes every call site ambiguous to mypy. Our clients are
# synchronous, so they are typed as such: untyped results, used as plain values.
SyncRedis = Any

_clients: dict[tuple[int, str], SyncRedis] = {}
BACKOFF_BASE_S = 0.05
BACKOFF_CAP_S = 1.0
_worker_process = False


def in_worker() -> None:
    """This process is a Celery worker: its Redis calls ride out an outage for
    CONTINUUM_WORKER_REDIS_WAIT_S (a task's work is not lost to a restart). Producers, the API
    and the CLI give up after CONTINUUM_REDIS_WAIT_S and say so."""
    global _worker_process
    _worker_process = True
    _clients.clear()


def wait_s() -> float:
    """How long a Redis call of this process keeps retrying while Redis is unreachable."""
    settings = get_settings()
    return settings.worker_redis_wait_s if _worker_process else settings.redis_wait_s


def retries_for(wait: float, base: float = BACKOFF_BASE_S, cap: float = BACKOFF_CAP_S) -> int:
    """How many retries of an exponential backoff (base, doubling, capped) add up to `wait`."""
    retries, spent = 0, 0.0
    while spent < wait:
        spent += min(cap, base * 2**retries)
        retries += 1
    return retries


def get_redis(url: str | None = None) -> SyncRedis:
    """A pooled client for `url` (default: the configured Redis), one pool per process."""
    url = url or get_settings().resolved_redis_url()
    key = (os.getpid(), url)
    client = _clients.get(key)
    if client is None:
        client = redis.Redis.from_url(
            url,
            decode_responses=True,
            health_check_interval=10,
            socket_keepalive=True,
            socket_connect_timeout=5,
            socket_timeout=10,
            retry=Retry(
                ExponentialBackoff(cap=BACKOFF_CAP_S, base=BACKOFF_BASE_S), retries_for(wait_s())
            ),
            retry_on_error=[redis.ConnectionError, redis.TimeoutError],
        )
        _clients[key] = client
    return client


def get_quick_redis(timeout_s: float, url: str | None = None) -> SyncRedis:
    """A client for `url` (default: the configured Redis) that gives up after `timeout_s`
    without retrying: for callers with a fallback when Redis is down."""
    url = url or get_settings().resolved_redis_url()
    return redis.Redis.from_url(
        url,
        decode_responses=True,
        socket_connect_timeout=timeout_s,
        socket_timeout=timeout_s,
        retry=Retry(NoBackoff(), 0),
    )


def get_broker_redis() -> SyncRedis:
    """A client of the broker's Redis database (the in-flight ledger lives there)."""
    return get_redis(get_settings().resolved_broker_url())
