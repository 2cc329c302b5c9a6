"""`MEMORY.md`, the curated narrative file maintenance distils into the tenant's workspace:
where it lives, what it says (by registry section) and writing it atomically."""

from __future__ import annotations

import os
from pathlib import Path
from typing import get_args

from sqlalchemy import text
from sqlalchemy.orm import Session as DbSession

from continuum.domain.kinds import MemoryKind, MemoryMdSection, kind_names
from continuum.memory.user_tasks import tasks_query
from continuum.pipeline.narrative import workspace
from continuum.sealing.envelope import read_text


def _md_kinds(title: MemoryMdSection) -> tuple[MemoryKind, ...]:
    return kind_names(lambda spec: spec.memory_md == title)


MD_SECTIONS = tuple((title, _md_kinds(title)) for title in get_args(MemoryMdSection))


def memory_md_path(namespace: str) -> Path:
    return workspace(namespace) / "MEMORY.md"


def render_memory_md(db: DbSession, namespace: str, items: int) -> str:
    """The curated narrative file: the most important active, non-private memories."""
    lines = [f"# MEMORY — {namespace}", "", "Distilled by Continuum maintenance; private "
             "memories are never included. Regenerated weekly — edit memories, not this file."]  # fmt: skip
    for title, kinds in MD_SECTIONS:
        rows = db.execute(
            text(
                "SELECT content, corroboration, created_at FROM memories WHERE namespace = :ns "
                "AND status = 'active' AND NOT private AND kind = ANY(CAST(:kinds AS text[])) "
                "ORDER BY importance DESC, corroboration DESC, created_at DESC, id LIMIT :n"
            ),
            {"ns": namespace, "n": items, "kinds": list(kinds)},
        ).all()
        lines += ["", f"## {title}", ""]
        lines += [
            f"- {read_text(r.content, 'memories.content')} ({r.created_at:%Y-%m-%d}"
            + (f", confirmed {r.corroboration}×)" if r.corroboration > 1 else ")")
            for r in rows
        ] or ["- (none)"]
    tasks = [task.title for task in db.scalars(tasks_query(namespace, limit=items))]
    lines += ["", "## Active tasks", "", *([f"- [ ] {t}" for t in tasks] or ["- (none)"])]
    return "\n".join(lines) + "\n"


def write_memory_md(db: DbSession, namespace: str, path: Path, items: int) -> int:
    """Write MEMORY.md atomically (temp file + rename): readers never see half a file."""
    content = render_memory_md(db, namespace, items)
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temp.write_text(content, encoding="utf-8")
    os.replace(temp, path)
    return 1
