"""The one writer of raw conversation: rows of `messages` and the `sessions` they belong to,
for both doors a conversation comes in by (evented turns, `continuum.pipeline.ingest`; synced
transcripts, `continuum.sync.sources`).

What every row gets, whichever door: a private tenant's messages (`CONTINUUM_PRIVACY_MODE`,
`CONTINUUM_PRIVATE_NAMESPACES`) are never written; secrets in a message's content are
replaced by `[redacted:<type>]` (`CONTINUUM_REDACT_SECRETS`, `continuum.domain.secrets`;
counted in the `secrets_redacted` metric once the transaction commits); an encrypted tenant's content and
details are sealed under its owner's key (the user's, else the tenant's), bound to the row's
id (drawn from the sequence before the insert), and the row brings its keyed full-text terms;
a message already stored (namespace + session + message id) is not written twice; and a
session's `message_count` grows by the rows really inserted, in the statement that creates
or widens its row. Everything runs in the caller's transaction.

Each door keeps its own batching. Events (`copy=False`, a few dozen rows) go as one
`INSERT … SELECT FROM jsonb_to_recordset … ON CONFLICT DO NOTHING` (`continuum.store.bulk`).
Transcripts (`copy=True`, up to thousands of rows, their ids always drawn first: one round
trip, and one COPY column list for every tenant) go by COPY: a batch of a session that has
no rows yet (a backfill's new files) straight into `messages`, an id repeated in the batch
kept once (its first line); nothing can conflict with it but a concurrent writer of the same
session that committed first, and then the COPY fails, the caller's transaction is lost, and
`SessionRaced` says to run the batch again (the session has rows by then, so it takes the
general path). No savepoint guards that common case: its two round trips cost a small file
more than its rows. The general path COPYs into a temporary staging table, then
`INSERT … SELECT … ON CONFLICT DO NOTHING RETURNING`: two statements whatever the size.

Rows are inserted in key order on every path, and sessions upserted in key order after
them, so two transactions writing overlapping batches (a live file and its archived copy,
two batches of one session) wait on each other instead of deadlocking.
"""

from __future__ import annotations

import itertools
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

import psycopg
from sqlalchemy.orm import Session as DbSession

from continuum.config import get_settings
from continuum.domain.secrets import redact
from continuum.domain.storable import json_text
from continuum.sealing.envelope import MESSAGE_DETAILS_KIND, seal, seal_details
from continuum.sealing.terms import terms_for
from continuum.store import lsn_tokens, metrics
from continuum.store.bulk import allocate_ids, insert_ignore, insert_rows
from continuum.store.engine import driver_connection
from continuum.store.models import Message, Session

CONTENT_KIND = "messages.content"
EVENT_SOURCE = "event"  # the source of an evented session and its turns


class MessageRow(NamedTuple):
    """One message as either door hands it over: plaintext content, details as a dict."""

    namespace: str
    session_id: str
    message_id: str
    parent_id: str | None
    role: str
    content: str
    channel: str | None
    sender: str | None
    user_id: str | None
    source: str
    created_at: datetime
    event_id: uuid.UUID | None
    details: dict[str, Any]


# The columns COPY writes, in order: the row's id, a MessageRow's, then the keyed terms.
COLUMNS = ("id", *MessageRow._fields, "tsv_keyed")
_COLUMN_LIST = ", ".join(COLUMNS)
STAGE = "continuum_messages_stage"
CREATE_STAGE = (
    f"CREATE TEMP TABLE IF NOT EXISTS {STAGE} ("
    "id bigint, namespace text, session_id text, message_id text, parent_id text, role text,"
    " content text, channel text, sender text, user_id text, source text,"
    " created_at timestamptz, event_id uuid, details jsonb, tsv_keyed tsvector)"
    " ON COMMIT DELETE ROWS"
)
COPY_STAGE = f"COPY {STAGE} ({_COLUMN_LIST}) FROM STDIN"
COPY_MESSAGES = f"COPY messages ({_COLUMN_LIST}) FROM STDIN"
SESSION_HAS_ROWS = "SELECT EXISTS (SELECT FROM messages WHERE namespace = %s AND session_id = %s)"
INSERT_FROM_STAGE = (
    f"WITH staged AS (DELETE FROM {STAGE} RETURNING *) "
    f"INSERT INTO messages ({_COLUMN_LIST}) "
    f"SELECT {_COLUMN_LIST} FROM staged ORDER BY namespace, session_id, message_id "
    "ON CONFLICT (namespace, session_id, message_id) DO NOTHING "
    "RETURNING namespace, session_id, message_id, created_at"
)

StoredRow = tuple[Any, ...]  # a row as COPY writes it: COLUMNS, sealed, details as JSON text


@dataclass(frozen=True)
class SessionFacts:
    """What a batch says about one session; `ended_at` is set for a batch that ends it (an
    archived transcript with no live file beside it)."""

    namespace: str
    session_id: str
    source: str = EVENT_SOURCE
    channel: str | None = None
    user_id: str | None = None
    model: str | None = None
    started_at: datetime | None = None
    last_activity_at: datetime | None = None
    ended_at: datetime | None = None
    end_reason: str | None = None
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, str]:
        return (self.namespace, self.session_id)


@dataclass(frozen=True)
class InsertedMessage:
    """A message row that did not exist before this batch."""

    namespace: str
    session_id: str
    message_id: str
    created_at: datetime


class SessionRaced(Exception):
    """A concurrent writer committed rows of the session this batch was COPYing into as
    new: the transaction is lost; run the batch again (it then meets those rows)."""


def write(
    db: DbSession,
    sessions: Sequence[SessionFacts],
    messages: Sequence[MessageRow],
    *,
    copy: bool = False,
    redacted: bool = False,
) -> list[InsertedMessage]:
    """Write `messages` (those not stored yet, none of a private tenant), then create or widen
    the row of each of `sessions` (one fact per session), its count grown by the messages
    inserted. Returns the inserted messages in key order. `copy` picks the COPY path for
    large batches; it raises `SessionRaced` (the transaction is lost) when a concurrent writer
    of a new session committed first. `redacted`: the rows' secrets are replaced already (the
    events stage redacts whole events, `continuum.pipeline.ingest`)."""
    settings = get_settings()
    kept = [row for row in messages if not settings.is_private(row.namespace)]
    if settings.redact_secrets and not redacted:
        kept = _redacted(db, kept)
    inserted = _insert_copied(db, kept) if copy else _insert(db, kept)
    lsn_tokens.wrote(db, {row.namespace for row in kept})  # the COPY path names none
    counts = Counter((message.namespace, message.session_id) for message in inserted)
    _upsert_sessions(db, sessions, counts)
    return inserted


def _redacted(db: DbSession, rows: Sequence[MessageRow]) -> list[MessageRow]:
    """`rows` with the secrets in their content replaced, counted when `db` commits."""
    out: list[MessageRow] = []
    found = 0
    for row in rows:
        redaction = redact(row.content)
        found += redaction.total
        out.append(row._replace(content=redaction.text) if redaction.total else row)
    metrics.incr_on_commit(db, metrics.SECRETS_REDACTED, found)
    return out


class _Stored(NamedTuple):
    """A message's stored values: its id (None: the sequence's at insert), content and
    details (sealed for an encrypted tenant) and keyed terms (None for a plaintext one)."""

    id: int | None
    content: str
    details: dict[str, Any]
    tsv_keyed: str | None


_NONE: frozenset[str] = frozenset()  # a message's details are sealed whole, no key left plain


def _key(row: MessageRow) -> tuple[str, str, str]:
    return (row.namespace, row.session_id, row.message_id)


def _stored(db: DbSession, rows: Sequence[MessageRow], *, ids: bool) -> list[_Stored]:
    """Each row's values as stored, in order. A sealed value is bound to its row's id, so
    the ids are drawn first when a row is sealed (or `ids` asks for them anyway)."""
    settings = get_settings()
    if ids or any(settings.is_encrypted(row.namespace) for row in rows):
        drawn: Sequence[int | None] = allocate_ids(db, Message, len(rows))
    else:
        drawn = [None] * len(rows)
    terms: dict[int, str | None] = {}
    for namespace, group in itertools.groupby(enumerate(rows), key=lambda item: item[1].namespace):
        batch = list(group)
        keyed = terms_for(db, namespace, [row.content for _, row in batch])
        terms.update((i, term) for (i, _), term in zip(batch, keyed, strict=True))
    out = []
    for i, (row, row_id) in enumerate(zip(rows, drawn, strict=True)):
        if row_id is None or not settings.is_encrypted(row.namespace):
            out.append(_Stored(row_id, row.content, row.details, terms[i]))
            continue
        owner = (row.namespace, row.user_id)
        out.append(
            _Stored(
                row_id,
                seal(*owner, CONTENT_KIND, row.content, row_id),
                seal_details(*owner, row.details, row_id, kind=MESSAGE_DETAILS_KIND, plain=_NONE),
                terms[i],
            )
        )
    return out


def stored_rows(db: DbSession, rows: Sequence[MessageRow]) -> list[StoredRow]:
    """`rows` (in key order) as COPY writes them, in COLUMNS order: their drawn ids,
    content and details as stored (details as JSON text), then the keyed terms."""
    out: list[StoredRow] = []
    for row, stored in zip(rows, _stored(db, rows, ids=True), strict=True):
        values = {**row._asdict(), "content": stored.content, "details": json_text(stored.details)}
        out.append((stored.id, *values.values(), stored.tsv_keyed))
    return out


def _insert(db: DbSession, rows: Sequence[MessageRow]) -> list[InsertedMessage]:
    """A small batch as one multi-row insert (the statement is the same whatever its size)."""
    if not rows:
        return []
    rows = sorted(rows, key=_key)
    values = []
    for row, stored in zip(rows, _stored(db, rows, ids=False), strict=True):
        value = {**row._asdict(), "content": stored.content, "details": stored.details}
        value["tsv_keyed"] = stored.tsv_keyed
        values.append(value if stored.id is None else {"id": stored.id, **value})
    inserted = insert_ignore(
        db,
        Message,
        values,
        ["namespace", "session_id", "message_id"],
        returning=["namespace", "session_id", "message_id", "created_at"],
    )
    return [
        InsertedMessage(row.namespace, row.session_id, row.message_id, row.created_at)
        for row in inserted
    ]


def _copied_as_new_session(conn: psycopg.Connection[Any], rows: Sequence[StoredRow]) -> bool:
    """COPY `rows` (one session's, in key order, no key twice) straight into `messages` if
    that session has no rows; False, with nothing written, when it has."""
    key = rows[0][1:3]
    if any(row[1:3] != key for row in rows):
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


def _insert_copied(db: DbSession, rows: Sequence[MessageRow]) -> list[InsertedMessage]:
    """A large batch by COPY: straight in for a new session, else through the staging table."""
    if not rows:
        return []
    ordered = sorted(rows, key=_key)  # stable: file order kept
    kept = [row for i, row in enumerate(ordered) if i == 0 or _key(row) != _key(ordered[i - 1])]
    staged = stored_rows(db, kept)
    if _copied_as_new_session(driver_connection(db), staged):
        return [InsertedMessage(*_key(row), row.created_at) for row in kept]
    with driver_connection(db).cursor() as cur:
        cur.execute(CREATE_STAGE)
        with cur.copy(COPY_STAGE) as copy:
            for row in staged:
                copy.write_row(row)
        cur.execute(INSERT_FROM_STAGE)
        return [InsertedMessage(*row) for row in cur.fetchall()]


# How a session row already there is widened by a batch (`excluded`: the batch's values).
_WIDEN_SESSION = {
    "channel": "coalesce(sessions.channel, excluded.channel)",
    "user_id": "coalesce(sessions.user_id, excluded.user_id)",
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
_END_SESSION = {  # a batch that ends its session
    **_WIDEN_SESSION,
    "status": "'ended'",
    "ended_at": "greatest(sessions.ended_at, excluded.ended_at, sessions.last_activity_at, "
    "excluded.last_activity_at)",
    "end_reason": "coalesce(sessions.end_reason, excluded.end_reason)",
}


def _upsert_sessions(
    db: DbSession, sessions: Sequence[SessionFacts], counts: Counter[tuple[str, str]]
) -> None:
    """Create or widen each session row, in key order; `ended_at` never precedes
    `last_activity_at`."""
    for ends, group in itertools.groupby(
        sorted(sessions, key=lambda facts: (facts.ended_at is not None, facts.key)),
        key=lambda facts: facts.ended_at is not None,
    ):
        rows: list[dict[str, Any]] = []
        for facts in group:
            row = {
                "namespace": facts.namespace,
                "session_id": facts.session_id,
                "channel": facts.channel,
                "user_id": facts.user_id,
                "source": facts.source,
                "model": facts.model,
                "started_at": facts.started_at,
                "last_activity_at": facts.last_activity_at,
                "message_count": counts[facts.key],
                "details": facts.details,
            }
            if ends:
                row.update(status="ended", ended_at=facts.ended_at, end_reason=facts.end_reason)
            rows.append(row)
        widen = _END_SESSION if ends else _WIDEN_SESSION
        insert_rows(db, Session, rows, conflict=["namespace", "session_id"], update=widen)
