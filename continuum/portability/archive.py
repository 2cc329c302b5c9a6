"""The archive format: a tenant (or one user of it) as JSON Lines, and reading one back whole
before anything of it is written.

An archive is UTF-8 text, one JSON object a line, each written canonically (keys sorted, no
spaces, non-ASCII as is), so the same rows always give the same bytes:

- first a header: `{"format": "continuum-archive", "namespace": …, "type": "header",
  "user": …, "version": 1}`;
- then the records, one type after another in `RECORD_TYPES` order, each in a fixed order
  (`continuum.portability.exporting`), each with its `type`;
- last the manifest: `{"counts": {type: n, …}, "records": n, "sha256": …, "type":
  "manifest", "version": 1}`, the digest over every byte before the manifest line.

Reading (`validate`) takes a whole archive and refuses it, naming the line and what to do,
when a line is not canonical JSON of a known shape, the header names a newer version, the
manifest is missing (the file was cut short) or its counts or digest disagree, or a record
repeats another's key or names a memory the archive does not hold. Nothing is written
before the archive has been read to its end.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections import Counter
from collections.abc import Iterable, Iterator
from datetime import UTC
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, AwareDatetime, BaseModel, ConfigDict, Field, ValidationError

FORMAT: Literal["continuum-archive"] = "continuum-archive"
VERSION = 1
RecordType = Literal["session", "message", "memory", "task", "cron_report"]
RECORD_TYPES: tuple[RecordType, ...] = ("session", "message", "memory", "task", "cron_report")
# A time in UTC, whatever zone the database session read it in: the same row, the same bytes.
Time = Annotated[AwareDatetime, AfterValidator(lambda value: value.astimezone(UTC))]


class ArchiveRefused(ValueError):
    """An archive that is not imported, and why (what to do next is in the message)."""


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Header(_Record):
    type: Literal["header"] = "header"
    format: Literal["continuum-archive"] = FORMAT
    version: int = VERSION
    namespace: str = Field(min_length=1)
    user: str | None = None


class Manifest(_Record):
    type: Literal["manifest"] = "manifest"
    version: int = VERSION
    counts: dict[str, int]
    records: int
    sha256: str


class SessionRecord(_Record):
    """A row of `sessions` (its details with compaction summaries opened)."""

    type: Literal["session"] = "session"
    session_id: str
    channel: str | None
    user_id: str | None
    source: str
    model: str | None
    started_at: Time | None
    last_activity_at: Time | None
    ended_at: Time | None
    end_reason: str | None
    status: str
    message_count: int
    details: dict[str, Any]
    created_at: Time


class MessageRecord(_Record):
    """A raw turn of `messages`, opened."""

    type: Literal["message"] = "message"
    session_id: str
    message_id: str
    parent_id: str | None
    role: str
    content: str
    channel: str | None
    user_id: str | None
    sender: str | None
    source: str
    created_at: Time
    event_id: uuid.UUID | None
    details: dict[str, Any]


class MemoryRecord(_Record):
    """A memory (claims, preferences and documents are memories), opened, with its
    provenance. `ref` is its place in the archive (1, 2, …): `superseded_by` and the ids in
    its details (`conflicts_with`, `replaces`) name other memories by it. `idempotency_key`
    is None for a document, whose key follows from its path (`details.document`)."""

    type: Literal["memory"] = "memory"
    ref: int = Field(ge=1)
    kind: str
    key: str | None
    content: str
    details: dict[str, Any]
    tags: list[str]
    importance: int
    confidence: float
    provenance: str
    trust: int
    claim_subject: str | None
    claim_predicate: str | None
    claim_value: str | None
    claim_scope: str | None
    valid_from: Time | None
    valid_until: Time | None
    status: str
    superseded_by: int | None
    private: bool
    version: int
    corroboration: int
    session_id: str | None
    channel: str | None
    user_id: str | None
    source_message_ids: list[str]
    trigger: str
    idempotency_key: str | None
    created_at: Time
    updated_at: Time
    last_accessed_at: Time | None
    access_count: int


class TaskRecord(_Record):
    """A user's task (or a suggested one), opened."""

    type: Literal["task"] = "task"
    task_id: uuid.UUID
    user_id: str | None
    title: str
    description: str | None
    status: str
    created_channel: str | None
    created_at: Time
    due_at: Time | None
    completed_at: Time | None
    tags: list[str]


class CronReportRecord(_Record):
    """A cron run's report, opened."""

    type: Literal["cron_report"] = "cron_report"
    session_id: str
    cron_name: str
    summary: str
    run_started_at: Time | None
    run_ended_at: Time | None
    event_at: Time | None
    created_at: Time


Record = SessionRecord | MessageRecord | MemoryRecord | TaskRecord | CronReportRecord
MODELS: dict[str, type[Record]] = {
    "session": SessionRecord,
    "message": MessageRecord,
    "memory": MemoryRecord,
    "task": TaskRecord,
    "cron_report": CronReportRecord,
}


def line(record: BaseModel) -> bytes:
    """A record as its archive line: canonical JSON and a newline."""
    data = record.model_dump(mode="json")
    return (
        json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n"
    ).encode()


class Lines:
    """An archive's lines as they are made: the header, each record, then the manifest,
    hashing and counting them on the way."""

    def __init__(self) -> None:
        self.digest = hashlib.sha256()
        self.counts: Counter[str] = Counter({kind: 0 for kind in RECORD_TYPES})

    def header(self, namespace: str, user: str | None) -> bytes:
        data = line(Header(namespace=namespace, user=user))
        self.digest.update(data)
        return data

    def record(self, record: Record) -> bytes:
        data = line(record)
        self.digest.update(data)
        self.counts[record.type] += 1
        return data

    def manifest(self) -> Manifest:
        return Manifest(
            counts=dict(self.counts),
            records=sum(self.counts.values()),
            sha256=self.digest.hexdigest(),
        )


def _parsed(number: int, raw: bytes) -> dict[str, Any]:
    """Line `number` as a JSON object, or ArchiveRefused naming it."""
    if not raw.endswith(b"\n"):
        raise ArchiveRefused(
            f"line {number} ends without a newline: the archive is truncated; export it again"
        )
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ArchiveRefused(
            f"line {number} is not JSON ({exc}): the archive is damaged; export it again"
        ) from None
    if not isinstance(data, dict):
        raise ArchiveRefused(f"line {number} is not a JSON object: the archive is damaged")
    return data


def _model(number: int, model: type[BaseModel], data: dict[str, Any]) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "line"
        raise ArchiveRefused(
            f"line {number} ({data.get('type')}): {where}: {first['msg']}: the archive is "
            "damaged or not a Continuum archive"
        ) from None


def _header(raw: bytes | None) -> Header:
    if raw is None:
        raise ArchiveRefused("the archive is empty: export it again")
    data = _parsed(1, raw)
    if data.get("type") != "header" or data.get("format") != FORMAT:
        raise ArchiveRefused(f"line 1 is not a {FORMAT} header: this is not a Continuum archive")
    version = data.get("version")
    if isinstance(version, int) and version > VERSION:
        raise ArchiveRefused(
            f"the archive is format version {version}, newer than this Continuum reads "
            f"({VERSION}): upgrade Continuum to import it"
        )
    header: Header = _model(1, Header, data)
    if header.version != VERSION:
        raise ArchiveRefused(f"format version {header.version} is unknown (this reads {VERSION})")
    return header


def records(lines: Iterable[bytes]) -> Iterator[Header | Record | Manifest]:
    """Every line parsed and checked on its own: the header, the records, the manifest.
    Whole-archive checks are `validate`'s."""
    numbered = enumerate(lines, start=1)
    first = next(numbered, None)
    yield _header(first[1] if first else None)
    for number, raw in numbered:
        data = _parsed(number, raw)
        kind = data.get("type")
        if kind == "manifest":
            yield _model(number, Manifest, data)
        elif isinstance(kind, str) and kind in MODELS:
            yield _model(number, MODELS[kind], data)
        else:
            raise ArchiveRefused(f"line {number}: unknown record type {kind!r}")


class _Keys:
    """The keys seen so far, to refuse a record that repeats one."""

    def __init__(self) -> None:
        self.seen: set[tuple[Any, ...]] = set()

    def add(self, number: int, record: Record) -> None:
        key = _key(record)
        if key in self.seen:
            raise ArchiveRefused(f"line {number}: {record.type} {key[1:]} appears twice")
        self.seen.add(key)


def _key(record: Record) -> tuple[Any, ...]:
    """What makes a record other than a memory unique in its archive."""
    if isinstance(record, MessageRecord):
        return (record.type, record.session_id, record.message_id)
    if isinstance(record, TaskRecord):
        return (record.type, record.task_id)
    return (record.type, record.session_id)


def _references(record: MemoryRecord) -> list[int]:
    """The refs a memory names: what supersedes it, and the ids in its details."""
    named = [record.superseded_by] if record.superseded_by is not None else []
    return named + [value for value in memory_links(record.details).values()]


LINKED_DETAILS = ("conflicts_with", "replaces")  # memory details holding another memory's id


def memory_links(details: dict[str, Any]) -> dict[str, int]:
    """The details of a memory that name another memory (by id, or by ref in an archive)."""
    return {
        name: details[name]
        for name in LINKED_DETAILS
        if isinstance(details.get(name), int) and not isinstance(details.get(name), bool)
    }


def validate(lines: Iterable[bytes]) -> tuple[Header, Manifest]:
    """Read a whole archive; its header and manifest, or ArchiveRefused saying what is wrong
    with it (nothing of a refused archive may be imported). Each line is made again as export
    makes it (`Lines`), so the manifest it must match also refuses a line that is not
    canonical JSON."""
    made = Lines()
    keys = _Keys()
    named: set[int] = set()
    order = 0
    header: Header | None = None
    manifest: Manifest | None = None
    for number, item in enumerate(records(lines), start=1):
        if manifest is not None:
            raise ArchiveRefused(f"line {number} follows the manifest: the archive is damaged")
        if isinstance(item, Header):
            header = item
            made.header(item.namespace, item.user)
        elif isinstance(item, Manifest):
            manifest = item
        else:
            rank = RECORD_TYPES.index(item.type)
            if rank < order:
                raise ArchiveRefused(
                    f"line {number}: a {item.type} after the {RECORD_TYPES[order]}s"
                )
            order = rank
            made.record(item)
            if isinstance(item, MemoryRecord):  # keyed by its ref, which must run 1, 2, …
                if item.ref != made.counts["memory"]:
                    raise ArchiveRefused(f"line {number}: memory ref {item.ref} is out of order")
                named.update(_references(item))
            else:
                keys.add(number, item)
    assert header is not None  # `records` yields it first or raises
    if manifest is None:
        raise ArchiveRefused(
            "the archive has no manifest at its end: it is truncated; export it again"
        )
    if manifest.version != header.version:
        raise ArchiveRefused("the manifest's version is not the header's: the archive is damaged")
    expected = made.manifest()
    if manifest.counts != expected.counts or manifest.records != expected.records:
        raise ArchiveRefused(
            f"the archive holds {expected.counts} but its manifest says {manifest.counts}: it "
            "is damaged; export it again"
        )
    if manifest.sha256 != expected.sha256:
        raise ArchiveRefused(
            "the archive's checksum does not match its manifest: it was altered or damaged; "
            "export it again"
        )
    # memory refs run 1, 2, … (checked above): a named ref past the last is missing
    if missing := sorted(ref for ref in named if not 1 <= ref <= made.counts["memory"]):
        raise ArchiveRefused(f"memories name refs the archive does not hold: {missing[:5]}")
    return header, manifest
