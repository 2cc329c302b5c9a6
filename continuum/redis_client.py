"""The process-wide Redis client for ephemeral state, counters and locks."""

from __future__ import annotations

import os

import redis
from redis.backoff import ExponentialBackoff
from redis.retry import Retry

from continuum.config import get_settings

_clients: dict[tuple[int, str], redis.Redis] = {}


def get_redis(url: str | None = None) -> redis.Redis:
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


def get_broker_redis() -> redis.Redis:
    """A client of the broker's Redis database (the in-flight ledger lives there)."""
    return get_redis(get_settings().resolved_broker_url())
