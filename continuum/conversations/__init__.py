"""The raw conversation record: `messages` and `sessions`, written by one writer (`writer`)
whichever door a conversation came in by, so sealing, keyed terms, privacy, counts and
idempotency are decided in one place."""
