"""The bulk writer: parsed transcript messages and their session rows into Postgres.

A batch of a session that has no rows yet (a backfill's new files, a new session's first
batch) is COPYed straight into `messages`, an id repeated in the batch kept once (its first
line). Nothing else can conflict with it but a concurrent writer of the same session that
committed first; then the COPY fails, the caller's transaction is lost, and `SessionRaced`
says to run the batch again: the session has rows by then, so it takes the general path.
No savepoint guards the common case (its two round trips cost a small file more than its
rows). The general path COPYs into
a temporary staging table, then `INSERT … SELECT … ON CONFLICT DO NOTHING RETURNING`, so a
batch costs two statements whatever its size and only rows really inserted come back
(they drive `message_count` and the capture feed). Rows are inserted in key order on both
paths, so two transactions writing overlapping batches (a live file and its archived copy)
wait on each other instead of deadlocking. Everything runs in the caller's transaction.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import psycopg
from sqlalchemy import select, update
from sqlalchemy.orm import Session as DbSession

from continuum.domain.storable import clean_json, clean_text, json_text
from continuum.sealing.envelope import COMPACTION_KIND, seal, seal_json
from continuum.sealing.terms import terms_for
from continuum.store.bulk import insert_rows
from continuum.store.engine import driver_connection
from continuum.store.models import Session
from continuum.transcripts import Compaction, TranscriptMessage

STAGE = "continuum_sync_stage"
COLUMNS = (
    "namespace",
    "session_id",
    "message_id",
    "parent_id",
    "role",
    "content",
    "channel",
    "sender",
    "source",
    "created_at",
    "details",
    "tsv_keyed",
)
_COLUMN_LIST = ", ".join(COLUMNS)
CREATE_STAGE = (
    f"CREATE TEMP TABLE IF NOT EXISTS {STAGE} ("
    "namespace text, session_id text, message_id text, parent_id text, role text,"
    " content text, channel text, sender text, source text, created_at timestamptz,"
    " details jsonb, tsv_keyed tsvector) ON COMMIT DELETE ROWS"
)
COPY_STAGE = f"COPY {STAGE} ({_COLUMN_LIST}) FROM STDIN"
COPY_MESSAGES = f"COPY messages ({_COLUMN_LIST}) FROM STDIN"
SESSION_HAS_ROWS = "SELECT EXISTS (SELECT FROM messages WHERE namespace = %s AND session_id = %s)"
INSERT_FROM_STAGE = (
    f"WITH staged AS (DELETE FROM {STAGE} RETURNING *) "
    f"INSERT INTO messages ({_COLUMN_LIST}) "
    f"SELECT {_COLUMN_LIST} FROM staged ORDER BY namespace, session_id, message_id "
    "ON CONFLICT (namespace, session_id, message_id) DO NOTHING "
    "RETURNING session_id, message_id, created_at"
)

Row = tuple[Any, ...]


def _optional(value: str | None) -> str | None:
    return clean_text(value) if value is not None else None


@dataclass(frozen=True)
class SessionFacts:
    """What a batch says about its session; `ended_at` is set for an archive copy that
    ends its session (no live file beside it)."""

    namespace: str
    session_id: str
    source: str
    channel: str | None = None
    model: str | None = None
    started_at: datetime | None = None
    last_activity_at: datetime | None = None
    ended_at: datetime | None = None
    details: dict[str, Any] = field(default_factory=dict)


def message_rows(
    facts: SessionFacts, messages: Iterable[TranscriptMessage], extra: dict[str, Any]
) -> list[Row]:
    """Staging rows for `messages`; `extra` is merged into every row's details."""
    rows: list[Row] = []
    for message in messages:
        details = {**message.metadata, **extra}
        if message.model:
            details["model"] = message.model
        if message.has_image:
            details["has_image"] = True
        if message.time_inferred:
            details["time_inferred"] = True
        rows.append(
            (
                facts.namespace,
                facts.session_id,
                clean_text(message.message_id),
                _optional(message.parent_id),
                message.role,
                clean_text(message.content),
                _optional(message.channel) or facts.channel,
                _optional(message.sender),
                facts.source,
                message.created_at,
                json_text(details),
            )
        )
    return rows


@dataclass(frozen=True)
class InsertedMessage:
    """A message row that did not exist before this batch."""

    session_id: str
    message_id: str
    created_at: datetime


def _sealed(db: DbSession, rows: Sequence[Row]) -> list[Row]:
    """`rows` with their keyed terms, and content sealed under the tenant's key for an
    encrypted tenant (synced turns have no user)."""
    content = COLUMNS.index("content")
    out: list[Row] = []
    for namespace, group in itertools.groupby(rows, key=lambda row: row[0]):
        batch = list(group)
        terms = terms_for(db, namespace, [row[content] for row in batch])
        for row, keyed in zip(batch, terms, strict=True):
            text = seal(namespace, None, "messages.content", row[content])
            out.append((*row[:content], text, *row[content + 1 :], keyed))
    return out


class SessionRaced(Exception):
    """A concurrent writer committed rows of the session this batch was COPYing into as
    new: the transaction is lost; run the batch again (it then meets those rows)."""


def _copied_as_new_session(conn: psycopg.Connection[Any], rows: Sequence[Row]) -> bool:
    """COPY `rows` (one session's, in key order, no key twice) straight into `messages` if
    that session has no rows; False, with nothing written, when it has."""
    key = rows[0][:2]
    if any(row[:2] != key for row in rows):
        return False
    with conn.cursor() as cur:
        if cur.execute(SESSION_HAS_ROWS, key).fetchone() != (False,):
            return False
        try:
            with cur.copy(COPY_MESSAGES) as copy:
                for row in rows:
                    copy.write_row(row)
        except psycopg.errors.UniqueViolation as exc:
            raise SessionRaced(
                f"session {key[1]!r} gained rows while this batch was written"
            ) from exc
    return True


def insert_messages(db: DbSession, rows: Sequence[Row]) -> list[InsertedMessage]:
    """Insert the rows of `rows` not yet in `messages`; returns those inserted, in key order.
    Raises `SessionRaced` (the transaction is lost) when a concurrent writer of a new
    session committed first."""
    if not rows:
        return []
    staged = sorted(_sealed(db, rows), key=lambda row: row[:3])  # stable: file order kept
    staged = [row for i, row in enumerate(staged) if i == 0 or row[:3] != staged[i - 1][:3]]
    if _copied_as_new_session(driver_connection(db), staged):
        created_at = COLUMNS.index("created_at")
        return [InsertedMessage(row[1], row[2], row[created_at]) for row in staged]
    with driver_connection(db).cursor() as cur:
        cur.execute(CREATE_STAGE)
        with cur.copy(COPY_STAGE) as copy:
            for row in staged:
                copy.write_row(row)
        cur.execute(INSERT_FROM_STAGE)
        return [InsertedMessage(*row) for row in cur.fetchall()]


def session_exists(db: DbSession, namespace: str, session_id: str) -> bool:
    """True when the session has a row."""
    where = (Session.namespace == namespace, Session.session_id == session_id)
    return db.scalar(select(Session.id).where(*where)) is not None


# How a session row already there is widened by a batch (`excluded`: the batch's values).
_WIDEN_SESSION = {
    "channel": "coalesce(sessions.channel, excluded.channel)",
    "source": "CASE WHEN excluded.source LIKE 'cron:%' THEN excluded.source ELSE sessions.source END",
    "model": "coalesce(excluded.model, sessions.model)",
    "started_at": "least(sessions.started_at, excluded.started_at)",
    "last_activity_at": "greatest(sessions.last_activity_at, excluded.last_activity_at)",
    "message_count": "sessions.message_count + excluded.message_count",
    "details": "sessions.details || excluded.details",
    # an ended session that gains later activity ends no earlier than it
    "ended_at": "CASE WHEN sessions.ended_at IS NULL THEN NULL "
    "ELSE greatest(sessions.ended_at, excluded.last_activity_at) END",
}
_END_SESSION = {  # an archive copy ends its session
    **_WIDEN_SESSION,
    "status": "'ended'",
    "ended_at": "greatest(sessions.ended_at, excluded.ended_at, sessions.last_activity_at, "
    "excluded.last_activity_at)",
    "end_reason": "coalesce(sessions.end_reason, excluded.end_reason)",
}


def upsert_session(db: DbSession, facts: SessionFacts, inserted: int) -> None:
    """Create or widen the session row; `message_count` grows by rows really inserted.
    `ended_at` never precedes `last_activity_at`."""
    values: dict[str, Any] = {
        "namespace": facts.namespace,
        "session_id": facts.session_id,
        "channel": facts.channel,
        "source": facts.source,
        "model": facts.model,
        "started_at": facts.started_at,
        "last_activity_at": facts.last_activity_at,
        "message_count": inserted,
        "details": facts.details,
    }
    ends = facts.ended_at is not None
    if ends:
        values.update(status="ended", ended_at=facts.ended_at, end_reason="archived")
    widen = _END_SESSION if ends else _WIDEN_SESSION
    insert_rows(db, Session, [values], conflict=["namespace", "session_id"], update=widen)


def add_compactions(
    db: DbSession, namespace: str, session_id: str, compactions: list[Compaction]
) -> int:
    """Append compaction summaries to `sessions.details.compactions` (once per id); sealed,
    but for their id, for an encrypted tenant (`open_compactions` reads them)."""
    if not compactions:
        return 0
    where = (Session.namespace == namespace, Session.session_id == session_id)
    details = dict(db.scalar(select(Session.details).where(*where).with_for_update()) or {})
    stored: list[dict[str, Any]] = list(details.get("compactions", []))
    known = {item.get("compaction_id") for item in stored}
    new = [
        {"compaction_id": c.compaction_id}
        | seal_json(namespace, None, COMPACTION_KIND, clean_json(c.model_dump(mode="json")))
        for c in compactions
        if c.compaction_id not in known
    ]
    if new:
        details["compactions"] = stored + new
        db.execute(update(Session).where(*where).values(details=details))
    return len(new)
