"""Encryption at rest and provable forgetting (R47).

- `keys`: the key-encryption key (KEK) and the wrapped per-tenant and per-user data keys in
  `data_keys`, unwrapped on demand and cached per process;
- `envelope`: AES-256-GCM sealing of stored text, bound to its tenant, user and kind;
- `terms`: keyed hashes of full-text lexemes, so an encrypted tenant's index holds no words;
- `forget`: crypto-shredding a user, deleting their rows everywhere and proving it;
- `rotation`: re-wrapping data keys under a new KEK, and re-encrypting rows under new data keys.

See docs/security.md for the threat model.
"""
