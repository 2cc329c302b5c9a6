"""Claude Code transcripts (`~/.claude/projects/<cwd>/<sessionId>.jsonl`): where they are
and how they are parsed."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from continuum.transcripts.discovery import Discovery, TranscriptSource
from continuum.transcripts.lines import BlockSpec, Entry, EntryParser, Line, collect_blocks
from continuum.transcripts.models import Compaction, ParseResult

KIND = "claude_code"
BLOCKS = BlockSpec(
    text_types=frozenset({"text"}),
    image_types=frozenset({"image"}),
    skip_reasons={
        "thinking": "thinking",
        "redacted_thinking": "thinking",
        "tool_use": "tool_call",
        "server_tool_use": "tool_call",
        "tool_result": "tool_result",
        "web_search_tool_result": "tool_result",
    },
)
_COMMAND_PREFIXES = ("<command-", "<local-command-")
_SYNTHETIC_MODEL = "<synthetic>"


def session_dirs(found: Discovery) -> list[Path]:
    """Where Claude Code keeps its session files: `home/.claude/projects`."""
    return [found.home / ".claude" / "projects"]


def discover_sessions(found: Discovery) -> None:
    """Every session file under `home/.claude/projects` (instance `claude-code`)."""
    for path in found.files_under(session_dirs(found)[0]):
        if path.suffix == ".jsonl":
            found.sources.append(
                TranscriptSource(
                    kind=KIND,
                    instance="claude-code",
                    agent_id=None,
                    path=path,
                    session_id=path.stem,
                )
            )


class ClaudeCodeParser(EntryParser):
    """Keeps user and assistant text; `summary` lines and compact summaries become compactions."""

    def handle(self, entry: Entry, line: Line, at: datetime | None, result: ParseResult) -> None:
        self._session_facts(entry, at)
        kind = entry.get("type")
        if kind == "summary":
            summary = entry.get("summary")
            if not isinstance(summary, str):
                self.invalid(result, line, "summary line without summary text")
                return
            leaf = entry.get("leafUuid")
            compaction_id = leaf if isinstance(leaf, str) else line.locator
            result.compactions.append(
                Compaction.from_summary(compaction_id, self.state.last_entry_at, summary)
            )
        elif kind in ("user", "assistant"):
            self._message(entry, kind, line, at, result)
        else:
            result.skip("system" if kind == "system" else "unknown_entry")

    def _session_facts(self, entry: Entry, at: datetime | None) -> None:
        ctx = self.state
        session_id, cwd = entry.get("sessionId"), entry.get("cwd")
        if ctx.session_id is None and isinstance(session_id, str):
            ctx.session_id = session_id
        if isinstance(cwd, str):
            ctx.cwd = cwd
        ctx.started_at = ctx.started_at or at

    def _message(
        self, entry: Entry, role: Any, line: Line, at: datetime | None, result: ParseResult
    ) -> None:
        message, uuid = entry.get("message"), entry.get("uuid")
        if not isinstance(message, dict) or not isinstance(uuid, str):
            self.invalid(result, line, f"{role} line without uuid or message object")
            return
        if entry.get("isSidechain") is True:
            result.skip("sidechain")
            return
        blocks = collect_blocks(message.get("content"), BLOCKS, result)
        if entry.get("isCompactSummary") is True:
            result.compactions.append(Compaction.from_summary(uuid, at, blocks.text))
            return
        if entry.get("isMeta") is True or blocks.text.startswith(_COMMAND_PREFIXES):
            result.skip("meta")
            return
        model = message.get("model") if role == "assistant" else None
        if isinstance(model, str) and model != _SYNTHETIC_MODEL:
            self.state.model = model
        else:
            model = None
        parent = entry.get("parentUuid")
        branch = entry.get("gitBranch")
        self.emit(
            result,
            line,
            role,
            blocks,
            message_id=uuid,
            parent_id=parent if isinstance(parent, str) else None,
            created_at=at,
            model=model,
            metadata={"git_branch": branch} if isinstance(branch, str) else {},
        )
