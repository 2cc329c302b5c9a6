"""The user's tasks (R8): create, complete, change status, list the active ones.

Tasks live in Postgres per tenant, so every channel (voice, Discord, CLI...) sees the same
list. Reminders and commitments captured from conversation become tasks as they are stored
(`tasks_from_memories`, called by the memory writer): one task per source memory, tagged
`memory:<id>`, due when capture resolved its time phrase to be, and none when an active
task with the same title already exists or when the memory restates a task of the same
session (the assistant confirming the reminder the user asked for).

A tenant that confirms tasks (`CONTINUUM_CONFIRM_TASKS`, `_CONFIRM_TASKS_TENANTS`) gets each
such task as a suggestion instead: a row of `tasks` tagged `suggestion:open` (status
`pending`, shown as `suggested`), listed by no task listing and shown in the context block so
the agent asks, until the runtime confirms it (its tag becomes `suggestion:confirmed`: one
`pending` task) or dismisses it (`suggestion:dismissed`, status `cancelled`, shown as
`dismissed`: never a task). The tag, not a status, marks it: the table's statuses are a
task's, and a suggestion needs no schema change. Waiting for its answer, it counts as taken
for the duplicate check, and a restatement joins it, as a pending task would.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any, Literal, get_args

from sqlalchemy import (
    ColumnElement,
    Select,
    Text,
    any_,
    cast,
    literal,
    not_,
    or_,
    select,
    text,
    true,
)
from sqlalchemy.orm import Session as DbSession

from continuum.capture.summarize import Said, restates
from continuum.config import get_settings
from continuum.domain.kinds import kind_names
from continuum.domain.records import TaskView
from continuum.domain.text import find_time_expression
from continuum.sealing.envelope import read_text, seal, seal_optional
from continuum.store.bulk import allocate_ids, insert_rows
from continuum.store.engine import fetch, session_scope, statement
from continuum.store.models import UserTask
from continuum.store.reads import read_scope

TaskStatus = Literal["pending", "in_progress", "blocked", "done", "cancelled"]
TASK_STATUSES: tuple[str, ...] = get_args(TaskStatus)
ACTIVE_STATUSES = ("pending", "in_progress", "blocked")
# The tags of a suggested task: waiting for the user's answer, dismissed (neither is a
# task), confirmed (a task).
SUGGESTED, DISMISSED, CONFIRMED = "suggestion:open", "suggestion:dismissed", "suggestion:confirmed"
NOT_TASKS = (SUGGESTED, DISMISSED)
TASK_KINDS = frozenset(kind_names(lambda spec: spec.becomes_task))
MIN_PREFIX = 4


class TaskNotFound(LookupError):
    """No task (or more than one) matches the given id or id prefix."""


class SuggestionAnswered(ValueError):
    """The suggestion already got the other answer (confirmed, or dismissed)."""


def task_view(task: UserTask) -> TaskView:
    """A task's row as the listings show it: a suggestion's status is what was answered."""
    shown = {SUGGESTED: "suggested", DISMISSED: "dismissed"}
    return TaskView(
        task_id=str(task.task_id),
        title=task.title,
        description=task.description,
        status=next((shown[t] for t in task.tags if t in shown), task.status),
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
        (row_id,) = allocate_ids(db, UserTask, 1)  # what its sealed text is bound to
        task = UserTask(
            id=row_id,
            namespace=namespace,
            task_id=uuid.uuid4(),
            user_id=user_id,
            title=seal(namespace, user_id, "tasks.title", title.strip(), row_id),
            description=seal_optional(namespace, user_id, "tasks.description", description, row_id),
            status="pending",
            created_channel=channel,
            due_at=due_at,
            tags=list(tags),
        )
        db.add(task)
        db.flush()
        db.refresh(task)
        return task_view(task)


@lru_cache(maxsize=8)
def _tagged(*tags: str) -> ColumnElement[bool]:
    """Tasks with any of `tags` (built once per tag set: SQLAlchemy clauses are immutable,
    and building this one was a twentieth of a context call's Python time)."""
    return or_(*(literal(tag) == any_(UserTask.tags) for tag in tags))


def _find(db: DbSession, namespace: str, task_id: str, suggestions: bool = False) -> UserTask:
    """The task (id or unique id prefix), locked; suggestions only when asked for."""
    prefix = task_id.strip().lower()
    if len(prefix) < MIN_PREFIX:
        raise TaskNotFound(f"task id {task_id!r} is too short: give at least {MIN_PREFIX} chars")
    found = db.scalars(
        select(UserTask)
        .where(
            UserTask.namespace == namespace,
            cast(UserTask.task_id, Text).startswith(prefix),
            true() if suggestions else not_(_tagged(*NOT_TASKS)),
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
        return task_view(task)


def complete_task(namespace: str, task_id: str) -> TaskView:
    return set_status(namespace, task_id, "done")


def answer_suggestion(namespace: str, task_id: str, *, confirm: bool) -> TaskView:
    """Confirm a suggested task (id or unique id prefix: it becomes a `pending` task) or
    dismiss it (`dismissed`: never a task). The same answer again changes nothing (a task
    confirmed once stays one task); the other raises `SuggestionAnswered`."""
    answer = CONFIRMED if confirm else DISMISSED
    with session_scope() as db:
        task = _find(db, namespace, task_id, suggestions=True)
        given = DISMISSED if DISMISSED in task.tags else CONFIRMED  # any other row is a task
        if SUGGESTED in task.tags:
            task.tags = [answer if tag == SUGGESTED else tag for tag in task.tags]
            task.status = "pending" if confirm else "cancelled"
        elif given != answer:
            what = "was dismissed" if given == DISMISSED else "is a task already (cancel it)"
            raise SuggestionAnswered(f"task {task.task_id} {what}")
        db.flush()
        return task_view(task)


_MOST_PRESSING = "due_at ASC NULLS LAST, created_at DESC, id DESC"


def _listing(
    namespace: str, user_id: str | None, *, active_only: bool, suggested: bool
) -> tuple[str, dict[str, Any]]:
    """The condition of the one listing (see `tasks_query`), raw SQL on `tasks`, and its
    parameters."""
    where = ["namespace = :ns"]
    params: dict[str, Any] = {"ns": namespace}
    if user_id:
        where.append("(user_id = :uid OR user_id IS NULL)")
        params["uid"] = user_id
    where.append(("" if suggested else "NOT ") + "tags && CAST(:tags AS text[])")
    params["tags"] = [SUGGESTED] if suggested else list(NOT_TASKS)
    if active_only or suggested:
        where.append("status = ANY(CAST(:statuses AS text[]))")
        params["statuses"] = list(ACTIVE_STATUSES)
    return " AND ".join(where), params


def tasks_query(
    namespace: str,
    user_id: str | None = None,
    *,
    active_only: bool = True,
    limit: int = 100,
    suggested: bool = False,
) -> Select[UserTask]:
    """The one listing of a tenant's tasks (a user's plus those without one; every user's
    when `user_id` is None), most pressing first: due soonest, then undated newest first.
    The CLI, the API and MEMORY.md list tasks through it, and the context block reads the
    same listing raw (`task_rows`): the active ones, or with `active_only` False every task,
    never a suggestion; with `suggested` the suggestions waiting for the user's answer
    instead."""
    where, params = _listing(namespace, user_id, active_only=active_only, suggested=suggested)
    clause = statement(where).bindparams(**params)
    return select(UserTask).where(clause).order_by(statement(_MOST_PRESSING)).limit(limit)


def task_rows(
    db: DbSession, namespace: str, user_id: str | None, limit: int, *, suggested: bool = False
) -> list[Any]:
    """The active tasks as `tasks_query` lists them (`suggested`: the suggestions waiting
    instead), as raw rows: what the context block reads at each call, at a sixth of the
    ORM's CPU (0.16 against 0.92 ms). `title` and `description` are as stored: sealed for an
    encrypted tenant, opened with `read_text(value, "tasks.title", row.id)` (or
    "tasks.description")."""
    where, params = _listing(namespace, user_id, active_only=True, suggested=suggested)
    return fetch(
        db,
        "SELECT id, task_id, title, description, status, created_channel, created_at, due_at, "
        f"tags FROM tasks WHERE {where} ORDER BY {_MOST_PRESSING} LIMIT :limit",
        {**params, "limit": limit},
    )


def list_tasks(
    namespace: str,
    user_id: str | None = None,
    *,
    active_only: bool = True,
    limit: int = 100,
    suggested: bool = False,
) -> list[TaskView]:
    """Tasks as `tasks_query` lists them (`suggested`: the suggestions waiting instead)."""
    with read_scope(namespace) as db:
        query = tasks_query(
            namespace, user_id, active_only=active_only, limit=limit, suggested=suggested
        )
        return [task_view(task) for task in db.scalars(query)]


# Pending tasks (suggestions waiting included) due at any of `dues` and tagged with any of
# `sessions`, made from memories: with the provenances of those memories, for restatements (a
# restatement is said in the task's session, so the tasks of other sessions are never read).
_PENDING_AT = text(
    "SELECT t.id, t.title, t.user_id, t.due_at, t.tags, array_agg(m.provenance) AS provenances "
    "FROM tasks t CROSS JOIN LATERAL unnest(t.tags) AS source JOIN memories m "
    "ON m.namespace = t.namespace AND m.id = CASE "
    "WHEN source ~ '^memory:[0-9]+$' THEN CAST(substring(source FROM 8) AS bigint) END "
    "WHERE t.namespace = :ns AND t.status = 'pending' "
    "AND t.due_at = ANY(CAST(:dues AS timestamptz[])) "
    "AND t.tags && CAST(:sessions AS text[]) GROUP BY t.id, t.namespace ORDER BY t.id"
)
# Which of the (user, title) pairs given an active task already has (plain titles).
_TAKEN = text(
    "SELECT k.uid, k.title FROM unnest(CAST(:uids AS text[]), CAST(:titles AS text[])) "
    "AS k(uid, title) WHERE EXISTS (SELECT 1 FROM tasks WHERE namespace = :ns "
    "AND user_id IS NOT DISTINCT FROM k.uid AND lower(title) = lower(k.title) "
    "AND status = ANY(:active))"
)
# The active tasks of an encrypted tenant's users (`:shared`: and those without one), whose
# titles a new task's is compared with once opened (sealed titles differ row by row).
_ACTIVE_TITLES = text(
    "SELECT id, user_id, title FROM tasks WHERE namespace = :ns AND status = ANY(:active) "
    "AND (user_id = ANY(CAST(:uids AS text[])) OR (user_id IS NULL AND :shared))"
)


def _taken(db: DbSession, namespace: str, rows: Sequence[Any]) -> set[tuple[str | None, str]]:
    """(user, lower-case title) of the memory `rows` that an active task of the tenant (a
    suggestion waiting included) already has. Plain titles are compared in SQL; an encrypted
    tenant's are opened first, since each row seals its own differently."""
    params: dict[str, Any] = {"ns": namespace, "active": list(ACTIVE_STATUSES)}
    if not get_settings().is_encrypted(namespace):
        params |= {"uids": [r.user_id for r in rows], "titles": [r.content for r in rows]}
        return {(uid, title.lower()) for uid, title in db.execute(_TAKEN, params)}
    users = {row.user_id for row in rows}
    params |= {"shared": None in users, "uids": sorted(u for u in users if u)}
    found = db.execute(_ACTIVE_TITLES, params)
    return {(row.user_id, read_text(row.title, "tasks.title", row.id).lower()) for row in found}


def _seal_new(db: DbSession, namespace: str, new: list[dict[str, Any]]) -> None:
    """Seal the new tasks of an encrypted tenant in place, bound to ids drawn for them."""
    if not new or not get_settings().is_encrypted(namespace):
        return
    for values, row_id in zip(new, allocate_ids(db, UserTask, len(new)), strict=True):
        owner = (namespace, values["user_id"])
        values["id"] = row_id
        values["title"] = seal(*owner, "tasks.title", values["title"], row_id)
        values["description"] = seal_optional(
            *owner, "tasks.description", values["description"], row_id
        )


@dataclass
class _Pending:
    """A pending task a memory may restate: stored already (`id`), or made by this batch
    (`new`, its row to insert)."""

    title: str
    user_id: str | None
    due_at: datetime
    tags: list[str]
    provenances: list[str]
    id: int | None = None
    new: dict[str, Any] | None = None

    def restated_by(self, row: Any, said: Said, sessions: list[str]) -> bool:
        """Whether the memory `row` (due at a time, said in a session) restates this task:
        same user, due time and session, and the other side's words for it (the assistant
        confirming the user's reminder)."""
        return (
            said.due_at is not None
            and bool(sessions)
            and self.user_id == row.user_id
            and self.due_at == said.due_at
            and set(sessions) <= set(self.tags)
            and row.provenance not in self.provenances
            and restates(said, Said(self.title, said.due_at, self.provenances[0]))
        )

    def restate(self, db: DbSession, row: Any) -> None:
        """Take the memory `row`'s wording and its tag."""
        tag = f"memory:{row.id}"
        self.title = row.content
        self.tags.append(tag)
        self.provenances.append(row.provenance)
        if self.new is not None:
            self.new["title"] = row.content
            return
        assert self.id is not None
        title = seal(row.namespace, row.user_id, "tasks.title", row.content, self.id)
        db.execute(
            text(
                "UPDATE tasks SET title = :title, tags = array_append(tags, :tag) "
                "WHERE namespace = :ns AND id = :id"
            ),
            {"title": title, "tag": tag, "ns": row.namespace, "id": self.id},
        )


def tasks_from_memories(db: DbSession, rows: Sequence[Any]) -> int:
    """Create a task for each reminder/commitment memory in `rows` (inside the writer's
    transaction, in their order), or let it restate the pending task of its session it
    confirms, which then takes its wording and its tag; no task when an active one with the
    same title exists. Two queries per tenant read what the batch needs, one statement
    writes its new tasks; returns how many were created."""
    created = 0
    for namespace in dict.fromkeys(row.namespace for row in rows):
        created += _tasks_of(db, namespace, [r for r in rows if r.namespace == namespace])
    return created


def _tasks_of(db: DbSession, namespace: str, rows: Sequence[Any]) -> int:
    rows = [row for row in rows if row.kind in TASK_KINDS]
    if not rows:
        return 0
    due_rows = [row for row in rows if (row.details or {}).get("due_at")]
    dues = sorted({str(row.details["due_at"]) for row in due_rows})
    sessions = sorted({tag for row in due_rows for tag in row.tags if tag.startswith("session:")})
    wanted = {"ns": namespace, "dues": dues, "sessions": sessions}
    found = db.execute(_PENDING_AT, wanted) if sessions else ()
    pending = [
        _Pending(read_text(task.title, "tasks.title", task.id), task.user_id, task.due_at,
                 task.tags, task.provenances, id=task.id)
        for task in found
    ]  # fmt: skip
    taken = _taken(db, namespace, rows)
    suggest = [SUGGESTED] if get_settings().confirms_tasks(namespace) else []
    new: list[dict[str, Any]] = []
    for row in rows:
        key = (row.user_id, row.content.lower())
        details = row.details or {}
        due = details.get("due_at")
        said = Said(row.content, datetime.fromisoformat(due) if due else None, row.provenance)
        sessions = [tag for tag in row.tags if tag.startswith("session:")]
        restated = next((t for t in pending if t.restated_by(row, said, sessions)), None)
        if restated is not None:
            restated.restate(db, row)
            taken.add(key)
            continue
        if key in taken:
            continue
        taken.add(key)
        values = {
            "namespace": namespace,
            "user_id": row.user_id,
            "title": row.content,
            # the time phrase once: as the description only when the title has none
            "description": None
            if find_time_expression(row.content)
            else details.get("time_expression"),
            "created_channel": row.channel,
            "due_at": due,
            "tags": [f"memory:{row.id}", *sessions, *suggest],
        }
        new.append(values)
        if said.due_at:
            pending.append(_Pending(row.content, row.user_id, said.due_at, values["tags"],
                                    [row.provenance], new=values))  # fmt: skip
    _seal_new(db, namespace, new)
    insert_rows(db, UserTask, new)
    return len(new)
