"""What every format's discovery works with: the `Discovery` walk and the sources it finds.

Each format finds its own sources (a function in its module, named by its row in
`continuum.transcripts.formats`); `formats.discover` runs the enabled ones over one
`Discovery`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict


class TranscriptSource(BaseModel):
    """One transcript file (or SQLite store, which holds many sessions: `session_id` None).

    `kind` names the source's format: its row in `continuum.transcripts.formats.FORMATS`.
    `archived`: an archive copy (`.reset.`, `.deleted.`, `.bak.`); `ends_session`: an
    archive copy with no live file beside it, so its session is over.
    """

    model_config = ConfigDict(frozen=True)

    kind: str
    instance: str
    agent_id: str | None
    path: Path
    session_id: str | None
    archived: bool = False
    ends_session: bool = False
    topic_id: str | None = None
    channel: str | None = None


@dataclass(frozen=True)
class DiscoveryError:
    """A directory that could not be listed (or, by `kind`, another file discovery reads,
    like a malformed `sessions.json`, at `line_no` when known)."""

    path: Path
    detail: str
    kind: str = "unreadable_dir"
    line_no: int | None = None
    instance: str | None = None


@dataclass
class Discovery:
    """One look over a host: where to look, the sources found (sorted by kind, then path,
    once `discover` returns), the directories that could not be read (`errors`) and the
    other files discovery reads that are malformed (`bad_files`: a bad `sessions.json`).

    `home` is the home directory the runtimes write under; `roots` the explicit OpenClaw
    instance directories (None: `home/.openclaw*`).
    """

    home: Path
    roots: list[Path] | None = None
    sources: list[TranscriptSource] = field(default_factory=list)
    errors: list[DiscoveryError] = field(default_factory=list)
    bad_files: list[DiscoveryError] = field(default_factory=list)
    _listed: dict[Path, list[Path]] = field(default_factory=dict, repr=False)

    def children(self, directory: Path) -> list[Path]:
        """Sorted entries of `directory`; a missing one is empty, an unreadable one reported.

        Each directory is listed once per discovery, so formats that share a tree (OpenClaw
        files and stores) neither list it twice nor report its errors twice.
        """
        listed = self._listed.get(directory)
        if listed is None:
            listed = self._listed[directory] = self._list(directory)
        return listed

    def _list(self, directory: Path) -> list[Path]:
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
