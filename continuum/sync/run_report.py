"""What a sync run did: the `SyncSummary` returned to callers, the progress reports, and
the last run's figures kept in `system_state` (`last_sync`) for `continuum status`.

Counters only grow; `record_error` keeps a few samples (path, kind, detail) so a report can
say where bad input was found without holding every error of a large backfill in memory.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import func
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session as DbSession

from continuum.store.models import SystemState

MAX_ERROR_SAMPLES = 20
LAST_RUN_KEY = "last_sync"
_LAST_RUN_FIELDS = (
    "run_id",
    "incomplete",
    "files_seen",
    "files_read",
    "files_failed",
    "messages_inserted",
    "messages_withheld",
    "sessions_ended",
    "errors",
    "seconds",
)


@dataclass(frozen=True)
class ErrorSample:
    """One problem found: its kind (`malformed_json`, `vanished`...), where, and why."""

    kind: str
    path: str
    detail: str
    offset: int | None = None
    line_no: int | None = None
    session_id: str | None = None
    seq: int | None = None


@dataclass
class SyncSummary:
    """Counts of one sync run. `locked` means another run held the lock and nothing was done."""

    run_id: str = ""
    locked: bool = False
    incomplete: bool = False
    files_seen: int = 0
    files_skipped: int = 0
    files_read: int = 0
    files_failed: int = 0
    files_restarted: int = 0
    messages_parsed: int = 0
    messages_inserted: int = 0
    messages_withheld: int = 0  # a private tenant's: read and counted, never stored
    duplicates: int = 0
    sessions: int = 0
    cron_reports: int = 0
    chunks_dispatched: int = 0
    sessions_ended: int = 0
    partial_lines: int = 0
    instances: list[str] = field(default_factory=list)
    views_created: list[str] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)
    skipped_entries: Counter[str] = field(default_factory=Counter)
    error_samples: list[ErrorSample] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def rate(self) -> float:
        """Messages inserted per second of the run."""
        return self.messages_inserted / self.seconds if self.seconds > 0 else 0.0

    def record_error(
        self,
        kind: str,
        path: Path | str,
        detail: str,
        offset: int | None = None,
        *,
        line_no: int | None = None,
        session_id: str | None = None,
        seq: int | None = None,
    ) -> None:
        """Count one problem of `kind`, keeping the first few as samples (every problem of
        the input is also kept in `sync_problems`: `continuum.sync.problems`)."""
        self.errors[kind] += 1
        if len(self.error_samples) < MAX_ERROR_SAMPLES:
            sample = ErrorSample(kind, str(path), detail, offset, line_no, session_id, seq)
            self.error_samples.append(sample)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (counters as plain dicts, rate rounded)."""
        data = asdict(self)
        data["errors"] = dict(self.errors)
        data["skipped_entries"] = dict(self.skipped_entries)
        data["seconds"] = round(self.seconds, 3)
        data["rate"] = round(self.rate, 1)
        return data


@dataclass(frozen=True)
class SyncProgress:
    """Reported after each source: how far the run is, and its summary so far."""

    done: int
    total: int
    path: Path
    summary: SyncSummary


def save_last_run(db: DbSession, summary: SyncSummary) -> None:
    """Keep the run's figures as the last sync (in the caller's transaction)."""
    data = summary.as_dict()
    value = {name: data[name] for name in _LAST_RUN_FIELDS}
    stmt = insert(SystemState).values(key=LAST_RUN_KEY, value=value)
    db.execute(
        stmt.on_conflict_do_update(
            index_elements=["key"], set_={"value": stmt.excluded.value, "updated_at": func.now()}
        )
    )
