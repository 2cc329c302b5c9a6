"""Records the HTTP API answers that its Python client reads as they are: a stored document
(a JSON value under a path and key), a turn of a session whole, the rows the listings
return (memories, cron reports, sessions, sync problems), the context block with its items,
a user's preferences and tasks, the conflicts waiting for review and how one was settled,
the memory tools' answers, and the reports of forgetting a user and of an import. One definition serves the server (`continuum.memory.documents`,
`continuum.recall.turns`, `continuum.api.schemas`, `continuum.api.routes`,
`continuum.sync.problems`, `continuum.memory.preferences`, `continuum.memory.claims`,
`continuum.memory.user_tasks`,
`continuum.security.forget`, `continuum.portability.importing`) and the client (`continuum.sdk.models`), so they cannot
drift apart; newer fields a server adds are kept by an older client (`extra="allow"`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

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


class MemoryRecord(Record):
    """A stored memory as the listings return it."""

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


class CronReportRecord(Record):
    """One run of a cron job, as synced from its transcript."""

    id: int
    namespace: str
    cron_name: str
    session_id: str
    summary: str
    run_started_at: datetime | None
    run_ended_at: datetime | None
    event_at: datetime | None


class SessionRecord(Record):
    """A session's row: where it ran, when, and how it ended."""

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


class SyncProblemRecord(Record):
    """A problem transcript sync found in a source (`resolved_at`: when it went away)."""

    id: int
    namespace: str
    source_path: str
    location: str
    kind: str
    detail: str
    line_no: int | None
    byte_offset: int | None
    session_id: str | None
    seq: int | None
    run_id: str
    first_seen_at: datetime
    last_seen_at: datetime
    resolved_at: datetime | None


class Preference(Record):
    """A user's preference: its category, key and value, how sure, where it was learned
    (provenance, channel, session, source turns) and when last confirmed."""

    memory_id: int
    user_id: str | None
    category: str
    key: str
    value: str
    content: str
    confidence: float
    learned_from: dict[str, Any]
    last_confirmed: datetime
    private: bool


class TaskView(Record):
    """A user's task as the listings show it (`status`: suggested or dismissed for a
    suggestion not yet, or not, confirmed)."""

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


class Conflict(Record):
    """A quarantined memory and the active one it contradicts."""

    namespace: str
    quarantined_id: int
    quarantined: str
    quarantined_provenance: str
    active_id: int | None
    active: str | None
    active_provenance: str | None
    subject: str | None
    predicate: str | None
    created_at: datetime


class Settled(Record):
    """How a person settled a conflict: the memory kept, and those it superseded (`kept`
    None: the quarantined memory had no record of what it contradicted)."""

    namespace: str
    kept: int | None
    superseded: list[int]


class ContextBlockItem(Record):
    """One line of a context block: what it is (`ref`: memory:<id>,
    message:<session>/<message id>, task:<id> or handoff), its section, its text, its score
    and the parts of it, its tokens, and why it was chosen."""

    ref: str
    kind: str
    section: str
    text: str
    score: float
    tokens: int
    why: str
    parts: dict[str, float] = Field(default_factory=dict)
    memory_id: int | None = None
    source_message_ids: list[str] = Field(default_factory=list)
    created_at: datetime | None = None


class ContextBlockExcluded(Record):
    """A candidate left out of the block, and why (answered with `explain`)."""

    ref: str
    kind: str
    reason: str
    score: float | None = None


class ContextBlock(Record):
    """The context block for a system prompt, and what went into it."""

    block: str
    items: list[ContextBlockItem]
    excluded: list[ContextBlockExcluded] = Field(default_factory=list)
    tokens_used: int
    query_id: str
    topic: str
    memory_ids: list[int] = Field(default_factory=list)


class ToolResult(Record):
    """A memory tool's answer (`continuum.memory.tool_calls`; the wire names are the tools'
    own, camelCase): whether it did what was asked, and a note for the model if any."""

    success: bool
    message: str | None = None


class Reminder(Record):
    """The reminder a follow-up with a time suggests: its time phrase and its text."""

    when: str
    text: str


class StoredMemory(ToolResult):
    """`store_memory`'s answer: the memory's id; asked to, whether a reminder fits (only a
    follow-up with a time phrase), and the reminder."""

    memoryId: int
    suggestReminder: bool | None = None
    reminder: Reminder | None = None


class MemoryVersion(ToolResult):
    """`update_memory`'s answer, and an edit's: the new version's id, the one it superseded
    and its version number (`action`: created when no memory had the key)."""

    memoryId: int
    action: Literal["created", "updated"] | None = None
    previousMemoryId: int | None = None
    version: int | None = None


class TargetedMemories(ToolResult):
    """`forget_memory`'s and `mark_private`'s answer: the memories it changed."""

    memoryIds: list[int]


class StoreCounts(Record):
    """One store of a forget: rows of the user found, removed, and found again by the re-scan."""

    found: int = 0
    removed: int = 0
    remaining: int = 0


class ForgetReport(Record):
    """What forgetting a user did: data keys destroyed, each store's counts, and whether the
    re-scan found every store empty of the user (`complete`)."""

    namespace: str
    user_id: str
    keys_destroyed: int
    stores: dict[str, StoreCounts]
    finished_at: datetime
    complete: bool


class ImportReport(Record):
    """What an import did, per record type (session, message, memory, task, cron_report):
    inserted, already there, or not written (a forgotten user's rows, a private tenant's
    turns)."""

    namespace: str
    source: str
    user: str | None
    records: int
    inserted: dict[str, int]
    existing: dict[str, int]
    skipped: dict[str, int]
