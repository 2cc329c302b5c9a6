"""The Celery app: configuration, queues, routing and signal handlers."""

from __future__ import annotations

from celery import Celery

from continuum.config import get_settings
from workers.config import celery_config

app = Celery("continuum", include=["tasks.events"])
app.config_from_object(celery_config(get_settings()))

import beat_schedule  # noqa: E402  (needs the app's name registry only)
import workers.lease  # noqa: E402  (signal handlers)
import workers.signals  # noqa: E402,F401  (signal handlers)

app.conf.beat_schedule = beat_schedule.BEAT_SCHEDULE
