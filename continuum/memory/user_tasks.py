"""The user's tasks (R8): create, complete, change status, list the active ones.

Tasks live in Postgres per tenant, so every channel (voice, Discord, CLI...) sees the same
list. Reminders and commitments captured from conversation become tasks as they are stored
(`tasks_from_memories`, called by the memory writer): one task per source memory, tagged
`memory:<id>`, due when capture resolved its time phrase to be, and none when an active
task with the same title already exists or when the memory restates a task of the same
session (the assistant confirming the reminder the user asked for).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, get_args

from sqlalchemy import Select, Text, cast, or_, select, text
from sqlalchemy.orm import Session as DbSession

from continuum.capture.kinds import kind_names
from continuum.capture.summarize import Said, restates
from continuum.capture.text import find_time_expression
from continuum.security.envelope import open_text, seal, seal_optional
from continuum.store.engine import session_scope
from continuum.store.models import UserTask

TaskStatus = Literal["pending", "in_progress", "blocked", "done", "cancelled"]
TASK_STATUSES: tuple[str, ...] = get_args(TaskStatus)
ACTIVE_STATUSES = ("pending", "in_progress", "blocked")
TASK_KINDS = frozenset(kind_names(lambda spec: spec.becomes_task))
MIN_PREFIX = 4


class TaskNotFound(LookupError):
    """No task (or more than one) matches the given id or id prefix."""


@dataclass(frozen=True)
class TaskView:
    task_id: str
    title: str
    description: str | None
    status: str
    user_id: str | None
    created_channel: str | None
    created_at: datetime
    due_at: datetime | None
    completed_at: datetime | None
    tags: list[str]

    @classmethod
    def of(cls, task: UserTask) -> TaskView:
        return cls(
            task_id=str(task.task_id),
            title=task.title,
            description=task.description,
            status=task.status,
            user_id=task.user_id,
            created_channel=task.created_channel,
            created_at=task.created_at,
            due_at=task.due_at,
            completed_at=task.completed_at,
            tags=list(task.tags),
        )


def create_task(
    namespace: str,
    title: str,
    *,
    user_id: str | None = None,
    description: str | None = None,
    channel: str | None = None,
    due_at: datetime | None = None,
    tags: Sequence[str] = (),
) -> TaskView:
    if not title.strip():
        raise ValueError("a task needs a title")
    with session_scope() as db:
        task = UserTask(
            namespace=namespace,
            task_id=uuid.uuid4(),
            user_id=user_id,
            title=seal(namespace, user_id, "tasks.title", title.strip(), deterministic=True),
            description=seal_optional(namespace, user_id, "tasks.description", description),
            status="pending",
            created_channel=channel,
            due_at=due_at,
            tags=list(tags),
        )
        db.add(task)
        db.flush()
        db.refresh(task)
        return TaskView.of(task)


def _find(db: DbSession, namespace: str, task_id: str) -> UserTask:
    prefix = task_id.strip().lower()
    if len(prefix) < MIN_PREFIX:
        raise TaskNotFound(f"task id {task_id!r} is too short: give at least {MIN_PREFIX} chars")
    found = db.scalars(
        select(UserTask)
        .where(
            UserTask.namespace == namespace,
            cast(UserTask.task_id, Text).startswith(prefix),
        )
        .limit(2)
        .with_for_update()
    ).all()
    if len(found) != 1:
        what = "no task" if not found else "several tasks"
        raise TaskNotFound(f"{what} in {namespace!r} with id {task_id!r}")
    return found[0]


def set_status(namespace: str, task_id: str, status: str) -> TaskView:
    """Move a task (id or unique id prefix) to `status`; `done` stamps completed_at."""
    if status not in TASK_STATUSES:
        raise ValueError(f"unknown status {status!r}: use one of {', '.join(TASK_STATUSES)}")
    with session_scope() as db:
        task = _find(db, namespace, task_id)
        task.status = status
        task.completed_at = datetime.now(UTC) if status == "done" else None
        db.flush()
        return TaskView.of(task)


def complete_task(namespace: str, task_id: str) -> TaskView:
    return set_status(namespace, task_id, "done")


def tasks_query(
    namespace: str, user_id: str | None = None, *, active_only: bool = True, limit: int = 100
) -> Select[UserTask]:
    """The one listing of a tenant's tasks (a user's plus those without one; every user's
    when `user_id` is None), most pressing first: due soonest, then undated newest first.
    The CLI, the API, the context block and MEMORY.md all list tasks through it."""
    stmt = select(UserTask).where(UserTask.namespace == namespace)
    if user_id:
        stmt = stmt.where(or_(UserTask.user_id == user_id, UserTask.user_id.is_(None)))
    if active_only:
        stmt = stmt.where(UserTask.status.in_(ACTIVE_STATUSES))
    order = (UserTask.due_at.asc().nulls_last(), UserTask.created_at.desc(), UserTask.id.desc())
    return stmt.order_by(*order).limit(limit)


def list_tasks(
    namespace: str, user_id: str | None = None, *, active_only: bool = True, limit: int = 100
) -> list[TaskView]:
    """Tasks as `tasks_query` lists them."""
    with session_scope() as db:
        query = tasks_query(namespace, user_id, active_only=active_only, limit=limit)
        return [TaskView.of(task) for task in db.scalars(query)]


# Pending tasks of the same session and user, due at the same time, made from memories:
# with the provenances of those memories, for `_restated`.
_SAME_TIME = text(
    "SELECT t.id, t.title, array_agg(m.provenance) AS provenances FROM tasks t "
    "CROSS JOIN LATERAL unnest(t.tags) AS source JOIN memories m ON m.id = CASE "
    "WHEN source ~ '^memory:[0-9]+$' THEN CAST(substring(source FROM 8) AS bigint) END "
    "WHERE t.namespace = :ns AND t.status = 'pending' AND t.due_at = CAST(:due AS timestamptz) "
    "AND t.user_id IS NOT DISTINCT FROM :uid AND t.tags @> CAST(:sessions AS text[]) "
    "GROUP BY t.id ORDER BY t.id"
)


def _sealed_title(row: Any) -> str:
    """The task title a memory row gives, sealed for an encrypted tenant (deterministically:
    the duplicate check compares titles)."""
    return seal(row.namespace, row.user_id, "tasks.title", row.content, deterministic=True)


def _restated(db: DbSession, row: Any, due: str | None, sessions: list[str], tag: str) -> bool:
    """When the memory `restates` a pending task of its session that only the other side's
    words made (the assistant confirming the reminder the user asked for), that task takes
    the new wording and the memory's tag instead of a second task being made. `due` is the
    memory's due time (ISO), as capture resolved it."""
    if not due or not sessions:
        return False
    params = {"ns": row.namespace, "uid": row.user_id, "due": due, "sessions": sessions}
    said = Said(row.content, datetime.fromisoformat(due), row.provenance)
    for task in db.execute(_SAME_TIME, params):
        earlier = Said(open_text(task.title, "tasks.title"), said.due_at, task.provenances[0])
        if row.provenance not in task.provenances and restates(said, earlier):
            db.execute(
                text(
                    "UPDATE tasks SET title = :title, tags = array_append(tags, :tag) WHERE id = :id"
                ),
                {"title": _sealed_title(row), "tag": tag, "id": task.id},
            )
            return True
    return False


def tasks_from_memories(db: DbSession, rows: Sequence[Any]) -> int:
    """Create a task for each reminder/commitment memory in `rows` (inside the writer's
    transaction), or let it restate the task it confirms; returns how many were created."""
    created = 0
    for row in rows:
        if row.kind not in TASK_KINDS:
            continue
        tag = f"memory:{row.id}"
        details = row.details or {}
        due = details.get("due_at")
        sessions = [t for t in row.tags if t.startswith("session:")]
        if _restated(db, row, due, sessions, tag):
            continue
        result = db.execute(
            text(
                "INSERT INTO tasks (namespace, user_id, title, description, created_channel, "
                "due_at, tags) SELECT :ns, :uid, :title, :description, :channel, "
                "CAST(:due AS timestamptz), :tags WHERE NOT EXISTS ("
                "SELECT 1 FROM tasks WHERE namespace = :ns AND (tags @> ARRAY[CAST(:tag AS text)] "
                "OR (user_id IS NOT DISTINCT FROM :uid AND lower(title) = lower(:title) "
                "AND status = ANY(:active))))"
            ),
            {
                "ns": row.namespace,
                "uid": row.user_id,
                "title": _sealed_title(row),
                # the time phrase once: as the description only when the title has none
                "description": seal_optional(
                    row.namespace,
                    row.user_id,
                    "tasks.description",
                    None if find_time_expression(row.content) else details.get("time_expression"),
                ),
                "channel": row.channel,
                "due": due,
                "tags": [tag, *sessions],
                "tag": tag,
                "active": list(ACTIVE_STATUSES),
            },
        )
        created += int(result.rowcount or 0)  # type: ignore[attr-defined]
    return created
