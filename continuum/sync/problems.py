"""Sync problems (table `sync_problems`): where bad input is, kept after the run that found it.

One row per problem, keyed by source, location and kind: a line of a JSONL file (location
`line-<n>`, with its line number and byte offset; `byte-<offset>` when the line number is
unknown, in a file first read before line numbers were counted), an event of a SQLite store
(`<session_id>#<seq>`), or a whole source (`file`: a compressed or unreadable file, a
directory that cannot be listed, a store of the wrong layout). A file that cannot be read
at all is one problem, never one per "line". Seeing a problem again moves its
`last_seen_at` and `run_id`; reading a source again from its start first resolves its rows
(`resolved_at`), so the problems of a fixed file close and those still there reopen.

A private tenant's problems (`Settings.is_private`) keep their kind and location but not
their detail (`for_tenant`): a detail can quote its input (an entry's type, a refused value).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import cast

from pydantic import ConfigDict
from sqlalchemy import Table, func, select, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session as DbSession
from sqlalchemy.sql.elements import ColumnElement

from continuum.config import get_settings
from continuum.domain.records import SyncProblemRecord
from continuum.domain.storable import clean_text
from continuum.store.models import SyncProblem

WHOLE_SOURCE = "file"
WITHHELD = "detail withheld (private tenant): open the source at this location to see it"


@dataclass(frozen=True)
class Found:
    """One problem and where it is: a file line, a store event, or (neither) the source."""

    kind: str
    detail: str
    line_no: int | None = None
    byte_offset: int | None = None
    session_id: str | None = None
    seq: int | None = None

    @property
    def location(self) -> str:
        """The problem's place in its source, stable across runs."""
        if self.seq is not None:
            return f"{self.session_id}#{self.seq}"
        if self.line_no is not None:
            return f"line-{self.line_no}"
        if self.byte_offset is not None:
            return f"byte-{self.byte_offset}"
        return WHOLE_SOURCE


def for_tenant(namespace: str, found: Found) -> Found:
    """`found` as the tenant's problem may be kept, shown and logged: a private tenant's
    detail is withheld, its kind and location stay."""
    if not get_settings().is_private(namespace):
        return found
    return replace(found, detail=WITHHELD)


def record(db: DbSession, run_id: str, namespace: str, path: str, found: Iterable[Found]) -> None:
    """Insert or refresh (reopening if resolved) the problems of one source."""
    rows = {
        (f.location, f.kind): {
            "namespace": namespace,
            "source_path": clean_text(path),
            "location": f.location,
            "kind": f.kind,
            "detail": clean_text(f.detail),
            "line_no": f.line_no,
            "byte_offset": f.byte_offset,
            "session_id": f.session_id,
            "seq": f.seq,
            "run_id": run_id,
        }
        for f in found
    }
    if not rows:
        return
    stmt = insert(SyncProblem).values(list(rows.values()))
    new = stmt.excluded
    db.execute(
        stmt.on_conflict_do_update(
            index_elements=["source_path", "location", "kind"],
            set_={
                "detail": new.detail,
                "line_no": new.line_no,
                "byte_offset": new.byte_offset,
                "run_id": new.run_id,
                "last_seen_at": func.now(),
                "resolved_at": None,
            },
        )
    )


def resolve(
    db: DbSession,
    paths: Collection[str],
    *,
    session_id: str | None = None,
    whole_source: bool = False,
    not_run: str | None = None,
) -> None:
    """Close the open problems of sources (of one of their sessions; or only the problems
    of the whole source; or only those not seen by run `not_run`), before they are read
    again or once they were read fine."""
    if not paths:
        return
    table = cast(Table, SyncProblem.__table__)  # Core: this runs for every batch read
    problem = table.c
    where: list[ColumnElement[bool]] = [
        problem.source_path.in_(paths),
        problem.resolved_at.is_(None),
    ]
    if session_id is not None:
        where.append(problem.session_id == session_id)
    if whole_source:
        where.append(problem.location == WHOLE_SOURCE)
    if not_run is not None:
        where.append(problem.run_id != not_run)
    db.execute(update(table).where(*where).values(resolved_at=func.now()))


class Problem(SyncProblemRecord):
    """A stored problem, as the CLI and the API show it (read from its row)."""

    model_config = ConfigDict(from_attributes=True, extra="ignore")


def listing(
    db: DbSession,
    *,
    namespaces: Collection[str] | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    run_id: str | None = None,
    include_resolved: bool = False,
    limit: int = 1000,
    offset: int = 0,
) -> list[Problem]:
    """Problems (of `namespaces`, or all; last seen in `since`..`until`), most recently
    seen first."""
    stmt = select(SyncProblem).order_by(
        SyncProblem.last_seen_at.desc(), SyncProblem.source_path, SyncProblem.id
    )
    if namespaces is not None:
        stmt = stmt.where(SyncProblem.namespace.in_(namespaces))
    if since is not None:
        stmt = stmt.where(SyncProblem.last_seen_at >= since)
    if until is not None:
        stmt = stmt.where(SyncProblem.last_seen_at < until)
    if run_id is not None:
        stmt = stmt.where(SyncProblem.run_id == run_id)
    if not include_resolved:
        stmt = stmt.where(SyncProblem.resolved_at.is_(None))
    rows = db.scalars(stmt.limit(limit).offset(offset))
    return [Problem.model_validate(row) for row in rows]


def open_counts(db: DbSession, namespaces: list[str] | None = None) -> dict[str, int]:
    """Unresolved problems by kind: in `namespaces`, or in every tenant."""
    stmt = select(SyncProblem.kind, func.count()).where(SyncProblem.resolved_at.is_(None))
    if namespaces is not None:
        stmt = stmt.where(SyncProblem.namespace.in_(namespaces))
    return {kind: count for kind, count in db.execute(stmt.group_by(SyncProblem.kind))}
