"""Keys: the key-encryption key (KEK) from `CONTINUUM_ENCRYPTION_KEY(_FILE)` and the data keys
it wraps, one per tenant (rows without a user, and the tenant's search key) and one per user.

A data key is 32 random bytes, stored in `data_keys` only wrapped: AES-256-GCM under the KEK,
with the key's identity (tenant, user, purpose, version) as associated data. A key is created
in a transaction of its own, so a ciphertext never names a key that a rolled-back
transaction took with it. Unwrapped keys are cached per process: by id for reading, and by
owner for writing (re-checked after `OWNER_TTL_S`, so a key destroyed or retired elsewhere
stops being used for new rows). A destroyed key (`forget`) has no wrapped bytes left.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Literal

from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from sqlalchemy import select, text
from sqlalchemy.orm import Session as DbSession

from continuum.config import ConfigError, get_settings
from continuum.sealing.tombstones import UserForgotten, forgotten_users
from continuum.store.engine import session_scope
from continuum.store.models import DataKey

Purpose = Literal["data", "search"]
OWNER_TTL_S = 30.0
NONCE_BYTES = 12


class KeyUnavailable(RuntimeError):
    """A ciphertext names a data key that cannot be unwrapped."""


class KeyDestroyed(KeyUnavailable):
    """The data key was destroyed (`continuum forget`, or retired and erased)."""


def _parse_kek(value: str, origin: str) -> bytes:
    try:
        raw = bytes.fromhex(value)
    except ValueError:
        raw = b""
    if len(raw) != 32:
        raise ConfigError(f"{origin} must be 64 hex characters (a 256-bit key)")
    return raw


def kek_id(kek: bytes) -> str:
    """A public fingerprint of a KEK: which one wraps a data key."""
    return hashlib.sha256(b"continuum-kek\x00" + kek).hexdigest()[:16]


def current_kek() -> bytes:
    """The configured KEK; ConfigError if none is configured or it is malformed."""
    value = get_settings().encryption_hex()
    if value is None:
        raise ConfigError(
            "No encryption key: set CONTINUUM_ENCRYPTION_KEY or CONTINUUM_ENCRYPTION_KEY_FILE"
        )
    return _parse_kek(value, "CONTINUUM_ENCRYPTION_KEY")


def known_keks() -> dict[str, bytes]:
    """Every KEK this process can unwrap with (current and old), by fingerprint."""
    keks = [current_kek()] + [
        _parse_kek(old.get_secret_value().strip(), "CONTINUUM_ENCRYPTION_OLD_KEYS")
        for old in get_settings().encryption_old_keys
    ]
    return {kek_id(kek): kek for kek in keks}


def identity(namespace: str, user_id: str | None, purpose: str, version: int) -> bytes:
    """A data key's identity: the associated data of its wrapping."""
    return "\x1f".join(("data-key", namespace, user_id or "", purpose, str(version))).encode()


def wrap(kek: bytes, key: bytes, owner: bytes) -> bytes:
    """`key` wrapped under `kek` for the key identity `owner`: nonce and ciphertext."""
    nonce = os.urandom(NONCE_BYTES)
    return nonce + AESGCM(kek).encrypt(nonce, key, owner)


def unwrap(row: DataKey) -> bytes:
    """The plaintext data key of `row`; KeyUnavailable when destroyed or its KEK is unknown."""
    if row.wrapped is None:
        raise KeyDestroyed(f"data key {row.id} is destroyed")
    kek = known_keks().get(row.kek_id)
    if kek is None:
        raise KeyUnavailable(
            f"data key {row.id} is wrapped by KEK {row.kek_id}, which is not configured "
            "(CONTINUUM_ENCRYPTION_KEY / CONTINUUM_ENCRYPTION_OLD_KEYS)"
        )
    wrapped = bytes(row.wrapped)
    owner = identity(row.namespace, row.user_id, row.purpose, row.version)
    return AESGCM(kek).decrypt(wrapped[:NONCE_BYTES], wrapped[NONCE_BYTES:], owner)


@dataclass(frozen=True)
class DataKeyRef:
    """An unwrapped data key and whose it is."""

    id: int
    namespace: str
    user_id: str | None
    purpose: str
    key: bytes
    aead: AESGCM = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "aead", AESGCM(self.key))  # its key schedule, made once


class _Keyring:
    """Per-process cache of unwrapped data keys."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_id: dict[int, DataKeyRef] = {}
        self._by_owner: dict[tuple[str, str | None, str], tuple[float, DataKeyRef]] = {}

    def active(self, namespace: str, user_id: str | None, purpose: Purpose) -> DataKeyRef:
        """The owner's current data key, created on first use."""
        owner = (namespace, user_id, purpose)
        with self._lock:
            entry = self._by_owner.get(owner)
        if entry and time.monotonic() - entry[0] < OWNER_TTL_S:
            return entry[1]
        ref = self._load_active(namespace, user_id, purpose)
        with self._lock:
            self._by_owner[owner] = (time.monotonic(), ref)
            self._by_id[ref.id] = ref
        return ref

    def _load_active(self, namespace: str, user_id: str | None, purpose: Purpose) -> DataKeyRef:
        where = (
            DataKey.namespace == namespace,
            DataKey.user_id.is_not_distinct_from(user_id),
            DataKey.purpose == purpose,
            DataKey.retired_at.is_(None),
        )
        for _ in range(2):
            with session_scope() as db:
                row = db.scalar(select(DataKey).where(*where))
                if row is not None:
                    return self._ref(row)
                if purpose == "data" and user_id is not None:
                    _refuse_forgotten(db, namespace, user_id)
                kek = current_kek()
                version = 1 + (
                    db.scalar(
                        text(
                            "SELECT coalesce(max(version), 0) FROM data_keys WHERE namespace = :ns "
                            "AND user_id IS NOT DISTINCT FROM :uid AND purpose = :purpose"
                        ),
                        {"ns": namespace, "uid": user_id, "purpose": purpose},
                    )
                    or 0
                )
                wrapped = wrap(kek, os.urandom(32), identity(namespace, user_id, purpose, version))
                db.execute(
                    text(
                        "INSERT INTO data_keys (namespace, user_id, purpose, version, wrapped, "
                        "kek_id) VALUES (:ns, :uid, :purpose, :version, :wrapped, :kek_id) "
                        "ON CONFLICT DO NOTHING"
                    ),
                    {
                        "ns": namespace,
                        "uid": user_id,
                        "purpose": purpose,
                        "version": version,
                        "wrapped": wrapped,
                        "kek_id": kek_id(kek),
                    },
                )
        raise KeyUnavailable(f"no data key for {namespace}/{user_id or '-'} ({purpose})")

    def _ref(self, row: DataKey) -> DataKeyRef:
        return DataKeyRef(row.id, row.namespace, row.user_id, row.purpose, unwrap(row))

    def by_id(self, key_id: int) -> DataKeyRef:
        """The data key a ciphertext names (cached; read from `data_keys` once)."""
        with self._lock:
            ref = self._by_id.get(key_id)
        if ref is not None:
            return ref
        with session_scope() as db:
            row = db.get(DataKey, key_id)
            if row is None:
                raise KeyUnavailable(f"data key {key_id} does not exist")
            ref = self._ref(row)
        with self._lock:
            self._by_id[key_id] = ref
        return ref

    def forget(self, namespace: str, user_id: str | None = None) -> None:
        """Drop cached keys of the tenant (or one user of it) from this process."""
        with self._lock:
            for key_id, ref in list(self._by_id.items()):
                if ref.namespace == namespace and (user_id is None or ref.user_id == user_id):
                    del self._by_id[key_id]
            for owner in list(self._by_owner):
                if owner[0] == namespace and (user_id is None or owner[1] == user_id):
                    del self._by_owner[owner]

    def clear(self) -> None:
        with self._lock:
            self._by_id.clear()
            self._by_owner.clear()


keyring = _Keyring()


def _refuse_forgotten(db: DbSession, namespace: str, user_id: str) -> None:
    if forgotten_users(db, namespace, [user_id]):
        raise UserForgotten(f"user {user_id!r} of {namespace!r} was forgotten")
