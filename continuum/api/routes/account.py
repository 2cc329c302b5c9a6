"""`GET /v1/me`: what the caller's token is and which namespaces (instances) it covers."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends
from pydantic import BaseModel

from continuum.api.auth import current_token
from continuum.security.tokens import TokenInfo

router = APIRouter(prefix="/v1", tags=["account"])


class Me(BaseModel):
    token_id: int
    name: str
    namespaces: list[str]


@router.get("/me")
def me(token: Annotated[TokenInfo, Depends(current_token)]) -> Me:
    return Me(token_id=token.id, name=token.name, namespaces=list(token.namespaces))
