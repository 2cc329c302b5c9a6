"""Worker process signals: fresh database pools and Redis clients after fork."""

from __future__ import annotations

from typing import Any

from celery.signals import worker_process_init

from continuum.store.engine import dispose_engines


@worker_process_init.connect
def _reset_pools(**_: Any) -> None:
    # Pooled connections must not be shared across prefork children.
    dispose_engines()
