"""`MEMORY.md`, the curated narrative file maintenance distils into the tenant's workspace:
where it lives, what it says (by registry section, each line dated on the tenant's clock;
an encrypted tenant's entries sealed) and writing it atomically."""

from __future__ import annotations

import os
from pathlib import Path
from typing import get_args

from sqlalchemy import text
from sqlalchemy.orm import Session as DbSession

from continuum.config import get_settings
from continuum.domain.kinds import MemoryKind, MemoryMdSection, kind_names
from continuum.memory.user_tasks import tasks_query
from continuum.pipeline.narrative import workspace
from continuum.sealing.entries import seal_entry
from continuum.sealing.envelope import read_text

MEMORY_MD = "MEMORY.md"


def _md_kinds(title: MemoryMdSection) -> tuple[MemoryKind, ...]:
    return kind_names(lambda spec: spec.memory_md == title)


MD_SECTIONS = tuple((title, _md_kinds(title)) for title in get_args(MemoryMdSection))


def memory_md_path(namespace: str) -> Path:
    return workspace(namespace) / MEMORY_MD


def render_memory_md(db: DbSession, namespace: str, items: int, *, stored: bool = False) -> str:
    """The curated narrative file: the most important active, non-private memories. With
    `stored`, as the file keeps it: an encrypted tenant's entries each a line sealed under
    its owner's key (`continuum.sealing.entries`)."""
    zone = get_settings().zone_for(namespace)

    def entry(user_id: str | None, line: str) -> str:
        return seal_entry(namespace, user_id, MEMORY_MD, line + "\n")[:-1] if stored else line

    lines = [f"# MEMORY — {namespace}", "", "Distilled by Continuum maintenance; private "
             "memories are never included. Regenerated weekly — edit memories, not this file."]  # fmt: skip
    for title, kinds in MD_SECTIONS:
        rows = db.execute(
            text(
                "SELECT id, user_id, content, corroboration, created_at FROM memories "
                "WHERE namespace = :ns "
                "AND status = 'active' AND NOT private AND kind = ANY(CAST(:kinds AS text[])) "
                "ORDER BY importance DESC, corroboration DESC, created_at DESC, id LIMIT :n"
            ),
            {"ns": namespace, "n": items, "kinds": list(kinds)},
        ).all()
        lines += ["", f"## {title}", ""]
        lines += [
            entry(r.user_id,
                  f"- {read_text(r.content, 'memories.content', r.id)} ({r.created_at.astimezone(zone):%Y-%m-%d}"
                  + (f", confirmed {r.corroboration}×)" if r.corroboration > 1 else ")"))
            for r in rows
        ] or ["- (none)"]  # fmt: skip
    tasks = [entry(task.user_id, f"- [ ] {task.title}")
             for task in db.scalars(tasks_query(namespace, limit=items))]  # fmt: skip
    lines += ["", "## Active tasks", "", *(tasks or ["- (none)"])]
    return "\n".join(lines) + "\n"


def write_memory_md(db: DbSession, namespace: str, path: Path, items: int) -> int:
    """Write MEMORY.md atomically (temp file + rename): readers never see half a file."""
    content = render_memory_md(db, namespace, items, stored=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temp.write_text(content, encoding="utf-8")
    os.replace(temp, path)
    return 1
