"""The domain's types and pure rules, with no I/O: memory kinds (their registry), the shapes
memory candidates, claims and summaries take, text normalization, and what Postgres can store.
Every layer reads them; they import nothing of ours but `continuum.config`."""
