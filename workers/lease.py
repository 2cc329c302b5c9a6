"""Lease renewal for messages a worker holds.

Redis has no broker-side acks: kombu keeps unacked messages in a sorted set scored by
delivery time and restores those older than `visibility_timeout`. We keep that timeout
short so a SIGKILLed worker's messages come back within seconds, and renew the score of
every message this worker still holds (running, prefetched or waiting for a retry ETA),
so a long task is never handed to a second worker while the first is alive. A message whose
channel closed (the broker connection was lost: the worker can no longer acknowledge it, and
Celery cancels its task) is no longer renewed, so kombu restores it for a new delivery
instead of its lease being kept alive forever by a request nobody will finish.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from typing import Any

import redis
from celery.signals import task_received

from continuum.config import get_settings
from continuum.redis_client import SyncRedis, client_for
from workers.background import background

log = logging.getLogger(__name__)
UNACKED_INDEX_KEY = "unacked_index"

_held: weakref.WeakSet[Any] = weakref.WeakSet()
_lock = threading.Lock()


@task_received.connect
def _track(request: Any = None, **_: Any) -> None:
    with _lock:
        _held.add(request)


def _delivery_tags() -> list[str]:
    with _lock:
        requests = list(_held)
    tags = []
    for request in requests:
        if request.acknowledged or getattr(request.message.channel, "closed", False):
            with _lock:
                _held.discard(request)
            continue
        tag = request.message.delivery_tag
        if tag:
            tags.append(tag)
    return tags


def renew_once(client: SyncRedis) -> int:
    """Push the lease of every held message to now; returns how many were renewed."""
    tags = _delivery_tags()
    if not tags:
        return 0
    now = time.time()
    # XX: only refresh entries still unacked; never resurrect a restored or acked message.
    return int(client.zadd(UNACKED_INDEX_KEY, dict.fromkeys(tags, now), xx=True, ch=True) or 0)


def _renew_forever(stop: threading.Event) -> None:
    settings = get_settings()
    interval = max(1.0, settings.visibility_timeout_s / 3)
    client: SyncRedis = client_for(settings.resolved_broker_url(), socket_timeout=5)
    while not stop.wait(interval):
        try:
            renew_once(client)
        except redis.RedisError as exc:  # broker restarting: the next round retries
            log.warning("lease renewal skipped: %s", exc)


background("continuum-lease", _renew_forever)
