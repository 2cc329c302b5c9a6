"""`embed` queue: fill the embedding outbox in batches."""

from __future__ import annotations

from typing import Any

from continuum.config import get_settings
from continuum.contract.queues import EMBED_PENDING, EMBED_SCHEDULED_KEY
from continuum.pipeline.outbox import embed_pending
from continuum.redis_client import get_redis
from workers.app import app
from workers.base import ReliableTask

TIME_BUDGET_S = 20.0


@app.task(name=EMBED_PENDING, base=ReliableTask, bind=True)
def embed_pending_task(self: ReliableTask) -> dict[str, Any]:
    # Clear the flag first: rows committed from now on schedule a new run themselves.
    get_redis().delete(EMBED_SCHEDULED_KEY)
    result = embed_pending(time_budget_s=TIME_BUDGET_S)
    if result.seconds >= TIME_BUDGET_S:  # budget spent with work left: keep going
        schedule_embedding()
    return {"embedded": result.embedded, "seconds": round(result.seconds, 3)}


def schedule_embedding() -> None:
    """Queue one outbox run unless one is already waiting (or embeddings are off)."""
    if get_settings().embedding_provider == "none":
        return
    if get_redis().set(EMBED_SCHEDULED_KEY, "1", nx=True, ex=60):
        embed_pending_task.apply_async()
