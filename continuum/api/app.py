"""The FastAPI application: JSON API under /v1, Prometheus /metrics, Mission Control at /.

`create_app()` builds it; `continuum api` serves it with uvicorn.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import redis
from anyio import to_thread
from fastapi import FastAPI, Request, status
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles
from sqlalchemy.exc import DBAPIError

from continuum.api import prometheus
from continuum.api.errors import detail
from continuum.api.limits import DEFAULT_MAX_BODY_BYTES, BodySizeLimit
from continuum.api.routes import (
    account,
    conflicts,
    context,
    cron,
    documents,
    events,
    forget,
    memories,
    messages,
    pipeline,
    portability,
    preferences,
    session_turns,
    sessions,
    sync,
    tasks,
    tools,
    ui,
)
from continuum.api.serving import RebalanceConnections
from continuum.config import get_settings
from continuum.contract.client import MemoryClient
from continuum.observability import tracing
from continuum.redis_client import wait_s
from continuum.store import faults

log = logging.getLogger(__name__)

ROUTERS = (
    account.router,
    events.router,
    messages.router,
    context.router,
    cron.router,
    memories.router,
    tools.router,
    forget.router,
    portability.router,
    preferences.router,
    sessions.router,
    session_turns.router,
    documents.router,
    sync.router,
    conflicts.router,
    pipeline.router,
    tasks.router,
    prometheus.router,
    ui.router,
)


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    # The synchronous routes run on this pool (CONTINUUM_API_THREADS, docs/api.md).
    to_thread.current_default_thread_limiter().total_tokens = get_settings().api_threads
    app.state.memory_client = MemoryClient()
    try:
        yield
    finally:
        app.state.memory_client.close()


def _openapi(app: FastAPI) -> dict[str, Any]:
    """The generated spec plus the event models `POST /v1/events` refers to."""
    if app.openapi_schema is None:
        spec = get_openapi(title=app.title, version=app.version, routes=app.routes)
        spec.setdefault("components", {}).setdefault("schemas", {}).update(events.EVENT_DEFS)
        app.openapi_schema = spec
    return app.openapi_schema


def openapi_json() -> str:
    """The API's OpenAPI document as committed for the clients generated from it
    (`continuum openapi`; the TypeScript client in sdk/typescript/ is typed from it)."""
    return json.dumps(create_app().openapi(), indent=2, ensure_ascii=False) + "\n"


async def _unavailable(request: Request, exc: Exception) -> JSONResponse:
    """A fault that passes (`continuum.store.faults`: Redis or Postgres out of reach or
    failing over, too few broker replicas): 503 with Retry-After, not a 500 (after minutes,
    for Redis, before CONTINUUM_REDIS_WAIT_S bounded it). Postgres's message stays in the
    server's log, without the statement and parameters SQLAlchemy adds to it (they may hold a
    tenant's text). Any other fault of the same classes is raised on, a 500."""
    if not faults.passes(exc):
        raise exc
    if isinstance(exc, redis.ConnectionError | redis.TimeoutError):
        message = f"Redis unreachable for {wait_s():g}s ({exc}); retry later"
    elif isinstance(exc, DBAPIError):
        reason = str(exc.orig).splitlines()[:1] or [type(exc.orig).__name__]
        log.warning("%s %s: database unavailable: %s", request.method, request.url.path,
                    reason[0])  # fmt: skip
        message = "the database does not answer; retry later"
    elif isinstance(exc, redis.ResponseError):  # its text may quote the command's values
        message = "Redis is failing over or short of replicas; retry later"
    else:  # ours (NotReplicatedError) or kombu's: no values in them
        message = f"{exc}; retry later"
    return JSONResponse(
        {"detail": [detail([], message, "service_unavailable")]},
        status_code=status.HTTP_503_SERVICE_UNAVAILABLE,
        headers={"Retry-After": "5"},
    )


def create_app(max_body_bytes: int = DEFAULT_MAX_BODY_BYTES) -> FastAPI:
    app = FastAPI(
        title="Continuum",
        version="1",
        summary="Durable memory for AI agents: events in, context, search and memories out.",
        lifespan=_lifespan,
    )
    for router in ROUTERS:
        app.include_router(router)
    app.mount("/static", StaticFiles(directory=ui.STATIC_DIR), name="static")
    app.add_middleware(BodySizeLimit, max_bytes=max_body_bytes)
    app.add_middleware(RebalanceConnections)  # among several worker processes
    for fault in (*faults.PASSING, redis.ResponseError, DBAPIError):
        app.add_exception_handler(fault, _unavailable)
    app.openapi = lambda: _openapi(app)  # type: ignore[method-assign]
    if tracing.configure("continuum-api"):  # CONTINUUM_OTEL: each request a trace
        tracing.instrument_app(app)
    return app
