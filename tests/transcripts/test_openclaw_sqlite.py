"""The SQLite transcript store: layout check, read-only access and resume by seq."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from continuum.transcripts.lines import TranscriptVanished, read_complete_lines
from continuum.transcripts.models import ParserState
from continuum.transcripts.openclaw import OpenClawParser
from continuum.transcripts.openclaw_sqlite import (
    StoreLayoutError,
    parse_events,
    read_events,
    session_heads,
)
from tests.support.transcripts import CRON, make_store


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return make_store(tmp_path / "agents/main/agent/openclaw-agent.sqlite")


def test_session_heads(store: Path) -> None:
    assert session_heads(store) == {"s-1": len(CRON.read_text().splitlines()), "s-2": 3}


def test_events_parse_like_the_jsonl_file(store: Path) -> None:
    from_file = OpenClawParser().feed(read_complete_lines(CRON))
    from_store = parse_events(OpenClawParser(), read_events(store, "s-1"))
    assert [m.content for m in from_store.messages] == [m.content for m in from_file.messages]
    assert all(m.byte_offset is None for m in from_store.messages)
    assert from_store.cron_report == from_file.cron_report
    assert from_store.session_id == "s-1"  # the store's key wins over the header id


def test_resume_after_seq_with_limit(store: Path) -> None:
    parser = OpenClawParser(ParserState(session_id="s-2"))
    first = read_events(store, "s-2", after_seq=0, limit=1)
    assert [event.seq for event in first] == [1]
    assert parse_events(parser, first).messages == []
    rest = read_events(store, "s-2", after_seq=first[-1].seq)
    assert [event.seq for event in rest] == [2, 3]
    result = parse_events(parser, rest)
    assert [(m.message_id, m.content, m.byte_offset) for m in result.messages] == [
        ("0badc0de", "Keep invoices in EUR.", None)
    ]
    assert [(e.kind, e.line_no, e.offset) for e in result.errors] == [("malformed_json", 3, None)]
    assert result.session_id == "s-2"
    assert read_events(store, "s-2", after_seq=3) == []


def test_store_is_opened_read_only(store: Path) -> None:
    before = store.read_bytes()
    read_events(store, "s-1")
    assert store.read_bytes() == before
    assert not store.with_name(store.name + "-journal").exists()


def test_unexpected_layout_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "other.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE events (id INTEGER)")
    conn.close()
    with pytest.raises(
        StoreLayoutError, match=r"no transcript_events table \(tables: \['events'\]\)"
    ):
        read_events(path, "s-1")
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE transcript_events (session_id TEXT, seq INTEGER, body TEXT)")
    conn.close()
    with pytest.raises(StoreLayoutError, match=r"lacks columns \['created_at', 'event_json'\]"):
        session_heads(path)


def test_not_a_database_and_missing_file(tmp_path: Path) -> None:
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"definitely not sqlite" * 100)
    with pytest.raises(StoreLayoutError, match="not a readable SQLite database"):
        session_heads(junk)
    with pytest.raises(TranscriptVanished):
        session_heads(tmp_path / "missing.sqlite")
