"""Traces (OpenTelemetry, the optional `otel` extra): one trace follows a turn from the
producer's `emit` through its task message to the worker's task, that task's SQL, Redis and
commit, the embedding outbox it schedules and any LLM call it makes.

Off by default, and then nothing here imports OpenTelemetry: `span()` hands back one shared
no-op context manager and `carry()` its argument, so instrumented code pays a function call
and a None check, and nothing is connected to Celery's signals.

On (`CONTINUUM_OTEL=1`), a process calls `configure()` as it starts (workers at
`worker_init`, the API in `create_app`, every `MemoryClient`). The SDK's tracer provider then
exports spans as the standard `OTEL_*` variables say: `OTEL_TRACES_EXPORTER` `otlp` (the
default: OTLP over HTTP/protobuf to `OTEL_EXPORTER_OTLP_ENDPOINT`, or
`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`), `console` or `none`; the service is
`OTEL_SERVICE_NAME`, else the process's role; `OTEL_TRACES_SAMPLER` samples. The maintained
instrumentations of Celery, SQLAlchemy, Redis and httpx are installed (FastAPI per app:
`instrument_app`). A process that already set up a tracer provider of its own (an
application that traces) keeps it: this module adds its spans and instrumentations to it.

Propagation: a task message published while a span is current carries that span's context
as a `traceparent` header, set in `before_task_publish`, whoever publishes it: `send_task` by
name from a producer app that registers no task (`MemoryClient`, `contract.dispatch`) as
well as `apply_async`. The Celery instrumentation's own publish hooks are disconnected: they
look the task up in the current app's registry, which does not hold a task sent by name, and
then start a span they never end and leave its context attached to the thread. The worker
side is the instrumentation's: each task runs in a `run/<task name>` span whose parent is the
message's `traceparent`.

A client call outside any span (a worker's lease renewal, the broker watch, kombu's restore
sweep: Redis commands several times a second) would be a one-span trace of its own; such
spans are not exported.
"""

from __future__ import annotations

import contextvars
import functools
import os
from collections.abc import Callable, Collection, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

from continuum.config import ConfigError, get_settings

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter

F = TypeVar("F", bound=Callable[..., Any])
Kind = Literal["internal", "producer", "consumer", "client", "server"]
Library = Literal["celery", "redis", "httpx", "sqlalchemy"]
WORKER_LIBRARIES: tuple[Library, ...] = ("celery", "redis", "httpx", "sqlalchemy")
PRODUCER_LIBRARIES: tuple[Library, ...] = ("celery", "redis")
_OFF: AbstractContextManager[None] = nullcontext()


@dataclass
class _Tracing:
    """What `configure` set up: the tracer of our spans, and what `shutdown` undoes."""

    tracer: Any
    provider: TracerProvider
    kinds: dict[str, Any]
    instrumentors: dict[str, Any] = field(default_factory=dict)


_state: _Tracing | None = None


def active() -> bool:
    """Whether this process traces (`configure` turned it on)."""
    return _state is not None


def configure(
    service: str,
    libraries: Collection[Library] = WORKER_LIBRARIES,
    exporter: SpanExporter | None = None,
) -> bool:
    """Turn tracing on for this process, as `service`, with `libraries` instrumented; a
    later call instruments the libraries not yet instrumented. Does nothing and answers
    False unless `CONTINUUM_OTEL` is on or an `exporter` is given (tests: it receives every
    span as it ends)."""
    global _state
    if _state is None:
        if exporter is None and not get_settings().otel:
            return False
        _state = _start(service, exporter)
    for library in libraries:
        if library not in _state.instrumentors:
            _state.instrumentors[library] = _INSTRUMENT[library](_state.provider)
    return True


def _start(service: str, exporter: SpanExporter | None) -> _Tracing:
    try:
        from opentelemetry import trace
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
    except ImportError as exc:
        raise ConfigError(
            f"CONTINUUM_OTEL is on but OpenTelemetry is not installed ({exc}): "
            "pip install 'continuum[otel]', or unset CONTINUUM_OTEL"
        ) from None
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider(resource=Resource.create({"service.name": service}))
        trace.set_tracer_provider(provider)
        configured = None if exporter else _exporter_from_environment()
        if configured is not None:
            provider.add_span_processor(_without_lone_client_spans(BatchSpanProcessor)(configured))
    if exporter is not None:  # every span as it ends, at once
        provider.add_span_processor(_without_lone_client_spans(SimpleSpanProcessor)(exporter))
    kind = trace.SpanKind
    kinds = {"internal": kind.INTERNAL, "producer": kind.PRODUCER, "consumer": kind.CONSUMER,
             "client": kind.CLIENT, "server": kind.SERVER}  # fmt: skip
    return _Tracing(trace.get_tracer("continuum"), provider, kinds)


def _exporter_from_environment() -> SpanExporter | None:
    """The exporter `OTEL_TRACES_EXPORTER` names: otlp (default), console or none."""
    from opentelemetry.environment_variables import OTEL_TRACES_EXPORTER
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter

    name = os.environ.get(OTEL_TRACES_EXPORTER, "otlp").strip().lower()
    if name == "none":
        return None
    if name == "console":
        return ConsoleSpanExporter()
    if name != "otlp":
        raise ConfigError(f"{OTEL_TRACES_EXPORTER}={name!r}: use otlp, console or none")
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter()


def _without_lone_client_spans(base: type[Any]) -> type[Any]:
    """The span processor `base` (batching or not), except that client spans without a
    parent (background Redis commands and the like, each a trace of one span) never reach
    its exporter."""
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.trace import SpanKind

    class _Processor(base):
        def on_end(self, span: ReadableSpan) -> None:
            if span.parent is None and span.kind is SpanKind.CLIENT:
                return
            super().on_end(span)

    return _Processor


def _instrument_celery(provider: TracerProvider) -> Any:
    from celery import signals
    from opentelemetry.instrumentation.celery import CeleryInstrumentor

    instrumentor = CeleryInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    # Its publish hooks leak a span and a context for tasks sent by name (module docstring);
    # ours injects the current context into every message instead.
    signals.before_task_publish.disconnect(instrumentor._trace_before_publish)
    signals.after_task_publish.disconnect(instrumentor._trace_after_publish)
    signals.before_task_publish.connect(_inject_context, weak=False)
    return instrumentor


def _inject_context(headers: dict[str, Any] | None = None, **_: Any) -> None:
    """`before_task_publish`: the current span's context into the message's headers."""
    from opentelemetry import propagate

    if headers is not None:
        propagate.inject(headers)


def _instrument_redis(provider: TracerProvider) -> Any:
    from opentelemetry.instrumentation.redis import RedisInstrumentor

    instrumentor = RedisInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    return instrumentor


def _instrument_httpx(provider: TracerProvider) -> Any:
    from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor

    instrumentor = HTTPXClientInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    return instrumentor


def _instrument_sqlalchemy(provider: TracerProvider) -> Any:
    """Engines created from now on (`sqlalchemy.create_engine`) are traced: one span per
    statement, no parameter values."""
    from opentelemetry.instrumentation.sqlalchemy import SQLAlchemyInstrumentor

    instrumentor = SQLAlchemyInstrumentor()
    # Its declared range stops below SQLAlchemy 2.1, whose engine events it uses unchanged
    # (tests/observability checks the statements' spans): the version check is skipped.
    instrumentor.instrument(tracer_provider=provider, skip_dep_check=True)
    return instrumentor


_INSTRUMENT: dict[str, Callable[[TracerProvider], Any]] = {
    "celery": _instrument_celery,
    "redis": _instrument_redis,
    "httpx": _instrument_httpx,
    "sqlalchemy": _instrument_sqlalchemy,
}


def instrument_app(app: Any) -> None:
    """Trace the FastAPI `app`'s requests (a `traceparent` header sent with one continues
    its trace); nothing when tracing is off."""
    if _state is None:
        return
    from opentelemetry.instrumentation.fastapi import FastAPIInstrumentor

    FastAPIInstrumentor.instrument_app(
        app, tracer_provider=_state.provider, exclude_spans=["receive", "send"]
    )


def span(
    name: str, kind: Kind = "internal", attributes: Mapping[str, Any] | None = None
) -> AbstractContextManager[Any]:
    """A span around a block, current inside it (no-op while tracing is off)."""
    state = _state
    if state is None:
        return _OFF
    return cast(
        AbstractContextManager[Any],
        state.tracer.start_as_current_span(name, kind=state.kinds[kind], attributes=attributes),
    )


def carry(fn: F) -> F:
    """`fn`, bound to the current trace context, for another thread to run (a thread pool's
    threads do not inherit it); `fn` itself while tracing is off."""
    if _state is None:
        return fn
    return cast(F, functools.partial(contextvars.copy_context().run, fn))


def parent_from_environment() -> AbstractContextManager[Any]:
    """In a short-lived process started by another one (the hooks' spool flush): spans
    inside continue the trace that process names in a `TRACEPARENT` (and `TRACESTATE`)
    environment variable, W3C trace context's environment carrier. No-op without one, or
    while tracing is off."""
    if _state is None or not os.environ.get("TRACEPARENT"):
        return _OFF
    from opentelemetry import propagate, trace

    carrier = {"traceparent": os.environ["TRACEPARENT"]}
    if os.environ.get("TRACESTATE"):
        carrier["tracestate"] = os.environ["TRACESTATE"]
    parent = trace.get_current_span(propagate.extract(carrier))
    return cast(AbstractContextManager[Any], trace.use_span(parent, end_on_exit=False))


def flush() -> None:
    """Export the spans still buffered (a pool process about to exit, which runs no atexit
    handler, calls it)."""
    if _state is not None:
        _state.provider.force_flush()


def shutdown() -> None:
    """Export what is buffered, undo the instrumentations and turn tracing off (tests; a
    process that ends flushes by itself)."""
    global _state
    state, _state = _state, None
    if state is None:
        return
    if "celery" in state.instrumentors:
        from celery import signals

        signals.before_task_publish.disconnect(_inject_context)
    for instrumentor in state.instrumentors.values():
        instrumentor.uninstrument()
    state.provider.force_flush()
