"""Traces (OpenTelemetry): one trace per turn, from the producer's `emit` span through the
worker's task and its database spans to the commit and the embedding outbox (the turn is
searchable), read from the SDK's in-memory exporter with real servers and the real
in-process worker; the API's event route and the hooks' spool flush continue their caller's
trace, and an LLM call carries it to the endpoint. Off, OpenTelemetry's SDK is not loaded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from sqlalchemy import text

from continuum.api import create_app
from continuum.inference.llm import get_llm
from continuum.observability import tracing
from continuum.runtimes import spool
from continuum.security.tokens import create_token
from continuum.store.engine import dispose_engines, session_scope
from tests.support.events import session_end, turn
from tests.support.fake_llm import fake_llm_server
from tests.support.llm_answers import CHUNK, SUMMARY, VERDICT
from tests.support.wait import wait_for

CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"
TRACEPARENT = f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"


@pytest.fixture(scope="module")
def exporter(servers: dict[str, str]) -> Iterator[InMemorySpanExporter]:
    """Tracing on in this process (the in-process worker included) for these tests."""
    spans = InMemorySpanExporter()
    tracing.configure("continuum-test", exporter=spans)
    dispose_engines()  # engines made from now on are traced
    yield spans
    tracing.shutdown()
    dispose_engines()


@pytest.fixture
def spans(exporter: InMemorySpanExporter, db: Any, worker: Any) -> InMemorySpanExporter:
    exporter.clear()
    return exporter


def in_trace(spans: InMemorySpanExporter, trace_id: int) -> list[ReadableSpan]:
    return [s for s in spans.get_finished_spans() if s.context.trace_id == trace_id]


def named(found: list[ReadableSpan], name: str) -> list[ReadableSpan]:
    return [s for s in found if s.name == name]


def under(found: list[ReadableSpan], ancestor: ReadableSpan) -> list[ReadableSpan]:
    """The spans of `found` below `ancestor` (children, their children, ...)."""
    by_id = {s.context.span_id: s for s in found}
    below = []
    for span in found:
        parent = span.parent
        while parent is not None and parent.span_id in by_id:
            if parent.span_id == ancestor.context.span_id:
                below.append(span)
                break
            parent = by_id[parent.span_id].parent
    return below


def searchable(message_id: str) -> bool:
    """The turn is stored and embedded: full text and vector search both find it."""
    with session_scope() as db:
        return bool(
            db.scalar(
                text("SELECT embedding IS NOT NULL FROM messages WHERE message_id = :m"),
                {"m": message_id},
            )
        )


def embedded_in(spans: InMemorySpanExporter, trace_id: int) -> bool:
    return bool(named(in_trace(spans, trace_id), "run/continuum.embed_pending"))


def test_one_trace_per_turn_from_emit_to_searchable(
    spans: InMemorySpanExporter, client: Any
) -> None:
    traces = []
    for i, content in enumerate(("Let's go with Hoffmann for the garden.", "I prefer tea.")):
        client.emit(turn(content, message_id=f"t{i}", session_id=f"voice-{i}", at=i))
        [emit] = [s for s in named(spans.get_finished_spans(), "continuum.emit")
                  if s.context.trace_id not in traces]  # fmt: skip
        traces.append(emit.context.trace_id)
        wait_for(lambda i=i: searchable(f"t{i}"), timeout=60)
        wait_for(lambda: embedded_in(spans, traces[-1]), timeout=30)
    # The emit's span ended and left nothing current behind (no span or context leaked).
    assert not trace.get_current_span().get_span_context().is_valid

    for trace_id in traces:
        found = in_trace(spans, trace_id)
        [root] = [s for s in found if s.parent is None]
        assert root.name == "continuum.emit" and root.kind is trace.SpanKind.PRODUCER
        [ingest] = named(found, "run/continuum.ingest_events")  # one task, this turn's
        assert ingest.parent is not None and ingest.parent.span_id == root.context.span_id
        assert ingest.kind is trace.SpanKind.CONSUMER
        worked = under(found, ingest)
        sql = [s for s in worked if s.attributes.get("db.system") == "postgresql"]
        statements = [str(s.attributes.get("db.statement", "")) for s in sql]
        assert any(stmt.startswith("INSERT INTO messages") for stmt in statements), statements
        assert any(s.attributes.get("db.system") == "redis" for s in worked)
        [commit, *_] = named(worked, "continuum.commit")
        inserted = next(s for s in sql if "INSERT INTO messages" in str(s.attributes))
        assert inserted.end_time <= commit.end_time <= ingest.end_time
        [embed] = named(worked, "run/continuum.embed_pending")  # scheduled by this ingest
        assert named(under(found, embed), "continuum.commit")
        assert embed.start_time >= commit.end_time
    # Background client calls (the worker's lease renewal, the broker watch: Redis commands
    # outside any task) make no traces of their own.
    roots = [s for s in spans.get_finished_spans() if s.parent is None]
    assert roots and all(s.kind is not trace.SpanKind.CLIENT for s in roots)


def test_the_llm_call_carries_the_trace_to_the_endpoint(
    spans: InMemorySpanExporter, client: Any, settings_env: Any
) -> None:
    with fake_llm_server() as fake:
        settings_env(llm_base_url=fake.url, llm_model="fake-model")
        fake.by_prompt = {"chunk_judge": VERDICT, "session_summary": SUMMARY}
        get_llm.cache_clear()
        try:
            client.emit_many([*CHUNK, session_end(at=90)])
            [emit] = named(spans.get_finished_spans(), "continuum.emit")
            trace_id = emit.context.trace_id
            wait_for(lambda: len(named(in_trace(spans, trace_id), "continuum.llm")) == 2, 60)
        finally:
            get_llm.cache_clear()
    found = in_trace(spans, trace_id)
    asked = {str(s.attributes["continuum.prompt"]): s for s in named(found, "continuum.llm")}
    assert set(asked) == {"chunk_judge", "session_summary"}
    assert all(s.attributes["continuum.llm.outcome"] == "ok" for s in asked.values())
    requests = [s for s in found if s.kind is trace.SpanKind.CLIENT
                and {"http.method", "http.request.method"} & set(s.attributes or {})]  # fmt: skip
    assert len(requests) == 2
    for llm in asked.values():  # each call's request is inside its call, on the pool thread
        assert len([s for s in under(found, llm) if s in requests]) == 1
    # What the endpoint received: the trace, and each request's span as the parent.
    sent = [tuple(h["traceparent"].split("-")[1:3]) for h in fake.headers]
    assert sorted(sent) == sorted(
        (f"{trace_id:032x}", f"{s.context.span_id:016x}") for s in requests
    )


def test_the_event_route_continues_the_callers_trace(spans: InMemorySpanExporter) -> None:
    token, _ = create_token(["pearl"], "traced")
    headers = {"Authorization": f"Bearer {token}", "traceparent": TRACEPARENT}
    with TestClient(create_app()) as api:
        response = api.post("/v1/events", headers=headers, json=turn("Route me", message_id="r1"))
    assert response.status_code == 202
    caller = int(CALLER_TRACE, 16)
    wait_for(lambda: searchable("r1") and embedded_in(spans, caller), timeout=60)
    found = in_trace(spans, caller)
    [request] = [s for s in found if s.kind is trace.SpanKind.SERVER]
    assert request.parent is not None and request.parent.span_id == int(CALLER_SPAN, 16)
    [emit] = named(found, "continuum.emit")
    assert emit in under(found, request)
    assert named(under(found, emit), "run/continuum.ingest_events")


def test_the_hooks_flush_continues_the_trace_named_in_its_environment(
    spans: InMemorySpanExporter, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spool.write(tmp_path, turn("From a hook", message_id="h1", session_id="cc-1"))
    monkeypatch.setenv("TRACEPARENT", TRACEPARENT)
    spool.main([str(tmp_path)])  # as the background flush a hook starts runs it
    assert spool.pending(tmp_path) == []
    caller = int(CALLER_TRACE, 16)
    wait_for(lambda: searchable("h1") and embedded_in(spans, caller), timeout=60)
    [emit] = named(in_trace(spans, caller), "continuum.emit")
    assert emit.parent is not None and emit.parent.span_id == int(CALLER_SPAN, 16)
    assert not trace.get_current_span().get_span_context().is_valid  # nothing left attached


PROBE = """
import json, sys
from continuum.contract.client import MemoryClient
from continuum.observability import tracing
from continuum.store.engine import session_scope
from sqlalchemy import text
client = MemoryClient()
client.emit({"kind": "turn", "namespace": "probe", "session_id": "s", "channel": "cli",
             "ts": "2026-11-21T09:30:00Z", "role": "user", "content": "hello"})
with session_scope() as db:
    db.execute(text("SELECT 1"))
loaded = sorted({".".join(m.split(".")[:3]) for m in sys.modules if m.startswith(
    ("opentelemetry.sdk.trace", "opentelemetry.instrumentation", "opentelemetry.exporter"))})
print(json.dumps({"active": tracing.active(), "loaded": loaded}))
"""


@pytest.mark.parametrize("otel", ["", "1"])
def test_off_loads_nothing_of_the_tracing_sdk(servers: dict[str, str], otel: str) -> None:
    env = {key: value for key, value in os.environ.items() if key != "CONTINUUM_OTEL"}
    if otel:
        env.update(CONTINUUM_OTEL=otel, OTEL_TRACES_EXPORTER="none")
    done = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True
    )
    report = json.loads(done.stdout.splitlines()[-1])
    if otel:  # the probe can see them: on, they are there
        assert report["active"] and "opentelemetry.sdk.trace" in report["loaded"]
    else:
        assert report == {"active": False, "loaded": []}
