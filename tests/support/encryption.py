"""The encryption tests' key-encryption key and the one tenant whose data is encrypted."""

from __future__ import annotations

KEK = "5a" * 32
ENCRYPTED = "vault"
