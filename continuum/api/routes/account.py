"""`GET /v1/me`: what the caller's token is and which namespaces (instances) it covers. An
`instance` outside them is answered 404, as on every route."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel

from continuum.api.auth import ScopeDep

router = APIRouter(prefix="/v1", tags=["account"])


class Me(BaseModel):
    token_id: int
    name: str
    namespaces: list[str]


@router.get("/me")
def me(scope: ScopeDep) -> Me:
    token = scope.token
    return Me(token_id=token.id, name=token.name, namespaces=list(token.namespaces))
