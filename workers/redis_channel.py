"""A guard on kombu's Redis channel (and its Sentinel channel): a worker survives losing the
broker while it holds messages (`test_a_worker_group_lives_through_redis_restarts`).

When a worker loses its broker connection, Celery 5.7 collects the connection (which drops
its transport's client) and then closes it; closing the channel restores the messages the
worker held, and kombu 5.7 builds a new connection pool for that from the transport's client,
which is gone by then: AttributeError, which Celery does not ignore, "Unrecoverable error",
and the worker exits; `continuum worker` then stops every group. It happens to a worker in
its event loop holding a prefetched message as Redis goes away (the pub/sub connection errs
first): under a trickle of events, not under a deep queue.

With the guard, that late pool raises a connection error, which Celery ignores there: the
worker reconnects, and the messages it held come back through kombu's restore as those of a
killed worker do (they are still in kombu's unacked hash). Imported by `workers.app`.
"""

from __future__ import annotations

from typing import Any

import redis
from kombu.transport import redis as kombu_redis

_connparams = kombu_redis.Channel._connparams


def _guarded_connparams(self: Any, asynchronous: bool = False) -> Any:
    transport = self.connection
    if transport is None or transport.client is None:
        raise redis.ConnectionError("the broker connection is closed; the worker reconnects")
    return _connparams(self, asynchronous)


kombu_redis.Channel._connparams = _guarded_connparams  # type: ignore[method-assign]
