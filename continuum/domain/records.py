"""Records the HTTP API answers that its Python client reads as they are: a stored document
(a JSON value under a path and key) and a turn of a session whole. One definition serves the
server (`continuum.memory.documents`, `continuum.recall.turns`) and the client
(`continuum.sdk.models`), so they cannot drift apart; newer fields a server adds are kept by
an older client (`extra="allow"`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Record(BaseModel):
    model_config = ConfigDict(extra="allow")


class Document(Record):
    """A JSON value under a namespace path and a key (`score`: when found by a query)."""

    namespace: list[str]
    key: str
    value: dict[str, Any]
    user_id: str | None
    indexed: bool
    memory_id: int
    created_at: datetime
    updated_at: datetime
    score: float | None = None


class Turn(Record):
    """A turn of one session, whole: with the metadata its producer attached."""

    id: int
    namespace: str
    session_id: str
    message_id: str
    parent_id: str | None
    role: str
    content: str
    channel: str | None
    user_id: str | None
    created_at: datetime
    metadata: dict[str, Any] = Field(default_factory=dict)
