"""Sealing stored text: AES-256-GCM under the owner's data key (the user's when the row has
one, else the tenant's), with the value's place as associated data: tenant, user, kind of
field (`messages.content`, …), key id and the row (`RowKey`: its id, or its unique key for
a row an upsert rewrites), so a ciphertext moved to another tenant, user, field or row
fails to open.

A sealed value is text: `enc2:` then base64url of key id (8 bytes), nonce (12 bytes) and
ciphertext with its tag. Values sealed before rows were bound (`enc1:`, the same body, bound
to tenant, user, field and key only) still open; nothing writes them any more, and
`continuum keys rotate --data` seals them again bound to their rows. Tenants not encrypted
(`Settings.is_encrypted`) keep plaintext, and opening passes plaintext through, so a tenant
can turn encryption on with rows already stored (rotation seals them). Deterministic
sealing (a synthetic nonce: HMAC of key, identity and plaintext) is used where an equal input
must give an equal output, e.g. Redis sorted-set members that are re-added on redelivery.

Readers give the row a value was read from: the store's column types read it with the
value (`continuum.store.models.SealedText`: `@` and its hex appended), raw SQL reads pass
it. A sealed value that fails authentication (altered, or moved from another row or field)
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
from continuum.store.models import (
    LEGACY_SEALED_PREFIX,
    ROW_MARK,
    SEALED_JSON,
    SEALED_PREFIX,
    SEALED_PREFIXES,
    RowKey,
    SealedReaders,
    is_sealed,
)

T = TypeVar("T")

FORGOTTEN = "[forgotten]"  # what a row sealed under a destroyed key reads as
UNREADABLE = "[unreadable]"  # what a damaged sealed value reads as where it is only read out

log = logging.getLogger(__name__)


class SealBroken(RuntimeError):
    """A sealed value failed authentication: it was altered or moved from another row."""


class RowUnknown(RuntimeError):
    """A row-bound value was read without its row: select it from its table (the column
    types read the row with it) or pass the row the raw SQL read it from."""


def _identity(ref: DataKeyRef, kind: str, row: str | None) -> bytes:
    """The associated data: `row` None for a value sealed before rows were bound (`enc1:`)."""
    fields = ["continuum", "v1" if row is None else "v2", ref.namespace, ref.user_id or ""]
    fields += [kind, str(ref.id)] + ([] if row is None else [row])
    return "\x1f".join(fields).encode()


def seal_with(
    ref: DataKeyRef, kind: str, plaintext: str, row: RowKey, *, deterministic: bool = False
) -> str:
    """`plaintext` sealed under the data key `ref`, bound to `row`."""
    data = plaintext.encode()
    identity = _identity(ref, kind, str(row))
    if deterministic:
        nonce = hmac.new(ref.key, identity + b"\x00" + data, hashlib.sha256).digest()
        nonce = nonce[:NONCE_BYTES]
    else:
        nonce = os.urandom(NONCE_BYTES)
    body = struct.pack(">Q", ref.id) + nonce + ref.aead.encrypt(nonce, data, identity)
    return SEALED_PREFIX + base64.urlsafe_b64encode(body).decode().rstrip("=")


def seal(
    namespace: str,
    user_id: str | None,
    kind: str,
    plaintext: str,
    row: RowKey,
    *,
    deterministic: bool = False,
) -> str:
    """`plaintext` sealed for the owner and bound to `row` when the tenant is encrypted,
    else unchanged."""
    if not get_settings().is_encrypted(namespace):
        return plaintext
    ref = keyring.active(namespace, user_id or None, "data")
    return seal_with(ref, kind, plaintext, row, deterministic=deterministic)


def seal_optional(
    namespace: str, user_id: str | None, kind: str, value: str | None, row: RowKey
) -> str | None:
    return None if value is None else seal(namespace, user_id, kind, value, row)


def attached_row(value: str) -> tuple[str, str | None]:
    """A sealed value as a column read gives it (`@` and its row's identity in hex after
    it, `continuum.store.models.SealedText`) split into the value stored and that row."""
    stored, mark, tail = value.rpartition(ROW_MARK)
    if not mark:
        return value, None
    try:
        return stored, bytes.fromhex(tail).decode()
    except ValueError:
        return value, None


def _sealed_body(value: str) -> bytes | None:
    """The decoded body (key id, nonce, ciphertext) of a sealed value; None for plaintext."""
    if not value.startswith(SEALED_PREFIXES):
        return None
    body = value[len(SEALED_PREFIX) :]
    try:
        raw = base64.b64decode(body + "=" * (-len(body) % 4), altchars=b"-_", validate=True)
    except ValueError:
        return None
    return raw if len(raw) > 8 + NONCE_BYTES else None


def key_id_of(value: str) -> int | None:
    """The data key a sealed value names; None for plaintext."""
    raw = _sealed_body(attached_row(value)[0] if is_sealed(value) else value)
    return None if raw is None else int(struct.unpack(">Q", raw[:8])[0])


def is_legacy(value: str | None) -> bool:
    """Whether `value` was sealed before rows were bound (`enc1:`)."""
    return value is not None and value.startswith(LEGACY_SEALED_PREFIX)


def open_text(value: str, kind: str, row: RowKey | None) -> str:
    """The plaintext of `value` (plaintext passes through), sealed in the row `row` (None:
    the row the read attached); FORGOTTEN if its key was destroyed."""
    if not value.startswith(SEALED_PREFIXES):
        return value
    stored, attached = attached_row(value)
    raw = _sealed_body(stored)
    if raw is None:
        return stored  # plaintext that only looks sealed
    bound = None if is_legacy(stored) else (str(row) if row is not None else attached)
    if bound is None and not is_legacy(stored):
        raise RowUnknown(f"sealed {kind} read without its row: select it from its table")
    key_id = int(struct.unpack(">Q", raw[:8])[0])
    try:
        ref = keyring.by_id(key_id)
    except KeyDestroyed:
        return FORGOTTEN
    nonce, ciphertext = raw[8 : 8 + NONCE_BYTES], raw[8 + NONCE_BYTES :]
    try:
        return ref.aead.decrypt(nonce, ciphertext, _identity(ref, kind, bound)).decode()
    except InvalidTag as exc:
        raise SealBroken(
            f"sealed {kind} of row {bound or '-'} under data key {key_id} does not authenticate"
        ) from exc


def _read_out(opened: Callable[[], T], damaged: T, shown: str) -> T:
    """`opened()` for a value that is only read out; when it is damaged (`SealBroken`),
    `damaged` (logged, saying it is `shown`) instead of failing the whole read."""
    try:
        return opened()
    except SealBroken as exc:
        log.error("%s: it reads as %s", exc, shown)
        return damaged


def read_text(value: str, kind: str, row: RowKey | None) -> str:
    """`open_text` for text that is only read out: a damaged value reads as UNREADABLE."""
    if not value.startswith(SEALED_PREFIXES):
        return value  # plaintext, most rows: no call to wrap
    return _read_out(lambda: open_text(value, kind, row), UNREADABLE, UNREADABLE)


def open_optional(value: str | None, kind: str, row: RowKey | None) -> str | None:
    return None if value is None else open_text(value, kind, row)


def read_optional(value: str | None, kind: str, row: RowKey | None) -> str | None:
    return None if value is None else read_text(value, kind, row)


def seal_json(
    namespace: str | None, user_id: str | None, kind: str, value: Any, row: RowKey
) -> Any:
    """A JSON value as `{"sealed": …}` for an encrypted tenant, else unchanged."""
    if namespace is None or not get_settings().is_encrypted(namespace):
        return value
    return {SEALED_JSON: seal(namespace, user_id, kind, json.dumps(value, sort_keys=True), row)}


# Memory details that queries read in SQL (or that say nothing of the content) stay plain.
PLAIN_DETAILS = frozenset(
    {
        "channel",
        "conflicts_with",
        "last_confirmed",
        "importance_base",
        "forgotten_at",
        "sources_pruned_at",
    }
)
DETAILS_KIND = "memories.details"
MESSAGE_DETAILS_KIND = "messages.details"  # a message's details are sealed whole


def seal_details(
    namespace: str,
    user_id: str | None,
    details: dict[str, Any],
    row: RowKey,
    *,
    kind: str = DETAILS_KIND,
    plain: frozenset[str] = PLAIN_DETAILS,
) -> dict[str, Any]:
    """Details with every key but `plain` sealed under `"sealed"` for an encrypted tenant
    (unchanged otherwise, or when nothing is left to seal)."""
    hidden = {k: v for k, v in details.items() if k not in plain}
    if not hidden or not get_settings().is_encrypted(namespace):
        return details
    plain_part = {k: v for k, v in details.items() if k in plain}
    return {**plain_part, **seal_json(namespace, user_id, kind, hidden, row)}


def open_details(details: dict[str, Any], kind: str, row: RowKey | None) -> dict[str, Any]:
    """Details as `seal_details` was given them."""
    plain = {k: v for k, v in details.items() if k != SEALED_JSON}
    hidden = open_sealed_json(details[SEALED_JSON], kind, row)
    return {**plain, **(hidden or {})}  # none left when the key was destroyed


def read_details(details: dict[str, Any], kind: str, row: RowKey | None) -> dict[str, Any]:
    """`open_details` for details that are only read out: damaged sealed keys are left
    out, the plain ones kept."""
    plain = {k: v for k, v in details.items() if k != SEALED_JSON}
    return _read_out(lambda: open_details(details, kind, row), plain, "its plain details only")


COMPACTION_KIND = "sessions.compactions"


def open_compactions(details: dict[str, Any], session_id: str) -> dict[str, Any]:
    """A session's details with the compaction summaries sync sealed opened (each bound to
    its session: sessions are upserted, so the row's identity is its session id)."""
    compactions = details.get("compactions")
    if not isinstance(compactions, list):
        return details
    opened = [
        _read_out(  # a damaged summary keeps its id
            functools.partial(open_sealed_json, item[SEALED_JSON], COMPACTION_KIND, session_id),
            {"compaction_id": item.get("compaction_id"), "summary": UNREADABLE},
            UNREADABLE,
        )
        if isinstance(item, dict) and SEALED_JSON in item
        else item
        for item in compactions
    ]
    return {**details, "compactions": opened}


def open_json(value: Any, kind: str, row: RowKey | None) -> Any:
    """The JSON value `seal_json` sealed (anything else passes through); None when its key
    was destroyed."""
    if isinstance(value, dict) and set(value) == {SEALED_JSON}:
        return open_sealed_json(value[SEALED_JSON], kind, row)
    return value


def open_sealed_json(sealed: str, kind: str, row: RowKey | None) -> Any:
    """The JSON value held by `sealed` (the text under `"sealed"`); None when its key was
    destroyed."""
    opened = open_text(sealed, kind, row)
    return None if opened == FORGOTTEN else json.loads(opened)


SealedReaders.register(read_text, read_details)
