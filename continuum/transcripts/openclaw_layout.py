"""The on-disk layout of an OpenClaw instance: instance directories (`~/.openclaw*`), their
agents, transcript file names (topic threads, archive copies) and each agent's
`sessions.json` index.

Shared by the JSONL files (`openclaw`) and the SQLite stores (`openclaw_sqlite`).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from continuum.transcripts.discovery import Discovery, DiscoveryError
from continuum.transcripts.models import from_millis
from continuum.transcripts.openclaw_text import first_str

log = logging.getLogger(__name__)

OPENCLAW_DIR = ".openclaw"
_NEVER = datetime.min.replace(tzinfo=UTC)
_ARCHIVED = re.compile(r"\.jsonl\.(?:reset|deleted|bak)\.[^/]+$")
_TOPIC = re.compile(r"(?P<session>.+)-topic-(?P<topic>[^.]+)")


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
    session_id = first_str(raw, "sessionId")
    if session_id is None:
        return None
    delivery, origin = raw.get("deliveryContext"), raw.get("origin")
    channel = (
        (first_str(delivery, "channel") if isinstance(delivery, dict) else None)
        or first_str(raw, "lastChannel")
        or (first_str(origin, "provider") if isinstance(origin, dict) else None)
    )
    return SessionIndexEntry(
        key=key,
        session_id=session_id,
        channel=channel,
        chat_type=first_str(raw, "chatType"),
        updated_at=from_millis(raw.get("updatedAt")),
        model=first_str(raw, "model"),
        session_file=first_str(raw, "sessionFile"),
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


def instance_dirs(found: Discovery) -> list[Path]:
    """The OpenClaw instance directories: `found.roots`, or by default the `home/.openclaw*`
    directories."""
    if found.roots is not None:
        return list(found.roots)
    return [
        path
        for path in found.children(found.home)
        if path.is_dir() and (path.name == OPENCLAW_DIR or path.name.startswith(f"{OPENCLAW_DIR}-"))
    ]


def agent_dirs(found: Discovery) -> Iterator[tuple[str, Path]]:
    """(instance, agent directory) of every agent of every OpenClaw instance
    (`instance_dirs`)."""
    for root in instance_dirs(found):
        instance = instance_name(root)
        for agent in found.children(root / "agents"):
            if agent.is_dir():
                yield instance, agent
