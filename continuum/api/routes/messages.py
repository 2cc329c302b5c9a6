"""Conversations (R77): raw messages by filters, and hybrid search over memories + messages."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query

from continuum.api.auth import ScopeDep
from continuum.api.pagination import Page
from continuum.api.params import ListingDep
from continuum.recall import listings
from continuum.recall.fusion import SearchHit
from continuum.recall.namespace_queries import MessageHit
from continuum.recall.scope import SearchFilters
from continuum.recall.search import CANDIDATES, search

router = APIRouter(prefix="/v1", tags=["conversations"])
Text = Annotated[str | None, Query(max_length=500)]


@router.get("/messages")
def list_messages(
    scope: ScopeDep,
    listing: ListingDep,
    q: Annotated[str | None, Query(max_length=500, description="Full-text query.")] = None,
    role: Text = None,
    session_id: Text = None,
    channel: Text = None,
    user_id: Text = None,
    order: Literal["newest", "oldest"] = "newest",
) -> Page[MessageHit]:
    """Raw messages: full-text search (`q`), the last N, one `day`, one session, a date range."""
    filters = listings.MessageFilters(
        query=q,
        role=role,
        session_id=session_id,
        channel=channel,
        user_id=user_id,
        oldest_first=order == "oldest",
    )
    return listing.page.page(listings.messages(scope.namespaces, filters, listing.window))


@router.get("/search")
def hybrid_search(
    scope: ScopeDep,
    listing: ListingDep,
    q: Annotated[str, Query(min_length=1, max_length=500)],
    kind: Annotated[list[str] | None, Query(description="Memory kinds (repeatable).")] = None,
    tag: Annotated[list[str] | None, Query(description="Required tags (repeatable).")] = None,
    session_id: Text = None,
    channel: Text = None,
    user_id: Text = None,
    source: Annotated[
        list[Literal["memory", "message"]] | None, Query(description="Default: both.")
    ] = None,
) -> Page[SearchHit]:
    """Search by meaning and words (memories and messages), each hit with its source turns."""
    filters = SearchFilters(
        user_id=user_id,
        kinds=tuple(kind or ()),
        tags=tuple(tag or ()),
        session_id=session_id,
        channel=channel,
        since=listing.window.since,
        until=listing.window.until,
    )
    hits = search(
        scope.namespace,
        q,
        limit=listing.page.fetch_from_start,
        filters=filters,
        sources=tuple(source or ("memory", "message")),
        candidates=max(listing.page.fetch_from_start, CANDIDATES),
        tz=listing.zone,  # time phrases ("yesterday") name the tenant's days, or tz's
    )
    return listing.page.window(hits)
