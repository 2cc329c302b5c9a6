"""Transcript sync: the problems it found in the token's instances (bad lines, unreadable
files), where they are and when they were seen."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from continuum.api.auth import ScopeDep
from continuum.api.pagination import Page
from continuum.api.params import ListingDep
from continuum.store.reads import read_scope
from continuum.sync.problems import Problem, listing

router = APIRouter(prefix="/v1/sync", tags=["sync"])


@router.get("/problems")
def list_problems(
    scope: ScopeDep,
    page: ListingDep,
    resolved: Annotated[bool, Query(description="Also problems a later sync found fixed.")] = False,
) -> Page[Problem]:
    """Problems sync found, most recently seen first (dates: when last seen); read on the
    read plane (a standby when one is configured)."""
    with read_scope(scope.namespaces) as db:
        rows = listing(
            db,
            namespaces=scope.namespaces,
            since=page.window.since,
            until=page.window.until,
            include_resolved=resolved,
            limit=page.window.limit,
            offset=page.window.offset,
        )
    return page.page.page(rows)
