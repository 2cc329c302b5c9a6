"""The Celery app the two-beat test runs `celery beat` with: the workers' app and its beat
scheduler (workers/beat.py), with one entry due every second that publishes a probe to a
queue nobody consumes (`tests.support.beat_probes`). A probe's `origin` header names the
process that sent it."""

from __future__ import annotations

from tests.support.beat_probes import PROBE_EVERY_S, PROBE_QUEUE
from workers.app import app

app.conf.beat_schedule = {
    "probe": {"task": "tests.beat_probe", "schedule": PROBE_EVERY_S,
              "options": {"queue": PROBE_QUEUE}},
}  # fmt: skip
