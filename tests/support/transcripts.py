"""Transcript fixtures: the trees under tests/fixtures/transcripts (a realistic home and an
adversarial one) and what a sync of them finds, a private copy to change, new transcript
lines, an OpenClaw SQLite store, and a directory discovery cannot list."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from continuum.transcripts import discovery
from tests.support.paths import FIXTURES

FIXTURE_HOME = FIXTURES / "transcripts" / "home"
FIXTURE_MESSAGES = 36  # in the complete lines of every source of the fixture home
# Reported by every run over the fixture home: the dteam instance's sessions.json is malformed.
FIXTURE_PROBLEMS = Counter(bad_sessions_index=1)

# The adversarial tree and its sessions, each with one thing wrong or unusual.
ADVERSARIAL = FIXTURES / "transcripts" / "adversarial"
NO_TIME = "0a000001-0000-4000-8000-000000000001"
ARCHIVED_BESIDE_LIVE = "0b000002-0000-4000-8000-000000000002"
GZIP = "0c000003-0000-4000-8000-000000000003"
BROKEN = "0d000004-0000-4000-8000-000000000004"
EMPTY = "0e000005-0000-4000-8000-000000000005"
RESET = "0f000006-0000-4000-8000-000000000006"
CLAUDE_NO_TIME = "1a2b3c4d-0000-4000-8000-00000000c1a0"

# An OpenClaw cron session of the fixture home, and the events of a second session.
CRON = FIXTURE_HOME / ".openclaw/agents/main/sessions/c0ffee12-3456-4789-abcd-ef0123456789.jsonl"
OTHER_EVENTS = [
    {"type": "session", "version": 3, "id": "s-2", "timestamp": "2026-07-03T10:00:00.000Z"},
    {
        "type": "message",
        "id": "0badc0de",
        "parentId": None,
        "timestamp": "2026-07-03T10:00:01.000Z",
        "message": {"role": "user", "content": "Keep invoices in EUR.", "timestamp": 1783072801000},
    },
]


def copy_home(tmp_path: Path) -> Path:
    """A private copy of the fixture home tree (tests change files in it)."""
    target = tmp_path / "home"
    shutil.copytree(FIXTURE_HOME, target)
    return target


def live(home: Path, session_id: str, instance: str = ".openclaw") -> Path:
    """The live transcript file of an OpenClaw session of the main agent."""
    return home / instance / "agents" / "main" / "sessions" / f"{session_id}.jsonl"


def message_line(entry_id: str, parent: str, at: str, role: str, text_: str) -> str:
    """One OpenClaw message entry, as a complete transcript line."""
    content = f'[{{"type":"text","text":"{text_}"}}]'
    return (
        f'{{"type":"message","id":"{entry_id}","parentId":"{parent}","timestamp":"{at}",'
        f'"message":{{"role":"{role}","content":{content}}}}}\n'
    )


def make_store(path: Path) -> Path:
    """An OpenClaw SQLite transcript store at `path`: session s-1 holds CRON's lines, s-2 the
    OTHER_EVENTS and then a broken one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(path) as conn:
        conn.execute(
            "CREATE TABLE transcript_events (session_id TEXT, seq INTEGER, event_json TEXT,"
            " created_at INTEGER, PRIMARY KEY(session_id, seq))"
        )
        rows = [
            ("s-1", seq, line, seq * 10)
            for seq, line in enumerate(CRON.read_text().splitlines(), 1)
        ]
        rows += [("s-2", seq, json.dumps(event), 0) for seq, event in enumerate(OTHER_EVENTS, 1)]
        rows.append(("s-2", 3, "{broken", 0))
        conn.executemany("INSERT INTO transcript_events VALUES (?, ?, ?, ?)", rows)
    conn.close()
    return path


def lock(monkeypatch: pytest.MonkeyPatch, locked: Path) -> None:
    """Listing `locked` fails as an unreadable directory does."""
    real_scandir = os.scandir

    def scandir(path: Path) -> object:
        if Path(path) == locked:
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(discovery.os, "scandir", scandir)
