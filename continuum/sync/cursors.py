"""Transcript cursors: how far each source was read, and whether it changed since.

A JSONL file's cursor is its byte offset after the last complete line read, plus the
parser's `ParserState` (in `details`) so parsing resumes exactly where it stopped. A
SQLite store has one cursor for the whole file (its fingerprint) and one per session
(`<path>#<session_id>`, resumed by `seq`). Writers hold a per-source advisory lock for the
whole transaction, so two overlapping syncs can never both apply the same batch.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from sqlalchemy import select, text
from sqlalchemy.orm import Session as DbSession

from continuum.domain.storable import clean_json
from continuum.store.bulk import insert_rows
from continuum.store.models import TranscriptCursor
from continuum.transcripts import ParserState

HEAD_BYTES = 4096


@dataclass(frozen=True)
class FileStat:
    """What identifies a file's version cheaply: size, mtime and inode."""

    size: int
    mtime: float
    inode: int

    @classmethod
    def of(cls, path: Path) -> FileStat:
        """Stat `path` (raises FileNotFoundError if it is gone)."""
        stat = os.stat(path)
        return cls(stat.st_size, stat.st_mtime, stat.st_ino)


def head_digest(path: Path, length: int) -> str:
    """SHA-1 of the first `length` bytes: tells a rewritten file from an appended one."""
    with open(path, "rb") as handle:
        return hashlib.sha1(handle.read(length), usedforsecurity=False).hexdigest()


@dataclass
class Cursor:
    """A stored cursor, or a fresh one for a source never read."""

    key: str
    stat: FileStat | None = None
    byte_offset: int = 0
    seq: int = 0
    details: dict[str, Any] = field(default_factory=dict)

    def state(self) -> ParserState | None:
        """The parser state saved with the cursor, if any."""
        saved = self.details.get("context")
        try:
            return ParserState.model_validate(saved) if saved else None
        except ValidationError:
            return None

    def unchanged(self, stat: FileStat, extra: Any = None) -> bool:
        """True when `stat` (and `extra`, e.g. the WAL's stat) match what was read last."""
        return self.stat == stat and self.details.get("extra") == extra

    def same_file(self, path: Path, stat: FileStat) -> bool:
        """True when resuming at `byte_offset` is safe: same inode, not shrunk, same head."""
        if self.stat is None or self.stat.inode != stat.inode or stat.size < self.byte_offset:
            return False
        head = self.details.get("head")
        if not head:
            return True
        return bool(head_digest(path, int(head["length"])) == head["digest"])


# The committed cursor of a source, read after its lock is held.
_LOAD = text(
    "SELECT source_path, inode, size, mtime, byte_offset, seq, details "
    "FROM transcript_cursors WHERE source_path = :key"
)


def _from_row(row: Any) -> Cursor:
    stat = FileStat(row.size, row.mtime, row.inode) if row.inode is not None else None
    return Cursor(row.source_path, stat, row.byte_offset, row.seq, dict(row.details or {}))


def load_all(db: DbSession, keys: list[str] | None = None) -> dict[str, Cursor]:
    """Every stored cursor by key, or those of `keys` (for the fast unchanged-file check
    before any lock)."""
    stmt = select(TranscriptCursor)
    if keys is not None:
        stmt = stmt.where(TranscriptCursor.source_path.in_(keys))
    return {row.source_path: _from_row(row) for row in db.scalars(stmt)}


def lock_and_load(db: DbSession, key: str) -> Cursor:
    """Take the source's transaction-level advisory lock, then read its committed cursor.

    The transaction also commits without waiting for its WAL flush: the transcript on
    disk is the durable copy, and rows and cursor are committed together, so a crash
    can only lose a batch that the next run reads again.
    """
    db.execute(
        text(
            "SELECT set_config('synchronous_commit', 'off', true),"
            " pg_advisory_xact_lock(hashtextextended(:key, 0))"
        ),
        {"key": key},
    )
    row = db.execute(_LOAD, {"key": key}).first()
    return _from_row(row) if row is not None else Cursor(key)


@dataclass(frozen=True)
class CursorOwner:
    """Which namespace, kind and session a cursor belongs to."""

    namespace: str
    source_kind: str
    session_id: str | None
    archived: bool = False


def save(
    db: DbSession,
    cursor: Cursor,
    owner: CursorOwner,
    stat: FileStat | None,
) -> None:
    """Upsert the cursor (in the caller's transaction, beside the rows it covers)."""
    values: dict[str, Any] = {
        "source_path": cursor.key,
        "namespace": owner.namespace,
        "source_kind": owner.source_kind,
        "session_id": owner.session_id,
        "inode": stat.inode if stat else None,
        "size": stat.size if stat else 0,
        "mtime": stat.mtime if stat else 0.0,
        "byte_offset": cursor.byte_offset,
        "seq": cursor.seq,
        "archived": owner.archived,
        "details": clean_json(cursor.details),
    }
    updates = {name: f"excluded.{name}" for name in values if name != "source_path"}
    insert_rows(
        db,
        TranscriptCursor,
        [values],
        conflict=["source_path"],
        update={**updates, "updated_at": "now()"},
    )
