"""Conflicts (R24, R29): quarantined claims beside the trusted memories they contradict, and
settling one (Mission Control's console): keep the quarantined value or the one in force."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, HTTPException, Query, status
from pydantic import BaseModel, ConfigDict

from continuum.api.auth import NOT_FOUND, ScopeDep
from continuum.api.pagination import Page, PageDep
from continuum.memory.claims import Conflict, Settled, conflicts, settle
from continuum.store.engine import session_scope
from continuum.store.reads import read_scope

router = APIRouter(prefix="/v1/conflicts", tags=["memories"])


@router.get("")
def list_conflicts(
    scope: ScopeDep,
    page: PageDep,
    user_id: Annotated[str | None, Query(max_length=200, description="Only this user's.")] = None,
) -> Page[Conflict]:
    """Open conflicts in the token's instances, oldest first."""
    with read_scope(scope.namespaces) as db:
        found = conflicts(db, scope.namespaces, user_id, limit=page.fetch, offset=page.offset)
    return page.page(found)


class Settlement(BaseModel):
    """Which value stands: the quarantined memory's, or the one in force it contradicted."""

    model_config = ConfigDict(extra="forbid")
    keep: Literal["quarantined", "active"]


@router.post("/{memory_id}/settle")
def settle_conflict(scope: ScopeDep, memory_id: int, body: Settlement) -> Settled:
    """Settle the conflict of quarantined memory `memory_id`: `{namespace, kept,
    superseded}`; 404 when it is not a quarantined memory of the token's instances."""
    with session_scope() as db:
        settled = settle(db, scope.namespaces, memory_id, body.keep == "quarantined")
    if settled is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, NOT_FOUND)
    return settled
