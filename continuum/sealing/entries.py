"""Sealed entries of text files (R15, R47): an encrypted tenant's workspace files (the activity
log, daily notes, `MEMORY.md`) keep each entry as one line, `enc2:…`, the entry's text
(its newlines included) sealed under its owner's key (the user's whose session or memory it
tells, else the tenant's) and bound to the file (its path in the tenant's workspace), so an
entry moved to another file does not open. Lines that tell nothing (a daily note's date
heading, `MEMORY.md`'s titles) stay as they are.

Sealing is deterministic: an append that finds its entry already written (a redelivered
narrative task) still finds it, and the only thing this shows is that two entries are equal.
Readers open a file whole (`open_file`); forgetting reads each line's key (`key_id_of`), so
the entries of a user whose keys are destroyed are still found and removed.
"""

from __future__ import annotations

from continuum.config import get_settings
from continuum.sealing.envelope import read_text, seal
from continuum.store.models import is_sealed

ENTRY_KIND = "workspace"


def seal_entry(namespace: str, user_id: str | None, file: str, entry: str) -> str:
    """`entry` (ending in a newline) as the file `file` stores it: one sealed line for an
    encrypted tenant, else unchanged."""
    if not get_settings().is_encrypted(namespace):
        return entry
    return seal(namespace, user_id, ENTRY_KIND, entry, file, deterministic=True) + "\n"


def open_line(line: str, file: str) -> str:
    """One line of `file` as written: a sealed entry opened (a damaged one reads as
    `[unreadable]`, one under a destroyed key as `[forgotten]`, each on its own line)."""
    if not is_sealed(line):
        return line
    opened = read_text(line.rstrip("\n"), ENTRY_KIND, file)
    return opened if opened.endswith("\n") else opened + "\n"


def open_file(data: str, file: str) -> str:
    """The text of `file` (as stored: `data`) with every sealed entry opened."""
    return "".join(open_line(line, file) for line in data.splitlines(keepends=True))
