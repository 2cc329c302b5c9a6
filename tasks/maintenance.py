"""`maintenance` queue: the weekly consolidation and pruning run (beat, Monday night)."""

from __future__ import annotations

from typing import Any

from continuum.contract.queues import RUN_MAINTENANCE
from continuum.maintenance.run import run_maintenance
from workers.app import app
from workers.base import ReliableTask


# Longer limits than the default: a first run over a million memories takes minutes. They stay
# below the run's Redis lock TTL (MaintenanceConfig.lock_ttl_s = 3600 s).
@app.task(name=RUN_MAINTENANCE, base=ReliableTask, bind=True, soft_time_limit=3000, time_limit=3300)
def run_maintenance_task(
    self: ReliableTask, namespace: str | None = None, force: bool = False
) -> list[dict[str, Any]]:
    # A redelivered or retried run resumes the stored plan where it stopped (no double work).
    return [report.summary() for report in run_maintenance(namespace, force=force)]
