"""The process-wide Redis client for ephemeral state, counters and locks."""

from __future__ import annotations

import os
from typing import Any

import redis
from redis.backoff import ExponentialBackoff
from redis.retry import Retry

from continuum.config import get_settings

# redis-py types every command as returning `Awaitable[Any] | Any` (one signature for its sync
# and async clients), which makes every call site ambiguous to mypy. Our clients are
# synchronous, so they are typed as such: untyped results, used as plain values.
SyncRedis = Any

_clients: dict[tuple[int, str], SyncRedis] = {}


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
            retry=Retry(ExponentialBackoff(cap=2.0, base=0.05), 40),
            retry_on_error=[redis.ConnectionError, redis.TimeoutError],
        )
        _clients[key] = client
    return client


def get_broker_redis() -> SyncRedis:
    """A client of the broker's Redis database (the in-flight ledger lives there)."""
    return get_redis(get_settings().resolved_broker_url())
