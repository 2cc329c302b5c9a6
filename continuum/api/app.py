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
from sqlalchemy.exc import OperationalError

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


def _unavailable(message: str) -> JSONResponse:
    return JSONResponse(
        {"detail": [detail([], message, "service_unavailable")]},
        status_code=status.HTTP_503_SERVICE_UNAVAILABLE,
        headers={"Retry-After": "5"},
    )


async def _redis_unavailable(request: Request, exc: Exception) -> JSONResponse:
    """Redis stayed unreachable for CONTINUUM_REDIS_WAIT_S: 503, not a 500 after minutes."""
    return _unavailable(f"Redis unreachable for {wait_s():g}s ({exc}); retry later")


async def _database_unavailable(request: Request, exc: Exception) -> JSONResponse:
    """Postgres does not answer (stopped, restarting, a primary failing over): 503, as for
    Redis, not a 500. The driver's message stays in the server's log, without the statement
    and parameters SQLAlchemy adds to it (they may hold a tenant's text)."""
    orig = getattr(exc, "orig", None) or exc
    log.warning("%s %s: database unavailable: %s", request.method, request.url.path,
                str(orig).splitlines()[0] if str(orig) else type(orig).__name__)  # fmt: skip
    return _unavailable("the database does not answer; retry later")


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
    app.add_exception_handler(redis.ConnectionError, _redis_unavailable)
    app.add_exception_handler(redis.TimeoutError, _redis_unavailable)
    app.add_exception_handler(OperationalError, _database_unavailable)
    app.openapi = lambda: _openapi(app)  # type: ignore[method-assign]
    if tracing.configure("continuum-api"):  # CONTINUUM_OTEL: each request a trace
        tracing.instrument_app(app)
    return app
