"""Security operations over every table (R47), above the pipeline and the read plane:

- `forget`: crypto-shredding a user, deleting their rows everywhere and proving it;
- `rotation`: re-wrapping data keys under a new KEK, and re-encrypting rows under new data keys;
- `tokens`: the API's bearer tokens (hashed at rest), shared by the HTTP API and MCP.

Sealing itself (keys, envelope, keyed terms, tombstones) is `continuum.sealing`. See
docs/security.md for the threat model.
"""
