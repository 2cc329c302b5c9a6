"""API token store: random bearer tokens bound to namespaces, kept only as sha256 hashes.

A token is shown once, when it is created; afterwards only its id, name and namespaces are
known. Revoked tokens stay listed (with the time of revocation) and never authenticate again.
An operator token (`ops`) may also read the pipeline's global figures (`GET /v1/status`).
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import func, select, update
from sqlalchemy.exc import OperationalError

from continuum.config import get_settings
from continuum.store.engine import session_scope
from continuum.store.models import ApiToken
from continuum.store.reads import read_scope

TOKEN_PREFIX = "ctm_"
LAST_USED_RESOLUTION = timedelta(minutes=1)  # at most one last_used_at write a minute


@dataclass(frozen=True)
class TokenInfo:
    id: int
    name: str
    namespaces: tuple[str, ...]
    created_at: datetime
    last_used_at: datetime | None
    revoked_at: datetime | None
    ops: bool = False  # may read the pipeline's global figures


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _info(row: ApiToken) -> TokenInfo:
    return TokenInfo(
        id=row.id,
        name=row.name,
        namespaces=tuple(row.namespaces),
        created_at=row.created_at,
        last_used_at=row.last_used_at,
        revoked_at=row.revoked_at,
        ops=row.ops,
    )


def create_token(
    namespaces: list[str], name: str = "", *, ops: bool = False
) -> tuple[str, TokenInfo]:
    """A new token for `namespaces` (each checked like an event's namespace), an operator
    token with `ops`: (token, info)."""
    if not namespaces:
        raise ValueError("a token needs at least one namespace")
    for namespace in namespaces:
        get_settings().check_namespace(namespace)
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    with session_scope() as db:
        row = ApiToken(
            name=name or ",".join(namespaces),
            namespaces=list(dict.fromkeys(namespaces)),
            token_hash=hash_token(token),
            ops=ops,
        )
        db.add(row)
        db.flush()
        db.refresh(row)
        return token, _info(row)


def list_tokens() -> list[TokenInfo]:
    with session_scope() as db:
        return [_info(row) for row in db.scalars(select(ApiToken).order_by(ApiToken.id))]


def revoke_token(token_id: int) -> bool:
    """Revoke a token by id; False when no live token has that id."""
    with session_scope() as db:
        result = db.execute(
            update(ApiToken)
            .where(ApiToken.id == token_id, ApiToken.revoked_at.is_(None))
            .values(revoked_at=func.now())
            .returning(ApiToken.id)
        )
        return result.first() is not None


def authenticate(token: str) -> TokenInfo | None:
    """The live token matching `token`, or None. Records when it was last used. While the
    primary does not answer, the token as the read standby has it (its revocations
    replicate), its use not recorded: the read plane keeps answering from the standby."""
    live = select(ApiToken).where(
        ApiToken.token_hash == hash_token(token), ApiToken.revoked_at.is_(None)
    )
    try:
        with session_scope() as db:
            row = db.scalar(live)
            if row is None:
                return None
            now = datetime.now(UTC)
            if row.last_used_at is None or now - row.last_used_at > LAST_USED_RESOLUTION:
                row.last_used_at = now
            return _info(row)
    except OperationalError:
        if get_settings().read_database_url is None:
            raise
        with read_scope(()) as db:  # no namespace: the standby, if it answers
            row = db.scalar(live)
            return None if row is None else _info(row)
