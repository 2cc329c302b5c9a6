"""Response models of rows the API returns (read from the ORM rows, never hand-copied)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator

from continuum.sealing.envelope import open_compactions


class _FromRow(BaseModel):
    model_config = ConfigDict(from_attributes=True)


class MemoryOut(_FromRow):
    id: int
    namespace: str
    user_id: str | None
    kind: str
    key: str | None
    content: str
    details: dict[str, Any]
    tags: list[str]
    importance: int
    confidence: float
    provenance: str
    trust: int
    status: str
    superseded_by: int | None
    private: bool
    version: int
    session_id: str | None
    channel: str | None
    source_message_ids: list[str]
    trigger: str
    created_at: datetime
    updated_at: datetime


class CronReportOut(_FromRow):
    id: int
    namespace: str
    cron_name: str
    session_id: str
    summary: str
    run_started_at: datetime | None
    run_ended_at: datetime | None
    event_at: datetime | None


class SessionOut(_FromRow):
    namespace: str
    session_id: str
    channel: str | None
    user_id: str | None
    source: str
    model: str | None
    started_at: datetime | None
    last_activity_at: datetime | None
    ended_at: datetime | None
    end_reason: str | None
    status: str
    message_count: int
    details: dict[str, Any]

    @field_validator("details")
    @classmethod
    def _opened(cls, details: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        return open_compactions(details, info.data["session_id"])
