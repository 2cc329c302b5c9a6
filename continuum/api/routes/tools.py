"""Memory tools over HTTP (R40–R43): store, update, forget, mark private.

Each body is the tool's own argument model (`continuum.tools`), so a missing or wrong field
is a 422 naming it; the answer is the tool's result (`{success, memoryId, ...}`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, HTTPException, Query, status

from continuum.api.auth import ScopeDep
from continuum.tools import (
    ForgetMemoryArgs,
    MarkPrivateArgs,
    MemoryTools,
    StoreMemoryArgs,
    UpdateMemoryArgs,
)

router = APIRouter(prefix="/v1/memories", tags=["memories"])
Name = Annotated[str | None, Query(max_length=200)]


@dataclass(frozen=True)
class Caller:
    """Who writes: the user and session the memory belongs to, and how trusted the write is."""

    user_id: str | None
    session_id: str | None
    channel: str | None
    provenance: Literal["system", "user_explicit"]


def caller(
    user_id: Name = None,
    session_id: Name = None,
    channel: Annotated[str | None, Query(max_length=64)] = None,
    provenance: Annotated[
        Literal["system", "user_explicit"],
        Query(description="user_explicit when the user asked for the write."),
    ] = "system",
) -> Caller:
    return Caller(user_id, session_id, channel, provenance)


CallerDep = Annotated[Caller, Depends(caller)]


def _run(scope: ScopeDep, who: Caller, tool: str, args: Any) -> dict[str, Any]:
    tools = MemoryTools(
        scope.namespace,
        user_id=who.user_id,
        session_id=who.session_id,
        channel=who.channel,
        provenance=who.provenance,
    )
    result = tools.call(tool, args.model_dump(exclude_unset=True))
    if not result["success"]:  # the arguments were valid: nothing matched them
        raise HTTPException(status.HTTP_404_NOT_FOUND, result["message"])
    return result


@router.post("/store")
def store_memory(scope: ScopeDep, who: CallerDep, args: StoreMemoryArgs) -> dict[str, Any]:
    """Remember something: `{success, memoryId, suggestReminder?, message?}`."""
    return _run(scope, who, "store_memory", args)


@router.post("/update")
def update_memory(scope: ScopeDep, who: CallerDep, args: UpdateMemoryArgs) -> dict[str, Any]:
    """New version under a key (any case), or a new memory: `action: created|updated`."""
    return _run(scope, who, "update_memory", args)


@router.post("/forget")
def forget_memory(scope: ScopeDep, who: CallerDep, args: ForgetMemoryArgs) -> dict[str, Any]:
    """Soft delete (hidden at once, purged by maintenance); 404 when nothing matches."""
    return _run(scope, who, "forget_memory", args)


@router.post("/mark-private")
def mark_private(scope: ScopeDep, who: CallerDep, args: MarkPrivateArgs) -> dict[str, Any]:
    """Never shown in group or non-main contexts (`private: false` undoes it)."""
    return _run(scope, who, "mark_private", args)
