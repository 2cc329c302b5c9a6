"""`POST /v1/events`: validate one event or a batch and enqueue it (the write plane, R90).

The body is an event object or an array of them. `namespace` may be left out when the token
covers exactly one. Nothing is enqueued unless every event is valid and in the token's scope.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, HTTPException, Request, status
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, TypeAdapter

from continuum.api.auth import Scope, ScopeDep
from continuum.api.errors import detail, event_error, field_error
from continuum.contract.client import EnqueueError, MemoryClient
from continuum.contract.events import Event, EventError

router = APIRouter(prefix="/v1", tags=["events"])
EVENT_SCHEMA_TEMPLATE = "#/components/schemas/{model}"
EVENTS_BODY_SCHEMA = TypeAdapter(Event | list[Event]).json_schema(
    ref_template=EVENT_SCHEMA_TEMPLATE
)
EVENT_DEFS = EVENTS_BODY_SCHEMA.pop("$defs")  # go to the spec's components


class Enqueued(BaseModel):
    enqueued: int
    event_ids: list[str]


def _scope_events(items: list[Any], scope: Scope, batch: bool) -> None:
    """Fill a missing namespace from the request's one namespace (its `instance`, or a
    one-namespace token); refuse namespaces out of scope."""
    errors = []
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            continue
        if "namespace" not in item and len(scope.namespaces) == 1:
            item["namespace"] = scope.namespaces[0]
        namespace = item.get("namespace")
        if isinstance(namespace, str) and not scope.owns(namespace):
            loc: list[str | int] = ["body", index, "namespace"] if batch else ["body", "namespace"]
            errors.append(detail(loc, f"this token may not write to namespace {namespace!r}"))
    if errors:
        raise HTTPException(status.HTTP_403_FORBIDDEN, errors)


@router.post(
    "/events",
    status_code=status.HTTP_202_ACCEPTED,
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": EVENTS_BODY_SCHEMA}},
        }
    },
    responses={422: {"description": "An event is invalid; `detail` names each bad field."}},
)
async def post_events(request: Request, scope: ScopeDep) -> Enqueued:
    """Validate and enqueue events; returns their ids (202: workers process them later)."""
    try:
        body = json.loads(await request.body())
    except ValueError as exc:
        raise field_error(["body"], f"not valid JSON: {exc}", status.HTTP_400_BAD_REQUEST) from None
    except RecursionError:
        raise field_error(
            ["body"], "nested too deeply to read", status.HTTP_400_BAD_REQUEST
        ) from None
    batch = isinstance(body, list)
    items = body if batch else [body]
    _scope_events(items, scope, batch)
    client: MemoryClient = request.app.state.memory_client
    try:
        ids = await run_in_threadpool(client.emit_many, items)
    except EventError as exc:
        raise event_error(exc, batch) from None
    except EnqueueError as exc:
        raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, str(exc)) from None
    return Enqueued(enqueued=len(ids), event_ids=ids)
