"""Sync takes everything about a format from its registry row: a row added for a new runtime
is discovered, parsed, labelled, read and switched like the built-in formats."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, get_args

import pytest
from sqlalchemy import func, select

from continuum.store.engine import session_scope
from continuum.store.models import Message, Session
from continuum.sync import sync
from continuum.sync.sources import READERS
from continuum.transcripts import (
    FORMATS,
    ClaudeCodeParser,
    Discovery,
    Format,
    TranscriptSource,
    formats,
    watch_dirs,
)
from continuum.transcripts.formats import Reader
from tests.support.transcripts import copy_home


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return copy_home(tmp_path)


def scratch_dirs(found: Discovery) -> list[Path]:
    return [found.home / ".scratch"]


def find_scratch(found: Discovery) -> None:
    """A runtime writing Claude Code lines under `~/.scratch`."""
    for path in found.files_under(scratch_dirs(found)[0]):
        found.sources.append(
            TranscriptSource(
                kind="scratch", instance="scratch", agent_id=None, path=path, session_id=path.stem
            )
        )


def rows_by_source(table: Any) -> dict[tuple[str, str], int]:
    with session_scope() as db:
        rows = db.execute(
            select(table.namespace, table.source, func.count()).group_by(
                table.namespace, table.source
            )
        )
        return {(ns, source): count for ns, source, count in rows}


def test_a_new_format_is_one_registry_row(
    db: Any, home: Path, monkeypatch: pytest.MonkeyPatch, settings_env: Any
) -> None:
    shutil.copytree(home / ".claude" / "projects", home / ".scratch")
    scratch = Format("scratch", "scratch-runtime", ClaudeCodeParser, find_scratch, scratch_dirs)
    monkeypatch.setattr(formats, "FORMATS", (*FORMATS, scratch))
    settings_env(**{row.setting: False for row in FORMATS if row.setting})  # OpenClaw only
    assert home / ".scratch" in watch_dirs(None, home, ["scratch"])  # the watcher sees it

    summary = sync(home, feed_capture=False)
    assert summary.files_failed == 0
    assert summary.instances == ["default", "dteam", "entrepreneur", "scratch"]
    messages = rows_by_source(Message)
    assert messages[("scratch", "scratch-runtime")] == 6  # the Claude Code fixture's messages
    assert {ns for ns, _ in messages} == {"default", "dteam", "entrepreneur", "scratch"}
    assert rows_by_source(Session)[("scratch", "scratch-runtime")] == 1

    only = sync(home, feed_capture=False, kinds=["scratch"], backfill=True)
    assert (only.instances, only.files_seen, only.duplicates) == (["scratch"], 1, 6)


def test_every_reader_has_a_sync_handler() -> None:
    assert set(READERS) == set(get_args(Reader))
    assert {row.reader for row in FORMATS} <= set(READERS)
