"""The user's tasks (R8): list, create, complete, change status; shared by every channel. And
the suggested tasks a tenant that confirms tasks gets from capture: list, confirm, dismiss."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, status
from pydantic import BaseModel, Field

from continuum.api.auth import NOT_FOUND, ScopeDep
from continuum.api.errors import field_error
from continuum.api.pagination import Page, PageDep
from continuum.domain.records import TaskView
from continuum.memory import user_tasks
from continuum.memory.user_tasks import TaskStatus

router = APIRouter(prefix="/v1/tasks", tags=["tasks"])


class TaskIn(BaseModel):
    title: Annotated[str, Field(min_length=1, max_length=500)]
    description: Annotated[str | None, Field(max_length=10_000)] = None
    user_id: Annotated[str | None, Field(max_length=200)] = None
    channel: Annotated[str | None, Field(max_length=64)] = None
    due_at: datetime | None = None
    tags: list[Annotated[str, Field(max_length=200)]] = Field(default_factory=list, max_length=50)


class StatusIn(BaseModel):
    status: TaskStatus


@router.get("")
def list_tasks(
    scope: ScopeDep,
    page: PageDep,
    user_id: Annotated[str | None, Query(max_length=200)] = None,
    active_only: bool = True,
) -> Page[TaskView]:
    """Tasks oldest first; by default only pending, in progress and blocked ones."""
    tasks = user_tasks.list_tasks(
        scope.namespace, user_id, active_only=active_only, limit=page.fetch_from_start
    )
    return page.window(tasks)


@router.post("", status_code=status.HTTP_201_CREATED)
def create_task(scope: ScopeDep, task: TaskIn) -> TaskView:
    try:
        return user_tasks.create_task(scope.namespace, **task.model_dump())
    except ValueError as exc:  # a title of blanks only
        raise field_error(("body", "title"), str(exc)) from None


@router.post("/{task_id}/status")
def set_status(scope: ScopeDep, task_id: str, change: StatusIn) -> TaskView:
    """Move a task (id or a unique prefix of it) to a status; `done` stamps completed_at."""
    try:
        return user_tasks.set_status(scope.namespace, task_id, change.status)
    except user_tasks.TaskNotFound:
        raise HTTPException(status.HTTP_404_NOT_FOUND, NOT_FOUND) from None


@router.get("/suggestions")
def list_suggestions(
    scope: ScopeDep,
    page: PageDep,
    user_id: Annotated[str | None, Query(max_length=200)] = None,
) -> Page[TaskView]:
    """Suggested tasks waiting for the user's answer (CONTINUUM_CONFIRM_TASKS)."""
    suggested = user_tasks.list_tasks(
        scope.namespace, user_id, limit=page.fetch_from_start, suggested=True
    )
    return page.window(suggested)


def _answer(scope: ScopeDep, task_id: str, confirm: bool) -> TaskView:
    try:
        return user_tasks.answer_suggestion(scope.namespace, task_id, confirm=confirm)
    except user_tasks.TaskNotFound:
        raise HTTPException(status.HTTP_404_NOT_FOUND, NOT_FOUND) from None
    except user_tasks.SuggestionAnswered as exc:
        raise HTTPException(status.HTTP_409_CONFLICT, str(exc)) from None


@router.post("/{task_id}/confirm")
def confirm_suggestion(scope: ScopeDep, task_id: str) -> TaskView:
    """The suggested task becomes a pending task (again: unchanged; dismissed: 409)."""
    return _answer(scope, task_id, confirm=True)


@router.post("/{task_id}/dismiss")
def dismiss_suggestion(scope: ScopeDep, task_id: str) -> TaskView:
    """The suggested task is dismissed, never a task (again: unchanged; a task: 409)."""
    return _answer(scope, task_id, confirm=False)
