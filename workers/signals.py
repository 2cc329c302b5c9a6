"""Worker process signals: a worker's or beat's patience with Redis and its tracing (with
CONTINUUM_OTEL) set up as it starts, fresh database pools and Redis clients after fork, and a
warning at start when one worker mixes ingestion with LLM work."""

from __future__ import annotations

import logging
from typing import Any

from celery.signals import (
    beat_init,
    worker_init,
    worker_process_init,
    worker_process_shutdown,
    worker_ready,
)

from continuum import redis_client
from continuum.observability import tracing
from continuum.processes import shared_ingest_warning
from continuum.store.engine import dispose_engines

log = logging.getLogger(__name__)


@worker_init.connect
@beat_init.connect
def _ride_out_redis_outages(**_: Any) -> None:
    # A worker's or beat's Redis calls wait out an outage (CONTINUUM_WORKER_REDIS_WAIT_S);
    # set as the process starts, inherited by the pool's children. Not on importing the
    # app: a process that imports it to publish or inspect (a test, a tool) stays a
    # producer, which gives up after CONTINUUM_REDIS_WAIT_S.
    redis_client.in_worker()


@worker_init.connect
def _start_tracing(**_: Any) -> None:
    # In the main process, before the pool forks: the SDK restarts its export thread in
    # each child, and the instrumentations are inherited.
    tracing.configure("continuum-worker")


@worker_process_shutdown.connect
def _flush_traces(**_: Any) -> None:
    tracing.flush()  # a pool process exits without running atexit handlers


@worker_process_init.connect
def _reset_pools(**_: Any) -> None:
    # Pooled connections must not be shared across prefork children.
    dispose_engines()


@worker_ready.connect
def _warn_shared_ingest(sender: Any = None, **_: Any) -> None:
    warning = shared_ingest_warning(list(sender.app.amqp.queues.consume_from))
    if warning:
        log.warning(warning)
