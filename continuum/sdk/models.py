"""What the HTTP API answers, as typed models for the client (`continuum.sdk`).

Each model names its schema in the API's OpenAPI document (`SCHEMAS`); a test holds their
fields equal, so the client and the server cannot drift apart silently. Fields a newer server
adds are kept (`extra="allow"`) rather than refused, so an older client keeps working.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from continuum.domain.records import (
    Conflict,
    ContextBlock,
    ContextBlockItem,
    CronReportRecord,
    Document,
    ForgetReport,
    ImportReport,
    MemoryRecord,
    MemoryVersion,
    Preference,
    Reminder,
    SessionRecord,
    Settled,
    StoredMemory,
    SyncProblemRecord,
    TargetedMemories,
    TaskView,
    ToolResult,
    Turn,
)

T = TypeVar("T")


class Model(BaseModel):
    model_config = ConfigDict(extra="allow")


# Shared with the server (continuum.domain.records).
__all__ = [
    "Conflict",
    "ContextBlock",
    "ContextItem",
    "CronReport",
    "Document",
    "ForgetReport",
    "ImportReport",
    "Memory",
    "MemoryVersion",
    "Preference",
    "Reminder",
    "Session",
    "Settled",
    "StoredMemory",
    "SyncProblem",
    "TargetedMemories",
    "Task",
    "ToolResult",
    "Turn",
]


class Page(Model, Generic[T]):
    """One page of a list: its items and the link to the next (None on the last)."""

    items: list[T]
    limit: int
    offset: int
    next: str | None = None


class Me(Model):
    token_id: int
    name: str
    namespaces: list[str]


class Enqueued(Model):
    enqueued: int
    event_ids: list[str]


class Message(Model):
    id: int
    namespace: str
    session_id: str
    message_id: str
    role: str
    channel: str | None
    content: str
    created_at: datetime
    rank: float = 0.0
    details: dict[str, Any] = Field(default_factory=dict)


class SearchHit(Model):
    source: str  # memory | message
    id: int
    content: str
    created_at: datetime
    session_id: str | None
    channel: str | None
    kind: str  # memory kind, or the message role
    importance: int | None
    source_message_ids: list[str]
    status: str = "active"
    private: bool = False
    score: float = 0.0
    parts: dict[str, float] = Field(default_factory=dict)
    neighbours: list[dict[str, Any]] = Field(default_factory=list)
    focus: str | None = None


ContextItem = ContextBlockItem

CronReport = CronReportRecord

Memory = MemoryRecord


class MemoryKind(Model):
    kind: str
    description: str
    storable: bool


Task = TaskView

Session = SessionRecord


class ActiveSession(Model):
    channel: str
    session_id: str
    user_id: str | None
    started_at: str | None
    last_active: str
    topic: str | None


SyncProblem = SyncProblemRecord


# Each model and the schema of the OpenAPI document it mirrors.
SCHEMAS: dict[type[BaseModel], str] = {
    Me: "Me",
    Enqueued: "Enqueued",
    Message: "MessageHit",
    Turn: "Turn",
    SearchHit: "SearchHit",
    CronReport: "CronReportOut",
    Memory: "MemoryOut",
    MemoryKind: "KindOut",
    Preference: "Preference",
    Task: "TaskView",
    Session: "SessionOut",
    ActiveSession: "ActiveSession",
    SyncProblem: "Problem",
    Document: "Document",
    Conflict: "Conflict",
    Settled: "Settled",
    ContextBlock: "ContextBlock",
    ForgetReport: "ForgetReport",
    ImportReport: "ImportReport",
    StoredMemory: "StoredMemory",
    MemoryVersion: "MemoryVersion",
    TargetedMemories: "TargetedMemories",
}
