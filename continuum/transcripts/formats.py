"""The transcript formats Continuum reads: one row per format, and everything derived from it.

A row gives a format's kind (`TranscriptSource.kind`, also kept in transcript cursors), the
`source` label its rows get in the database, its parser, the function that finds its sources
(in the format's module) and the one naming the directories they live in, how sync reads a
source, and for an optional format the bool `continuum.config.Settings` field that switches
it on. Discovery (`discover`), the directories `continuum sync watch` watches (`watch_dirs`),
`parser_for`, sync's labels and readers, and the include settings (`enabled_kinds`) all come
from these rows, so adding a format is its module, its row and, if it can be switched off,
its setting.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from continuum.config import Settings
from continuum.transcripts import claude_code, codex, openclaw, openclaw_sqlite
from continuum.transcripts.claude_code import ClaudeCodeParser
from continuum.transcripts.codex import CodexParser
from continuum.transcripts.discovery import Discovery, TranscriptSource
from continuum.transcripts.lines import EntryParser
from continuum.transcripts.models import ParserState
from continuum.transcripts.openclaw import OpenClawParser
from continuum.transcripts.openclaw_layout import instance_dirs

# How sync reads a source: `jsonl`, a file of complete lines resumed by byte offset;
# `openclaw_store`, an OpenClaw SQLite store whose sessions are each resumed by seq.
Reader = Literal["jsonl", "openclaw_store"]


@dataclass(frozen=True)
class Format:
    """One transcript format. `find` appends the format's sources under a `Discovery`;
    `dirs` names the directories they are found in (each watched with its subdirectories);
    `setting` names the bool `Settings` field that switches it on (None: always read)."""

    kind: str
    label: str
    parser: Callable[[ParserState], EntryParser]
    find: Callable[[Discovery], None]
    dirs: Callable[[Discovery], list[Path]]
    reader: Reader = "jsonl"
    setting: str | None = None


# In discovery order; sources are sorted by kind and path afterwards either way.
FORMATS: tuple[Format, ...] = (
    Format(openclaw.KIND, "openclaw", OpenClawParser, openclaw.discover_files, instance_dirs),
    Format(
        openclaw_sqlite.KIND,
        "openclaw",
        OpenClawParser,
        openclaw_sqlite.discover_stores,
        instance_dirs,
        reader="openclaw_store",
    ),
    Format(
        claude_code.KIND,
        "claude-code",
        ClaudeCodeParser,
        claude_code.discover_sessions,
        claude_code.session_dirs,
        setting="sync_include_claude",
    ),
    Format(
        codex.KIND,
        "codex",
        CodexParser,
        codex.discover_sessions,
        codex.session_dirs,
        setting="sync_include_codex",
    ),
)


def format_of(kind: str) -> Format:
    """The row of `kind` (KeyError for a kind no row has)."""
    for row in FORMATS:
        if row.kind == kind:
            return row
    raise KeyError(f"unknown transcript kind {kind!r}")


def enabled_kinds(settings: Settings) -> frozenset[str]:
    """The kinds to read: every format without a setting, and those whose setting is true."""
    return frozenset(
        row.kind for row in FORMATS if row.setting is None or getattr(settings, row.setting)
    )


def parser_for(source: TranscriptSource, state: ParserState | None = None) -> EntryParser:
    """A parser for the source's format; a fresh context starts from the source's facts."""
    state = state or ParserState(session_id=source.session_id, channel=source.channel)
    return format_of(source.kind).parser(state)


def _rows(kinds: Collection[str] | None) -> list[Format]:
    """The rows of `kinds` (every row for None); ValueError naming a kind no row has."""
    if kinds is not None:
        unknown = set(kinds) - {row.kind for row in FORMATS}
        if unknown:
            raise ValueError(f"unknown transcript kinds: {', '.join(sorted(unknown))}")
    return [row for row in FORMATS if kinds is None or row.kind in kinds]


def discover(
    roots: list[Path] | None, home: Path, kinds: Collection[str] | None = None
) -> Discovery:
    """The sources of `kinds` (default: every format) under `home`, sorted by kind, then path.

    `roots` are the OpenClaw instance directories (default `home/.openclaw*`).
    """
    found = Discovery(home, roots)
    for row in _rows(kinds):
        row.find(found)
    found.sources.sort(key=lambda source: (source.kind, str(source.path)))
    return found


def watch_dirs(
    roots: list[Path] | None, home: Path, kinds: Collection[str] | None = None
) -> list[Path]:
    """The existing directories the sources of `kinds` are found in, sorted, none inside
    another: watched with their subdirectories, they see every write to a source."""
    found = Discovery(home, roots)
    dirs = sorted({path for row in _rows(kinds) for path in row.dirs(found) if path.is_dir()})
    return [path for path in dirs if not any(other in path.parents for other in dirs)]
