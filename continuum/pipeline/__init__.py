"""The write plane's stages after the producer: ingest, sessions, extraction, the embedding outbox, narrative files."""
