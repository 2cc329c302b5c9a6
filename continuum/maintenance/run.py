"""The entry point of maintenance: `run_maintenance` (the Celery task and the CLI) and
`maintain`, one tenant's weekly run — planned once and stored, applied step by step with
its progress, resumed when interrupted, at most once per ISO week and under a Redis lock —
and the report it answers with."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import redis
from sqlalchemy import select, text

from continuum.config import get_settings
from continuum.maintenance import retention
from continuum.maintenance.apply import apply_step
from continuum.maintenance.plan import plan
from continuum.maintenance.rules import (
    TRIGGER,
    Action,
    MaintenanceConfig,
    opened_step,
    stored_plan,
)
from continuum.redis_client import get_redis
from continuum.store.bulk import allocate_ids
from continuum.store.engine import session_scope
from continuum.store.models import MaintenanceRun, MemoryLog

LOCK_KEY = "continuum:maintenance:lock:{namespace}"


def planned_count(action: Action) -> int:
    """The rows a step is planned to change (one for a step of one row or file)."""
    if "rows" in action:  # a step that deletes up to so many rows, counted when planned
        return int(action["rows"])
    return len(action.get("ids", ())) or 1


@dataclass
class RunReport:
    namespace: str
    week: str
    status: str  # done | skipped | locked | dry_run | interrupted
    attempt: int = 0
    plan: list[Action] = field(default_factory=list)
    planned: dict[str, int] = field(default_factory=dict)
    applied: dict[str, int] = field(default_factory=dict)
    steps_applied: int = 0
    seconds: float = 0.0

    def summary(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "plan"}


def iso_week(moment: datetime) -> str:
    year, week, _ = moment.isocalendar()
    return f"{year}-W{week:02d}"


def _step_name(action: Action) -> str:
    """What a step counts under in a report: its op, and a prune's reason."""
    return action["op"] + (f":{action['reason']}" if "reason" in action else "")


def _tally(actions: Sequence[Action]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for action in actions:
        name = _step_name(action)
        counts[name] = counts.get(name, 0) + planned_count(action)
    return counts


def _start(
    namespace: str, week: str, force: bool, now: datetime, config: MaintenanceConfig
) -> MaintenanceRun | None:
    """The run to work on: an unfinished one (resume), a new one, or None (done this week)."""
    with session_scope() as db:
        last = db.scalars(
            select(MaintenanceRun)
            .where(MaintenanceRun.namespace == namespace, MaintenanceRun.week == week)
            .order_by(MaintenanceRun.attempt.desc())
            .limit(1)
        ).first()
        if last is not None and last.status == "running":
            return last
        if last is not None and not force:
            return None
    steps = plan(namespace, now, config)
    with session_scope() as db:
        (run_id,) = allocate_ids(db, MaintenanceRun, 1)  # what its sealed steps are bound to
        run = MaintenanceRun(
            id=run_id,
            namespace=namespace,
            week=week,
            attempt=(last.attempt + 1) if last is not None else 1,
            plan=stored_plan(namespace, steps, run_id),
            report={"planned": _tally(steps), "applied": {}},
        )
        db.add(run)
        db.flush()
        db.refresh(run)
        return run


def maintain(
    namespace: str,
    *,
    dry_run: bool = False,
    force: bool = False,
    now: datetime | None = None,
    config: MaintenanceConfig | None = None,
    max_steps: int | None = None,
) -> RunReport:
    """Run (or with `dry_run`, only plan) this week's maintenance of one tenant.
    `max_steps` stops early as an interruption would; the next call resumes."""
    config = config or MaintenanceConfig()
    now = now or datetime.now(UTC)
    week = iso_week(now)
    started = time.monotonic()
    if dry_run:
        steps = plan(namespace, now, config)
        return RunReport(namespace, week, "dry_run", plan=steps, planned=_tally(steps))
    lock = get_redis().lock(
        LOCK_KEY.format(namespace=namespace), timeout=config.lock_ttl_s, blocking=False
    )
    if not lock.acquire():
        return RunReport(namespace, week, "locked")
    try:
        run = _start(namespace, week, force, now, config)
        if run is None:
            return RunReport(namespace, week, "skipped")
        report = _apply(run, config, max_steps)
    finally:
        with contextlib.suppress(redis.exceptions.LockError):  # expired: nothing to release
            lock.release()
    report.seconds = round(time.monotonic() - started, 3)
    return report


def _apply(run: MaintenanceRun, config: MaintenanceConfig, max_steps: int | None) -> RunReport:
    applied: dict[str, int] = dict(run.report.get("applied", {}))
    position = run.applied
    end = len(run.plan) if max_steps is None else min(len(run.plan), position + max_steps)
    for index in range(position, end):
        action = run.plan[index]
        with session_scope() as db:
            changed = apply_step(db, run.namespace, opened_step(action, run.id), config)
            counts = changed if isinstance(changed, dict) else {_step_name(action): changed}
            for name, count in counts.items():
                applied[name] = applied.get(name, 0) + count
            progress = db.execute(
                text(
                    "UPDATE maintenance_runs SET applied = :next, report = jsonb_set(report, "
                    "'{applied}', CAST(:applied AS jsonb)) WHERE id = :id AND applied = :index"
                ),
                {"next": index + 1, "index": index, "id": run.id, "applied": json.dumps(applied)},
            )
            if not progress.rowcount:  # type: ignore[attr-defined]
                raise RuntimeError(f"maintenance run {run.id} advanced elsewhere; stopping")
        position = index + 1
    status = "done" if position == len(run.plan) else "interrupted"
    if status == "done":
        with session_scope() as db:
            db.execute(
                text(
                    "UPDATE maintenance_runs SET status = 'done', finished_at = now() WHERE id = :id"
                ),
                {"id": run.id},
            )
            db.add(
                MemoryLog(
                    namespace=run.namespace,
                    action="maintenance",
                    trigger=TRIGGER,
                    details={"run_id": run.id, "week": run.week, **run.report, "applied": applied},
                )
            )
            retention.record(db, run.namespace, run.id, run.plan, applied)
    return RunReport(
        run.namespace,
        run.week,
        status,
        attempt=run.attempt,
        plan=run.plan,
        planned=run.report.get("planned", {}),
        applied=applied,
        steps_applied=position,
    )


def namespaces() -> list[str]:
    """Every tenant with memories, and every tenant with sessions whose messages a retention
    may expire (R80)."""
    retention = get_settings().message_retention
    with session_scope() as db:
        remembering = set(db.scalars(text("SELECT DISTINCT namespace FROM memories")))
        talking = db.scalars(text("SELECT DISTINCT namespace FROM sessions"))
        return sorted(remembering | {ns for ns in talking if retention(ns) is not None})


def run_maintenance(
    namespace: str | None = None,
    *,
    dry_run: bool = False,
    force: bool = False,
    config: MaintenanceConfig | None = None,
) -> list[RunReport]:
    """Maintain one tenant, or every tenant `namespaces` lists."""
    targets = [namespace] if namespace else namespaces()
    return [maintain(ns, dry_run=dry_run, force=force, config=config) for ns in targets]
