"""Data shapes of the capture path: the turn that comes in, the memory candidates and the
session summary that come out."""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from continuum.domain.kinds import MemoryKind, kind_names
from continuum.domain.text import normalize_for_key

Role = Literal["user", "assistant"]
ContentSource = Literal["user", "tool", "system"]
Provenance = Literal["user_explicit", "system", "inference", "tool_output"]
ClaimScope = Literal["session", "global", "temporal"]
Sentiment = Literal["positive", "neutral", "frustrated", "urgent"]

MAX_CONTENT_CHARS = 300
MAX_DIGEST_CHARS = 1200  # session snapshots and summaries carry several items
DIGEST_KINDS = frozenset(kind_names(lambda spec: spec.digest))
_KEY_PATTERN = r"^[a-z][a-z0-9_]*$"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class CaptureTurn(_Frozen):
    """One message of a conversation, as capture sees it."""

    message_id: str = Field(min_length=1)
    role: Role
    content: str
    created_at: datetime
    session_id: str = Field(min_length=1)
    channel: str | None = None
    user_id: str | None = None
    source: ContentSource = "user"


class Claim(_Frozen):
    """A structured statement a memory makes; a newer claim on the same subject+predicate
    supersedes an older one (R24)."""

    subject: str
    predicate: str
    value: str
    scope: ClaimScope = "global"
    valid_from: datetime | None = None
    valid_until: datetime | None = None


class MemoryCandidate(_Frozen):
    """A compact memory proposed by capture, not yet stored."""

    kind: MemoryKind
    key: str | None = Field(default=None, pattern=_KEY_PATTERN)
    content: str = Field(min_length=1)
    tags: list[str] = Field(default_factory=list)
    importance: int = Field(ge=1, le=10)
    confidence: float = Field(ge=0.0, le=1.0)
    provenance: Provenance
    claim: Claim | None = None
    time_expression: str | None = None
    due_at: datetime | None = None  # the time expression read from when it was said
    source_message_ids: list[str] = Field(min_length=1)
    trigger: str = "turn"
    details: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _content_is_compact(self) -> MemoryCandidate:
        limit = MAX_DIGEST_CHARS if self.kind in DIGEST_KINDS else MAX_CONTENT_CHARS
        if len(self.content) > limit:
            raise ValueError(f"{self.kind} content is {len(self.content)} chars, max {limit}")
        return self

    def idempotency_key(self, namespace: str) -> str:
        """Stable across retries: same namespace, trigger, sources and content → same key."""
        parts = [namespace, self.trigger, *sorted(self.source_message_ids)]
        parts.append(normalize_for_key(self.content))
        return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()


class SessionSummary(_Frozen):
    """Deterministic conversation summary of one session (R6)."""

    session_id: str
    channel: str | None
    user_id: str | None
    summary: str
    topics: list[str]
    key_decisions: list[str]
    action_items: list[str]
    open_threads: list[str]
    due_at: dict[str, datetime] = Field(default_factory=dict)  # action item → when it is due
    sentiment: Sentiment
    message_count: int
    started_at: datetime
    ended_at: datetime
