"""Transcript sync on awkward input: bad lines, vanished files, unreadable directories,
cron sessions, SQLite stores, instance filters — counted, never fatal, good lines kept."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from continuum.store.engine import session_scope
from continuum.store.models import CronReport, Message, Session, TranscriptCursor
from continuum.sync import SyncProgress, cron_reports, sync
from tests.support.exactly_once import assert_exactly_once, stored_keys
from tests.support.transcripts import (
    FIXTURE_MESSAGES,
    FIXTURE_PROBLEMS,
    copy_home,
    live,
    make_store,
    message_line,
)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return copy_home(tmp_path)


CRON = "c0ffee12-3456-4789-abcd-ef0123456789"
HEADER = '{"type":"session","version":3,"id":"%s","timestamp":"2026-03-05T10:00:00.000Z"}\n'


def contents(session_id: str) -> list[str]:
    with session_scope() as db:
        return list(
            db.scalars(
                select(Message.content)
                .where(Message.session_id == session_id)
                .order_by(Message.created_at)
            )
        )


def test_bad_lines_are_counted_and_every_good_line_is_kept(db: Any, home: Path) -> None:
    path = live(home, "bad00000-0000-4000-8000-000000000001")
    good = [
        message_line("00000001", "x", "2026-03-05T10:00:01.000Z", "user", "First good line."),
        message_line("00000002", "00000001", "2026-03-05T10:00:02.000Z", "assistant", "Second."),
        message_line("00000003", "00000002", "2026-03-05T10:00:03.000Z", "user", "Third good."),
    ]
    no_time = '{"type":"message","id":"00000009","parentId":null,"message":{"role":"user","content":"when?"}}\n'
    nul = message_line("00000004", "00000003", "2026-03-05T10:00:04.000Z", "assistant", "a\\u0000b")
    surrogate = message_line(
        "00000005", "00000004", "2026-03-05T10:00:05.000Z", "user", "x\\ud800y"
    )
    path.write_bytes(
        (HEADER % "bad00000-0000-4000-8000-000000000001").encode()
        + good[0].encode()
        + b'{"type":"message","id":"broken\n'  # malformed JSON
        + b'{"type":"message","text":"\xff\xfe invalid utf-8"}\n'
        + b'{"type":"message","pad":"'
        + b"x" * 2_000_000
        + b'"}\n'  # over the line limit
        + good[1].encode()
        + b"\x00\x01\x02\x89PNG binary garbage\n"
        + b'{"type":"mystery_entry","id":"00000008","timestamp":"2026-03-05T10:00:02.500Z"}\n'
        + no_time.encode()
        + b"[1, 2, 3]\n"
        + good[2].encode()
        + nul.encode()
        + surrogate.encode()
    )
    summary = sync(home, feed_capture=False, max_line_bytes=1_000_000)
    assert summary.files_failed == 0
    assert summary.errors == FIXTURE_PROBLEMS + Counter(
        malformed_json=1, invalid_utf8=2, oversize_line=1, not_an_object=1
    )
    assert summary.skipped_entries["unknown_entry"] == 1
    assert {s.kind for s in summary.error_samples} == set(summary.errors)
    assert contents("bad00000-0000-4000-8000-000000000001") == [
        "First good line.",
        "Second.",
        "when?",
        "Third good.",
        "ab",
        "x?y",
    ]
    with session_scope() as db_session:
        cursor = db_session.get(TranscriptCursor, str(path))
    assert cursor is not None and cursor.byte_offset == path.stat().st_size


def test_a_file_without_header_takes_its_session_id_from_the_name(db: Any, home: Path) -> None:
    path = live(home, "nohead00-0000-4000-8000-000000000002")
    path.write_text(
        message_line("00000001", "x", "2026-03-05T11:00:00.000Z", "user", "No header here.")
    )
    sync(home, feed_capture=False)
    assert contents("nohead00-0000-4000-8000-000000000002") == ["No header here."]


def test_an_unreadable_directory_and_a_vanished_file_are_reported(db: Any, home: Path) -> None:
    broken = home / ".openclaw-broken" / "agents" / "main"
    broken.mkdir(parents=True)
    (broken / "sessions").write_text("not a directory")
    last = home / ".openclaw" / "agents" / "main" / "sessions"
    doomed = next(last.glob("*.reset.*"))  # the last source in discovery order

    def delete_later_file(progress: SyncProgress) -> None:
        if progress.done == 1:
            doomed.unlink()

    summary = sync(home, feed_capture=False, workers=1, progress=delete_later_file)
    assert summary.errors == FIXTURE_PROBLEMS + Counter(unreadable_dir=1, vanished=1)
    assert {s.kind: s.path for s in summary.error_samples} == {
        "unreadable_dir": str(broken / "sessions"),
        "vanished": str(doomed),
        "bad_sessions_index": str(home / ".openclaw-DTeam/agents/ops/sessions/sessions.json"),
    }
    assert (summary.files_seen, summary.files_read, summary.files_skipped) == (9, 8, 1)
    assert summary.messages_inserted == FIXTURE_MESSAGES - 2


def test_cron_sessions_get_their_source_and_a_report_at_event_time(db: Any, home: Path) -> None:
    sync(home, feed_capture=False)
    with session_scope() as db_session:
        sources = set(db_session.scalars(select(Message.source).where(Message.session_id == CRON)))
        session = db_session.scalar(select(Session).where(Session.session_id == CRON))
    assert sources == {"cron:daily-standup-digest"}
    assert session is not None and session.source == "cron:daily-standup-digest"
    [report] = cron_reports("default", date(2026, 2, 27))
    assert report.cron_name == "Daily Standup Digest"
    assert report.summary.startswith("Standup digest, Feb 27:")
    assert report.event_at == datetime(2026, 2, 27, 16, 0, 9, 60000, tzinfo=UTC)
    assert report.run_started_at == datetime(2026, 2, 27, 16, 0, 0, 30000, tzinfo=UTC)
    assert cron_reports("default", date(2026, 2, 28)) == []
    assert cron_reports("dteam") == []

    # The run goes on: the report follows the newest assistant text, still one row.
    path = live(home, CRON)
    with path.open("a") as handle:
        handle.write(
            message_line(
                "aa11bb22", "9dba34f0", "2026-02-27T16:05:00.000Z", "assistant", "Correction."
            )
        )
    assert sync(home, feed_capture=False).cron_reports == 1
    [report] = cron_reports("default")
    assert (report.summary, report.event_at) == (
        "Correction.",
        datetime(2026, 2, 27, 16, 5, tzinfo=UTC),
    )
    with session_scope() as db_session:
        assert len(db_session.scalars(select(CronReport)).all()) == 1


def test_sqlite_stores_resume_each_session_by_seq(db: Any, home: Path) -> None:
    store = make_store(home / ".openclaw" / "agents" / "main" / "agent" / "openclaw-agent.sqlite")
    first = sync(home, feed_capture=False, instance="default")
    assert first.errors == FIXTURE_PROBLEMS + Counter(malformed_json=1)  # broken s-2 event
    assert contents("s-2") == ["Keep invoices in EUR."]
    assert contents("s-1")[0].startswith("Summarize yesterday's commits")
    with session_scope() as db_session:
        seqs = {c.source_path: c.seq for c in db_session.scalars(select(TranscriptCursor))}
    assert seqs[f"{store}#s-2"] == 3 and seqs[f"{store}#s-1"] == 9

    event = {
        "type": "message",
        "id": "0badc0df",
        "parentId": "0badc0de",
        "timestamp": "2026-07-03T10:00:05.000Z",
        "message": {"role": "assistant", "content": [{"type": "text", "text": "EUR it is."}]},
    }
    with sqlite3.connect(store) as conn:
        conn.execute("INSERT INTO transcript_events VALUES ('s-2', 4, ?, 0)", (json.dumps(event),))
    conn.close()
    second = sync(home, feed_capture=False, instance="default")
    assert (second.messages_inserted, second.duplicates) == (1, 0)
    assert second.errors == FIXTURE_PROBLEMS
    assert contents("s-2") == ["Keep invoices in EUR.", "EUR it is."]
    assert sync(home, feed_capture=False, instance="default").files_read == 0


def test_instance_filter_and_namespace_allow_list(db: Any, home: Path, settings_env: Any) -> None:
    only = sync(home, feed_capture=False, instance="dteam")
    assert (only.instances, only.files_seen, only.messages_inserted) == (["dteam"], 1, 2)
    settings_env(namespaces="default,dteam")
    allowed = sync(home, feed_capture=False)
    assert allowed.instances == ["default", "dteam"]
    assert allowed.errors["namespace_not_allowed"] == 3  # claude-code, codex, entrepreneur
    assert {ns for ns, _, _ in stored_keys()} == {"default", "dteam"}


def test_a_spent_time_budget_stops_between_sources_and_the_next_run_continues(
    db: Any, home: Path
) -> None:
    stopped = sync(home, feed_capture=False, time_budget_s=0)
    assert stopped.incomplete and stopped.files_seen == 0
    assert not sync(home, feed_capture=False).incomplete
    assert_exactly_once(home)


def test_unset_arguments_take_the_sync_settings(db: Any, home: Path, settings_env: Any) -> None:
    settings_env(sync_home=home, sync_include_claude=False, sync_roots=home / ".openclaw-DTeam")
    summary = sync(feed_capture=False)  # what `continuum sync` and beat both run
    assert summary.instances == ["codex", "dteam"] and summary.files_failed == 0
    assert {ns for ns, _, _ in stored_keys()} == {"codex", "dteam"}
