"""Exporting a tenant (or one user of it) as an archive (`continuum.portability.archive`).

What is exported, each row opened (an encrypted tenant's text is plaintext in the archive):
sessions, their messages, memories (claims, preferences and documents are memories) with
their provenance (source message ids, trigger, provenance and trust, claim, status, version,
what superseded them), the user's tasks and cron reports. With a user, only the rows that
user owns (`user_id`), so no cron report (a tenant's, never a user's).

What is not, and why: embeddings and full-text terms (derived: the importing side computes
its own, under its own keys), the audit and recall logs (`memory_log`: what happened here,
not the memory), claimed event ids, dead letters, sync cursors and problems (this host's
files), LLM accounting, maintenance runs, API tokens, data keys and forget tombstones.

Every read is one REPEATABLE READ transaction, so the archive is one consistent moment of
the tenant. A sealed value that does not open (altered, or moved from another row) stops the
export naming the row: an archive never holds `[unreadable]` in place of a value.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from sqlalchemy import Select, Text, func, select, text, type_coerce
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Session as DbSession

from continuum.config import get_settings
from continuum.portability.archive import (
    CronReportRecord,
    Lines,
    Manifest,
    MemoryRecord,
    MessageRecord,
    Record,
    SessionRecord,
    TaskRecord,
    line,
    memory_links,
)
from continuum.sealing.envelope import (
    COMPACTION_KIND,
    DETAILS_KIND,
    MESSAGE_DETAILS_KIND,
    SEALED_JSON,
    open_details,
    open_optional,
    open_sealed_json,
    open_text,
)
from continuum.store.engine import session_scope
from continuum.store.models import CronReport, Memory, Message, Session, UserTask, is_sealed

Tick = Callable[[int], None]  # told how many more records were written
BATCH = 500  # rows read per round trip, and records per tick


class ExportRefused(ValueError):
    """An export that needs the caller's explicit consent (an encrypted tenant's)."""


def check_exportable(namespace: str, *, plaintext: bool) -> None:
    """Refuse an encrypted tenant unless `plaintext`: its archive holds its text opened."""
    if get_settings().is_encrypted(namespace) and not plaintext:
        raise ExportRefused(
            f"{namespace!r} is encrypted at rest and its archive would hold its text in "
            "plaintext: ask again with plaintext consent (`--plaintext`, `plaintext=true`) "
            "and keep the archive as secret as the database"
        )


def _raw(column: Any) -> Any:
    """A sealed column as stored (no decoder): it is opened here, strictly."""
    kind = JSONB if column.key == "details" else Text
    return type_coerce(column, kind).label(column.key)


def _owned(statement: Select[Any], model: Any, namespace: str, user: str | None) -> Select[Any]:
    statement = statement.where(model.namespace == namespace)
    return statement if user is None else statement.where(model.user_id == user)


def _rows(db: DbSession, statement: Select[Any]) -> Iterator[Any]:
    yield from db.execute(statement.execution_options(yield_per=BATCH)).mappings()


def _details(details: Any, kind: str, row: int) -> dict[str, Any]:
    if isinstance(details, dict) and is_sealed(details.get(SEALED_JSON)):
        return open_details(details, kind, row)
    return dict(details or {})


def _session_details(details: dict[str, Any], session_id: str) -> dict[str, Any]:
    """A session's details with the compaction summaries sync sealed opened."""
    compactions = details.get("compactions")
    if not isinstance(compactions, list):
        return details
    opened = [
        {k: v for k, v in item.items() if k != SEALED_JSON}
        | (open_sealed_json(item[SEALED_JSON], COMPACTION_KIND, session_id) or {})
        if isinstance(item, dict) and SEALED_JSON in item
        else item
        for item in compactions
    ]
    return {**details, "compactions": opened}


def _sessions(db: DbSession, namespace: str, user: str | None) -> Iterator[Record]:
    columns = [c for c in Session.__table__.c if c.key not in ("id", "namespace")]
    statement = _owned(select(*columns), Session, namespace, user).order_by(Session.session_id)
    for row in _rows(db, statement):
        values = dict(row)
        values["details"] = _session_details(values["details"], row["session_id"])
        yield SessionRecord(**values)


def _messages(db: DbSession, namespace: str, user: str | None) -> Iterator[Record]:
    statement = _owned(
        select(
            Message.id, Message.session_id, Message.message_id, Message.parent_id, Message.role,
            _raw(Message.content), Message.channel, Message.user_id, Message.sender,
            Message.source, Message.created_at, Message.event_id, _raw(Message.details),
        ),
        Message, namespace, user,
    ).order_by(Message.session_id, Message.created_at, Message.message_id)  # fmt: skip
    for row in _rows(db, statement):
        values = dict(row)
        row_id = values.pop("id")
        values["content"] = open_text(row["content"], "messages.content", row_id)
        values["details"] = _details(row["details"], MESSAGE_DETAILS_KIND, row_id)
        yield MessageRecord(**values)


_MEMORY_SKIPPED = ("namespace", "tsv_keyed", "tsv", "embedding")


def _memories(db: DbSession, namespace: str, user: str | None) -> Iterator[Record]:
    order = (Memory.created_at, Memory.id)
    ids = db.scalars(_owned(select(Memory.id), Memory, namespace, user).order_by(*order))
    refs = {row_id: ref for ref, row_id in enumerate(ids, start=1)}
    sealed = ("content", "claim_value", "details")
    columns = [
        _raw(c) if c.key in sealed else c
        for c in Memory.__table__.c
        if c.key not in _MEMORY_SKIPPED
    ]
    statement = _owned(select(*columns), Memory, namespace, user).order_by(*order)
    for row in _rows(db, statement):
        values = dict(row)
        row_id = values.pop("id")
        values["content"] = open_text(row["content"], "memories.content", row_id)
        values["claim_value"] = open_optional(row["claim_value"], "memories.claim_value", row_id)
        details = _details(row["details"], DETAILS_KIND, row_id)
        for name, linked in memory_links(details).items():  # ids here are refs there
            if linked in refs:
                details[name] = refs[linked]
            else:
                del details[name]  # a memory left out (another user's)
        values["details"] = details
        values["superseded_by"] = refs.get(row["superseded_by"])
        if row["kind"] == "document":
            values["idempotency_key"] = None  # follows from its path, in any tenant
        yield MemoryRecord(ref=refs[row_id], **values)


def _tasks(db: DbSession, namespace: str, user: str | None) -> Iterator[Record]:
    columns = [
        _raw(c) if c.key in ("title", "description") else c
        for c in UserTask.__table__.c
        if c.key != "namespace"
    ]
    statement = _owned(select(*columns), UserTask, namespace, user)
    for row in _rows(db, statement.order_by(UserTask.created_at, UserTask.task_id)):
        values = dict(row)
        row_id = values.pop("id")
        values["title"] = open_text(row["title"], "tasks.title", row_id)
        values["description"] = open_optional(row["description"], "tasks.description", row_id)
        yield TaskRecord(**values)


def _cron_reports(db: DbSession, namespace: str, user: str | None) -> Iterator[Record]:
    if user is not None:
        return
    columns = [
        _raw(c) if c.key == "summary" else c
        for c in CronReport.__table__.c
        if c.key not in ("id", "namespace", "tsv_keyed")
    ]
    statement = select(*columns).where(CronReport.namespace == namespace)
    for row in _rows(db, statement.order_by(CronReport.session_id)):
        values = dict(row)
        values["summary"] = open_text(row["summary"], "cron_reports.summary", row["session_id"])
        yield CronReportRecord(**values)


READERS = (_sessions, _messages, _memories, _tasks, _cron_reports)  # RECORD_TYPES order
COUNTED = (Session, Message, Memory, UserTask, CronReport)


def count(namespace: str, user: str | None = None) -> int:
    """How many records an export of the tenant (or user) would hold now (for progress)."""
    total = 0
    with session_scope() as db:
        for model in COUNTED:
            if user is not None and model is CronReport:
                continue
            statement = _owned(select(func.count()).select_from(model), model, namespace, user)
            total += int(db.scalar(statement) or 0)
    return total


class Export:
    """The archive of a tenant (only `user`'s rows if given), its lines read from the
    database as they are iterated (one transaction, open until the last line or until the
    iteration is abandoned); `manifest` once the last line was given. An encrypted tenant
    is exported opened: `check_exportable` first."""

    def __init__(self, namespace: str, user: str | None = None, progress: Tick | None = None):
        self.namespace, self.user, self.progress = namespace, user, progress
        self.manifest: Manifest | None = None

    def __iter__(self) -> Iterator[bytes]:
        lines = Lines()
        with session_scope() as db:
            db.execute(text("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY"))
            yield lines.header(self.namespace, self.user)
            written = 0
            for read in READERS:
                for record in read(db, self.namespace, self.user):
                    yield lines.record(record)
                    written += 1
                    if self.progress is not None and written % BATCH == 0:
                        self.progress(BATCH)
        if self.progress is not None:
            self.progress(written % BATCH)
        self.manifest = lines.manifest()
        yield line(self.manifest)

    def chunks(self, size: int = 1 << 16) -> Iterator[bytes]:
        """The lines joined into chunks of about `size` bytes (to stream)."""
        buffer: list[bytes] = []
        held = 0
        for data in self:
            buffer.append(data)
            held += len(data)
            if held >= size:
                yield b"".join(buffer)
                buffer, held = [], 0
        if buffer:
            yield b"".join(buffer)
