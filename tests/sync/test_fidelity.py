"""Sync fidelity on adversarial transcripts (tests/fixtures/transcripts/adversarial): every
line accounted for, archive copies beside a live file, unreadable and empty files, Redis
down, and sessions that end by archive or idleness."""

from __future__ import annotations

import shutil
import socket
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from continuum.store.engine import session_scope
from continuum.store.models import Memory, Message, Session, TranscriptCursor
from continuum.sync import problems, sync
from tests.support.transcripts import (
    ADVERSARIAL,
    ARCHIVED_BESIDE_LIVE,
    BROKEN,
    CLAUDE_NO_TIME,
    EMPTY,
    GZIP,
    NO_TIME,
    RESET,
    live,
    make_store,
    message_line,
)
from tests.support.wait import wait_for


@pytest.fixture
def home(tmp_path: Path) -> Path:
    target = tmp_path / "home"
    shutil.copytree(ADVERSARIAL, target)
    return target


def messages_of(session_id: str) -> list[tuple[str, datetime, dict[str, Any]]]:
    with session_scope() as db:
        rows = db.execute(
            select(Message.message_id, Message.created_at, Message.details)
            .where(Message.session_id == session_id)
            .order_by(Message.created_at, Message.message_id)
        )
        return [(mid, at, details) for mid, at, details in rows]


def sessions() -> dict[str, Session]:
    with session_scope() as db:
        return {s.session_id: s for s in db.scalars(select(Session))}


def test_a_message_without_a_timestamp_is_kept_with_an_inferred_flagged_time(
    db: Any, home: Path
) -> None:
    summary = sync(home, feed_capture=False)
    assert summary.errors["missing_timestamp"] == 0
    rows = {mid: (at, details) for mid, at, details in messages_of(NO_TIME)}
    assert set(rows) == {"a0000001", "a0000002", "a0000003", "a0000004"}
    header, previous = rows["a0000001"][0], rows["a0000002"][0]
    assert header.isoformat() == "2026-03-10T09:00:00+00:00"  # from the session header
    assert rows["a0000003"][0] == previous  # from the nearest earlier entry
    assert rows["a0000001"][1]["time_inferred"] and rows["a0000003"][1]["time_inferred"]
    assert "time_inferred" not in rows["a0000002"][1]
    [(_, at, details)] = [m for m in messages_of(CLAUDE_NO_TIME) if m[0].startswith("cc000002")]
    assert at.isoformat() == "2026-03-15T14:00:00+00:00" and details["time_inferred"]


def test_archive_copies_beside_a_live_transcript_leave_its_session_running(
    db: Any, home: Path
) -> None:
    sync(home, feed_capture=False)
    rows = sessions()
    live = rows[ARCHIVED_BESIDE_LIVE]
    assert (live.status, live.ended_at, live.message_count) == ("active", None, 4)
    assert live.last_activity_at.isoformat() == "2026-03-11T17:30:04+00:00"
    reset = rows[RESET]  # an archive copy alone: its session is over
    assert reset.status == "ended" and reset.ended_at == reset.last_activity_at


def test_a_session_never_ends_before_its_last_activity(db: Any, home: Path) -> None:
    sessions_dir = home / ".openclaw" / "agents" / "main" / "sessions"
    sync(home, feed_capture=False)
    later = sessions_dir / f"{RESET}-topic-7.jsonl"  # the same session, active after the reset
    later.write_text(
        '{"type":"message","id":"f0000009","parentId":null,"timestamp":"2026-03-14T15:00:00.000Z",'
        '"message":{"role":"user","content":"Back again in the topic thread."}}\n'
    )
    sync(home, feed_capture=False)
    reset = sessions()[RESET]
    assert reset.last_activity_at.isoformat() == "2026-03-14T15:00:00+00:00"
    assert reset.ended_at is not None and reset.ended_at >= reset.last_activity_at


def test_unreadable_and_empty_files_leave_no_session_row(db: Any, home: Path) -> None:
    sync(home, feed_capture=False)
    rows = sessions()
    assert GZIP not in rows and EMPTY not in rows
    assert all(s.message_count > 0 for s in rows.values())


def test_with_redis_down_sync_falls_back_within_seconds_and_says_so_once(
    db: Any, home: Path, settings_env: Any
) -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        dead = f"redis://127.0.0.1:{sock.getsockname()[1]}/0"
    # Other Redis clients may wait long (a worker rides out an outage): sync must not.
    settings_env(redis_url=dead, broker_url=dead, redis_wait_s=60, sync_redis_timeout_s=1)
    started = time.monotonic()
    summary = sync(home)
    assert time.monotonic() - started < 5
    assert summary.errors["lock_unavailable"] == 1 and summary.errors["capture_dispatch"] == 1
    assert summary.messages_inserted > 0 and summary.chunks_dispatched == 0


def open_problems() -> list[dict[str, Any]]:
    with session_scope() as db:
        return [p.model_dump() for p in problems.listing(db)]


def test_every_bad_line_is_kept_with_its_location_and_a_gzip_file_is_one_problem(
    db: Any, home: Path
) -> None:
    summary = sync(home, feed_capture=False, batch_lines=2)  # line numbers span batches
    broken = live(home, BROKEN)
    lines = broken.read_bytes().splitlines(keepends=True)
    found = {(Path(p["source_path"]).name, p["kind"]): p for p in open_problems()}
    assert set(found) == {
        (f"{BROKEN}.jsonl", "malformed_json"),
        (f"{BROKEN}.jsonl", "not_an_object"),
        (f"{GZIP}.jsonl", "binary_file"),
    }
    malformed = found[(f"{BROKEN}.jsonl", "malformed_json")]
    assert (malformed["line_no"], malformed["byte_offset"]) == (3, len(lines[0] + lines[1]))
    assert found[(f"{BROKEN}.jsonl", "not_an_object")]["line_no"] == 4
    gzip = found[(f"{GZIP}.jsonl", "binary_file")]
    assert gzip["location"] == "file" and "gzip" in gzip["detail"]
    assert {p["run_id"] for p in found.values()} == {summary.run_id}
    assert summary.errors["invalid_utf8"] == 0 and summary.errors["binary_file"] == 1

    again = sync(home, feed_capture=False)  # nothing changed: the rows stay as they are
    assert again.errors == Counter() and len(open_problems()) == 3
    broken.write_bytes(lines[0] + lines[1] + lines[4])  # fixed: the bad lines removed
    sync(home, feed_capture=False)
    assert {p["kind"] for p in open_problems()} == {"binary_file"}
    with session_scope() as session:
        resolved = problems.listing(session, include_resolved=True)
    assert sum(p.resolved_at is not None for p in resolved) == 2


def test_a_bad_store_event_is_kept_with_its_session_and_seq(db: Any, home: Path) -> None:
    make_store(home / ".openclaw" / "agents" / "main" / "agent" / "openclaw-agent.sqlite")
    sync(home, feed_capture=False)
    [event] = [p for p in open_problems() if p["source_path"].endswith(".sqlite")]
    assert (event["kind"], event["session_id"], event["seq"]) == ("malformed_json", "s-2", 3)
    assert event["location"] == "s-2#3"


def memories_of(kind: str) -> dict[str, int]:
    with session_scope() as db:
        rows = db.execute(
            select(Memory.session_id, func.count())
            .where(Memory.kind == kind)
            .group_by(Memory.session_id)
        )
        return {session_id: count for session_id, count in rows}


def test_synced_sessions_end_once_through_the_session_end_path(
    db: Any, home: Path, worker: Any, settings_env: Any, tmp_path: Path
) -> None:
    settings_env(workspace_dir=tmp_path / "workspace")
    sessions_dir = home / ".openclaw" / "agents" / "main" / "sessions"
    recent = datetime.now(UTC) - timedelta(minutes=1)
    (sessions_dir / "0a0a0a0a-0000-4000-8000-00000000fresh.jsonl").write_text(
        message_line("e0000001", "x", recent.isoformat(), "user", "Still on the importer.")
        + message_line("e0000002", "e0000001", recent.isoformat(), "assistant", "Go on.")
    )
    summary = sync(home)
    ended = {s.session_id for s in sessions().values() if s.details.get("end_requested")}
    # archived (RESET) and idle sessions end; the one active a minute ago does not
    assert RESET in ended and NO_TIME in ended and ARCHIVED_BESIDE_LIVE in ended
    assert "0a0a0a0a-0000-4000-8000-00000000fresh" not in ended
    assert summary.sessions_ended == len(ended)
    wait_for(lambda: all(sessions()[sid].details.get("finished") for sid in ended), timeout=90)
    summaries = memories_of("conversation_summary")
    assert summaries[RESET] == 1 and summaries[ARCHIVED_BESIDE_LIVE] == 1
    reset = sessions()[RESET]
    assert (reset.status, reset.details["finished"]) == ("ended", "finished")
    log = (tmp_path / "workspace" / "default" / "activity-log.md").read_text()
    assert "standup" in log.lower()  # the narrative line of the reset session

    again = sync(home, backfill=True)  # re-reading everything ends nothing twice
    assert again.sessions_ended == 0
    assert memories_of("conversation_summary") == summaries


def test_a_bad_line_after_a_cursor_without_line_count_is_kept_by_its_byte_offset(
    db: Any, home: Path
) -> None:
    path = live(home, NO_TIME)
    sync(home, feed_capture=False)
    with session_scope() as session:  # a cursor stored before lines were counted
        cursor = session.get(TranscriptCursor, str(path))
        assert cursor is not None
        cursor.details = {k: v for k, v in cursor.details.items() if k != "lines"}
    size = path.stat().st_size
    with path.open("a") as handle:
        handle.write("{not json\n")
    sync(home, feed_capture=False)
    [bad] = [p for p in open_problems() if p["source_path"] == str(path)]
    assert (bad["location"], bad["line_no"], bad["byte_offset"]) == (f"byte-{size}", None, size)
