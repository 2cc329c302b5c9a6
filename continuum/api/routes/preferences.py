"""User preferences (R7): all (optionally of one category), one by key, set one."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, status
from pydantic import BaseModel, Field

from continuum.api.auth import NOT_FOUND, ScopeDep
from continuum.api.pagination import Page, PageDep
from continuum.memory import preferences
from continuum.memory.preferences import Preference

router = APIRouter(prefix="/v1/preferences", tags=["preferences"])
UserId = Annotated[str | None, Query(max_length=200)]
Private = Annotated[bool, Query(description="With `user_id`: include that user's private ones.")]


class PreferenceIn(BaseModel):
    value: Annotated[str, Field(min_length=1, max_length=1000)]
    user_id: Annotated[str | None, Field(max_length=200)] = None
    category: Annotated[str | None, Field(max_length=64)] = None
    confidence: Annotated[float, Field(ge=0, le=1)] = 1.0
    channel: Annotated[str | None, Field(max_length=64)] = None
    session_id: Annotated[str | None, Field(max_length=200)] = None


@router.get("")
def list_preferences(
    scope: ScopeDep,
    page: PageDep,
    user_id: UserId = None,
    category: Annotated[str | None, Query(max_length=64)] = None,
    include_private: Private = False,
) -> Page[Preference]:
    """The newest active preference per key, sorted by category and key."""
    found = preferences.get_preferences(
        scope.namespace, user_id, category, include_private=include_private and bool(user_id)
    )
    return page.window(found)


@router.get("/{key}")
def get_preference(
    scope: ScopeDep, key: str, user_id: UserId = None, include_private: Private = False
) -> Preference:
    found = preferences.get_preference(
        scope.namespace, key, user_id, include_private=include_private and bool(user_id)
    )
    if found is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, NOT_FOUND)
    return found


@router.put("/{key}")
def set_preference(scope: ScopeDep, key: str, preference: PreferenceIn) -> Preference:
    """Set as the user stated it: a new value supersedes the old, the same one reinforces it."""
    return preferences.set_preference(scope.namespace, key, **preference.model_dump())
