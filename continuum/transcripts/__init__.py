"""Transcript parsers: OpenClaw (JSONL and SQLite), Claude Code and Codex, plus discovery.

Pure Python, no database: sources are found by `discover`, read with `read_complete_lines`
(or `openclaw_sqlite.read_events`) and turned into normalized records by a parser.
"""

from continuum.transcripts.claude_code import ClaudeCodeParser
from continuum.transcripts.codex import CodexParser
from continuum.transcripts.discovery import (
    Discovery,
    DiscoveryError,
    TranscriptSource,
    discover,
    instance_name,
    parser_for,
)
from continuum.transcripts.lines import (
    EntryParser,
    Line,
    LineBatch,
    TranscriptVanished,
    read_complete_lines,
)
from continuum.transcripts.models import (
    Compaction,
    CronInfo,
    CronReport,
    ParseError,
    ParseResult,
    SessionContext,
    TranscriptMessage,
)
from continuum.transcripts.openclaw import (
    OpenClawParser,
    SessionIndexEntry,
    clean_user_text,
    is_archived,
    load_sessions_index,
    session_id_from_path,
    topic_id_from_path,
)
from continuum.transcripts.openclaw_sqlite import StoredEvent, StoreLayoutError, read_events

__all__ = [
    "ClaudeCodeParser",
    "CodexParser",
    "Compaction",
    "CronInfo",
    "CronReport",
    "Discovery",
    "DiscoveryError",
    "EntryParser",
    "Line",
    "LineBatch",
    "OpenClawParser",
    "ParseError",
    "ParseResult",
    "SessionContext",
    "SessionIndexEntry",
    "StoreLayoutError",
    "StoredEvent",
    "TranscriptMessage",
    "TranscriptSource",
    "TranscriptVanished",
    "clean_user_text",
    "discover",
    "instance_name",
    "is_archived",
    "load_sessions_index",
    "parser_for",
    "read_complete_lines",
    "read_events",
    "session_id_from_path",
    "topic_id_from_path",
]
