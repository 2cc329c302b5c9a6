"""The beat schedule (R92): every entry names a task the workers have, goes to the queue that
task is routed to (one a worker group consumes), and expires before its next run, so a
backlog of missed runs is dropped instead of run in a burst."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import pytest
from celery.schedules import crontab

from beat_schedule import BEAT_SCHEDULE
from continuum.contract.queues import TASK_QUEUES
from continuum.processes import WORKER_GROUPS

WEEK_MINUTES = 7 * 24 * 60


def fire_minutes(schedule: crontab) -> list[int]:
    """The minutes of a week (from Monday 00:00) at which `schedule` fires."""
    return [
        minute
        for minute in range(WEEK_MINUTES)
        if minute % 60 in schedule.minute
        and minute // 60 % 24 in schedule.hour
        and (minute // 1440 + 1) % 7 in schedule.day_of_week  # celery: 0 is Sunday
    ]


def shortest_gap_s(schedule: crontab) -> int:
    """The shortest time between two runs, across the week's end too."""
    times = fire_minutes(schedule)
    gaps = [b - a for a, b in pairwise(times)]
    gaps.append(times[0] + WEEK_MINUTES - times[-1])
    return min(gaps) * 60


def test_fire_minutes_read_a_crontab_as_celery_does() -> None:
    weekly = crontab(minute=30, hour=3, day_of_week="mon")
    assert fire_minutes(weekly) == [3 * 60 + 30] and shortest_gap_s(weekly) == WEEK_MINUTES * 60
    assert shortest_gap_s(crontab(minute="*/5")) == 300


@pytest.mark.parametrize("name", sorted(BEAT_SCHEDULE))
def test_every_entry_runs_a_real_task_on_its_queue_and_expires(name: str, celery_app: Any) -> None:
    entry = BEAT_SCHEDULE[name]
    task, schedule, options = entry["task"], entry["schedule"], entry["options"]
    celery_app.loader.import_default_modules()  # the task modules a worker loads
    assert task in celery_app.tasks, f"{name}: no task {task}"
    routed = celery_app.amqp.router.route({}, task)["queue"].name
    assert options["queue"] == TASK_QUEUES[task] == routed
    assert any(options["queue"] in queues for _, queues, _ in WORKER_GROUPS)
    assert isinstance(schedule, crontab)  # a restart of beat does not shift it
    every_day = crontab()
    assert (schedule.day_of_month, schedule.month_of_year) == (
        every_day.day_of_month,
        every_day.month_of_year,
    ), "fire_minutes reads minutes, hours and weekdays only"
    assert 0 < options["expires"] < shortest_gap_s(schedule), f"{name}: expires too late"
