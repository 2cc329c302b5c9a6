"""Codex CLI rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-<ts>-<uuid>.jsonl`): where they
are and how they are parsed."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

from continuum.transcripts.discovery import Discovery, TranscriptSource
from continuum.transcripts.lines import BlockSpec, Entry, EntryParser, Line, collect_blocks
from continuum.transcripts.models import Compaction, ParseResult, parse_timestamp

KIND = "codex"
_UUID_TAIL = re.compile(r"[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}$", re.IGNORECASE)
BLOCKS = BlockSpec(
    text_types=frozenset({"input_text", "output_text"}),
    image_types=frozenset({"input_image"}),
    skip_reasons={},
)
_ITEM_SKIPS = {
    "reasoning": "thinking",
    "function_call": "tool_call",
    "custom_tool_call": "tool_call",
    "local_shell_call": "tool_call",
    "web_search_call": "tool_call",
    "function_call_output": "tool_result",
    "custom_tool_call_output": "tool_result",
}
_LINE_SKIPS = {"event_msg": "event_msg", "turn_context": "turn_context"}
_INJECTED_PREFIXES = (
    "<environment_context>",
    "<user_instructions>",
    "<INSTRUCTIONS>",
    "# AGENTS.md instructions",
)


def session_dirs(found: Discovery) -> list[Path]:
    """Where Codex keeps its rollouts: `home/.codex/sessions`."""
    return [found.home / ".codex" / "sessions"]


def discover_sessions(found: Discovery) -> None:
    """Every rollout under `home/.codex/sessions` (instance `codex`), named by its uuid."""
    for path in found.files_under(session_dirs(found)[0]):
        if path.name.startswith("rollout-") and path.suffix == ".jsonl":
            uuid = _UUID_TAIL.search(path.stem)
            found.sources.append(
                TranscriptSource(
                    kind=KIND,
                    instance="codex",
                    agent_id=None,
                    path=path,
                    session_id=uuid.group(0) if uuid else path.stem,
                )
            )


class CodexParser(EntryParser):
    """Keeps user and assistant messages; `compacted` lines become compactions."""

    def handle(self, entry: Entry, line: Line, at: datetime | None, result: ParseResult) -> None:
        kind, payload = entry.get("type"), entry.get("payload")
        if not isinstance(payload, dict):
            self.invalid(result, line, f"{kind} line without payload object")
        elif kind == "session_meta":
            self._meta(payload, at)
        elif kind == "response_item":
            self._item(payload, line, at, result)
        elif kind == "compacted":
            summary = payload.get("message")
            if isinstance(summary, str):
                result.compactions.append(Compaction.from_summary(line.locator, at, summary))
            else:
                self.invalid(result, line, "compacted line without message")
        else:
            if kind == "turn_context" and isinstance(payload.get("model"), str):
                self.state.model = payload["model"]
            result.skip(_LINE_SKIPS.get(str(kind), "unknown_entry"))

    def _meta(self, payload: Entry, at: datetime | None) -> None:
        ctx = self.state
        session_id, cwd = payload.get("id"), payload.get("cwd")
        if ctx.session_id is None and isinstance(session_id, str):
            ctx.session_id = session_id
        if isinstance(cwd, str):
            ctx.cwd = cwd
        ctx.started_at = ctx.started_at or parse_timestamp(payload.get("timestamp")) or at

    def _item(self, payload: Entry, line: Line, at: datetime | None, result: ParseResult) -> None:
        kind, role = payload.get("type"), payload.get("role")
        if kind != "message":
            result.skip(_ITEM_SKIPS.get(str(kind), "unknown_entry"))
            return
        if role not in ("user", "assistant"):
            result.skip("system_prompt")
            return
        blocks = collect_blocks(payload.get("content"), BLOCKS, result)
        if role == "user" and blocks.text.startswith(_INJECTED_PREFIXES):
            result.skip("injected_context")
            return
        item_id = payload.get("id")
        self.emit(
            result,
            line,
            role,
            blocks,
            message_id=item_id if isinstance(item_id, str) else line.locator,
            parent_id=self.state.last_message_id,
            created_at=at,
            model=self.state.model if role == "assistant" else None,
        )
