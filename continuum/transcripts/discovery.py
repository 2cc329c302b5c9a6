"""Finding transcript sources on a host: OpenClaw instances, Claude Code and Codex sessions."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from continuum.transcripts.claude_code import ClaudeCodeParser
from continuum.transcripts.codex import CodexParser
from continuum.transcripts.lines import EntryParser
from continuum.transcripts.models import SessionContext
from continuum.transcripts.openclaw import (
    OpenClawParser,
    is_archived,
    is_transcript_file,
    load_sessions_index,
    session_id_from_path,
    topic_id_from_path,
)
from continuum.transcripts.openclaw_sqlite import STORE_NAME

SourceKind = Literal["openclaw_jsonl", "openclaw_sqlite", "claude_code", "codex"]
OPENCLAW_DIR = ".openclaw"
_UUID_TAIL = re.compile(r"[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}$", re.IGNORECASE)
_PARSERS: dict[SourceKind, type[EntryParser]] = {
    "openclaw_jsonl": OpenClawParser,
    "openclaw_sqlite": OpenClawParser,
    "claude_code": ClaudeCodeParser,
    "codex": CodexParser,
}


class TranscriptSource(BaseModel):
    """One transcript file (or SQLite store, which holds many sessions: `session_id` None)."""

    model_config = ConfigDict(frozen=True)

    kind: SourceKind
    instance: str
    agent_id: str | None
    path: Path
    session_id: str | None
    archived: bool = False
    topic_id: str | None = None
    channel: str | None = None


@dataclass(frozen=True)
class DiscoveryError:
    """A directory that could not be listed."""

    path: Path
    detail: str


@dataclass
class Discovery:
    """Sources found (sorted by kind, then path) and the directories that could not be read."""

    sources: list[TranscriptSource] = field(default_factory=list)
    errors: list[DiscoveryError] = field(default_factory=list)

    def children(self, directory: Path) -> list[Path]:
        """Sorted entries of `directory`; a missing one is empty, an unreadable one reported."""
        try:
            with os.scandir(directory) as entries:
                return sorted(Path(entry.path) for entry in entries)
        except FileNotFoundError:
            return []
        except OSError as exc:
            self.errors.append(DiscoveryError(directory, exc.strerror or str(exc)))
            return []

    def files_under(self, directory: Path) -> Iterator[Path]:
        """Every file below `directory`, depth first in sorted order."""
        for child in self.children(directory):
            if child.is_dir():
                yield from self.files_under(child)
            elif child.is_file():
                yield child


def instance_name(root: Path) -> str:
    """`.openclaw` → `default`, `.openclaw-DTeam` → `dteam`; other dirs: their own name."""
    name = root.name.lower()
    if name == OPENCLAW_DIR:
        return "default"
    if name.startswith(f"{OPENCLAW_DIR}-"):
        return name.removeprefix(f"{OPENCLAW_DIR}-")
    return name.lstrip(".") or "default"


def parser_for(source: TranscriptSource, context: SessionContext | None = None) -> EntryParser:
    """A parser for the source's format; a fresh context starts from the source's facts."""
    context = context or SessionContext(session_id=source.session_id, channel=source.channel)
    return _PARSERS[source.kind](context)


def _openclaw(found: Discovery, root: Path) -> None:
    instance = instance_name(root)
    for agent in found.children(root / "agents"):
        if not agent.is_dir():
            continue
        sessions = agent / "sessions"
        index = load_sessions_index(sessions)
        for path in found.children(sessions):
            if not path.is_file() or not is_transcript_file(path):
                continue
            session_id = session_id_from_path(path)
            entry = index.get(session_id)
            found.sources.append(
                TranscriptSource(
                    kind="openclaw_jsonl",
                    instance=instance,
                    agent_id=agent.name,
                    path=path,
                    session_id=session_id,
                    archived=is_archived(path),
                    topic_id=topic_id_from_path(path),
                    channel=entry.channel if entry else None,
                )
            )
        store = agent / "agent" / STORE_NAME
        if store.is_file():
            found.sources.append(
                TranscriptSource(
                    kind="openclaw_sqlite",
                    instance=instance,
                    agent_id=agent.name,
                    path=store,
                    session_id=None,
                )
            )


def _claude(found: Discovery, home: Path) -> None:
    for path in found.files_under(home / ".claude" / "projects"):
        if path.suffix == ".jsonl":
            found.sources.append(
                TranscriptSource(
                    kind="claude_code",
                    instance="claude-code",
                    agent_id=None,
                    path=path,
                    session_id=path.stem,
                )
            )


def _codex(found: Discovery, home: Path) -> None:
    for path in found.files_under(home / ".codex" / "sessions"):
        if path.name.startswith("rollout-") and path.suffix == ".jsonl":
            uuid = _UUID_TAIL.search(path.stem)
            found.sources.append(
                TranscriptSource(
                    kind="codex",
                    instance="codex",
                    agent_id=None,
                    path=path,
                    session_id=uuid.group(0) if uuid else path.stem,
                )
            )


def discover(
    roots: list[Path] | None,
    home: Path,
    include_claude: bool = True,
    include_codex: bool = True,
) -> Discovery:
    """All transcript sources: OpenClaw under `roots` (default `home/.openclaw*`), then others."""
    found = Discovery()
    if roots is None:
        roots = [
            path
            for path in found.children(home)
            if path.is_dir()
            and (path.name == OPENCLAW_DIR or path.name.startswith(f"{OPENCLAW_DIR}-"))
        ]
    for root in roots:
        _openclaw(found, root)
    if include_claude:
        _claude(found, home)
    if include_codex:
        _codex(found, home)
    found.sources.sort(key=lambda source: (source.kind, str(source.path)))
    return found
