"""Memory tools over HTTP (R40–R43): store, update, forget, mark private; and editing one
memory by id (`PATCH /v1/memories/{id}`, Mission Control's edit).

Each body is the tool's own argument model (`continuum.memory.tool_schemas`), so a missing or wrong field
is a 422 naming it; the answer is the tool's result (`{success, memoryId, ...}`), typed in
the spec by `continuum.domain.records` (fields the tool did not set are left out).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, HTTPException, Query, status
from pydantic import BaseModel, ConfigDict, Field

from continuum.api.auth import ScopeDep
from continuum.api.errors import field_error
from continuum.domain.memory import MAX_DIGEST_CHARS
from continuum.domain.records import MemoryVersion, StoredMemory, TargetedMemories
from continuum.memory.tool_calls import MemoryTools
from continuum.memory.tool_schemas import (
    ForgetMemoryArgs,
    MarkPrivateArgs,
    StoreMemoryArgs,
    UpdateMemoryArgs,
)

router = APIRouter(prefix="/v1/memories", tags=["memories"])
Name = Annotated[str | None, Query(max_length=200)]


async def memory_tools(
    scope: ScopeDep,
    user_id: Name = None,
    session_id: Name = None,
    channel: Annotated[str | None, Query(max_length=64)] = None,
    provenance: Annotated[
        Literal["system", "user_explicit"],
        Query(description="user_explicit when the user asked for the write."),
    ] = "system",
) -> MemoryTools:
    """The tools as the writer: the user and session the memory belongs to, and how trusted
    the write is."""
    return MemoryTools(
        scope.namespace,
        user_id=user_id,
        session_id=session_id,
        channel=channel,
        provenance=provenance,
    )


ToolsDep = Annotated[MemoryTools, Depends(memory_tools)]


def _run(tools: MemoryTools, tool: str, args: Any) -> dict[str, Any]:
    result = tools.call(tool, args.model_dump(exclude_unset=True))
    if not result["success"]:  # the arguments were valid: nothing matched them
        raise HTTPException(status.HTTP_404_NOT_FOUND, result["message"])
    return result


@router.post("/store", response_model=StoredMemory, response_model_exclude_none=True)
def store_memory(tools: ToolsDep, args: StoreMemoryArgs) -> dict[str, Any]:
    """Remember something: `{success, memoryId, suggestReminder?, message?}`."""
    return _run(tools, "store_memory", args)


@router.post("/update", response_model=MemoryVersion, response_model_exclude_none=True)
def update_memory(tools: ToolsDep, args: UpdateMemoryArgs) -> dict[str, Any]:
    """New version under a key (any case), or a new memory: `action: created|updated`."""
    return _run(tools, "update_memory", args)


@router.post("/forget", response_model=TargetedMemories, response_model_exclude_none=True)
def forget_memory(tools: ToolsDep, args: ForgetMemoryArgs) -> dict[str, Any]:
    """Soft delete (hidden at once, purged by maintenance); 404 when nothing matches."""
    return _run(tools, "forget_memory", args)


@router.post("/mark-private", response_model=TargetedMemories, response_model_exclude_none=True)
def mark_private(tools: ToolsDep, args: MarkPrivateArgs) -> dict[str, Any]:
    """Never shown in group or non-main contexts (`private: false` undoes it)."""
    return _run(tools, "mark_private", args)


class MemoryEdit(BaseModel):
    """What a memory says from now on."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)
    content: str = Field(min_length=1, max_length=MAX_DIGEST_CHARS)


@router.patch("/{memory_id}", response_model=MemoryVersion, response_model_exclude_none=True)
def edit_memory(tools: ToolsDep, memory_id: int, edit: MemoryEdit) -> dict[str, Any]:
    """A new version of one active memory saying `content` supersedes it (same kind, key,
    owner, tags, privacy and source turns): `{success, memoryId, previousMemoryId,
    version}`; 404 when no active memory of the instance has that id."""
    try:
        result = tools.revise(memory_id, edit.content)
    except ValueError as exc:
        raise field_error(("body", "content"), str(exc)) from None
    if not result["success"]:
        raise HTTPException(status.HTTP_404_NOT_FOUND, result["message"])
    return result
