"""Error responses in one shape, FastAPI's own: `{"detail": [{"loc": [...], "msg": ..., "type": ...}]}`.

Validation errors of events (continuum.contract.events.EventError) are turned into this shape, so a
client finds the bad field by its location whatever produced the error.
"""

from __future__ import annotations

from collections.abc import Sequence

from fastapi import HTTPException, status

from continuum.contract.events import EventError


def detail(loc: Sequence[str | int], message: str, kind: str = "value_error") -> dict[str, object]:
    return {"loc": list(loc), "msg": message, "type": kind}


def field_error(
    loc: Sequence[str | int], message: str, code: int = status.HTTP_422_UNPROCESSABLE_CONTENT
) -> HTTPException:
    """An HTTPException naming one bad field."""
    return HTTPException(code, [detail(loc, message)])


def event_error(exc: EventError, batch: bool) -> HTTPException:
    """422 naming every bad field of an event, located in the request body."""
    prefix: list[str | int] = ["body"]
    if batch and exc.index is not None:
        prefix.append(exc.index)
    return HTTPException(
        status.HTTP_422_UNPROCESSABLE_CONTENT,
        [
            detail([*prefix, *(int(p) if p.isdigit() else p for p in field.split("."))], message)
            for field, message in exc.errors
        ],
    )
