"""OpenClaw transcripts (JSONL v3 entries under `~/.openclaw*/agents/<id>/sessions/`): where
they are, message cleaning, cron sessions, sessions.json.

The same entry logic reads JSONL files and SQLite transcript events (`openclaw_sqlite`).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from continuum.transcripts.discovery import Discovery, DiscoveryError, TranscriptSource
from continuum.transcripts.lines import BlockSpec, Entry, EntryParser, Line, collect_blocks
from continuum.transcripts.models import (
    Compaction,
    CronInfo,
    ParseResult,
    from_millis,
)

log = logging.getLogger(__name__)

KIND = "openclaw_jsonl"
OPENCLAW_DIR = ".openclaw"

BLOCKS = BlockSpec(
    text_types=frozenset({"text"}),
    image_types=frozenset({"image"}),
    skip_reasons={"thinking": "thinking", "redacted_thinking": "thinking", "toolCall": "tool_call"},
)
_SKIPPED_ENTRIES = frozenset(
    {"thinking_level_change", "custom", "custom_message", "label", "session_info", "branch_summary"}
)
_SYNTHETIC_MODELS = {"delivery-mirror": "delivery_mirror", "gateway-injected": "gateway_injected"}
_CHANNELS = (
    "Telegram|Discord|WhatsApp|Signal|Slack|iMessage|WebChat|Matrix|Microsoft Teams|Teams"
    "|Google Chat|LINE|Mattermost|Zalo|BlueBubbles|IRC|Nostr|Feishu|Twitch"
)
_DAYS = "Mon|Tue|Wed|Thu|Fri|Sat|Sun"

_UNTRUSTED_BLOCK = re.compile(
    r"^(?P<label>[^\n]*untrusted[^\n]*):[ \t]*\n```[a-z]*[ \t]*\n(?P<body>.*?)\n```[ \t]*\n?",
    re.IGNORECASE | re.MULTILINE | re.DOTALL,
)
_SYSTEM_LINE = re.compile(r"System: \[[^\]\n]*\] (?P<event>[^\n]*)(?:\n|\Z)")
_ENVELOPE = re.compile(rf"\[(?P<channel>{_CHANNELS})(?:\s+(?P<label>[^\]\n]*))?\]\s*")
_LABEL_TAIL = re.compile(
    rf"(?:\s+\+\d+[smhdw])?(?:\s+(?:(?:{_DAYS})\s+)?\d{{4}}-\d{{2}}-\d{{2}}\b.*)?\s*$"
)
_GROUP_LABEL = re.compile(r"#|\b(?:group|guild|channel|id:)", re.IGNORECASE)
_SPEAKER = re.compile(r"(?P<name>[^:\n]{1,64}?):\s+")
_WEBCHAT = re.compile(
    rf"\[(?:{_DAYS}) \d{{4}}-\d{{2}}-\d{{2}} \d{{2}}:\d{{2}}(?::\d{{2}})?(?: [^\]\n]+)?\]\s*"
)
_MESSAGE_ID = re.compile(r"[ \t]*\n?\[message_id: *(?P<id>[^\]\n]+)\][ \t]*")
_CRON = re.compile(r"\[cron:(?P<id>[^\s\]]+)\s+(?P<name>[^\]\n]*?)\s*\]\s*(?P<body>.*)", re.S)
_CURRENT_TIME = re.compile(r"^Current time: [^\n]*\n?", re.MULTILINE)
_HEARTBEAT_PROMPT = "Read HEARTBEAT.md if it exists"
_FLUSH_PROMPT = "Pre-compaction memory flush"
_SILENT_REPLIES = {"HEARTBEAT_OK": "heartbeat", "NO_REPLY": "no_reply"}
_SILENT_REPLY = re.compile(r"\W*(?P<token>HEARTBEAT_OK|NO_REPLY)\W*")

_NEVER = datetime.min.replace(tzinfo=UTC)
_ARCHIVED = re.compile(r"\.jsonl\.(?:reset|deleted|bak)\.[^/]+$")
_TOPIC = re.compile(r"(?P<session>.+)-topic-(?P<topic>[^.]+)")


@dataclass
class CleanText:
    """User text without envelopes or metadata blocks, and the source facts they carried."""

    text: str
    sender: str | None = None
    channel: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


def _first_str(values: dict[str, Any], *keys: str) -> str | None:
    for key in keys:
        value = values.get(key)
        if isinstance(value, str | int) and not isinstance(value, bool) and str(value):
            return str(value)
    return None


def _envelope(text: str, clean: CleanText) -> str:
    """Strip a leading `[Channel label]` or webchat `[Day date time]` envelope."""
    match = _ENVELOPE.match(text)
    if match is None:
        webchat = _WEBCHAT.match(text)
        if webchat:
            clean.channel = "webchat"
            return text[webchat.end() :]
        return text
    clean.channel = match.group("channel").lower().replace(" ", "")
    label = _LABEL_TAIL.sub("", match.group("label") or "", count=1).strip()
    body = text[match.end() :]
    speaker = _SPEAKER.match(body)
    if _GROUP_LABEL.search(label):
        clean.metadata["conversation_label"] = label
        if speaker:
            clean.sender = speaker.group("name").strip()
            body = body[speaker.end() :]
    elif label:
        clean.sender = label
    return body


def clean_user_text(text: str) -> CleanText:
    """Remove untrusted-metadata blocks, `System:` lines, envelopes and `[message_id: N]`."""
    clean = CleanText(text="")
    info: dict[str, Any] = {}

    def take_block(match: re.Match[str]) -> str:
        try:
            value = json.loads(match.group("body"))
        except json.JSONDecodeError:
            value = None
        if isinstance(value, dict):
            info.update({k: v for k, v in value.items() if k not in info})
        return ""

    def take_message_id(match: re.Match[str]) -> str:
        clean.metadata["channel_message_id"] = match.group("id").strip()
        return ""

    # Each pattern is tried only when its literal part is there: `sub` would otherwise try
    # it at every position of every message, a fifth of the parser's time.
    if "\n```" in text:
        text = _UNTRUSTED_BLOCK.sub(take_block, text)
    text = text.lstrip()
    events: list[str] = []
    while match := _SYSTEM_LINE.match(text):
        events.append(match.group("event"))
        text = text[match.end() :].lstrip()
    if events:
        clean.metadata["system_events"] = events
    text = _envelope(text, clean)
    if "[message_id:" in text:
        text = _MESSAGE_ID.sub(take_message_id, text)
    if info:
        clean.metadata["conversation_info"] = info
        clean.sender = _first_str(info, "sender", "name", "label") or clean.sender
        clean.channel = _first_str(info, "channel") or clean.channel
        message_id = _first_str(info, "message_id")
        if message_id:
            clean.metadata.setdefault("channel_message_id", message_id)
    clean.text = text.strip()
    return clean


def slugify(name: str) -> str:
    """Lower-case with every run of non-alphanumerics turned into one `-`."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def parse_cron_prompt(text: str) -> tuple[CronInfo, str] | None:
    """The cron job and its message from `[cron:<id> <name>] <message>\\nCurrent time: ...`."""
    match = _CRON.fullmatch(text)
    if match is None:
        return None
    name = match.group("name")
    info = CronInfo(job_id=match.group("id"), name=name, slug=slugify(name))
    return info, _CURRENT_TIME.sub("", match.group("body")).strip()


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
            self.context.model = _first_str(entry, "modelId") or self.context.model
            result.skip("model_change")
        else:
            name = str(kind)  # any JSON value, lists and objects included
            result.skip(name if name in _SKIPPED_ENTRIES else "unknown_entry")

    def _header(self, entry: Entry, at: datetime | None) -> None:
        ctx = self.context
        ctx.session_id = ctx.session_id or _first_str(entry, "id")
        ctx.started_at = ctx.started_at or at
        ctx.cwd = _first_str(entry, "cwd") or ctx.cwd

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
        self.context.channel = self.context.channel or clean.channel
        first_user, self.context.seen_user = not self.context.seen_user, True
        cron = parse_cron_prompt(clean.text) if first_user else None
        if cron:
            self.context.cron, clean.text = cron
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
            channel=clean.channel or self.context.channel,
            metadata=clean.metadata,
            **common,
        )

    def _assistant(
        self, message: Entry, line: Line, result: ParseResult, common: dict[str, Any]
    ) -> None:
        model = _first_str(message, "model")
        if message.get("provider") == "openclaw" and model in _SYNTHETIC_MODELS:
            result.skip(_SYNTHETIC_MODELS[model])
            return
        blocks = collect_blocks(message.get("content"), BLOCKS, result)
        silent = _SILENT_REPLY.fullmatch(blocks.text)
        if silent:
            result.skip(_SILENT_REPLIES[silent.group("token")])
            return
        self.context.model = model or self.context.model
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
            channel=self.context.channel,
            metadata=metadata,
            **common,
        )


class SessionIndexEntry(BaseModel):
    """One session's row in `sessions.json`."""

    model_config = ConfigDict(frozen=True)

    key: str
    session_id: str
    channel: str | None = None
    chat_type: str | None = None
    updated_at: datetime | None = None
    model: str | None = None
    session_file: str | None = None


def _index_entry(key: str, raw: dict[str, Any]) -> SessionIndexEntry | None:
    session_id = _first_str(raw, "sessionId")
    if session_id is None:
        return None
    delivery, origin = raw.get("deliveryContext"), raw.get("origin")
    channel = (
        (_first_str(delivery, "channel") if isinstance(delivery, dict) else None)
        or _first_str(raw, "lastChannel")
        or (_first_str(origin, "provider") if isinstance(origin, dict) else None)
    )
    return SessionIndexEntry(
        key=key,
        session_id=session_id,
        channel=channel,
        chat_type=_first_str(raw, "chatType"),
        updated_at=from_millis(raw.get("updatedAt")),
        model=_first_str(raw, "model"),
        session_file=_first_str(raw, "sessionFile"),
    )


def load_sessions_index(
    directory: Path, errors: list[DiscoveryError] | None = None
) -> dict[str, SessionIndexEntry]:
    """Entries of `<directory>/sessions.json` by session id ({} if missing or malformed;
    a malformed one is logged, and reported in `errors` when given)."""
    path = directory / "sessions.json"

    def bad(detail: str, line_no: int | None = None) -> dict[str, SessionIndexEntry]:
        log.warning("ignoring %s: %s", path, detail)
        if errors is not None:
            errors.append(DiscoveryError(path, detail, "bad_sessions_index", line_no))
        return {}

    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, NotADirectoryError):  # a bad directory is reported as such
        return {}
    except json.JSONDecodeError as exc:
        return bad(str(exc), exc.lineno)
    except (OSError, UnicodeDecodeError) as exc:
        return bad(str(exc))
    if not isinstance(raw, dict):
        return bad("not a JSON object")
    index: dict[str, SessionIndexEntry] = {}
    for key, value in raw.items():
        entry = _index_entry(key, value) if isinstance(value, dict) else None
        if entry is None:
            continue
        known = index.get(entry.session_id)
        if known is None or (entry.updated_at or _NEVER) > (known.updated_at or _NEVER):
            index[entry.session_id] = entry
    return index


def is_archived(path: Path) -> bool:
    """True for `<file>.jsonl.reset.<ts>`, `.deleted.<ts>` and `.bak.<ts>` files."""
    return _ARCHIVED.search(path.name) is not None


def is_transcript_file(path: Path) -> bool:
    """True for live (`*.jsonl`) and archived OpenClaw transcript files."""
    return path.name.endswith(".jsonl") or is_archived(path)


def live_path(path: Path) -> Path:
    """The live file an archive copy was made from (`x.jsonl.bak.<ts>` → `x.jsonl`)."""
    return path.with_name(_ARCHIVED.sub(".jsonl", path.name))


def _stem(path: Path) -> str:
    return _ARCHIVED.sub("", path.name).removesuffix(".jsonl")


def session_id_from_path(path: Path) -> str:
    """The session id in a transcript file name (topic and archive suffixes removed)."""
    stem = _stem(path)
    topic = _TOPIC.fullmatch(stem)
    return topic.group("session") if topic else stem


def topic_id_from_path(path: Path) -> str | None:
    """The Telegram thread id of a `<sessionId>-topic-<threadId>.jsonl` file."""
    topic = _TOPIC.fullmatch(_stem(path))
    return topic.group("topic") if topic else None


def instance_name(root: Path) -> str:
    """`.openclaw` → `default`, `.openclaw-DTeam` → `dteam`; other dirs: their own name."""
    name = root.name.lower()
    if name == OPENCLAW_DIR:
        return "default"
    if name.startswith(f"{OPENCLAW_DIR}-"):
        return name.removeprefix(f"{OPENCLAW_DIR}-")
    return name.lstrip(".") or "default"


def agent_dirs(found: Discovery) -> Iterator[tuple[str, Path]]:
    """(instance, agent directory) of every agent of every OpenClaw instance.

    Instances are `found.roots`, or by default the `home/.openclaw*` directories.
    """
    roots = found.roots
    if roots is None:
        roots = [
            path
            for path in found.children(found.home)
            if path.is_dir()
            and (path.name == OPENCLAW_DIR or path.name.startswith(f"{OPENCLAW_DIR}-"))
        ]
    for root in roots:
        instance = instance_name(root)
        for agent in found.children(root / "agents"):
            if agent.is_dir():
                yield instance, agent


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
