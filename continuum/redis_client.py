"""The process-wide Redis client for ephemeral state, counters and locks."""

from __future__ import annotations

import os

import redis

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
            retry_on_timeout=True,
        )
        _clients[key] = client
    return client
