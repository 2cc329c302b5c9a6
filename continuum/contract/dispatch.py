"""Enqueue a pipeline task by name from library code (no worker code imported).

Library functions that run inline (e.g. `continuum sync` from the CLI) and inside workers
use this to hand work to the next stage. With CONTINUUM_REDIS_WAIT_REPLICAS set, a send
returns once that many replicas of the broker's Redis have the message, as an accepted event
does (docs/design.md, "Accepted means replicated").
"""

from __future__ import annotations

import logging
import os
import time
from functools import lru_cache
from typing import Any

import redis
from celery import Celery
from redis.backoff import NoBackoff
from redis.retry import Retry

from continuum.config import get_settings
from continuum.contract.client import producer_app, publish_retry_policy
from continuum.contract.queues import queue_for
from continuum.observability import tracing
from continuum.redis_client import SyncRedis, client_for, wait_s

log = logging.getLogger(__name__)
# What a send writes on the broker's Redis after its publish, on a connection WAIT can ask
# about (kombu published on its own): the replication stream is in order.
STAMP = "continuum:dispatch:stamp"
_stampers: dict[tuple[int, str], SyncRedis] = {}


@lru_cache(maxsize=1)
def producer() -> Celery:
    """The process-wide publishing app."""
    return producer_app()


def send(task_name: str, *args: Any) -> None:
    """Publish one task message to its queue (retrying while the broker restarts), confirmed
    by the broker's replicas when CONTINUUM_REDIS_WAIT_REPLICAS asks it; traced, it carries
    the current trace to the task (`continuum.observability.tracing`)."""
    with tracing.span("continuum.send", "producer", {"celery.task_name": task_name}):
        _publish(task_name, args)
        if get_settings().redis_wait_replicas:
            _confirm(task_name, args)


def _publish(task_name: str, args: tuple[Any, ...]) -> None:
    producer().send_task(
        task_name,
        args=list(args),
        queue=queue_for(task_name),
        retry=True,
        retry_policy=publish_retry_policy(),
    )


def _stamper() -> SyncRedis:
    """A client of the broker's Redis that never retries a command: the stamp must land on
    the master that took the publish, so a lost connection is seen, not retried elsewhere."""
    url = get_settings().resolved_broker_url()
    key = (os.getpid(), url)
    if key not in _stampers:
        _stampers[key] = client_for(
            url, socket_connect_timeout=5, socket_timeout=10, retry=Retry(NoBackoff(), 0)
        )
    return _stampers[key]


def _confirm(task_name: str, args: tuple[Any, ...]) -> None:
    """Wait until CONTINUUM_REDIS_WAIT_REPLICAS replicas have the message just published:
    a stamp after it and WAIT, again while they lag. A lost connection (the master may have
    died with the message) publishes the message again, to whichever master answers now, and
    stamps there; a copy the old master had replicated too is harmless (every stage is
    idempotent). Past this process's patience with Redis (CONTINUUM_WORKER_REDIS_WAIT_S in a
    worker) it goes on, the message on the master alone, with an error logged: giving up
    would lose the task's other hand-offs, which a retry of the task does not send again."""
    settings = get_settings()
    wanted, timeout_ms = settings.redis_wait_replicas, settings.redis_wait_timeout_ms
    deadline = time.monotonic() + wait_s()
    confirmed = 0
    while time.monotonic() < deadline:
        try:
            pipe = _stamper().pipeline(transaction=False)
            pipe.incr(STAMP)
            pipe.wait(wanted, timeout_ms)
            confirmed = int(pipe.execute()[-1])
        except (redis.ConnectionError, redis.TimeoutError):
            time.sleep(0.1)
            _publish(task_name, args)
            continue
        if confirmed >= wanted:
            return
    log.error(
        "%s sent, but %d of %d broker replica(s) confirmed it within %.0f s: it is on the "
        "master alone, lost if the master dies before a replica has it; check the replicas "
        "(`INFO replication` on the master)",
        task_name,
        confirmed,
        wanted,
        wait_s(),
    )
