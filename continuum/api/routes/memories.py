"""Memories (R21–R24): browse by kind, status, importance, tags, session, channel, with provenance
and the ids of the source turns; the kinds themselves, from the registry."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel

from continuum.api.auth import ScopeDep, current_scope
from continuum.api.pagination import Page
from continuum.api.params import ListingDep
from continuum.api.schemas import MemoryOut
from continuum.domain.kinds import KINDS
from continuum.recall import listings

router = APIRouter(prefix="/v1/memories", tags=["memories"])
Status = Literal["active", "superseded", "merged", "quarantined", "forgotten", "archived", "any"]


@router.get("")
def list_memories(
    scope: ScopeDep,
    listing: ListingDep,
    q: Annotated[str | None, Query(max_length=500, description="Full-text query.")] = None,
    kind: Annotated[str | None, Query(max_length=64)] = None,
    status: Status = "active",
    min_importance: Annotated[int | None, Query(ge=1, le=10)] = None,
    tag: Annotated[list[str] | None, Query(description="Required tags (repeatable).")] = None,
    session_id: Annotated[str | None, Query(max_length=200)] = None,
    channel: Annotated[
        str | None, Query(max_length=200, description="Only memories from this channel.")
    ] = None,
    user_id: Annotated[
        str | None, Query(max_length=200, description="Owner; needed to see private memories.")
    ] = None,
    include_private: Annotated[
        bool, Query(description="With `user_id`: also that user's private memories (R42).")
    ] = False,
) -> Page[MemoryOut]:
    """Memories, newest first. Private ones only for their owner (`user_id` + `include_private`)."""
    filters = listings.MemoryFilters(
        query=q,
        kind=kind,
        status=None if status == "any" else status,
        min_importance=min_importance,
        tags=tuple(tag or ()),
        session_id=session_id,
        channel=channel,
        user_id=user_id,
        include_private=include_private and user_id is not None,
    )
    rows = listings.memories(scope.namespaces, filters, listing.window)
    return listing.page.page([MemoryOut.model_validate(row) for row in rows])


class KindOut(BaseModel):
    kind: str
    description: str
    storable: bool  # accepted as `memory_type` by the store and update tools


@router.get("/kinds", dependencies=[Depends(current_scope)])
def list_kinds() -> list[KindOut]:
    """Every memory kind, in registry order: what it holds and whether the tools store it."""
    return [
        KindOut(kind=k.name, description=k.description, storable=k.tool_storable) for k in KINDS
    ]
