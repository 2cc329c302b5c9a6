"""Enqueue a pipeline task by name from library code (no worker code imported).

Library functions that run inline (e.g. `continuum sync` from the CLI) and inside workers
use this to hand work to the next stage.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from celery import Celery

from continuum.contract.client import producer_app, publish_retry_policy
from continuum.contract.queues import queue_for
from continuum.observability import tracing


@lru_cache(maxsize=1)
def producer() -> Celery:
    """The process-wide publishing app."""
    return producer_app()


def send(task_name: str, *args: Any) -> None:
    """Publish one task message to its queue (retrying while the broker restarts); traced,
    it carries the current trace to the task (`continuum.observability.tracing`)."""
    with tracing.span("continuum.send", "producer", {"celery.task_name": task_name}):
        producer().send_task(
            task_name,
            args=list(args),
            queue=queue_for(task_name),
            retry=True,
            retry_policy=publish_retry_policy(),
        )
