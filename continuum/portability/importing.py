"""Importing an archive (`continuum.portability.archive`) into a tenant: all of it or none.

The archive is read twice: once whole, checked (`archive.validate`: a truncated, altered,
malformed or newer-version archive is refused before anything is written), then again to
write it, in one transaction, so an error anywhere (a broken connection, a row the database
refuses) leaves the tenant as it was.

Each row is written as the tenant's writers write it: an encrypted tenant's text sealed under
its owner's key there (the user's, else the tenant's) and bound to the new row (ids drawn
before the insert), with keyed full-text terms and keyed topic tags; raw turns through the
conversation writer (`continuum.conversations.writer`: its privacy rule, secret redaction,
sealing and keyed terms); a forgotten user's rows are not written. Vectors are not in the
archive: imported messages and memories wait in the embedding outbox, and the embed task is
sent once the import commits (the beat sweep does it otherwise).

Importing twice is importing once: every row is found again by its key (a session or cron
report by its session id, a message by session and message id, a memory by its idempotency
key, a task by its id) and a row already there is left as it is. The keys a tenant's own
writers derive are kept where they can be: a document's key follows from its path in the
target (so the LangGraph store finds it), any other memory keeps the archive's key (keyed
for an encrypted target when the archive holds a plain digest); a task keeps its id (task
ids are unique per tenant, so another tenant holding the same one is no conflict).
"""

from __future__ import annotations

import itertools
import logging
import re
from collections.abc import Callable, Iterator, Sequence
from typing import IO, Any, Protocol

from sqlalchemy import select, text
from sqlalchemy.orm import Session as DbSession

from continuum.config import get_settings
from continuum.contract.dispatch import send
from continuum.contract.queues import EMBED_PENDING
from continuum.conversations.writer import MessageRow, write
from continuum.domain.records import ImportReport
from continuum.domain.secrets import redact
from continuum.memory.documents import locator
from continuum.memory.writer import stored_digest
from continuum.portability.archive import (
    RECORD_TYPES,
    ArchiveRefused,
    CronReportRecord,
    Header,
    Manifest,
    MemoryRecord,
    MessageRecord,
    Record,
    SessionRecord,
    TaskRecord,
    memory_links,
    records,
    validate,
)
from continuum.sealing.envelope import (
    COMPACTION_KIND,
    SEALED_JSON,
    seal,
    seal_details,
    seal_json,
    seal_optional,
)
from continuum.sealing.terms import stored_tags, terms_for
from continuum.sealing.tombstones import guard_users
from continuum.store.bulk import allocate_ids, insert_ignore, insert_rows
from continuum.store.engine import session_scope
from continuum.store.models import CronReport, Memory, MemoryLog, Session, UserTask

log = logging.getLogger(__name__)
BATCH = 500  # records per statement
KEYED_DIGEST = re.compile(r"[0-9a-f]{16}")  # an idempotency key keyed already (`stored_digest`)


class ImportProgress(Protocol):
    """What an import tells its caller as it goes."""

    def checked(self, size: int) -> None:
        """`size` more bytes of the archive were read and checked."""

    def started(self, records: int) -> None:
        """The archive is sound; `records` records are to be written."""

    def imported(self, records: int) -> None:
        """`records` more records were written (or found there already)."""


def _per_type() -> dict[str, int]:
    """A count per record type, in archive order (the report's counters start at 0)."""
    return {kind: 0 for kind in RECORD_TYPES}


def _lines(file: IO[bytes], progress: ImportProgress | None) -> Iterator[bytes]:
    file.seek(0)
    for raw in file:
        if progress is not None:
            progress.checked(len(raw))
        yield raw


def check(file: IO[bytes], progress: ImportProgress | None = None) -> tuple[Header, Manifest]:
    """Read the whole archive and check it; ArchiveRefused says what is wrong."""
    return validate(_lines(file, progress))


def import_archive(
    file: IO[bytes], namespace: str | None = None, *, progress: ImportProgress | None = None
) -> ImportReport:
    """Import the archive in `file` (seekable, binary) into `namespace` (default: the one
    it was exported from); nothing of it when it is refused (`ArchiveRefused`)."""
    header, manifest = check(file, progress)
    target = namespace or header.namespace
    try:
        get_settings().check_namespace(target)
    except ValueError as exc:
        raise ArchiveRefused(str(exc)) from None
    report = ImportReport(
        namespace=target,
        source=header.namespace,
        user=header.user,
        records=manifest.records,
        inserted=_per_type(),
        existing=_per_type(),
        skipped=_per_type(),
    )
    if progress is not None:
        progress.started(manifest.records)
    file.seek(0)
    with session_scope() as db:
        writer = _Importer(db, target, report)
        stream = (item for item in records(file) if not isinstance(item, Header | Manifest))
        for kind, group in itertools.groupby(stream, key=lambda record: record.type):
            # memories name each other (what superseded them): they are written together
            for batch in [list(group)] if kind == "memory" else _chunks(group, BATCH):
                writer.write(kind, batch)
                if progress is not None:
                    progress.imported(len(batch))
        db.add(MemoryLog(namespace=target, action="import", trigger="import",
                         details=report.model_dump(mode="json")))  # fmt: skip
    if report.inserted["message"] or report.inserted["memory"]:
        try:
            send(EMBED_PENDING)
        except Exception as exc:  # imported; the beat's sweep embeds them within a minute
            log.warning("imported rows wait for the embedding sweep: %s", exc)
    return report


def _chunks(items: Iterator[Any], size: int) -> Iterator[list[Any]]:
    while chunk := list(itertools.islice(items, size)):
        yield chunk


def target_key(namespace: str, key: str) -> str:
    """A memory's idempotency key from an archive, as `namespace` stores it: a plain digest
    keyed for an encrypted tenant, anything else as it is."""
    if get_settings().is_encrypted(namespace) and not KEYED_DIGEST.fullmatch(key):
        return stored_digest(namespace, key)
    return key


class _Importer:
    """Writes an archive's records into one tenant inside the caller's transaction."""

    def __init__(self, db: DbSession, namespace: str, report: ImportReport) -> None:
        self.db, self.namespace, self.report = db, namespace, report
        self.encrypted = get_settings().is_encrypted(namespace)

    def write(self, kind: str, batch: Sequence[Any]) -> None:
        allowed = self._allowed(batch)
        if kind == "message" and get_settings().is_private(self.namespace):
            allowed = []  # a private tenant's turns are never stored
        self.report.skipped[kind] += len(batch) - len(allowed)
        if not allowed:
            return
        writers: dict[str, Callable[[Any], int]] = {
            "session": self._sessions,
            "message": self._messages,
            "memory": self._memories,
            "task": self._tasks,
            "cron_report": self._cron_reports,
        }
        inserted = writers[kind](allowed)
        self.report.inserted[kind] += inserted
        self.report.existing[kind] += len(allowed) - inserted

    def _allowed(self, batch: Sequence[Record]) -> list[Any]:
        """The records not of a user forgotten in the target (whose rows no writer writes)."""
        users = {getattr(record, "user_id", None) for record in batch}
        gone = guard_users(self.db, self.namespace, users)
        return [record for record in batch if getattr(record, "user_id", None) not in gone]

    def _values(self, record: Record, *skipped: str) -> dict[str, Any]:
        values = record.model_dump(exclude={"type", *skipped})
        return {"namespace": self.namespace, **values}

    def _sessions(self, batch: Sequence[SessionRecord]) -> int:
        rows = []
        for record in batch:
            row = self._values(record)
            compactions = row["details"].get("compactions")
            if self.encrypted and isinstance(compactions, list):
                row["details"]["compactions"] = [
                    {"compaction_id": item.get("compaction_id")}
                    | seal_json(self.namespace, None, COMPACTION_KIND, item, record.session_id)
                    if isinstance(item, dict) and SEALED_JSON not in item
                    else item
                    for item in compactions
                ]
            rows.append(row)
        inserted = insert_rows(
            self.db, Session, rows, conflict=["namespace", "session_id"], returning=["id"]
        )
        return len(inserted)

    def _messages(self, batch: Sequence[MessageRecord]) -> int:
        rows = [MessageRow(**self._values(record)) for record in batch]
        return len(write(self.db, [], rows, copy=True))

    def _memories(self, batch: Sequence[MemoryRecord]) -> int:
        keys = {record.ref: self._memory_key(record) for record in batch}
        ordered = sorted(set(keys.values()))
        if len(ordered) != len(keys):
            raise ArchiveRefused("two memories of the archive have one idempotency key")
        found: dict[str, int] = {}
        for start in range(0, len(ordered), BATCH):
            chunk = ordered[start : start + BATCH]
            there = self.db.execute(
                select(Memory.idempotency_key, Memory.id).where(
                    Memory.namespace == self.namespace, Memory.idempotency_key.in_(chunk)
                )
            )
            found.update((key, row_id) for key, row_id in there)
        new = [record for record in batch if keys[record.ref] not in found]
        drawn = sorted(allocate_ids(self.db, Memory, len(new)))  # archive order is id order
        ids = {record.ref: found[keys[record.ref]] for record in batch if keys[record.ref] in found}
        ids |= {record.ref: row_id for record, row_id in zip(new, drawn, strict=True)}
        rows = [self._memory_row(record, ids[record.ref], keys[record.ref], ids) for record in new]
        texts = [f"{row['key'] or ''} {row['content']}" for row in rows]
        for row, terms in zip(rows, terms_for(self.db, self.namespace, texts), strict=True):
            row["tsv_keyed"] = terms
            self._seal_memory(row)
        # what superseded a memory may come later: linked once every row is in (its key)
        links = {row["id"]: row.pop("superseded_by") for row in rows}
        inserted: list[int] = []
        for start in range(0, len(rows), BATCH):
            part = rows[start : start + BATCH]
            written = insert_ignore(self.db, Memory, part, ["namespace", "idempotency_key"], ["id"])
            inserted += [row.id for row in written]
        linked = [(row_id, links[row_id]) for row_id in inserted if links[row_id] is not None]
        if linked:
            self.db.execute(
                text(
                    "UPDATE memories SET superseded_by = v.s FROM unnest("
                    "CAST(:ids AS bigint[]), CAST(:sups AS bigint[])) AS v(i, s) WHERE id = v.i"
                ),
                {"ids": [i for i, _ in linked], "sups": [s for _, s in linked]},
            )
        return len(inserted)

    def _memory_key(self, record: MemoryRecord) -> str:
        if record.kind != "document":
            if record.idempotency_key is None:
                raise ArchiveRefused(f"memory {record.ref} has no idempotency key")
            return target_key(self.namespace, record.idempotency_key)
        document = record.details.get("document")
        if not isinstance(document, dict) or not isinstance(document.get("path"), list):
            raise ArchiveRefused(f"document memory {record.ref} has no details.document.path")
        return locator(self.namespace, tuple(document["path"]), str(document.get("key")))

    def _memory_row(
        self, record: MemoryRecord, row_id: int, key: str, ids: dict[int, int]
    ) -> dict[str, Any]:
        row = self._values(record, "ref")
        row.update(id=row_id, idempotency_key=key, tags=stored_tags(self.namespace, record.tags))
        row["superseded_by"] = ids.get(record.superseded_by) if record.superseded_by else None
        for name, ref in memory_links(record.details).items():
            if ref in ids:
                row["details"][name] = ids[ref]
            else:
                del row["details"][name]  # a forgotten user's memory, not written
        if get_settings().redact_secrets:
            row["content"] = redact(row["content"]).text
            if row["claim_value"] is not None:
                row["claim_value"] = redact(row["claim_value"]).text
        return row

    def _seal_memory(self, row: dict[str, Any]) -> None:
        if not self.encrypted:
            return
        owner, row_id = (self.namespace, row["user_id"]), row["id"]
        row["content"] = seal(*owner, "memories.content", row["content"], row_id)
        row["details"] = seal_details(*owner, row["details"], row_id)
        row["claim_value"] = seal_optional(
            *owner, "memories.claim_value", row["claim_value"], row_id
        )

    def _tasks(self, batch: Sequence[TaskRecord]) -> int:
        there = set(
            self.db.scalars(
                select(UserTask.task_id).where(
                    UserTask.namespace == self.namespace,
                    UserTask.task_id.in_([record.task_id for record in batch]),
                )
            )
        )
        new = [record for record in batch if record.task_id not in there]
        rows = []
        for record, row_id in zip(new, allocate_ids(self.db, UserTask, len(new)), strict=True):
            owner = (self.namespace, record.user_id)
            row = self._values(record)
            row.update(
                id=row_id,
                task_id=record.task_id,
                title=seal(*owner, "tasks.title", record.title, row_id),
                description=seal_optional(*owner, "tasks.description", record.description, row_id),
            )
            rows.append(row)
        return len(insert_ignore(self.db, UserTask, rows, ["namespace", "task_id"], ["id"]))

    def _cron_reports(self, batch: Sequence[CronReportRecord]) -> int:
        terms = terms_for(self.db, self.namespace, [record.summary for record in batch])
        rows = []
        for record, keyed in zip(batch, terms, strict=True):
            row = self._values(record)
            row["summary"] = seal(self.namespace, None, "cron_reports.summary", record.summary,
                                  record.session_id, deterministic=True)  # fmt: skip
            row["tsv_keyed"] = keyed
            rows.append(row)
        return len(insert_ignore(self.db, CronReport, rows, ["namespace", "session_id"], ["id"]))
