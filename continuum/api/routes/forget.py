"""`POST /v1/forget`: forget a user of the caller's namespace everywhere, provably (R47); the
answer is the verification report (`continuum.security.forget`)."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel, Field

from continuum.api.auth import ScopeDep
from continuum.domain.records import ForgetReport
from continuum.security.forget import forget_user

router = APIRouter(prefix="/v1", tags=["forget"])


class ForgetBody(BaseModel):
    user_id: str = Field(min_length=1, max_length=200)


@router.post("/forget")
def forget(scope: ScopeDep, body: ForgetBody) -> ForgetReport:
    """Destroy the user's data keys, delete their rows in every store and re-scan: what
    each store held of the user, what was removed, what the re-scan found (`complete` when
    nothing)."""
    return forget_user(scope.namespace, body.user_id)
