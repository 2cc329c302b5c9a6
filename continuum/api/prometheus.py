"""`GET /metrics`: Prometheus text exposition of the pipeline (R48, R93).

Flower shows workers and tasks but not how much is waiting, so this adds, read at scrape
time: the depth of every Celery queue (Redis LLEN over kombu's priority lists in the broker),
messages delivered but not yet acknowledged, the dead-letter store by task, the open sync
problems by kind, every pipeline counter of `continuum.store.metrics` as a Prometheus
counter and each of its observations (summarization time, memories per session) as a
summary. A source that cannot be read is reported by `continuum_source_up{source=...} 0`
instead of failing the scrape.

No token: it carries aggregate numbers only (no tenant names or content). Keep it off the
public network (bind or proxy rules), like Flower.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import redis
from fastapi import APIRouter, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    Metric,
    SummaryMetricFamily,
)
from prometheus_client.registry import Collector
from sqlalchemy import func, select
from sqlalchemy.exc import SQLAlchemyError

from continuum.config import ConfigError
from continuum.redis_client import get_quick_redis
from continuum.store import metrics
from continuum.store.broker import TIMEOUT_S as SCRAPE_TIMEOUT_S
from continuum.store.broker import broker_state
from continuum.store.engine import session_scope
from continuum.store.models import DeadLetter
from continuum.sync import problems

router = APIRouter(tags=["monitoring"])
COUNTER_HELP = {
    metrics.MEMORIES_STORED: "Memories stored (capture, extraction, session end, tools).",
    metrics.MEMORIES_UPDATED: "Memories given a new version by update_memory.",
    metrics.MEMORIES_SUPERSEDED: "Memories superseded (a newer claim, an update, an LLM summary).",
    metrics.LLM_CALLS: "Calls to the LLM endpoint.",
    metrics.LLM_FALLBACKS: "LLM calls without a usable answer (deterministic path only).",
    metrics.LLM_BAD_OUTPUT: "LLM answers still invalid after their repair (nothing stored).",
    metrics.LLM_REPAIRS: "Invalid LLM answers sent back once with their validation error.",
    metrics.LLM_ERRORS: "LLM calls that failed (unreachable, 429, 5xx, refused).",
    metrics.LLM_TIMEOUTS: "LLM calls that ran out of their deadline.",
    metrics.LLM_PROMPT_TOKENS: "Prompt tokens of LLM calls.",
    metrics.LLM_COMPLETION_TOKENS: "Completion tokens of LLM calls.",
    metrics.LLM_BUDGET_SKIPS: "LLM calls not made: the tenant's daily token budget was spent.",
    metrics.DEAD_LETTERS: "Messages moved to the dead-letter store.",
    metrics.SECRETS_REDACTED: "Secrets replaced by [redacted:<type>] in stored messages and memories.",
    metrics.EVENTS_REDELIVERED: "Accepted events published again from the in-flight ledger: lost "
    "between the broker and a worker (a broker restart, a worker lost in kombu's BRPOP window).",
}
OBSERVATION_HELP = {
    metrics.SUMMARIZATION_SECONDS: "Seconds a session end took to summarize and extract.",
    metrics.SESSION_MEMORIES: "Memories of a session when it was finished.",
}


def _queues() -> Iterator[Metric]:
    state = broker_state()
    depth = GaugeMetricFamily(
        "continuum_queue_depth", "Messages waiting in a Celery queue.", labels=["queue"]
    )
    for queue, count in state.depths.items():
        depth.add_metric([queue], count)
    yield depth
    yield GaugeMetricFamily(
        "continuum_queue_unacked",
        "Messages delivered to a worker and not yet acknowledged.",
        value=state.unacked,
    )


def _stored() -> Iterator[Metric]:
    stmt = select(DeadLetter.task_name, func.count()).group_by(DeadLetter.task_name)
    with session_scope() as db:
        rows = db.execute(stmt).all()
        open_problems = problems.open_counts(db)
    family = GaugeMetricFamily(
        "continuum_dead_letters_stored", "Rows in the dead-letter store.", labels=["task"]
    )
    for task_name, count in rows:
        family.add_metric([task_name], count)
    yield family
    found = GaugeMetricFamily(
        "continuum_sync_problems_open",
        "Bad input transcript sync found that is still there (sync_problems).",
        labels=["kind"],
    )
    for kind, count in sorted(open_problems.items()):
        found.add_metric([kind], count)
    yield found


def _counters() -> Iterator[Metric]:
    # A short-timeout client without retries: a down Redis must not stall the scrape.
    with get_quick_redis(SCRAPE_TIMEOUT_S) as client:
        counters = metrics.snapshot(client)
    for name in metrics.OBSERVATIONS:
        count, total = int(counters.pop(f"{name}_count", 0)), counters.pop(f"{name}_sum", 0)
        yield SummaryMetricFamily(
            f"continuum_{name}", OBSERVATION_HELP[name], count_value=count, sum_value=total
        )
    for name, value in counters.items():
        help_text = COUNTER_HELP.get(name, f"Pipeline counter {name}.")
        yield CounterMetricFamily(f"continuum_{name}", help_text, value=value)


SOURCES: dict[str, Callable[[], Iterator[Metric]]] = {
    "broker": _queues,
    "postgres": _stored,
    "redis": _counters,
}


class PipelineCollector(Collector):
    """Reads every source at scrape time; a failing source is reported, not raised."""

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily(
            "continuum_source_up", "1 when a source could be read.", labels=["source"]
        )
        for source, read in SOURCES.items():
            try:
                families = list(read())
            except (redis.RedisError, SQLAlchemyError, ConfigError):
                up.add_metric([source], 0)
                continue
            up.add_metric([source], 1)
            yield from families
        yield up


_REGISTRY = CollectorRegistry(auto_describe=False)
_REGISTRY.register(PipelineCollector())


@router.get("/metrics", response_class=Response)
def prometheus_metrics() -> Response:
    """Prometheus text exposition (no token; see docs/api.md)."""
    return Response(generate_latest(_REGISTRY), media_type=CONTENT_TYPE_LATEST)
