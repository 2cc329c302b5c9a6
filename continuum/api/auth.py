"""Bearer-token authentication and namespace scoping of every request (R16).

A token covers one or more namespaces (instances). A request may name an `instance`; one
outside the token's namespaces is answered 404, exactly like one that does not exist, so a
token never learns what other tenants hold.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, HTTPException, Query, status
from fastapi.concurrency import run_in_threadpool
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from continuum.api.errors import field_error
from continuum.security.tokens import TokenInfo, authenticate

_bearer = HTTPBearer(auto_error=False, description="A token from `continuum tokens create`.")

NOT_FOUND = "not found"


@dataclass(frozen=True)
class Scope:
    """What the caller may see: the namespaces of its token, narrowed by `instance`."""

    token: TokenInfo
    instance: str | None

    @property
    def namespaces(self) -> tuple[str, ...]:
        """The namespaces to read: the named instance, or all of the token's."""
        return (self.instance,) if self.instance else self.token.namespaces

    @property
    def namespace(self) -> str:
        """The single namespace of a request that needs one (a token of one, or `instance`)."""
        if len(self.namespaces) > 1:
            raise field_error(
                ("query", "instance"),
                f"required: this token covers {', '.join(self.token.namespaces)}",
            )
        return self.namespaces[0]

    def owns(self, namespace: str | None) -> bool:
        return namespace in self.token.namespaces


async def current_token(
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> TokenInfo:
    info = await run_in_threadpool(authenticate, credentials.credentials) if credentials else None
    if info is None:
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED,
            "missing or invalid bearer token",
            headers={"WWW-Authenticate": "Bearer"},
        )
    return info


# async: it does no I/O, and FastAPI runs a plain `def` dependency on a thread of the pool
# (docs/api.md, Concurrency), as are the other dependencies that do none.
async def current_scope(
    token: Annotated[TokenInfo, Depends(current_token)],
    instance: Annotated[
        str | None, Query(description="Namespace (instance) to use; default: all of the token's.")
    ] = None,
) -> Scope:
    if instance is not None and instance not in token.namespaces:
        raise HTTPException(status.HTTP_404_NOT_FOUND, NOT_FOUND)
    return Scope(token, instance)


ScopeDep = Annotated[Scope, Depends(current_scope)]
