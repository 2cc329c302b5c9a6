"""Sessions: stored sessions (Postgres), active ones across channels and the channel
handoff (Redis, R2 and R5)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, status
from pydantic import BaseModel, Field

from continuum.api.auth import NOT_FOUND, ScopeDep
from continuum.api.pagination import Page
from continuum.api.params import ListingDep
from continuum.api.schemas import SessionOut
from continuum.ephemeral import handoff as handoffs
from continuum.ephemeral import sessions as live
from continuum.recall import listings

router = APIRouter(prefix="/v1", tags=["sessions"])
Name = Annotated[str, Field(min_length=1, max_length=200)]


class HandoffIn(BaseModel):
    user_id: Name
    from_channel: Name
    to_channel: Name | None = None  # none: any channel but from_channel
    context_summary: Annotated[str, Field(min_length=1, max_length=20_000)]


@router.get("/sessions")
def list_sessions(
    scope: ScopeDep,
    listing: ListingDep,
    channel: Annotated[str | None, Query(max_length=64)] = None,
    source: Annotated[
        str | None, Query(max_length=200, description="e.g. event, cron:<name>")
    ] = None,
) -> Page[SessionOut]:
    """Stored sessions, most recently active first."""
    rows = listings.sessions(scope.namespaces, listing.window, channel, source)
    return listing.page.page([SessionOut.model_validate(row) for row in rows])


@router.get("/sessions/active")
def active_sessions(scope: ScopeDep) -> list[live.ActiveSession]:
    """Sessions active in the last hour across channels, with their current topic."""
    return live.active_sessions(scope.namespace)


@router.get("/sessions/{session_id}")
def get_session(scope: ScopeDep, session_id: str) -> SessionOut:
    """One session (its messages: /v1/messages?session_id=, its memories: /v1/memories?session_id=)."""
    row = listings.find_session(scope.namespaces, session_id)
    if row is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, NOT_FOUND)
    return SessionOut.model_validate(row)


@router.post("/handoff", status_code=status.HTTP_201_CREATED)
def send_handoff(scope: ScopeDep, handoff: HandoffIn) -> dict[str, str]:
    """Announce that a user is switching channels (kept 10 minutes, read once by the first
    context block or check for `to_channel`, or, with none, for any other channel)."""
    return handoffs.send_handoff(scope.namespace, **handoff.model_dump())


@router.get("/handoff")
def check_handoff(
    scope: ScopeDep,
    user_id: Annotated[str, Query(min_length=1, max_length=200)],
    consume: Annotated[bool, Query(description="Read it once (the arriving session).")] = True,
    channel: Annotated[
        str | None, Query(max_length=200, description="Only a handoff for this channel.")
    ] = None,
) -> dict[str, str] | None:
    """The user's pending handoff (for `channel` if given), consumed unless `consume=false`;
    null when there is none."""
    if consume:
        return handoffs.consume_handoff(scope.namespace, user_id, channel)
    return handoffs.peek_handoff(scope.namespace, user_id, channel)
