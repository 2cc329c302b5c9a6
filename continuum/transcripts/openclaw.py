"""OpenClaw JSONL transcripts (`~/.openclaw*/agents/<id>/sessions/*.jsonl`, v3 entries): the
format's kind, its entry parser (messages, compactions, cron sessions, skipped entries) and
the discovery of its files.

The same entry logic reads SQLite transcript events (`openclaw_sqlite`). User text is cleaned
by `openclaw_text`; where instances, agents and files are is `openclaw_layout`.
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import datetime
from typing import Any

from continuum.transcripts.discovery import Discovery, DiscoveryError, TranscriptSource
from continuum.transcripts.lines import BlockSpec, Entry, EntryParser, Line, collect_blocks
from continuum.transcripts.models import Compaction, ParseResult, from_millis
from continuum.transcripts.openclaw_layout import (
    agent_dirs,
    is_archived,
    is_transcript_file,
    live_path,
    load_sessions_index,
    session_id_from_path,
    topic_id_from_path,
)
from continuum.transcripts.openclaw_text import clean_user_text, first_str, parse_cron_prompt

KIND = "openclaw_jsonl"

BLOCKS = BlockSpec(
    text_types=frozenset({"text"}),
    image_types=frozenset({"image"}),
    skip_reasons={"thinking": "thinking", "redacted_thinking": "thinking", "toolCall": "tool_call"},
)
_SKIPPED_ENTRIES = frozenset(
    {"thinking_level_change", "custom", "custom_message", "label", "session_info", "branch_summary"}
)
_SYNTHETIC_MODELS = {"delivery-mirror": "delivery_mirror", "gateway-injected": "gateway_injected"}
_HEARTBEAT_PROMPT = "Read HEARTBEAT.md if it exists"
_FLUSH_PROMPT = "Pre-compaction memory flush"
_SILENT_REPLIES = {"HEARTBEAT_OK": "heartbeat", "NO_REPLY": "no_reply"}
_SILENT_REPLY = re.compile(r"\W*(?P<token>HEARTBEAT_OK|NO_REPLY)\W*")


class OpenClawParser(EntryParser):
    """Parses OpenClaw entries batch by batch; `context` remembers header and cron facts."""

    def handle(self, entry: Entry, line: Line, at: datetime | None, result: ParseResult) -> None:
        kind = entry.get("type")
        if kind == "session":
            self._header(entry, at)
        elif kind == "message":
            self._message(entry, line, at, result)
        elif kind == "compaction":
            self._compaction(entry, line, at, result)
        elif kind == "model_change":
            self.state.model = first_str(entry, "modelId") or self.state.model
            result.skip("model_change")
        else:
            name = str(kind)  # any JSON value, lists and objects included
            result.skip(name if name in _SKIPPED_ENTRIES else "unknown_entry")

    def _header(self, entry: Entry, at: datetime | None) -> None:
        ctx = self.state
        ctx.session_id = ctx.session_id or first_str(entry, "id")
        ctx.started_at = ctx.started_at or at
        ctx.cwd = first_str(entry, "cwd") or ctx.cwd

    def _compaction(
        self, entry: Entry, line: Line, at: datetime | None, result: ParseResult
    ) -> None:
        entry_id, summary = entry.get("id"), entry.get("summary")
        if not isinstance(entry_id, str) or not isinstance(summary, str):
            self.invalid(result, line, "compaction without id or summary")
            return
        result.compactions.append(Compaction.from_summary(entry_id, at, summary))

    def _message(self, entry: Entry, line: Line, at: datetime | None, result: ParseResult) -> None:
        message, entry_id = entry.get("message"), entry.get("id")
        if not isinstance(message, dict) or not isinstance(entry_id, str):
            self.invalid(result, line, "message entry without id or message object")
            return
        parent = entry.get("parentId")
        common: dict[str, Any] = {
            "message_id": entry_id,
            "parent_id": parent if isinstance(parent, str) else None,
            "created_at": at or from_millis(message.get("timestamp")),
        }
        role = message.get("role")
        if role == "user":
            self._user(message, line, result, common)
        elif role == "assistant":
            self._assistant(message, line, result, common)
        else:
            result.skip("tool_result" if role == "toolResult" else "other_role")

    def _user(
        self, message: Entry, line: Line, result: ParseResult, common: dict[str, Any]
    ) -> None:
        blocks = collect_blocks(message.get("content"), BLOCKS, result)
        clean = clean_user_text(blocks.text)
        self.state.channel = self.state.channel or clean.channel
        first_user, self.state.seen_user = not self.state.seen_user, True
        cron = parse_cron_prompt(clean.text) if first_user else None
        if cron:
            self.state.cron, clean.text = cron
            clean.metadata["cron_job_id"] = cron[0].job_id
        elif clean.text.startswith(_HEARTBEAT_PROMPT):
            result.skip("heartbeat")
            return
        elif clean.text.startswith(_FLUSH_PROMPT):
            result.skip("memory_flush")
            return
        self.emit(
            result,
            line,
            "user",
            blocks,
            clean.text,
            sender=clean.sender,
            channel=clean.channel or self.state.channel,
            metadata=clean.metadata,
            **common,
        )

    def _assistant(
        self, message: Entry, line: Line, result: ParseResult, common: dict[str, Any]
    ) -> None:
        model = first_str(message, "model")
        if message.get("provider") == "openclaw" and model in _SYNTHETIC_MODELS:
            result.skip(_SYNTHETIC_MODELS[model])
            return
        blocks = collect_blocks(message.get("content"), BLOCKS, result)
        silent = _SILENT_REPLY.fullmatch(blocks.text)
        if silent:
            result.skip(_SILENT_REPLIES[silent.group("token")])
            return
        self.state.model = model or self.state.model
        metadata = {
            key: message[key]
            for key in ("provider", "stopReason")
            if isinstance(message.get(key), str)
        }
        self.emit(
            result,
            line,
            "assistant",
            blocks,
            model=model,
            channel=self.state.channel,
            metadata=metadata,
            **common,
        )


def discover_files(found: Discovery) -> None:
    """Every live and archived transcript file of every agent, with its sessions.json channel.

    An archive copy ends its session only when no live file of the session is beside it
    (a `.bak.` copy of a running session leaves that session running).
    """
    for instance, agent in agent_dirs(found):
        sessions = agent / "sessions"
        bad: list[DiscoveryError] = []
        index = load_sessions_index(sessions, bad)
        found.bad_files += [replace(error, instance=instance) for error in bad]
        listed = found.children(sessions)
        for path in listed:
            if not path.is_file() or not is_transcript_file(path):
                continue
            session_id = session_id_from_path(path)
            entry = index.get(session_id)
            archived = is_archived(path)
            found.sources.append(
                TranscriptSource(
                    kind=KIND,
                    instance=instance,
                    agent_id=agent.name,
                    path=path,
                    session_id=session_id,
                    archived=archived,
                    ends_session=archived and live_path(path) not in listed,
                    topic_id=topic_id_from_path(path),
                    channel=entry.channel if entry else None,
                )
            )
