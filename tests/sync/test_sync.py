"""Transcript sync against real Postgres and Redis: every message exactly once, whatever
happens to the files (appends, half-written lines, rewrites, archives, concurrent runs)."""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import sqlite3
import threading
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select, text

from continuum.contract.queues import EXTRACT_CHUNK, FINISH_SESSION
from continuum.redis_client import get_redis
from continuum.store.engine import session_scope
from continuum.store.models import Message, Session, TranscriptCursor
from continuum.sync import SyncProgress, cursors, namespace_for, sync
from continuum.sync.engine import LOCK_NAME, _bytes_to_read
from continuum.sync.sources import Options, SourceReport, _StoreSession, sync_jsonl
from continuum.transcripts import discover, parser_for, read_complete_lines
from tests.support.exactly_once import assert_exactly_once, expected_keys, stored_keys
from tests.support.transcripts import (
    FIXTURE_HOME,
    FIXTURE_MESSAGES,
    FIXTURE_PROBLEMS,
    OTHER_EVENTS,
    copy_home,
    live,
    make_store,
    message_line,
)
from tests.support.wait import wait_for, waiting_on_a_lock

SESSIONS = FIXTURE_HOME / ".openclaw" / "agents" / "main" / "sessions"
TELEGRAM = "b96c88e2-b875-4762-a8c3-fd495a27f5bd"
ENTREPRENEUR = "a1e2b3c4-d5f6-4789-8abc-def012345678"
ARCHIVED = "e4d5f6a7-b8c9-4d0e-a1f2-3b4c5d6e7f80"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return copy_home(tmp_path)


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """Capture tasks the sync would enqueue (our own dispatch function, not Redis)."""
    calls: list[tuple[Any, ...]] = []
    monkeypatch.setattr("continuum.contract.dispatch.send", lambda *args: calls.append(args))
    return calls


def cursor_of(path: Path) -> TranscriptCursor:
    with session_scope() as db:
        cursor = db.get(TranscriptCursor, str(path))
    assert cursor is not None
    return cursor


def test_first_sync_stores_every_message_once_and_the_next_skips_unchanged_files(
    db: Any, home: Path
) -> None:
    first = sync(home, feed_capture=False)
    assert (first.files_seen, first.files_read, first.files_failed) == (9, 9, 0)
    assert first.messages_inserted == FIXTURE_MESSAGES == first.messages_parsed
    assert first.partial_lines == 1  # the entrepreneur file's last line is still being written
    assert first.errors == FIXTURE_PROBLEMS
    assert first.skipped_entries["heartbeat"] == 2 and first.skipped_entries["delivery_mirror"] == 2
    assert_exactly_once(home)

    second = sync(home, feed_capture=False)
    assert (second.files_skipped, second.files_read, second.messages_inserted) == (9, 0, 0)
    assert len(stored_keys()) == FIXTURE_MESSAGES


def test_a_large_read_goes_through_worker_processes_with_the_same_result(
    db: Any, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("continuum.sync.engine.PROCESS_MIN_BYTES", 0)  # the fixture is small
    children: list[int] = []

    def count_children(progress: SyncProgress) -> None:
        children.append(len(multiprocessing.active_children()))

    first = sync(home, feed_capture=False, workers=2, progress=count_children)
    assert max(children) == 2  # read by the two spawned readers, not by threads
    assert (first.files_seen, first.files_read, first.files_failed) == (9, 9, 0)
    assert first.messages_inserted == FIXTURE_MESSAGES == first.messages_parsed
    assert first.partial_lines == 1
    assert first.errors == FIXTURE_PROBLEMS
    assert_exactly_once(home)
    assert sync(home, feed_capture=False, workers=2).messages_inserted == 0
    assert sync(home, backfill=True, feed_capture=False, workers=2).duplicates == FIXTURE_MESSAGES
    assert_exactly_once(home)


def test_a_batch_that_lost_a_race_for_its_new_session_is_run_again(db: Any, home: Path) -> None:
    """Another writer's uncommitted row of a session makes the sync's COPY of that new
    session wait; once it commits, the COPY fails (`SessionRaced`: the transaction is lost)
    and the source is read again in the same run, storing every other message once."""
    source = discover(None, home).sources[0]
    parser = parser_for(source)
    taken = parser.feed(read_complete_lines(source.path)).messages[0]
    namespace = namespace_for(source.instance)
    session_id = parser.state.session_id or source.session_id
    ran: dict[str, Any] = {}
    with session_scope() as other:
        other.execute(
            text(
                "INSERT INTO messages (namespace, session_id, message_id, role, content,"
                " created_at) VALUES (:ns, :sid, :mid, :role, :content, :at)"
            ),
            {
                "ns": namespace,
                "sid": session_id,
                "mid": taken.message_id,
                "role": taken.role,
                "content": taken.content,
                "at": taken.created_at,
            },
        )
        run = threading.Thread(target=lambda: ran.update(summary=sync(home, feed_capture=False)))
        run.start()
        wait_for(waiting_on_a_lock, timeout=30)  # the sync's COPY meets the row
    run.join(60)
    summary = ran["summary"]
    assert (summary.files_failed, summary.errors) == (0, FIXTURE_PROBLEMS)
    assert summary.messages_inserted == FIXTURE_MESSAGES - 1  # the other writer's is not ours
    keys = stored_keys()
    assert len(keys) == len(set(keys)) and set(keys) == expected_keys(home)


def test_only_what_a_run_will_read_counts_toward_reading_in_processes(db: Any, home: Path) -> None:
    def to_read(backfill: bool) -> int:
        with session_scope() as db_session:
            known = cursors.load_all(db_session)
        sources = [(s, namespace_for(s.instance), known.get(str(s.path)))
                   for s in discover(None, home).sources]  # fmt: skip
        return _bytes_to_read(Options(backfill=backfill), sources)

    whole = sum(s.path.stat().st_size for s in discover(None, home).sources)
    assert to_read(backfill=False) == whole  # nothing read yet
    sync(home, feed_capture=False)
    assert to_read(backfill=True) == whole
    assert to_read(backfill=False) == 0  # every file unchanged since its cursor
    appended = message_line("x1", "y", "2026-02-01T00:00:00Z", "user", "more") * 10
    with live(home, TELEGRAM).open("a") as handle:
        handle.write(appended)
    assert to_read(backfill=False) == len(appended.encode())


def test_sessions_carry_instance_source_channel_model_and_compactions(db: Any, home: Path) -> None:
    sync(home, feed_capture=False)
    with session_scope() as db_session:
        rows = {s.session_id: s for s in db_session.scalars(select(Session))}
        contents = list(db_session.scalars(select(Message.content)))
    telegram = rows[TELEGRAM]
    assert (telegram.namespace, telegram.source, telegram.channel) == (
        "default",
        "openclaw",
        "telegram",
    )
    assert (telegram.model, telegram.status, telegram.message_count) == (
        "claude-opus-4-6",
        "active",
        11,
    )
    assert telegram.started_at.isoformat() == "2026-02-26T22:00:00.120000+00:00"
    [compaction] = telegram.details["compactions"]
    assert compaction["compaction_id"] == "50aa4c47" and compaction["decisions"]
    assert rows["5d2e7c41-0a9b-4f3e-9c1d-2b8e6f4a7d10"].channel == "discord"
    assert rows["3f2a1b4c-5d6e-4f70-8a9b-0c1d2e3f4a5b"].source == "claude-code"
    assert rows["019bd6d8-b99b-7eb1-847c-87c3da10673a"].source == "codex"
    assert rows[ARCHIVED].status == "ended"  # read from a `.reset.` file: a closed session
    assert not any("HEARTBEAT" in c or c == "NO_REPLY" for c in contents)


def test_appended_lines_and_a_completed_half_written_line_are_read_once(
    db: Any, home: Path
) -> None:
    path = live(home, ENTREPRENEUR, ".openclaw-entrepreneur")
    sync(home, feed_capture=False)
    data = path.read_bytes()
    offset = cursor_of(path).byte_offset
    # The cursor sits right after the last complete line, before the unfinished one.
    assert offset < len(data) and data[offset - 1 : offset] == b"\n" and b"\n" not in data[offset:]
    assert data[offset:].startswith(b'{"type":"message","id":"c480a5cc"')

    with path.open("ab") as handle:
        handle.write(b'290 a year."}]}}\n')
        handle.write(
            message_line(
                "5e6f7a8b", "c480a5cc", "2026-03-02T18:31:30.000Z", "user", "Ship it Monday."
            ).encode()
        )
    result = sync(home, feed_capture=False)
    assert (result.files_read, result.messages_inserted, result.duplicates) == (1, 2, 0)
    assert cursor_of(path).byte_offset == path.stat().st_size
    assert_exactly_once(home)
    with session_scope() as db_session:
        content = db_session.scalar(select(Message.content).where(Message.message_id == "c480a5cc"))
    assert content == "Annual at $290 a year."


def test_a_replaced_or_truncated_file_is_read_again_without_doubles(db: Any, home: Path) -> None:
    path = live(home, TELEGRAM)
    sync(home, feed_capture=False)
    lines = path.read_text().splitlines(keepends=True)

    # Replaced (new inode): same lines plus one; only the new message is inserted.
    replacement = path.with_suffix(".tmp")
    replacement.write_text(
        "".join(lines)
        + message_line("0a0b0c0d", "f568cb80", "2026-02-26T23:00:00.000Z", "user", "Ping.")
    )
    os.replace(replacement, path)
    result = sync(home, feed_capture=False)
    assert (result.files_restarted, result.messages_inserted, result.duplicates) == (1, 1, 11)

    # Truncated in place to its first lines: read again from 0, nothing doubles, rows stay.
    path.write_text("".join(lines[:6]))
    result = sync(home, feed_capture=False)
    assert (result.files_restarted, result.messages_inserted, result.duplicates) == (1, 0, 2)
    assert cursor_of(path).byte_offset == path.stat().st_size
    keys = stored_keys()
    assert len(keys) == len(set(keys)) == FIXTURE_MESSAGES + 1
    assert sum(1 for _, sid, _ in keys if sid == TELEGRAM) == 12


def test_a_file_rewritten_in_place_is_detected_by_its_head(db: Any, home: Path) -> None:
    path = live(home, TELEGRAM)
    sync(home, feed_capture=False)
    # Same inode and grown, but its beginning changed: resuming mid-file would be wrong.
    path.write_text(path.read_text().replace("Postgres", "Postgre5", 1) + "\n")
    result = sync(home, feed_capture=False)
    assert (result.files_restarted, result.messages_inserted, result.duplicates) == (1, 0, 11)
    assert result.errors == FIXTURE_PROBLEMS


def test_an_archived_copy_is_read_once_as_a_closed_session_and_dedupes(db: Any, home: Path) -> None:
    path = live(home, TELEGRAM)
    sync(home, feed_capture=False)
    archived = path.with_name(path.name + ".reset.2026-02-27T08-00-00.000Z")
    path.rename(archived)
    result = sync(home, feed_capture=False)
    assert (result.files_read, result.messages_inserted, result.duplicates) == (1, 0, 11)
    with session_scope() as db_session:
        session = db_session.scalar(select(Session).where(Session.session_id == TELEGRAM))
    assert session is not None
    assert (session.status, session.message_count) == ("ended", 11)
    assert session.ended_at.isoformat() == "2026-02-26T22:54:03.170000+00:00"
    again = sync(home, feed_capture=False)
    assert (again.files_read, again.messages_inserted) == (0, 0)


def test_two_overlapping_readers_of_the_same_files_store_each_message_once(
    db: Any, home: Path
) -> None:
    sources = discover(None, home).sources
    barrier = threading.Barrier(2)
    reports: list[SourceReport] = []
    failures: list[BaseException] = []

    def reader() -> None:
        barrier.wait()
        try:
            for source in sources:
                if source.kind != "openclaw_sqlite":
                    report = SourceReport()
                    sync_jsonl(
                        Options(batch_lines=3), source, namespace_for(source.instance), None, report
                    )
                    reports.append(report)
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=reader) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    inserted = sum(len(o.inserted) for r in reports for o in r.outcomes)
    assert inserted == FIXTURE_MESSAGES
    assert_exactly_once(home)


def test_a_store_session_read_past_the_head_a_run_saw_is_not_read_again(
    db: Any, home: Path
) -> None:
    """A run (the watcher's) takes a SQLite session's head, then waits for its lock while
    another (beat's) reads the events written since: under the lock it finds the cursor past
    the head it saw, which is new reading done, not a replaced store to read from seq 0."""
    store = make_store(home / ".openclaw" / "agents" / "main" / "agent" / "openclaw-agent.sqlite")
    sync(home, feed_capture=False, instance="default")
    more = {**OTHER_EVENTS[1], "id": "0badc0e0", "parentId": "0badc0de"}
    with sqlite3.connect(store) as conn:
        conn.execute("INSERT INTO transcript_events VALUES ('s-2', 4, ?, 0)", (json.dumps(more),))
    conn.close()
    [source] = [s for s in discover(None, home).sources if s.kind == "openclaw_sqlite"]
    late = _StoreSession(source, "default", "s-2", head=3, channel=None)  # its head: before
    assert sync(home, feed_capture=False, instance="default").messages_inserted == 1
    report = SourceReport()
    late.sync(Options(), report)
    assert (report.restarted, report.outcomes) == (0, [])  # nothing read twice
    keys = stored_keys()
    assert len(keys) == len(set(keys))
    assert sorted(mid for _, sid, mid in keys if sid == "s-2") == ["0badc0de", "0badc0e0"]


def test_a_run_whose_lock_expired_overlaps_safely_with_the_next(db: Any, home: Path) -> None:
    started, resume = threading.Event(), threading.Event()
    results: dict[str, Any] = {}

    def slow_progress(progress: SyncProgress) -> None:
        if progress.done == 1:
            started.set()
            resume.wait(10)

    slow = threading.Thread(
        target=lambda: results.update(
            slow=sync(home, feed_capture=False, lock_timeout_s=1, workers=1, progress=slow_progress)
        )
    )
    slow.start()
    assert started.wait(10)
    assert sync(home, feed_capture=False).locked  # the lock still holds
    get_redis().delete(LOCK_NAME)  # ... until it expires
    results["fast"] = sync(home, feed_capture=False)
    resume.set()
    slow.join(20)
    assert not results["fast"].locked
    assert results["slow"].messages_inserted + results["fast"].messages_inserted == FIXTURE_MESSAGES
    assert_exactly_once(home)


def test_a_held_lock_makes_a_run_return_at_once(db: Any, home: Path) -> None:
    lock = get_redis().lock(LOCK_NAME, timeout=30)
    assert lock.acquire(blocking=False)
    try:
        summary = sync(home, feed_capture=False)
    finally:
        lock.release()
    assert summary.locked and summary.files_seen == 0
    assert stored_keys() == []


def test_backfill_rereads_every_source_and_adds_only_what_is_missing(db: Any, home: Path) -> None:
    sync(home, feed_capture=False)
    with session_scope() as db_session:
        db_session.execute(
            text("DELETE FROM messages WHERE message_id IN ('605a9036', 'e8a6e8af')")
        )
    assert sync(home, feed_capture=False).messages_inserted == 0  # cursors say: nothing new
    result = sync(home, backfill=True, feed_capture=False)
    assert (result.files_read, result.messages_inserted) == (9, 2)
    assert result.duplicates == FIXTURE_MESSAGES - 2
    assert set(stored_keys()) == expected_keys(home)
    with session_scope() as db_session:
        details = db_session.scalar(select(Session.details).where(Session.session_id == TELEGRAM))
    assert len(details["compactions"]) == 1  # compactions are not doubled by re-reading


def test_new_messages_feed_capture_in_chunks_after_commit(
    db: Any, home: Path, sent: list[tuple[Any, ...]]
) -> None:
    summary = sync(home)
    finished = [args for args in sent if args[0] == FINISH_SESSION]  # the old sessions: idle
    chunks = [args for args in sent if args[0] == EXTRACT_CHUNK]
    assert summary.chunks_dispatched == len(chunks) > 0
    assert summary.sessions_ended == len(finished) == len(sent) - len(chunks)
    by_session: dict[tuple[str, str], list[str]] = {}
    with session_scope() as db_session:
        times = dict(db_session.execute(select(Message.message_id, Message.created_at)).all())
    for _, namespace, session_id, ids in chunks:
        assert 1 <= len(ids) <= 10
        assert max(times[i] for i in ids) - min(times[i] for i in ids) <= timedelta(minutes=5)
        by_session.setdefault((namespace, session_id), []).extend(ids)
    stored = Counter((ns, sid) for ns, sid, _ in stored_keys())
    assert {key: len(ids) for key, ids in by_session.items()} == dict(stored)
    telegram = [ids for _, _, sid, ids in chunks if sid == TELEGRAM]
    assert telegram == [
        ["605a9036", "f334395a", "633131ec", "fef0beb7", "429622ba", "9ca48ce5", "f3aeadb5"],
        ["8931492b", "1a13b17e"],
        ["8cff9a8b", "68939c68"],
    ]
    sent.clear()
    sync(home)
    assert sent == []  # nothing new, nothing sent


def test_per_instance_views_exist_and_scope_to_their_instance(db: Any, home: Path) -> None:
    weird = home / '.openclaw-My Team"; DROP TABLE messages; --'
    shutil.copytree(home / ".openclaw-DTeam", weird)
    summary = sync(home, feed_capture=False)
    slug = "my_team_drop_table_messages"
    assert summary.instances == [
        "claude-code",
        "codex",
        "default",
        "dteam",
        "entrepreneur",
        "my-team-drop-table-messages",
    ]
    assert f"messages_{slug}" in summary.views_created
    with session_scope() as db_session:
        for view, namespace, count in [
            ("messages_default", "default", 21),
            ("messages_dteam", "dteam", 2),
            ("messages_claude_code", "claude-code", 6),
            (f"messages_{slug}", "my-team-drop-table-messages", 2),
            ("cron_reports_default", "default", 1),
            ("cron_reports_dteam", "dteam", 0),
        ]:
            rows = db_session.execute(text(f"SELECT namespace FROM {view}")).scalars().all()
            assert rows == [namespace] * count, view
        assert db_session.scalar(select(func.count()).select_from(Message)) == FIXTURE_MESSAGES + 2
    assert sync(home, feed_capture=False).views_created == []
