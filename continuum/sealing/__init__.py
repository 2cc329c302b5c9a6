"""Encryption at rest (R47), the part every writer and reader uses.

- `keys`: the key-encryption key (KEK) and the wrapped per-tenant and per-user data keys in
  `data_keys`, unwrapped on demand and cached per process;
- `envelope`: AES-256-GCM sealing of stored text, bound to its tenant, user and kind; it
  registers itself as the decoder of the store's sealed column types;
- `terms`: keyed hashes of full-text lexemes, so an encrypted tenant's index holds no words;
- `tombstones`: the users forgotten, which no writer may bring back.

It sits on the store (its keys and tombstones live in tables). Forgetting a user and key
rotation, which reach every table, are in `continuum.security`. See docs/security.md.
"""
