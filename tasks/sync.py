"""`maintenance` queue: transcript sync (beat, every 5 minutes; R92)."""

from __future__ import annotations

from typing import Any

from continuum.config import get_settings
from continuum.queues import SYNC_TRANSCRIPTS
from continuum.sync import sync
from tasks.embed import schedule_embedding
from workers.app import app
from workers.base import ReliableTask


@app.task(name=SYNC_TRANSCRIPTS, base=ReliableTask, bind=True)
def sync_transcripts(self: ReliableTask, backfill: bool = False) -> dict[str, Any]:
    settings = get_settings()
    # The time budget stops between sources before the soft time limit; the next run
    # continues from the cursors.
    summary = sync(
        settings.sync_home,
        roots=settings.sync_roots,
        include_claude=settings.sync_include_claude,
        include_codex=settings.sync_include_codex,
        max_line_bytes=settings.sync_max_line_bytes,
        workers=settings.sync_workers,
        time_budget_s=settings.sync_time_budget_s,
        backfill=backfill,
    )
    if summary.messages_inserted:
        schedule_embedding()
    return summary.as_dict()
