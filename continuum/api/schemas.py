"""Response models of rows the API returns (read from the ORM rows, never hand-copied)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator

from continuum.domain.records import CronReportRecord, MemoryRecord, SessionRecord
from continuum.sealing.envelope import open_compactions


class _FromRow(BaseModel):
    # Read from ORM rows. Listed after the shared record so this config wins: the record
    # keeps a newer server's extra fields for the client; the server's own answers have none.
    model_config = ConfigDict(from_attributes=True, extra="ignore")


class MemoryOut(MemoryRecord, _FromRow):
    pass


class CronReportOut(CronReportRecord, _FromRow):
    pass


class SessionOut(SessionRecord, _FromRow):
    @field_validator("details")
    @classmethod
    def _opened(cls, details: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        return open_compactions(details, info.data["session_id"])
