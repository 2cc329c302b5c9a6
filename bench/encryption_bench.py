"""Encryption at rest (R47), on beside off in the same run: the same turns ingested into an
encrypted tenant and a plain one (alternating, best of the rounds), then the same questions
asked of both (hybrid search and full-text message search)."""

from __future__ import annotations

import functools
import os
import secrets
from collections.abc import Callable
from typing import Any

from bench.capture_bench import _events
from bench.common import Options, Section, alternating, latencies_ms, timed
from bench.corpus import SUBJECTS

SEALED, PLAIN = "sealed", "plain"
ROUNDS = 3


def _ingest_rate(namespace: str, count: int, round_no: int) -> float:
    from continuum.pipeline.ingest import ingest_batch

    events = _events(count, namespace=namespace)
    for event in events:  # a fresh session and message ids per round
        event["session_id"] = f"r{round_no}-{event['session_id']}"
        event["message_id"] = f"r{round_no}-{event['message_id']}"
    with timed() as seconds:
        for start in range(0, count, 100):
            ingest_batch(events[start : start + 100])
    return count / seconds[0]


def _compare(
    section: Section, metric: str, measure: Callable[[str], dict[str, float]], unit: str
) -> None:
    sealed, plain = measure(SEALED), measure(PLAIN)
    for q in ("p50_ms", "p95_ms"):
        section.add(f"{metric} {q[:3]}", sealed[q], plain[q], unit, "encryption off", False)


def run(urls: dict[str, str], options: Options) -> list[Section]:
    from continuum.config import get_settings
    from continuum.pipeline.outbox import embed_pending
    from continuum.recall.namespace_queries import search_messages
    from continuum.recall.search import search

    os.environ["CONTINUUM_ENCRYPTION_KEY"] = secrets.token_hex(32)
    os.environ["CONTINUUM_ENCRYPTION_TENANTS"] = SEALED
    get_settings.cache_clear()
    count = 600 if options.quick else 2000
    queries = 40 if options.quick else 150
    section = Section("Encryption at rest: on (sealed rows, keyed terms) beside off")
    rates = alternating(
        ROUNDS, {ns: functools.partial(_ingest_rate, ns, count) for ns in (SEALED, PLAIN)}
    )
    section.add("ingest batch (persist + detect + store)", rates[SEALED], rates[PLAIN],
                "turns/s", f"encryption off; best of {ROUNDS}")  # fmt: skip
    embed_pending(time_budget_s=1200)  # vectors for both tenants, untimed
    asked = [f"what did we decide about {SUBJECTS[i % len(SUBJECTS)]}" for i in range(queries)]

    def questions(call: Callable[[str, str], Any]) -> Callable[[str], dict[str, float]]:
        def measure(namespace: str) -> dict[str, float]:
            it = iter(asked * 2)
            call(namespace, asked[0])  # warm caches (keys, statistics)
            return latencies_ms(lambda: call(namespace, next(it)), queries)

        return measure

    _compare(section, "search()", questions(lambda ns, q: search(ns, q, limit=10)), "ms")
    _compare(section, "messages search", questions(lambda ns, q: search_messages(ns, q)), "ms")
    os.environ.pop("CONTINUUM_ENCRYPTION_KEY")
    os.environ.pop("CONTINUUM_ENCRYPTION_TENANTS")
    get_settings.cache_clear()
    return [section]
