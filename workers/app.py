"""The Celery app: configuration, queues, routing, beat schedule and signal handlers."""

from __future__ import annotations

from celery import Celery

import beat_schedule
import workers.redis_channel  # a worker survives losing the broker while idle (side effect)
from continuum.config import get_settings
from workers.config import celery_config

app = Celery(
    "continuum",
    include=[
        "tasks.events",
        "tasks.embed",
        "tasks.extract",
        "tasks.sessions",
        "tasks.sync",
        "tasks.maintenance",
    ],
)
app.config_from_object(celery_config(get_settings()))
app.conf.beat_schedule = beat_schedule.BEAT_SCHEDULE

import workers.broker_watch  # noqa: E402  (signal handlers)
import workers.lease  # noqa: E402  (signal handlers)
import workers.signals  # noqa: E402,F401  (signal handlers)
