"""Transcript formats: OpenClaw (JSONL and SQLite), Claude Code and Codex, plus discovery.

Pure Python, no database: `formats.FORMATS` lists every format (one module each); sources
are found by `discover`, read with `read_complete_lines` (or `openclaw_sqlite.read_events`)
and turned into normalized records by their format's parser (`parser_for`).
"""

from continuum.transcripts.claude_code import ClaudeCodeParser
from continuum.transcripts.codex import CodexParser
from continuum.transcripts.discovery import Discovery, DiscoveryError, TranscriptSource
from continuum.transcripts.formats import (
    FORMATS,
    Format,
    discover,
    enabled_kinds,
    format_of,
    parser_for,
    watch_dirs,
)
from continuum.transcripts.lines import (
    EntryParser,
    Line,
    LineBatch,
    TranscriptVanished,
    binary_format,
    read_complete_lines,
)
from continuum.transcripts.models import (
    Compaction,
    CronInfo,
    CronReport,
    ParseError,
    ParseResult,
    ParserState,
    TranscriptMessage,
)
from continuum.transcripts.openclaw import OpenClawParser
from continuum.transcripts.openclaw_layout import (
    SessionIndexEntry,
    instance_name,
    is_archived,
    load_sessions_index,
    session_id_from_path,
    topic_id_from_path,
)
from continuum.transcripts.openclaw_sqlite import StoredEvent, StoreLayoutError, read_events
from continuum.transcripts.openclaw_text import clean_user_text

__all__ = [
    "FORMATS",
    "ClaudeCodeParser",
    "CodexParser",
    "Compaction",
    "CronInfo",
    "CronReport",
    "Discovery",
    "DiscoveryError",
    "EntryParser",
    "Format",
    "Line",
    "LineBatch",
    "OpenClawParser",
    "ParseError",
    "ParseResult",
    "ParserState",
    "SessionIndexEntry",
    "StoreLayoutError",
    "StoredEvent",
    "TranscriptMessage",
    "TranscriptSource",
    "TranscriptVanished",
    "binary_format",
    "clean_user_text",
    "discover",
    "enabled_kinds",
    "format_of",
    "instance_name",
    "is_archived",
    "load_sessions_index",
    "parser_for",
    "read_complete_lines",
    "read_events",
    "session_id_from_path",
    "topic_id_from_path",
    "watch_dirs",
]
