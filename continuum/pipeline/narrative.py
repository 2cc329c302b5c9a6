"""The narrative layer (R15): human-readable workspace files per tenant.

- `<workspace>/<namespace>/activity-log.md`: one line per significant event,
  `[YYYY-MM-DD HH:MM] [channel] — summary`;
- `<workspace>/<namespace>/memory/YYYY-MM-DD.md`: daily notes.

Times are the tenant's wall clock (`Settings.local_time`): a session that ends at 23:30 UTC
is filed under the next day's note for a tenant in Tokyo.

Appends are whole-line writes to a file opened with O_APPEND under an exclusive lock, so
concurrent writers never tear a line; an encrypted tenant's entries are sealed lines
(`continuum.sealing.entries`); an entry already present is not written again, so a
redelivered task appends nothing twice: any number of consumers (a prefork pool, several
workers) may append at once. The `narrative` queue exists so that appends run on the host
that has the workspace files; a worker without them should not consume it.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from continuum.config import get_settings
from continuum.domain.text import one_line
from continuum.sealing.entries import seal_entry

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


def rewrite_locked(path: Path, rewrite: Callable[[str], str]) -> bool:
    """Replace the file's text by `rewrite(text)` in place, under the lock appends take (an
    append waits, none is lost); True if it changed."""
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        size = os.fstat(fd).st_size
        old = os.pread(fd, size, 0).decode("utf-8")
        new = rewrite(old)
        if new == old:
            return False
        data = new.encode("utf-8")
        os.pwrite(fd, data, 0)
        os.ftruncate(fd, len(data))
        os.fsync(fd)
        return True
    finally:
        os.close(fd)


def workspace_file(namespace: str, path: Path) -> str:
    """A file's name in the tenant's workspace, what its sealed entries are bound to."""
    return path.relative_to(workspace(namespace)).as_posix()


def append_entry(namespace: str, user_id: str | None, path: Path, entry: str) -> bool:
    """`append_once` of `entry` as the file stores it (one sealed line for an encrypted
    tenant, `continuum.sealing.entries`)."""
    return append_once(path, seal_entry(namespace, user_id, workspace_file(namespace, path), entry))


def append_activity(
    namespace: str, at: datetime, channel: str, summary: str, user_id: str | None = None
) -> bool:
    path = workspace(namespace) / "activity-log.md"
    return append_entry(namespace, user_id, path, activity_line(at, channel, summary))


def append_daily_note(
    namespace: str, at: datetime, channel: str, note: str, user_id: str | None = None
) -> bool:
    path = workspace(namespace) / "memory" / f"{at:%Y-%m-%d}.md"
    if not path.exists():
        append_once(path, f"# {at:%Y-%m-%d}\n\n")
    entry = f"## {at:%H:%M} · {one_line(channel)}\n\n{note.strip()}\n\n"
    return append_entry(namespace, user_id, path, entry)


def record_session(
    namespace: str,
    at: datetime,
    channel: str,
    line: str,
    summary: str,
    user_id: str | None = None,
) -> None:
    """The session-end narrative: one activity-log line and a daily-note entry, at the
    tenant's local time (sealed under the session's user's key for an encrypted tenant)."""
    at = get_settings().local_time(namespace, at)
    append_activity(namespace, at, channel, line, user_id)
    append_daily_note(namespace, at, channel, summary, user_id)
