"""Storage: Postgres (models, engine, bulk writes, Alembic migrations) and Redis (client, ephemeral
state), dead letters, pipeline metrics, readiness checks, and making text storable."""
