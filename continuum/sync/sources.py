"""Reading one transcript source into the database, one transaction per batch.

Each transaction takes the source's advisory lock, re-reads its committed cursor and the
file's size (another run, beat's or the watcher's, may have read past what was seen before
the lock: that is new reading done, never a shrunk file to read again), reads the next batch
of complete lines (JSONL, by byte offset) or events (SQLite, by seq),
parses it with the restored `ParserState`, writes messages, session row, compactions
and cron report, and moves the cursor — all or nothing (R75). Counting and the capture
feed happen only after the commit.

A private tenant's transcript (`Settings.is_private`) is read, counted and its cursor moved,
but none of its text is kept: no messages (the conversation writer drops them), no
compaction summaries, no cron report, no last assistant text in the cursor's parser context,
and its problems without their detail (`problems.for_tenant`). Its session row (ids, times,
model, working directory: no text) is kept, as the evented door keeps it.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session as DbSession

from continuum.config import get_settings
from continuum.conversations import writer as conversation
from continuum.conversations.writer import InsertedMessage, SessionFacts
from continuum.store.engine import session_scope
from continuum.sync import cursors, problems
from continuum.sync.cron import upsert_report
from continuum.sync.cursors import Cursor, CursorOwner, FileStat
from continuum.sync.problems import Found
from continuum.sync.rows import add_compactions, message_rows, session_exists
from continuum.transcripts import (
    ParseError,
    ParseResult,
    ParserState,
    TranscriptSource,
    binary_format,
    format_of,
    load_sessions_index,
    parser_for,
    read_complete_lines,
)
from continuum.transcripts.formats import Reader
from continuum.transcripts.lines import DEFAULT_MAX_LINE_BYTES, LineBatch
from continuum.transcripts.openclaw_sqlite import (
    parse_events,
    read_events,
    session_head,
    session_heads,
)

DEFAULT_BATCH_LINES = 5_000


@dataclass
class Outcome:
    """What one committed batch did."""

    parsed: int = 0
    withheld: int = 0  # messages of a private tenant: read, never stored
    inserted: list[InsertedMessage] = field(default_factory=list)
    cron_reports: int = 0
    errors: list[Found] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)


@dataclass
class SourceReport:
    """What syncing one source did; batches already committed stay listed on failure."""

    read: bool = False
    restarted: int = 0
    partial_tail: bool = False
    outcomes: list[Outcome] = field(default_factory=list)


@dataclass(frozen=True)
class Options:
    """How sources are read: `backfill` ignores cursors and starts every source at 0."""

    backfill: bool = False
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    batch_lines: int = DEFAULT_BATCH_LINES
    run_id: str = ""

    def skips(self, cursor: Cursor | None, stat: FileStat, extra: Any = None) -> bool:
        """True when the source need not be read: no backfill, unchanged since `cursor`."""
        return not self.backfill and cursor is not None and cursor.unchanged(stat, extra)


def session_facts(
    source: TranscriptSource, namespace: str, state: ParserState, channel: str | None
) -> SessionFacts:
    label = f"cron:{state.cron.slug}" if state.cron else format_of(source.kind).label
    details = {"cwd": state.cwd, "agent_id": source.agent_id}
    return SessionFacts(
        namespace=namespace,
        session_id=state.session_id or source.session_id or "",
        source=label,
        channel=channel or state.channel,
        model=state.model,
        started_at=state.started_at or state.first_entry_at,
        last_activity_at=state.last_entry_at,
        ended_at=state.last_entry_at if source.ends_session else None,
        end_reason="archived" if source.ends_session else None,
        details={key: value for key, value in details.items() if value},
    )


def stored_context(namespace: str, state: ParserState) -> dict[str, Any]:
    """The parser state as a cursor keeps it: a private tenant's without its last assistant
    text (it only feeds the cron report, which such a tenant does not get)."""
    exclude = {"last_assistant_text"} if get_settings().is_private(namespace) else None
    return state.model_dump(mode="json", exclude=exclude)


def apply_batch(
    db: DbSession,
    source: TranscriptSource,
    namespace: str,
    channel: str | None,
    result: ParseResult,
    state: ParserState,
    found: list[Found],
    run_id: str,
) -> Outcome:
    """Write one parsed batch and the problems `found` in it (in the caller's transaction);
    of a private tenant's batch, only its session row and its problems without detail."""
    private = get_settings().is_private(namespace)
    facts = session_facts(source, namespace, state, channel)
    extra = {"topic_id": source.topic_id} if source.topic_id else {}
    # never a session row without messages
    known = bool(result.messages) or session_exists(db, namespace, facts.session_id)
    rows = message_rows(facts, result.messages, extra)
    inserted = conversation.write(db, [facts] if known else [], rows, copy=True)
    found = [problems.for_tenant(namespace, f) for f in found]
    problems.record(db, run_id, namespace, str(source.path), found)
    outcome = Outcome(
        parsed=len(result.messages),
        withheld=len(result.messages) if private else 0,
        inserted=inserted,
        errors=found,
        skipped=Counter(result.skipped),
    )
    if private:
        return outcome
    add_compactions(db, namespace, facts.session_id, result.compactions)
    report = result.cron_report
    if report is not None:
        times = {m.message_id: m.created_at for m in result.messages}
        event_at = times.get(report.message_id)  # None: the report came in an earlier batch
        if event_at is not None and upsert_report(
            db, namespace, facts.session_id, report, event_at
        ):
            outcome.cron_reports = 1
    return outcome


def _located(error: ParseError, lines_before: int | None) -> Found:
    """A JSONL parse error at its line number in the whole file (its own is batch-relative;
    unknown when the cursor does not count lines: a cursor stored by an older version)."""
    line_no = None
    if lines_before is not None and error.line_no is not None:
        line_no = lines_before + error.line_no
    return Found(error.kind, error.detail, line_no=line_no, byte_offset=error.offset)


def _owner(source: TranscriptSource, namespace: str, session_id: str | None) -> CursorOwner:
    return CursorOwner(namespace, source.kind, session_id, source.archived)


def _resume_at(cursor: Cursor, path: Path, stat: FileStat) -> tuple[int, ParserState | None]:
    """Where to resume a JSONL file: the cursor, or 0 for a new, rewritten or shrunk file."""
    if cursor.byte_offset == 0 or not cursor.same_file(path, stat):
        return 0, None
    state = cursor.state()
    return (cursor.byte_offset, state) if state is not None else (0, None)


def sync_jsonl(
    options: Options,
    source: TranscriptSource,
    namespace: str,
    known: Cursor | None,
    report: SourceReport,
) -> None:
    """Read a JSONL transcript from its cursor (`report.read` stays False if unchanged)."""
    key, path = str(source.path), source.path
    stat = FileStat.of(path)
    if options.skips(known, stat):
        return
    first = True
    while True:
        with session_scope() as db:
            cursor = cursors.lock_and_load(db, key)
            stat = FileStat.of(path)  # under the lock: the cursor may be past the first stat
            if first and options.skips(cursor, stat):
                return  # another run read it meanwhile
            if first and options.backfill:
                offset, state = 0, None
            else:
                offset, state = _resume_at(cursor, path, stat)
                report.restarted += offset == 0 and cursor.byte_offset > 0
            lines: int | None = 0 if offset == 0 else cursor.details.get("lines")
            if offset == 0:
                problems.resolve(db, [key])
            binary = binary_format(path) if offset == 0 else cursor.details.get("binary")
            if binary is None:
                batch = read_complete_lines(
                    path, offset, options.max_line_bytes, max_lines=options.batch_lines
                )
            else:  # one problem for the whole file, not one per "line" of it
                batch = LineBatch(start_offset=offset, next_offset=stat.size)
            parser = parser_for(source, state)
            result = parser.feed(batch)
            found = [_located(error, lines) for error in result.errors]
            if binary is not None and offset == 0:
                found.append(Found("binary_file", f"{binary}, not JSONL text"))
            outcome = apply_batch(
                db,
                source,
                namespace,
                source.channel,
                result,
                parser.state,
                found,
                options.run_id,
            )
            head = min(batch.next_offset, cursors.HEAD_BYTES)
            cursor.byte_offset = batch.next_offset
            cursor.details = {
                "context": stored_context(namespace, parser.state),
                "head": {"length": head, "digest": cursors.head_digest(path, head)},
            }
            if lines is not None:
                cursor.details["lines"] = lines + batch.line_count
            if binary is not None:
                cursor.details["binary"] = binary
            cursors.save(db, cursor, _owner(source, namespace, parser.state.session_id), stat)
        report.read = True
        report.outcomes.append(outcome)
        first = False
        if batch.next_offset >= stat.size or batch.next_offset == offset:
            report.partial_tail = batch.partial_tail
            return


def wal_state(path: Path) -> list[float] | None:
    """Size and mtime of the store's write-ahead log (new rows may sit only there)."""
    try:
        stat = os.stat(f"{path}-wal")
    except FileNotFoundError:
        return None
    return [stat.st_size, stat.st_mtime]


def sync_store(
    options: Options,
    source: TranscriptSource,
    namespace: str,
    known: Cursor | None,
    report: SourceReport,
) -> None:
    """Read every session of an OpenClaw SQLite store from its seq."""
    key, path = str(source.path), source.path
    stat, wal = FileStat.of(path), wal_state(path)
    if options.skips(known, stat, wal):
        return
    channels = load_sessions_index(path.parent.parent / "sessions")
    for session_id, head in sorted(session_heads(path).items()):
        entry = channels.get(session_id)
        unit = _StoreSession(source, namespace, session_id, head, entry.channel if entry else None)
        unit.sync(options, report)
    with session_scope() as db:
        cursor = cursors.lock_and_load(db, key)
        cursor.details = {"extra": wal}
        cursors.save(db, cursor, _owner(source, namespace, None), stat)
    report.read = True


@dataclass(frozen=True)
class _StoreSession:
    source: TranscriptSource
    namespace: str
    session_id: str
    head: int
    channel: str | None

    def sync(self, options: Options, report: SourceReport) -> None:
        """Read the session's events after its cursor's seq, a batch per transaction."""
        key, fresh, head = f"{self.source.path}#{self.session_id}", options.backfill, self.head
        while True:
            with session_scope() as db:
                cursor = cursors.lock_and_load(db, key)
                if cursor.seq > head:  # another run read past the head seen before the lock?
                    head = session_head(self.source.path, self.session_id)
                state = None if fresh or cursor.seq > head else cursor.state()
                report.restarted += state is None and cursor.seq > 0 and not fresh
                after = cursor.seq if state is not None else 0
                if after >= head:
                    return
                events = read_events(self.source.path, self.session_id, after, options.batch_lines)
                if not events:
                    return
                if after == 0:
                    problems.resolve(db, [str(self.source.path)], session_id=self.session_id)
                parser = parser_for(self.source, state or ParserState(session_id=self.session_id))
                result = parse_events(parser, events)
                found = [  # a store event's `line_no` is its seq
                    Found(e.kind, e.detail, session_id=self.session_id, seq=e.line_no)
                    for e in result.errors
                ]
                outcome = apply_batch(
                    db,
                    self.source,
                    self.namespace,
                    self.channel,
                    result,
                    parser.state,
                    found,
                    options.run_id,
                )
                cursor.seq = events[-1].seq
                cursor.details = {"context": stored_context(self.namespace, parser.state)}
                owner = _owner(self.source, self.namespace, self.session_id)
                cursors.save(db, cursor, owner, None)
            report.outcomes.append(outcome)
            fresh = False
            if cursor.seq >= head:
                return


ReadSource = Callable[[Options, TranscriptSource, str, Cursor | None, SourceReport], None]
# How each reader of `continuum.transcripts.formats` syncs a source.
READERS: dict[Reader, ReadSource] = {"jsonl": sync_jsonl, "openclaw_store": sync_store}
