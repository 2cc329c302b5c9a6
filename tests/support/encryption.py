"""The encryption tests' key-encryption key, the one tenant whose data is encrypted, and a
value sealed in the format written before rows were bound (`enc1:`), built here from the
format itself so that reading it back proves old deployments' rows still open."""

from __future__ import annotations

import base64
import os
import struct

from continuum.sealing.keys import keyring

KEK = "5a" * 32
ENCRYPTED = "vault"


def legacy_seal(namespace: str, user_id: str | None, kind: str, plaintext: str) -> str:
    """`plaintext` as the `enc1:` envelope sealed it: key id, nonce and AES-GCM ciphertext,
    the associated data naming tenant, user, field and key id, but no row."""
    ref = keyring.active(namespace, user_id, "data")
    aad = "\x1f".join(("continuum", "v1", namespace, user_id or "", kind, str(ref.id)))
    nonce = os.urandom(12)
    body = (
        struct.pack(">Q", ref.id)
        + nonce
        + ref.aead.encrypt(nonce, plaintext.encode(), aad.encode())
    )
    return "enc1:" + base64.urlsafe_b64encode(body).decode().rstrip("=")
