"""SQLAlchemy 2 models of every table. The schema itself is owned by the Alembic migrations
in `continuum/store/migrations`; these classes mirror it for typed queries and bulk writes."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

from pgvector.sqlalchemy import HALFVEC
from sqlalchemy import (
    ARRAY,
    BigInteger,
    Boolean,
    ColumnElement,
    Computed,
    DateTime,
    Float,
    Integer,
    LargeBinary,
    SmallInteger,
    Text,
    TypeDecorator,
    UniqueConstraint,
    case,
    cast,
    func,
    literal_column,
    type_coerce,
)
from sqlalchemy.dialects.postgresql import JSONB, TSVECTOR, UUID
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from continuum.config import get_settings

_T = TypeVar("_T")
EMBEDDING_DIM = get_settings().embedding_dim
TSV_MESSAGES = "to_tsvector('english'::regconfig, coalesce(content, ''))"
TSV_MEMORIES = (
    "to_tsvector('english'::regconfig, coalesce(key, '') || ' ' || coalesce(content, ''))"
)
# Since 0012: an encrypted tenant's row brings its own keyed terms (`continuum.sealing.terms`).
TSV_MESSAGES_KEYED = f"coalesce(tsv_keyed, {TSV_MESSAGES})"
TSV_MEMORIES_KEYED = f"coalesce(tsv_keyed, {TSV_MEMORIES})"
# Since 0015: a cron report's terms, keyed for an encrypted tenant (its summary is sealed);
# the listing matches this very expression, which its index covers.
TSV_CRON_REPORTS = "coalesce(tsv_keyed, to_tsvector('english'::regconfig, summary))"
SEALED_PREFIX = "enc2:"  # a sealed value bound to its row (`continuum.sealing.envelope`)
LEGACY_SEALED_PREFIX = "enc1:"  # sealed before rows were bound: still opens, never written
SEALED_PREFIXES = (SEALED_PREFIX, LEGACY_SEALED_PREFIX)
ROW_MARK = "@"  # a sealed value as read: `@` and its row's identity in hex follow it

RowKey = int | str  # a row's identity in a seal: its id, or its unique key where upserted


def is_sealed(value: object) -> bool:
    """Whether a stored value is sealed text (either format)."""
    return isinstance(value, str) and value.startswith(SEALED_PREFIXES)


def _sql(value: str) -> ColumnElement[Any]:
    """A constant written into the statement (no parameter: ORM bulk inserts read their
    RETURNING through these expressions, and refuse expanding parameters)."""
    return literal_column("'" + value.replace("'", "''") + "'")


def _bound(value: ColumnElement[Any], row: ColumnElement[Any]) -> ColumnElement[Any]:
    """`value` with its row's identity appended: `@` and the identity in hex (nothing in
    hex can be mistaken for the mark)."""
    row_hex = func.encode(func.convert_to(cast(row, Text), _sql("UTF8")), _sql("hex"))
    return value + _sql(ROW_MARK) + row_hex


def _is_sealed(value: ColumnElement[Any]) -> ColumnElement[bool]:
    prefix = func.left(value, literal_column(str(len(SEALED_PREFIX))))
    return prefix.in_([_sql(sealed) for sealed in SEALED_PREFIXES])


def _row_column(column: Any, name: str) -> Any:
    """The column `name` of the table (or alias) `column` is read from; None when the
    column is not read straight from its table (a subquery's, say)."""
    table = getattr(column, "table", None)
    columns = getattr(table, "c", None)
    return columns[name] if columns is not None and name in columns else None


class SealedReaders:
    """How sealed columns read back: `continuum.sealing.envelope` registers its decoders
    here when it is imported (the store sits below sealing, whose keys live in its tables).
    Any code that can have written a sealed value has imported sealing; a sealed value read
    without a decoder is refused rather than shown as ciphertext. A decoder is given the
    value, its kind and its row (None: the one the read attached, see `SealedText`)."""

    text: Callable[[str, str, RowKey | None], str] | None = None
    details: Callable[[dict[str, Any], str, RowKey | None], dict[str, Any]] | None = None

    @classmethod
    def register(
        cls,
        text: Callable[[str, str, RowKey | None], str],
        details: Callable[[dict[str, Any], str, RowKey | None], dict[str, Any]],
    ) -> None:
        cls.text, cls.details = text, details

    @staticmethod
    def missing() -> RuntimeError:
        return RuntimeError(
            "a sealed value was read before any decoder was registered: import "
            "continuum.sealing.envelope before reading an encrypted tenant's rows"
        )


class _RowBound(TypeDecorator[_T]):
    """A column whose seals are bound to their row (`row`: the column holding its identity,
    the id unless the row is upserted), so a value cannot be opened as another row's. A
    SELECT or RETURNING of the column therefore reads the row's identity with it, from the
    same row in the same statement (`column_expression`): a sealed value comes back with `@`
    and that identity in hex appended, which the decoder strips and opens it with. A column
    not read straight from its table (a subquery's) comes back unbound, and a sealed value
    in it is refused by the decoder. Raw SQL reads select the identity themselves and pass
    it to the decoder."""

    def __init__(self, kind: str, row: str = "id") -> None:
        super().__init__()
        self.kind, self.row = kind, row

    def column_expression(self, column: Any) -> Any:
        row = _row_column(column, self.row)
        if row is None:
            return column
        return type_coerce(self._read_with(column, row), self)

    def _read_with(self, column: Any, row: Any) -> ColumnElement[Any]:
        """The column's value as read: sealed, with `row`'s identity appended."""
        raise NotImplementedError


class SealedText(_RowBound[str]):
    """Text that may be stored sealed (`continuum.sealing.envelope`): read back as plaintext.
    Writers seal explicitly, since sealing needs the row's tenant, user and identity."""

    impl = Text
    cache_ok = True  # SQLAlchemy reads it from each class's own body

    def _read_with(self, column: Any, row: Any) -> ColumnElement[Any]:
        raw = type_coerce(column, Text)
        return case((_is_sealed(raw), _bound(raw, row)), else_=raw)

    def process_result_value(self, value: str | None, dialect: Any) -> str | None:
        if value is None or not value.startswith(SEALED_PREFIXES):
            return value
        # A damaged value reads as UNREADABLE: code that writes opened text again opens it
        # raw, strictly.
        if SealedReaders.text is None:
            raise SealedReaders.missing()
        return SealedReaders.text(value, self.kind, None)


SEALED_JSON = "sealed"  # the one key of a JSON value stored sealed


class SealedDetails(_RowBound[dict[str, Any]]):
    """JSONB details whose content-bearing keys may be stored sealed under `"sealed"`
    (`continuum.sealing.envelope.seal_details`): read back merged, as plaintext (the row's
    identity appended to the sealed text under `"sealed"`)."""

    impl = JSONB
    cache_ok = True

    def _read_with(self, column: Any, row: Any) -> ColumnElement[Any]:
        raw = type_coerce(column, JSONB)
        sealed = type_coerce(raw.op("->>")(_sql(SEALED_JSON)), Text)
        path = _sql("{" + SEALED_JSON + "}")
        bound = func.jsonb_set(raw, path, func.to_jsonb(_bound(sealed, row)))
        return case((_is_sealed(sealed), bound), else_=raw)

    def process_result_value(self, value: Any, dialect: Any) -> Any:
        if not isinstance(value, dict) or not is_sealed(value.get(SEALED_JSON)):
            return value
        if SealedReaders.details is None:
            raise SealedReaders.missing()
        return SealedReaders.details(value, self.kind, None)


class Base(DeclarativeBase):
    pass


def _now() -> Any:
    return mapped_column(DateTime(timezone=True), server_default=func.now(), nullable=False)


# The per-tenant tables that grow with traffic are hash-partitioned on the tenant (migration
# 0018, `continuum.store.partitions`): their keys carry `namespace`, the row id first, so a
# lookup by id alone still reads each partition's key index (one probe per partition) while
# one that names the tenant reads one partition.
BY_TENANT = {"postgresql_partition_by": "HASH (namespace)"}


def _row_id() -> Any:
    """The id of a partitioned table's row: the first part of its key, from its sequence."""
    return mapped_column(BigInteger, primary_key=True, autoincrement=True)


def _tenant() -> Any:
    """The namespace of a partitioned table's row: the partition key, part of every key."""
    return mapped_column(Text, primary_key=True)


class Session(Base):
    __tablename__ = "sessions"
    __table_args__ = (UniqueConstraint("namespace", "session_id"), BY_TENANT)

    id: Mapped[int] = _row_id()
    namespace: Mapped[str] = _tenant()
    session_id: Mapped[str] = mapped_column(Text)
    channel: Mapped[str | None] = mapped_column(Text)
    user_id: Mapped[str | None] = mapped_column(Text)
    source: Mapped[str] = mapped_column(Text, server_default="event")
    model: Mapped[str | None] = mapped_column(Text)
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    last_activity_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    ended_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    end_reason: Mapped[str | None] = mapped_column(Text)
    status: Mapped[str] = mapped_column(Text, server_default="active")
    message_count: Mapped[int] = mapped_column(Integer, server_default="0")
    details: Mapped[dict[str, Any]] = mapped_column(JSONB, server_default="{}")
    created_at: Mapped[datetime] = _now()


class Message(Base):
    __tablename__ = "messages"
    __table_args__ = (UniqueConstraint("namespace", "session_id", "message_id"), BY_TENANT)

    id: Mapped[int] = _row_id()
    namespace: Mapped[str] = _tenant()
    session_id: Mapped[str] = mapped_column(Text)
    message_id: Mapped[str] = mapped_column(Text)
    parent_id: Mapped[str | None] = mapped_column(Text)
    role: Mapped[str] = mapped_column(Text)
    content: Mapped[str] = mapped_column(SealedText("messages.content"))
    channel: Mapped[str | None] = mapped_column(Text)
    user_id: Mapped[str | None] = mapped_column(Text)
    sender: Mapped[str | None] = mapped_column(Text)
    source: Mapped[str] = mapped_column(Text, server_default="event")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    ingested_at: Mapped[datetime] = _now()
    event_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    details: Mapped[dict[str, Any]] = mapped_column(
        SealedDetails("messages.details"), server_default="{}"
    )
    tsv_keyed: Mapped[Any] = mapped_column(TSVECTOR, nullable=True)
    tsv: Mapped[Any] = mapped_column(TSVECTOR, Computed(TSV_MESSAGES_KEYED, persisted=True))
    embedding: Mapped[Any] = mapped_column(HALFVEC(EMBEDDING_DIM), nullable=True)


class CronReport(Base):
    __tablename__ = "cron_reports"
    __table_args__ = (UniqueConstraint("namespace", "session_id"), BY_TENANT)

    id: Mapped[int] = _row_id()
    namespace: Mapped[str] = _tenant()
    cron_name: Mapped[str] = mapped_column(Text)
    session_id: Mapped[str] = mapped_column(Text)
    # bound to the report's session (the row is upserted: its id is not known before)
    summary: Mapped[str] = mapped_column(SealedText("cron_reports.summary", row="session_id"))
    tsv_keyed: Mapped[Any] = mapped_column(TSVECTOR, nullable=True)
    run_started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    run_ended_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    event_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    created_at: Mapped[datetime] = _now()


class TranscriptCursor(Base):
    __tablename__ = "transcript_cursors"

    source_path: Mapped[str] = mapped_column(Text, primary_key=True)
    namespace: Mapped[str] = mapped_column(Text)
    source_kind: Mapped[str] = mapped_column(Text)
    session_id: Mapped[str | None] = mapped_column(Text)
    inode: Mapped[int | None] = mapped_column(BigInteger)
    size: Mapped[int] = mapped_column(BigInteger, server_default="0")
    mtime: Mapped[float] = mapped_column(Float, server_default="0")
    byte_offset: Mapped[int] = mapped_column(BigInteger, server_default="0")
    seq: Mapped[int] = mapped_column(BigInteger, server_default="0")
    archived: Mapped[bool] = mapped_column(Boolean, server_default="false")
    details: Mapped[dict[str, Any]] = mapped_column(JSONB, server_default="{}")
    updated_at: Mapped[datetime] = _now()


class SyncProblem(Base):
    """A bad line, event or source found by transcript sync (`continuum.sync.problems`)."""

    __tablename__ = "sync_problems"
    __table_args__ = (UniqueConstraint("source_path", "location", "kind"),)

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    namespace: Mapped[str] = mapped_column(Text)
    source_path: Mapped[str] = mapped_column(Text)
    location: Mapped[str] = mapped_column(Text)
    kind: Mapped[str] = mapped_column(Text)
    detail: Mapped[str] = mapped_column(Text)
    line_no: Mapped[int | None] = mapped_column(BigInteger)
    byte_offset: Mapped[int | None] = mapped_column(BigInteger)
    session_id: Mapped[str | None] = mapped_column(Text)
    seq: Mapped[int | None] = mapped_column(BigInteger)
    run_id: Mapped[str] = mapped_column(Text)
    first_seen_at: Mapped[datetime] = _now()
    last_seen_at: Mapped[datetime] = _now()
    resolved_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class Memory(Base):
    __tablename__ = "memories"
    __table_args__ = (UniqueConstraint("namespace", "idempotency_key"), BY_TENANT)

    id: Mapped[int] = _row_id()
    namespace: Mapped[str] = _tenant()
    user_id: Mapped[str | None] = mapped_column(Text)
    kind: Mapped[str] = mapped_column(Text)
    key: Mapped[str | None] = mapped_column(Text)
    content: Mapped[str] = mapped_column(SealedText("memories.content"))
    details: Mapped[dict[str, Any]] = mapped_column(
        SealedDetails("memories.details"), server_default="{}"
    )
    tags: Mapped[list[str]] = mapped_column(ARRAY(Text), server_default="{}")
    importance: Mapped[int] = mapped_column(SmallInteger, server_default="5")
    confidence: Mapped[float] = mapped_column(Float, server_default="0.7")
    provenance: Mapped[str] = mapped_column(Text, server_default="inference")
    trust: Mapped[int] = mapped_column(SmallInteger, server_default="2")
    claim_subject: Mapped[str | None] = mapped_column(Text)
    claim_predicate: Mapped[str | None] = mapped_column(Text)
    claim_value: Mapped[str | None] = mapped_column(SealedText("memories.claim_value"))
    claim_scope: Mapped[str | None] = mapped_column(Text)
    valid_from: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    valid_until: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    status: Mapped[str] = mapped_column(Text, server_default="active")
    superseded_by: Mapped[int | None] = mapped_column(BigInteger)
    private: Mapped[bool] = mapped_column(Boolean, server_default="false")
    version: Mapped[int] = mapped_column(Integer, server_default="1")
    corroboration: Mapped[int] = mapped_column(Integer, server_default="1")
    session_id: Mapped[str | None] = mapped_column(Text)
    channel: Mapped[str | None] = mapped_column(Text)
    source_message_ids: Mapped[list[str]] = mapped_column(ARRAY(Text), server_default="{}")
    trigger: Mapped[str] = mapped_column(Text, server_default="turn")
    idempotency_key: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = _now()
    updated_at: Mapped[datetime] = _now()
    last_accessed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    access_count: Mapped[int] = mapped_column(Integer, server_default="0")
    tsv_keyed: Mapped[Any] = mapped_column(TSVECTOR, nullable=True)
    tsv: Mapped[Any] = mapped_column(TSVECTOR, Computed(TSV_MEMORIES_KEYED, persisted=True))
    embedding: Mapped[Any] = mapped_column(HALFVEC(EMBEDDING_DIM), nullable=True)


class UserTask(Base):
    __tablename__ = "tasks"
    __table_args__ = (UniqueConstraint("namespace", "task_id"), BY_TENANT)

    id: Mapped[int] = _row_id()
    namespace: Mapped[str] = _tenant()
    task_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), server_default=func.gen_random_uuid()
    )
    user_id: Mapped[str | None] = mapped_column(Text)
    title: Mapped[str] = mapped_column(SealedText("tasks.title"))
    description: Mapped[str | None] = mapped_column(SealedText("tasks.description"))
    status: Mapped[str] = mapped_column(Text, server_default="pending")
    created_channel: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = _now()
    due_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    completed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    tags: Mapped[list[str]] = mapped_column(ARRAY(Text), server_default="{}")


class MemoryLog(Base):
    __tablename__ = "memory_log"
    __table_args__ = (BY_TENANT,)

    id: Mapped[int] = _row_id()
    namespace: Mapped[str] = _tenant()
    action: Mapped[str] = mapped_column(Text)
    memory_id: Mapped[int | None] = mapped_column(BigInteger)
    trigger: Mapped[str | None] = mapped_column(Text)
    details: Mapped[dict[str, Any]] = mapped_column(JSONB, server_default="{}")
    created_at: Mapped[datetime] = _now()


class DeadLetter(Base):
    __tablename__ = "dead_letters"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    namespace: Mapped[str | None] = mapped_column(Text)
    task_name: Mapped[str] = mapped_column(Text)
    task_id: Mapped[str | None] = mapped_column(Text)
    payload: Mapped[Any] = mapped_column(JSONB)
    reason: Mapped[str] = mapped_column(Text)
    error: Mapped[str | None] = mapped_column(Text)
    attempts: Mapped[int] = mapped_column(Integer, server_default="1")
    created_at: Mapped[datetime] = _now()


class ProcessedEvent(Base):
    __tablename__ = "processed_events"
    __table_args__ = (BY_TENANT,)

    namespace: Mapped[str] = mapped_column(Text, primary_key=True)
    event_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    kind: Mapped[str] = mapped_column(Text)
    session_id: Mapped[str] = mapped_column(Text)
    ts: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    processed_at: Mapped[datetime] = _now()


class SystemState(Base):
    __tablename__ = "system_state"

    key: Mapped[str] = mapped_column(Text, primary_key=True)
    value: Mapped[Any] = mapped_column(JSONB)
    updated_at: Mapped[datetime] = _now()


class ApiToken(Base):
    __tablename__ = "api_tokens"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    name: Mapped[str] = mapped_column(Text)
    namespaces: Mapped[list[str]] = mapped_column(ARRAY(Text))
    token_hash: Mapped[str] = mapped_column(Text, unique=True)
    ops: Mapped[bool] = mapped_column(Boolean, server_default="false")  # global figures too
    created_at: Mapped[datetime] = _now()
    last_used_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class MaintenanceRun(Base):
    """One weekly maintenance run of a tenant: its planned steps, how many are applied (a
    rerun resumes there) and the report."""

    __tablename__ = "maintenance_runs"
    __table_args__ = (UniqueConstraint("namespace", "week", "attempt"),)

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    namespace: Mapped[str] = mapped_column(Text)
    week: Mapped[str] = mapped_column(Text)
    attempt: Mapped[int] = mapped_column(Integer, server_default="1")
    status: Mapped[str] = mapped_column(Text, server_default="running")
    plan: Mapped[list[dict[str, Any]]] = mapped_column(JSONB, server_default="[]")
    applied: Mapped[int] = mapped_column(Integer, server_default="0")
    report: Mapped[dict[str, Any]] = mapped_column(JSONB, server_default="{}")
    started_at: Mapped[datetime] = _now()
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class DataKey(Base):
    """A data key of a tenant (`user_id` NULL) or user, wrapped by a KEK (`continuum.sealing.keys`);
    `wrapped` is NULL once destroyed (crypto-shredded), `retired_at` set once superseded."""

    __tablename__ = "data_keys"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    namespace: Mapped[str] = mapped_column(Text)
    user_id: Mapped[str | None] = mapped_column(Text)
    purpose: Mapped[str] = mapped_column(Text)
    version: Mapped[int] = mapped_column(Integer)
    wrapped: Mapped[bytes | None] = mapped_column(LargeBinary)
    kek_id: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = _now()
    retired_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    destroyed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class ForgetTombstone(Base):
    """A forgotten user (`continuum forget`): when, and the verification report."""

    __tablename__ = "forget_tombstones"
    __table_args__ = (UniqueConstraint("namespace", "user_id"),)

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    namespace: Mapped[str] = mapped_column(Text)
    user_id: Mapped[str] = mapped_column(Text)
    requested_at: Mapped[datetime] = _now()
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    report: Mapped[dict[str, Any]] = mapped_column(JSONB, server_default="{}")


class LlmCall(Base):
    """One call to the LLM endpoint (`continuum.inference.usage`): its outcome is `ok`,
    `repaired`, `fallback` (still invalid after the repair), `error` or `timeout`."""

    __tablename__ = "llm_calls"
    __table_args__ = (BY_TENANT,)

    id: Mapped[int] = _row_id()
    namespace: Mapped[str] = _tenant()
    session_id: Mapped[str | None] = mapped_column(Text)
    model: Mapped[str] = mapped_column(Text)
    prompt: Mapped[str] = mapped_column(Text)
    prompt_version: Mapped[str] = mapped_column(Text)
    outcome: Mapped[str] = mapped_column(Text)
    requests: Mapped[int] = mapped_column(SmallInteger)
    prompt_tokens: Mapped[int] = mapped_column(Integer, server_default="0")
    completion_tokens: Mapped[int] = mapped_column(Integer, server_default="0")
    latency_ms: Mapped[int] = mapped_column(Integer)
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = _now()
