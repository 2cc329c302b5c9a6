"""The broker watch: every worker (in its main process) notices a restart of the broker's
Redis within CONTINUUM_BROKER_CHECK_INTERVAL_S and, CONTINUUM_RESTART_GRACE_S later, one of them
re-publishes the event batches the restart lost (`continuum.pipeline.redelivery`), without
waiting for the queue to drain or for beat's per-minute sweep. Between restarts, one of them
runs each round of the taken check (CONTINUUM_TAKEN_CHECK_INTERVAL_S): batches a worker took
off the queue and was lost with before it recorded them come back within seconds too.
"""

from __future__ import annotations

import logging
import threading
import time

import redis
from sqlalchemy.exc import SQLAlchemyError

from continuum.config import get_settings
from continuum.contract.client import EnqueueError, MemoryClient
from continuum.contract.dispatch import producer
from continuum.pipeline import redelivery
from continuum.redis_client import get_quick_redis
from workers.background import background

log = logging.getLogger(__name__)


def _watch(stop: threading.Event) -> None:
    settings = get_settings()
    interval = settings.broker_check_interval_s
    client = get_quick_redis(max(interval, 1.0), settings.resolved_broker_url())
    resend = MemoryClient(app=producer()).emit_many
    failing = False
    # The first round runs as soon as the worker is ready, not one interval later: on a broker
    # no worker watched before, a restart in that interval would pass for a first sight.
    while True:
        try:
            result = redelivery.watch_broker(client, resend, settings.restart_grace_s)
            taken = redelivery.check_taken(
                client, resend, settings.taken_check_interval_s, time.time()
            )
        # A server restarting or failing over (the resend not yet on a replica): next round.
        except (redis.RedisError, SQLAlchemyError, EnqueueError) as exc:
            if not failing:
                log.warning("broker watch: %s; trying again every %.1fs", exc, interval)
            failing = True
        else:
            failing = False
            if result is not None:
                log.warning("broker restarted: %s", result)
            if taken is not None and taken.settled:
                log.warning("batches taken off the queue by a lost worker: %s", taken)
        if stop.wait(interval):
            return


background("continuum-broker-watch", _watch)
