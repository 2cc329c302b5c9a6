"""Storage: Postgres (models, engine, bulk writes, Alembic migrations), pipeline metrics and
readiness checks in Redis, and what waits in the broker. The bottom of the I/O stack: it
imports only the contract and config; the Redis client is `continuum.redis_client`."""
