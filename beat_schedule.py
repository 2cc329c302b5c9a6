"""Celery beat schedule: every periodic job, as crontab entries with `expires`.

Crontab (not intervals) so a beat restart does not shift the schedule; `expires` so a
backlog of missed runs is dropped instead of piling up.
"""

from __future__ import annotations

from typing import Any

BEAT_SCHEDULE: dict[str, dict[str, Any]] = {}
