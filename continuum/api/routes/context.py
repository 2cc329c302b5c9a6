"""`GET /v1/context`: the context block for a runtime's system prompt (R10, R26, R31)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from continuum.api.auth import ScopeDep
from continuum.api.params import TimeZoneDep
from continuum.domain.records import ContextBlock
from continuum.recall.context import context

router = APIRouter(prefix="/v1", tags=["recall"])


@router.get("/context")
def get_context(
    scope: ScopeDep,
    tz: TimeZoneDep,
    seed_text: Annotated[
        str, Query(max_length=4000, description="First user message or the task at hand.")
    ] = "",
    max_tokens: Annotated[int, Query(ge=0, le=32_000)] = 800,
    user_id: Annotated[str | None, Query(max_length=200)] = None,
    channel: Annotated[str | None, Query(max_length=64)] = None,
    explain: Annotated[bool, Query(description="Also say what was left out, and why.")] = False,
) -> ContextBlock:
    """The packed block, its items with scores and `why`, and the memory ids injected; its
    days (headings, 'yesterday' in the seed) are the tenant's, or `tz`'s."""
    result = context(scope.namespace, seed_text, max_tokens, user_id=user_id, channel=channel,
                     explain=explain, tz=tz)  # fmt: skip
    return result.record()
