"""Cleaning OpenClaw user text: untrusted-metadata blocks, `System:` event lines, channel and
webchat envelopes, `[message_id: N]` tags and cron prompts, with the source facts they carry.

Pure string work for the OpenClaw parser (`openclaw`); `first_str`, how OpenClaw's JSON
fields are read as text, also serves the parser and `sessions.json` (`openclaw_layout`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from continuum.transcripts.models import CronInfo

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


@dataclass
class CleanText:
    """User text without envelopes or metadata blocks, and the source facts they carried."""

    text: str
    sender: str | None = None
    channel: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


def first_str(values: dict[str, Any], *keys: str) -> str | None:
    """The first of `keys` holding a non-empty string or an int (not a bool), as text."""
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
        clean.sender = first_str(info, "sender", "name", "label") or clean.sender
        clean.channel = first_str(info, "channel") or clean.channel
        message_id = first_str(info, "message_id")
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
