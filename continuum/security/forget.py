"""Forgetting a user, provably (R47): `continuum forget --namespace NS --user U`.

In order:
1. a tombstone is recorded under the user's exclusive forget lock, so every writer that
   checked before has committed (and is deleted below) and every later one is refused;
2. the user's data keys are destroyed (crypto-shredding: their wrapped bytes are erased, so
   every copy of their sealed rows, backups included, becomes unreadable);
3. their rows are deleted from every store: messages, memories (with their vectors; the
   preferences among them are counted on their own), tasks, sessions, memory-log entries,
   dead letters naming them, Redis state, and the workspace's narrative lines and
   `MEMORY.md` entries that mention their memories or are sealed under their keys;
4. every store is scanned again, and the report (found, removed, remaining per store) is
   kept in the tombstone.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session as DbSession

from continuum.domain.records import ForgetReport, StoreCounts
from continuum.domain.text import one_line
from continuum.ephemeral.erase import remove_user_state, user_state
from continuum.maintenance.workspace import memory_md_path
from continuum.pipeline.deadletters import payload_of
from continuum.pipeline.narrative import rewrite_locked, workspace, workspace_file
from continuum.sealing.entries import open_line
from continuum.sealing.envelope import key_id_of
from continuum.sealing.keys import keyring
from continuum.sealing.tombstones import lock_user
from continuum.store import lsn_tokens
from continuum.store.engine import session_scope
from continuum.store.models import (
    DataKey,
    DeadLetter,
    ForgetTombstone,
    Memory,
    MemoryLog,
    Message,
    Session,
    UserTask,
    is_sealed,
)

MIN_MENTION_CHARS = 12  # shorter texts are too common to say a line is about the user


def _tombstone(namespace: str, user_id: str) -> None:
    with session_scope() as db:
        lock_user(db, namespace, user_id, exclusive=True)
        db.execute(
            insert(ForgetTombstone)
            .values(namespace=namespace, user_id=user_id)
            .on_conflict_do_update(
                index_elements=["namespace", "user_id"],
                set_={"requested_at": func.now(), "finished_at": None},
            )
        )


def _shred(namespace: str, user_id: str) -> int:
    with session_scope() as db:
        destroyed = db.execute(
            update(DataKey)
            .where(
                DataKey.namespace == namespace,
                DataKey.user_id == user_id,
                DataKey.wrapped.is_not(None),
            )
            .values(
                wrapped=None,
                destroyed_at=func.now(),
                retired_at=func.coalesce(DataKey.retired_at, func.now()),
            )
        )
    keyring.forget(namespace, user_id)
    return int(destroyed.rowcount or 0)  # type: ignore[attr-defined]


def _names_user(value: Any, user_id: str, depth: int = 0) -> bool:
    """Whether a dead letter's payload holds an event (or anything) of `user_id`."""
    if depth > 5:
        return False
    if isinstance(value, dict):
        if value.get("user_id") == user_id:
            return True
        return any(_names_user(item, user_id, depth + 1) for item in value.values())
    if isinstance(value, list):
        return any(_names_user(item, user_id, depth + 1) for item in value)
    return False


class _Rows:
    """The user's rows in each Postgres store, as (store, model, ids)."""

    def __init__(self, db: DbSession, namespace: str, user_id: str) -> None:
        self.db, self.namespace, self.user_id = db, namespace, user_id

    def _ids(self, model: Any, *where: Any) -> list[int]:
        query = select(model.id).where(model.namespace == self.namespace, *where)
        return list(self.db.scalars(query))

    def scan(self) -> dict[str, tuple[Any, list[int]]]:
        mine = [Memory.user_id == self.user_id]
        memories = self._ids(Memory, *mine)
        logs = self._ids(
            MemoryLog,
            (MemoryLog.memory_id.in_(memories))
            | (MemoryLog.details["user_id"].astext == self.user_id),
        )
        dead = [
            row.id
            for row in self.db.scalars(
                select(DeadLetter).where(
                    (DeadLetter.namespace == self.namespace) | DeadLetter.namespace.is_(None)
                )
            )
            if _names_user(payload_of(row)[0], self.user_id)
        ]
        return {
            "messages": (Message, self._ids(Message, Message.user_id == self.user_id)),
            "vectors": (
                Memory,
                self._ids(Memory, *mine, Memory.embedding.is_not(None))
                + self._ids(
                    Message, Message.user_id == self.user_id, Message.embedding.is_not(None)
                ),
            ),
            "preferences": (Memory, self._ids(Memory, *mine, Memory.kind == "preference")),
            "memories": (Memory, memories),
            "tasks": (UserTask, self._ids(UserTask, UserTask.user_id == self.user_id)),
            "sessions": (Session, self._ids(Session, Session.user_id == self.user_id)),
            "memory_log": (MemoryLog, logs),
            "dead_letters": (DeadLetter, dead),
        }


def _user_keys(db: DbSession, namespace: str, user_id: str) -> set[int]:
    """Every data key the user ever had (destroyed ones too): what their entries name."""
    where = (DataKey.namespace == namespace, DataKey.user_id == user_id)
    return set(db.scalars(select(DataKey.id).where(*where)))


def _mentions(db: DbSession, namespace: str, user_id: str) -> set[str]:
    """Texts whose presence in a workspace line makes it about the user: each memory's
    content and first sentence (a session's activity line is its summary's first one)."""
    texts = db.scalars(
        select(Memory.content).where(Memory.namespace == namespace, Memory.user_id == user_id)
    )
    found = set()
    for content in texts:
        for piece in (content, content.split(". ")[0].rstrip(".")):
            piece = one_line(piece)
            if len(piece) >= MIN_MENTION_CHARS:
                found.add(piece)
    return found


def workspace_files(namespace: str) -> list[Path]:
    """The tenant's narrative files on this host: activity log, `MEMORY.md`, daily notes."""
    root = workspace(namespace)
    files = [root / "activity-log.md", memory_md_path(namespace)]
    files += sorted((root / "memory").glob("*.md"))
    return [path for path in files if path.exists()]


# A daily note's entries open with `## HH:MM`; a sealed entry is one line of its own.
_ENTRY_START = re.compile(r"(?m)^(?=## |enc[12]:)")


def _entries(path: Path, data: str | None = None) -> list[str]:
    """The file's entries (of `data`, its text as read, else read now)."""
    data = path.read_text(encoding="utf-8") if data is None else data
    if path.parent.name == "memory":
        return [entry for entry in _ENTRY_START.split(data) if entry]
    return data.splitlines(keepends=True)


@dataclass(frozen=True)
class _Traces:
    """What makes a workspace entry the user's: sealed under one of their data keys (found
    by its key id even once the key is destroyed), or mentioning one of their memories."""

    mentions: set[str]
    keys: set[int]

    def about(self, namespace: str, path: Path, entry: str) -> bool:
        if is_sealed(entry.strip()):
            if key_id_of(entry.strip()) in self.keys:
                return True
            entry = open_line(entry, workspace_file(namespace, path))
        flat = one_line(entry)
        return any(mention in flat for mention in self.mentions)


def _scan_files(namespace: str, traces: _Traces) -> int:
    return sum(
        traces.about(namespace, path, entry)
        for path in workspace_files(namespace)
        for entry in _entries(path)
    )


def _rewrite_files(namespace: str, traces: _Traces) -> int:
    """Remove the user's entries from each file in place, under the lock appends take (an
    append meanwhile is kept); how many were removed."""
    removed = 0

    def without_theirs(path: Path) -> Callable[[str], str]:
        def rewrite(data: str) -> str:
            nonlocal removed
            entries = _entries(path, data)
            kept = [entry for entry in entries if not traces.about(namespace, path, entry)]
            removed += len(entries) - len(kept)
            return "".join(kept)

        return rewrite

    for path in workspace_files(namespace):
        rewrite_locked(path, without_theirs(path))
    return removed


def forget_user(namespace: str, user_id: str) -> ForgetReport:
    """Forget `user_id` of `namespace` everywhere; returns the verification report."""
    _tombstone(namespace, user_id)
    with session_scope() as db:  # what to look for in files, read before the keys go
        traces = _Traces(_mentions(db, namespace, user_id), _user_keys(db, namespace, user_id))
        session_ids = list(
            db.scalars(
                select(Session.session_id).where(
                    Session.namespace == namespace, Session.user_id == user_id
                )
            )
        )
    keys = _shred(namespace, user_id)
    stores: dict[str, StoreCounts] = {}
    with session_scope() as db:
        lsn_tokens.wrote(db, [namespace])
        # vectors and preferences are columns and rows of the memories and messages deleted
        for store, (model, ids) in _Rows(db, namespace, user_id).scan().items():
            stores[store] = StoreCounts(found=len(ids), removed=len(ids))
            if store not in ("vectors", "preferences") and ids:
                # the tenant's partition; a dead letter may name no tenant (plain table)
                scope = [] if model is DeadLetter else [model.namespace == namespace]
                db.execute(delete(model).where(*scope, model.id.in_(ids)))
    redis_found = user_state(namespace, user_id, session_ids)
    stores["redis"] = StoreCounts(
        found=len(redis_found), removed=remove_user_state(namespace, redis_found)
    )
    stores["workspace_files"] = StoreCounts(
        found=_scan_files(namespace, traces), removed=_rewrite_files(namespace, traces)
    )
    with session_scope() as db:  # the re-scan
        for store, (_, ids) in _Rows(db, namespace, user_id).scan().items():
            stores[store].remaining = len(ids)
    stores["redis"].remaining = len(user_state(namespace, user_id, session_ids))
    stores["workspace_files"].remaining = _scan_files(namespace, traces)
    report = ForgetReport(
        namespace=namespace,
        user_id=user_id,
        keys_destroyed=keys,
        stores=stores,
        finished_at=datetime.now(UTC),
        complete=all(store.remaining == 0 for store in stores.values()),
    )
    with session_scope() as db:
        db.execute(
            update(ForgetTombstone)
            .where(ForgetTombstone.namespace == namespace, ForgetTombstone.user_id == user_id)
            .values(finished_at=func.now(), report=report.model_dump(mode="json"))
        )
    return report
