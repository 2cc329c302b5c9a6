"""A session's turns, whole and in order (with the metadata their producer attached), and
erasing them: the conversation store of a runtime that keeps its history in Continuum (the
OpenAI Agents SDK session reads its items back, pops the last, clears them)."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query

from continuum.api.auth import ScopeDep
from continuum.api.pagination import Page, PageDep
from continuum.memory.gone_turns import erase_turns
from continuum.recall.turns import Turn, session_turns

router = APIRouter(prefix="/v1/sessions", tags=["sessions"])


@router.get("/{session_id}/messages")
def list_turns(
    scope: ScopeDep,
    page: PageDep,
    session_id: str,
    order: Literal["oldest", "newest"] = "oldest",
) -> Page[Turn]:
    """The session's turns by event time, oldest first (`order=newest`: the last first)."""
    turns = session_turns(scope.namespaces, session_id, order, page.fetch, page.offset)
    return page.page(turns)


@router.delete("/{session_id}/messages")
def erase(
    scope: ScopeDep,
    session_id: str,
    message_id: Annotated[
        list[str] | None, Query(description="Only these turns (repeatable); default: all.")
    ] = None,
) -> dict[str, int]:
    """Delete the session's turns, the statements indexing them (other memories derived from
    them stay, marked `sources_pruned_at`): `{erased}`."""
    return {"erased": erase_turns(scope.namespace, session_id, message_id)}
