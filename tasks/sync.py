"""`maintenance` queue: transcript sync (beat, every 5 minutes; R92)."""

from __future__ import annotations

from typing import Any

from continuum.config import get_settings
from continuum.contract.queues import SYNC_TRANSCRIPTS
from continuum.sync import sync
from tasks.embed import schedule_embedding
from workers.app import app
from workers.base import ReliableTask


@app.task(name=SYNC_TRANSCRIPTS, base=ReliableTask, bind=True)
def sync_transcripts(self: ReliableTask, backfill: bool = False) -> dict[str, Any]:
    # The time budget stops between sources before the soft time limit; the next run
    # continues from the cursors.
    summary = sync(backfill=backfill, time_budget_s=get_settings().sync_time_budget_s)
    if summary.messages_inserted:
        schedule_embedding()
    return summary.as_dict()
