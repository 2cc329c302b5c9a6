"""Alembic environment: the URL comes from `continuum.store.migrate.alembic_config`."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine, pool

from continuum.store.models import Base

url = context.config.attributes["url"]
target_metadata = Base.metadata

if context.is_offline_mode():
    context.configure(url=url, target_metadata=target_metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()
else:
    engine = create_engine(url, poolclass=pool.NullPool)
    with engine.connect() as connection:
        context.configure(connection=connection, target_metadata=target_metadata)
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()
