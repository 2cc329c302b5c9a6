"""API token store: random bearer tokens bound to namespaces, kept only as sha256 hashes.

A token is shown once, when it is created; afterwards only its id, name and namespaces are
known. Revoked tokens stay listed (with the time of revocation) and never authenticate again.
An operator token (`ops`) may also read the pipeline's global figures (`GET /v1/status`).

Authentication is on every API request, so a process remembers the tokens it has checked
(by hash, for CONTINUUM_API_TOKEN_CACHE_S) instead of asking Postgres each time. A
revocation reaches every process at once through one Redis key, the revocation marker:
`revoke_token` sets it to a fresh random value after its transaction commits, and every
`authenticate` reads it first (one GET) and forgets what it remembers when it changed. An
entry is tagged with the marker read *before* its row was, so a revocation committed while
a row was being read still clears it. The marker is random, not a counter, so a Redis that
lost its data and counted again could never bring an old value back. A token revoked
without `revoke_token` (SQL by hand) stops working within the cache's lifetime; with Redis
unreachable, every request asks Postgres. `last_used_at` is written at most once a minute
per token and process.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import redis
from sqlalchemy import func, select, update
from sqlalchemy.exc import OperationalError

from continuum.config import get_settings
from continuum.redis_client import get_redis
from continuum.store.engine import session_scope
from continuum.store.models import ApiToken
from continuum.store.reads import read_scope

TOKEN_PREFIX = "ctm_"
LAST_USED_RESOLUTION = timedelta(minutes=1)  # at most one last_used_at write a minute
REVOCATION_KEY = "continuum:tokens:revoked"  # a fresh random value at each revocation


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
    """Revoke a token by id; False when no live token has that id. Every API process refuses
    it from its next request on (the revocation marker changes once the revocation is
    committed)."""
    with session_scope() as db:
        result = db.execute(
            update(ApiToken)
            .where(ApiToken.id == token_id, ApiToken.revoked_at.is_(None))
            .values(revoked_at=func.now())
            .returning(ApiToken.id)
        )
        revoked = result.first() is not None
    if revoked:
        try:
            get_redis().set(REVOCATION_KEY, secrets.token_hex(16))
        except redis.RedisError as exc:
            raise RuntimeError(
                f"token {token_id} is revoked, but Redis is unreachable ({exc}): API processes "
                f"may accept it for up to {get_settings().api_token_cache_s:g} s more "
                "(CONTINUUM_API_TOKEN_CACHE_S); restart them to refuse it now"
            ) from exc
    return revoked


def _revocation_marker() -> str | None:
    """The revocation marker now; raises redis.RedisError when Redis is unreachable."""
    marker = get_redis().get(REVOCATION_KEY)
    return None if marker is None else str(marker)


@dataclass
class _Known:
    info: TokenInfo
    marker: str | None  # the revocation marker read before the row was
    expires: float  # monotonic
    last_used: datetime  # last written, or read, last_used_at


class _TokenCache:
    """The tokens this process has found live, by hash (see the module's docstring)."""

    def __init__(self, max_tokens: int = 10_000) -> None:
        self._lock = threading.Lock()
        self._known: dict[str, _Known] = {}
        self._max_tokens = max_tokens

    def get(self, digest: str, marker: str | None) -> _Known | None:
        with self._lock:
            known = self._known.get(digest)
            if known is None:
                return None
            if known.marker != marker:  # something was revoked: forget everything
                self._known.clear()
                return None
            if time.monotonic() >= known.expires:
                del self._known[digest]
                return None
            return known

    def put(self, digest: str, known: _Known) -> None:
        with self._lock:
            if digest not in self._known and len(self._known) >= self._max_tokens:
                self._known.pop(next(iter(self._known)))
            self._known[digest] = known

    def clear(self) -> None:
        with self._lock:
            self._known.clear()


token_cache = _TokenCache()


def _lookup(digest: str) -> TokenInfo | None:
    """The live token of `digest` from Postgres, its last use recorded (at most once a
    minute). While the primary does not answer, the token as the read standby has it (its
    revocations replicate), its use not recorded: the read plane keeps answering from the
    standby."""
    live = select(ApiToken).where(ApiToken.token_hash == digest, ApiToken.revoked_at.is_(None))
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


def _record_use(known: _Known) -> None:
    """Write `last_used_at` of a remembered token when the stored one is a minute old."""
    now = datetime.now(UTC)
    if now - known.last_used <= LAST_USED_RESOLUTION:
        return
    known.last_used = now  # first, so concurrent requests do not write it too
    try:
        with session_scope() as db:
            db.execute(
                update(ApiToken)
                .where(ApiToken.id == known.info.id, ApiToken.revoked_at.is_(None))
                .values(last_used_at=func.greatest(ApiToken.last_used_at, now))
            )
    except OperationalError:
        if get_settings().read_database_url is None:
            raise  # with a standby, a primary that does not answer only goes unrecorded


def authenticate(token: str) -> TokenInfo | None:
    """The live token matching `token`, or None. Records when it was last used.

    A token this process checked within CONTINUUM_API_TOKEN_CACHE_S is answered from memory
    (one Redis GET, no Postgres) unless a token was revoked since."""
    digest = hash_token(token)
    try:
        marker = _revocation_marker()
    except redis.RedisError:  # no way to hear of a revocation: ask Postgres
        return _lookup(digest)
    known = token_cache.get(digest, marker)
    if known is not None:
        _record_use(known)
        return known.info
    info = _lookup(digest)
    if info is not None:
        lifetime = get_settings().api_token_cache_s
        last_used = info.last_used_at or datetime.now(UTC)
        token_cache.put(digest, _Known(info, marker, time.monotonic() + lifetime, last_used))
    return info
