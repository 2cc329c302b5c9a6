"""Storage: SQLAlchemy models, engine handling and Alembic migrations."""
