"""Sealing stored text: AES-256-GCM under the owner's data key (the user's when the row has
one, else the tenant's), with the row's identity (tenant, user, kind of field, key id) as
associated data, so a ciphertext moved to another tenant, user or field fails to open.

A sealed value is text: `enc1:` then base64url of key id (8 bytes), nonce (12 bytes) and
ciphertext with its tag. Tenants not encrypted (`Settings.is_encrypted`) keep plaintext, and
opening passes plaintext through, so a tenant can turn encryption on with rows already
stored (`continuum keys rotate --data` seals them). Deterministic sealing (a synthetic
nonce: HMAC of key, identity and plaintext) is used where an equal input must give an equal
output, e.g. Redis sorted-set members that are re-added on redelivery.

A sealed value that fails authentication (altered, or moved from another row or field)
raises `SealBroken` where the opened text is written again (rotation); where it is
only read out (search hits, context items, the text the embedding outbox encodes, and every
row loaded whole through the ORM: browsing, listing, forgetting; claim values compared)
it reads as `UNREADABLE` and is logged, so one damaged row never breaks a tenant's reads,
and consolidation leaves it out of what it merges.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import json
import logging
import os
import struct
from collections.abc import Callable
from typing import Any, TypeVar

from cryptography.exceptions import InvalidTag

from continuum.config import get_settings
from continuum.sealing.keys import NONCE_BYTES, DataKeyRef, KeyDestroyed, keyring
from continuum.store.models import SEALED_PREFIX, SealedReaders

T = TypeVar("T")

FORGOTTEN = "[forgotten]"  # what a row sealed under a destroyed key reads as
UNREADABLE = "[unreadable]"  # what a damaged sealed value reads as where it is only read out

log = logging.getLogger(__name__)


class SealBroken(RuntimeError):
    """A sealed value failed authentication: it was altered or moved from another row."""


def _identity(ref: DataKeyRef, kind: str) -> bytes:
    fields = ("continuum", "v1", ref.namespace, ref.user_id or "", kind, str(ref.id))
    return "\x1f".join(fields).encode()


def seal_with(ref: DataKeyRef, kind: str, plaintext: str, *, deterministic: bool = False) -> str:
    """`plaintext` sealed under the data key `ref`."""
    data = plaintext.encode()
    identity = _identity(ref, kind)
    if deterministic:
        nonce = hmac.new(ref.key, identity + b"\x00" + data, hashlib.sha256).digest()
        nonce = nonce[:NONCE_BYTES]
    else:
        nonce = os.urandom(NONCE_BYTES)
    body = struct.pack(">Q", ref.id) + nonce + ref.aead.encrypt(nonce, data, identity)
    return SEALED_PREFIX + base64.urlsafe_b64encode(body).decode().rstrip("=")


def seal(
    namespace: str, user_id: str | None, kind: str, plaintext: str, *, deterministic: bool = False
) -> str:
    """`plaintext` sealed for the owner when the tenant is encrypted, else unchanged."""
    if not get_settings().is_encrypted(namespace):
        return plaintext
    ref = keyring.active(namespace, user_id or None, "data")
    return seal_with(ref, kind, plaintext, deterministic=deterministic)


def seal_optional(namespace: str, user_id: str | None, kind: str, value: str | None) -> str | None:
    return None if value is None else seal(namespace, user_id, kind, value)


def _sealed_body(value: str) -> bytes | None:
    """The decoded body (key id, nonce, ciphertext) of a sealed value; None for plaintext."""
    if not value.startswith(SEALED_PREFIX):
        return None
    body = value[len(SEALED_PREFIX) :]
    try:
        raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    except ValueError:
        return None
    return raw if len(raw) > 8 + NONCE_BYTES else None


def key_id_of(value: str) -> int | None:
    """The data key a sealed value names; None for plaintext."""
    raw = _sealed_body(value)
    return None if raw is None else int(struct.unpack(">Q", raw[:8])[0])


def open_text(value: str, kind: str) -> str:
    """The plaintext of `value` (plaintext passes through); FORGOTTEN if its key was destroyed."""
    raw = _sealed_body(value)
    if raw is None:
        return value
    key_id = int(struct.unpack(">Q", raw[:8])[0])
    try:
        ref = keyring.by_id(key_id)
    except KeyDestroyed:
        return FORGOTTEN
    nonce, ciphertext = raw[8 : 8 + NONCE_BYTES], raw[8 + NONCE_BYTES :]
    try:
        return ref.aead.decrypt(nonce, ciphertext, _identity(ref, kind)).decode()
    except InvalidTag as exc:
        raise SealBroken(f"sealed {kind} under data key {key_id} does not authenticate") from exc


def _read_out(opened: Callable[[], T], damaged: T, shown: str) -> T:
    """`opened()` for a value that is only read out; when it is damaged (`SealBroken`),
    `damaged` (logged, saying it is `shown`) instead of failing the whole read."""
    try:
        return opened()
    except SealBroken as exc:
        log.error("%s: it reads as %s", exc, shown)
        return damaged


def read_text(value: str, kind: str) -> str:
    """`open_text` for text that is only read out: a damaged value reads as UNREADABLE."""
    if not value.startswith(SEALED_PREFIX):
        return value  # plaintext, most rows: no call to wrap
    return _read_out(lambda: open_text(value, kind), UNREADABLE, UNREADABLE)


def open_optional(value: str | None, kind: str) -> str | None:
    return None if value is None else open_text(value, kind)


def read_optional(value: str | None, kind: str) -> str | None:
    return None if value is None else read_text(value, kind)


SEALED_JSON = "sealed"  # the one key of a JSON value stored sealed


def seal_json(namespace: str | None, user_id: str | None, kind: str, value: Any) -> Any:
    """A JSON value as `{"sealed": …}` for an encrypted tenant, else unchanged."""
    if namespace is None or not get_settings().is_encrypted(namespace):
        return value
    return {SEALED_JSON: seal(namespace, user_id, kind, json.dumps(value, sort_keys=True))}


# Memory details that queries read in SQL (or that say nothing of the content) stay plain.
PLAIN_DETAILS = frozenset(
    {"channel", "conflicts_with", "last_confirmed", "importance_base", "forgotten_at"}
)
DETAILS_KIND = "memories.details"


def seal_details(namespace: str, user_id: str | None, details: dict[str, Any]) -> dict[str, Any]:
    """A memory's details with every key but PLAIN_DETAILS sealed under `"sealed"` for an
    encrypted tenant (unchanged otherwise, or when nothing is left to seal)."""
    hidden = {k: v for k, v in details.items() if k not in PLAIN_DETAILS}
    if not hidden or not get_settings().is_encrypted(namespace):
        return details
    plain = {k: v for k, v in details.items() if k in PLAIN_DETAILS}
    return {**plain, **seal_json(namespace, user_id, DETAILS_KIND, hidden)}


def open_details(details: dict[str, Any]) -> dict[str, Any]:
    """Details as `seal_details` was given them."""
    plain = {k: v for k, v in details.items() if k != SEALED_JSON}
    hidden = open_sealed_json(details[SEALED_JSON], DETAILS_KIND)
    return {**plain, **(hidden or {})}  # none left when the key was destroyed


def read_details(details: dict[str, Any]) -> dict[str, Any]:
    """`open_details` for details that are only read out: damaged sealed keys are left
    out, the plain ones kept."""
    plain = {k: v for k, v in details.items() if k != SEALED_JSON}
    return _read_out(lambda: open_details(details), plain, "its plain details only")


COMPACTION_KIND = "sessions.compactions"


def open_compactions(details: dict[str, Any]) -> dict[str, Any]:
    """A session's details with the compaction summaries sync sealed opened."""
    compactions = details.get("compactions")
    if not isinstance(compactions, list):
        return details
    opened = [
        _read_out(  # a damaged summary keeps its id
            functools.partial(open_sealed_json, item[SEALED_JSON], COMPACTION_KIND),
            {"compaction_id": item.get("compaction_id"), "summary": UNREADABLE},
            UNREADABLE,
        )
        if isinstance(item, dict) and SEALED_JSON in item
        else item
        for item in compactions
    ]
    return {**details, "compactions": opened}


def open_json(value: Any, kind: str) -> Any:
    """The JSON value `seal_json` sealed (anything else passes through); None when its key
    was destroyed."""
    if isinstance(value, dict) and set(value) == {SEALED_JSON}:
        return open_sealed_json(value[SEALED_JSON], kind)
    return value


def open_sealed_json(sealed: str, kind: str) -> Any:
    """The JSON value held by `sealed` (the text under `"sealed"`); None when its key was
    destroyed."""
    opened = open_text(sealed, kind)
    return None if opened == FORGOTTEN else json.loads(opened)


SealedReaders.register(read_text, read_details)
