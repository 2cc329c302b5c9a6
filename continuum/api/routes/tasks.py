"""The user's tasks (R8): list, create, complete, change status; shared by every channel."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, status
from pydantic import BaseModel, Field

from continuum.api.auth import NOT_FOUND, ScopeDep
from continuum.api.errors import field_error
from continuum.api.pagination import Page, PageDep
from continuum.memory import user_tasks
from continuum.memory.user_tasks import TaskStatus, TaskView

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
