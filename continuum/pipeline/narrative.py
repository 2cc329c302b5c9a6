"""The narrative layer (R15): human-readable workspace files per tenant.

- `<workspace>/<namespace>/activity-log.md`: one line per significant event,
  `[YYYY-MM-DD HH:MM] [channel] — summary`;
- `<workspace>/<namespace>/memory/YYYY-MM-DD.md`: daily notes.

Appends are whole-line writes to a file opened with O_APPEND under an exclusive lock, so
concurrent writers never tear a line; an entry already present is not written again, so a
redelivered task appends nothing twice: any number of consumers (a prefork pool, several
workers) may append at once. The `narrative` queue exists so that appends run on the host
that has the workspace files; a worker without them should not consume it.
"""

from __future__ import annotations

import fcntl
import os
from datetime import datetime
from pathlib import Path

from continuum.config import get_settings
from continuum.domain.text import one_line

TAIL_BYTES = 64 * 1024  # how far back a duplicate entry is looked for


def workspace(namespace: str) -> Path:
    return get_settings().workspace_dir / namespace


def activity_line(at: datetime, channel: str, summary: str) -> str:
    return f"[{at:%Y-%m-%d %H:%M}] [{one_line(channel)}] — {one_line(summary)}\n"


def append_once(path: Path, entry: str) -> bool:
    """Append `entry` atomically unless the file's tail already holds it; True if written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = entry.encode()
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        size = os.fstat(fd).st_size
        tail = os.pread(fd, min(size, TAIL_BYTES), max(0, size - TAIL_BYTES))
        if data in tail:
            return False
        prefix = b"\n" if tail and not tail.endswith(b"\n") else b""
        os.write(fd, prefix + data)
        os.fsync(fd)
        return True
    finally:
        os.close(fd)  # closing releases the lock


def append_activity(namespace: str, at: datetime, channel: str, summary: str) -> bool:
    return append_once(
        workspace(namespace) / "activity-log.md", activity_line(at, channel, summary)
    )


def append_daily_note(namespace: str, at: datetime, channel: str, note: str) -> bool:
    path = workspace(namespace) / "memory" / f"{at:%Y-%m-%d}.md"
    if not path.exists():
        append_once(path, f"# {at:%Y-%m-%d}\n\n")
    return append_once(path, f"## {at:%H:%M} · {one_line(channel)}\n\n{note.strip()}\n\n")


def record_session(namespace: str, at: datetime, channel: str, line: str, summary: str) -> None:
    """The session-end narrative: one activity-log line and a daily-note entry."""
    append_activity(namespace, at, channel, line)
    append_daily_note(namespace, at, channel, summary)
