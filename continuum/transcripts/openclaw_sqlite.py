"""OpenClaw's SQLite transcript store (`agents/<agentId>/agent/openclaw-agent.sqlite`): where
stores are, and reading their events.

Opened read-only; events are resumed per session by `seq` and parsed with the same entry
logic as JSONL files (`OpenClawParser.feed_lines`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path

from continuum.transcripts.discovery import Discovery, TranscriptSource
from continuum.transcripts.lines import EntryParser, Line, TranscriptVanished
from continuum.transcripts.models import ParseResult
from continuum.transcripts.openclaw_layout import agent_dirs

KIND = "openclaw_sqlite"
STORE_NAME = "openclaw-agent.sqlite"
TABLE = "transcript_events"
REQUIRED_COLUMNS = frozenset({"session_id", "seq", "event_json", "created_at"})


class StoreLayoutError(RuntimeError):
    """The SQLite file does not have the expected `transcript_events` table."""


@dataclass(frozen=True)
class StoredEvent:
    """One row of `transcript_events`: an OpenClaw entry as JSON text."""

    session_id: str
    seq: int
    event_json: str
    created_at: int | None

    def as_line(self) -> Line:
        """The event as a parser line numbered by its seq (no byte offset)."""
        return Line(text=self.event_json, offset=None, number=self.seq)


@contextmanager
def open_store(path: Path) -> Iterator[sqlite3.Connection]:
    """A read-only connection to a store whose layout has been checked."""
    if not path.is_file():
        raise TranscriptVanished(2, "transcript store vanished", str(path))
    uri = f"{path.resolve().as_uri()}?mode=ro"
    with closing(sqlite3.connect(uri, uri=True)) as conn:
        verify_layout(conn, path)
        yield conn


def verify_layout(conn: sqlite3.Connection, path: Path) -> None:
    """Raise `StoreLayoutError` unless `transcript_events` has the expected columns."""
    try:
        tables = {
            row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
        }
    except sqlite3.DatabaseError as exc:
        raise StoreLayoutError(f"{path} is not a readable SQLite database: {exc}") from exc
    if TABLE not in tables:
        raise StoreLayoutError(f"{path} has no {TABLE} table (tables: {sorted(tables) or 'none'})")
    columns = {row[1] for row in conn.execute(f"PRAGMA table_info({TABLE})")}
    missing = REQUIRED_COLUMNS - columns
    if missing:
        raise StoreLayoutError(
            f"{path}: {TABLE} lacks columns {sorted(missing)} (has {sorted(columns)})"
        )


def session_heads(path: Path) -> dict[str, int]:
    """The highest seq of every session in the store."""
    with open_store(path) as conn:
        rows = conn.execute(f"SELECT session_id, MAX(seq) FROM {TABLE} GROUP BY session_id")
        return {str(session_id): int(seq) for session_id, seq in rows}


def session_head(path: Path, session_id: str) -> int:
    """The highest seq of one session in the store (0 when it has none)."""
    with open_store(path) as conn:
        row = conn.execute(f"SELECT MAX(seq) FROM {TABLE} WHERE session_id = ?", (session_id,))
        return int(row.fetchone()[0] or 0)


def read_events(
    path: Path, session_id: str, after_seq: int = 0, limit: int | None = None
) -> list[StoredEvent]:
    """A session's events with seq greater than `after_seq`, in seq order."""
    query = (
        f"SELECT session_id, seq, event_json, created_at FROM {TABLE}"
        " WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?"
    )
    with open_store(path) as conn:
        rows = conn.execute(query, (session_id, after_seq, -1 if limit is None else limit))
        return [
            StoredEvent(str(sid), int(seq), str(event), created)
            for sid, seq, event, created in rows
        ]


def parse_events(parser: EntryParser, events: list[StoredEvent]) -> ParseResult:
    """Parse stored events; errors carry the event's seq as `line_no`."""
    if parser.state.session_id is None and events:
        parser.state.session_id = events[0].session_id
    return parser.feed_lines(event.as_line() for event in events)


def discover_stores(found: Discovery) -> None:
    """The store of every OpenClaw agent that has one (one source for all its sessions)."""
    for instance, agent in agent_dirs(found):
        store = agent / "agent" / STORE_NAME
        if store.is_file():
            found.sources.append(
                TranscriptSource(
                    kind=KIND,
                    instance=instance,
                    agent_id=agent.name,
                    path=store,
                    session_id=None,
                )
            )
