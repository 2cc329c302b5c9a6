"""The producer contract: event models, queue and task names, the client SDK, the in-flight ledger."""
