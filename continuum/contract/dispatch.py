"""Enqueue a pipeline task by name from library code (no worker code imported).

Library functions that run inline (e.g. `continuum sync` from the CLI) and inside workers
use this to hand work to the next stage. With CONTINUUM_REDIS_WAIT_REPLICAS set, a send
returns once that many replicas of the broker's Redis have it, as an accepted event does
(`NotReplicatedError` otherwise: the task that sent it is retried, and the next stage's
work is idempotent).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from celery import Celery

from continuum.config import get_settings
from continuum.contract.client import NotReplicatedError, producer_app, publish_retry_policy
from continuum.contract.queues import queue_for
from continuum.observability import tracing
from continuum.redis_client import get_broker_redis

# What a send writes on the broker's Redis after its publish, on a connection WAIT can ask
# about (kombu published on its own): the replication stream is in order.
STAMP = "continuum:dispatch:stamp"


@lru_cache(maxsize=1)
def producer() -> Celery:
    """The process-wide publishing app."""
    return producer_app()


def send(task_name: str, *args: Any) -> None:
    """Publish one task message to its queue (retrying while the broker restarts), confirmed
    by the broker's replicas when CONTINUUM_REDIS_WAIT_REPLICAS asks it; traced, it carries
    the current trace to the task (`continuum.observability.tracing`)."""
    with tracing.span("continuum.send", "producer", {"celery.task_name": task_name}):
        producer().send_task(
            task_name,
            args=list(args),
            queue=queue_for(task_name),
            retry=True,
            retry_policy=publish_retry_policy(),
        )
    _confirm_replicated(task_name)


def _confirm_replicated(task_name: str) -> None:
    settings = get_settings()
    wanted, timeout_ms = settings.redis_wait_replicas, settings.redis_wait_timeout_ms
    if not wanted:
        return
    pipe = get_broker_redis().pipeline(transaction=False)
    pipe.incr(STAMP)
    pipe.wait(wanted, timeout_ms)
    _, confirmed = pipe.execute()
    if confirmed < wanted:
        raise NotReplicatedError(
            f"{task_name} sent, but {confirmed} of {wanted} broker replica(s) confirmed it "
            f"within {timeout_ms} ms: the sending task is retried (sending it again has no "
            "second effect); check the replicas (`INFO replication` on the master)."
        )
