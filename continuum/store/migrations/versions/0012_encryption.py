"""Encryption at rest and forgetting (R47): wrapped data keys, forget tombstones, and keyed
full-text terms (`tsv` takes an encrypted row's own `tsv_keyed` instead of indexing the
ciphertext).

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-24
"""

from alembic import op

from continuum.store.models import (
    TSV_MEMORIES,
    TSV_MEMORIES_KEYED,
    TSV_MESSAGES,
    TSV_MESSAGES_KEYED,
)

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE data_keys (
            id bigserial PRIMARY KEY,
            namespace text NOT NULL,
            user_id text,
            purpose text NOT NULL,
            version integer NOT NULL,
            wrapped bytea,
            kek_id text NOT NULL,
            created_at timestamptz NOT NULL DEFAULT now(),
            retired_at timestamptz,
            destroyed_at timestamptz,
            UNIQUE NULLS NOT DISTINCT (namespace, user_id, purpose, version)
        )
        """
    )
    op.execute(
        "CREATE UNIQUE INDEX data_keys_active ON data_keys (namespace, user_id, purpose) "
        "NULLS NOT DISTINCT WHERE retired_at IS NULL"
    )
    op.execute(
        """
        CREATE TABLE forget_tombstones (
            id bigserial PRIMARY KEY,
            namespace text NOT NULL,
            user_id text NOT NULL,
            requested_at timestamptz NOT NULL DEFAULT now(),
            finished_at timestamptz,
            report jsonb NOT NULL DEFAULT '{}',
            UNIQUE (namespace, user_id)
        )
        """
    )
    for table, expression in (("messages", TSV_MESSAGES_KEYED), ("memories", TSV_MEMORIES_KEYED)):
        op.execute(f"ALTER TABLE {table} ADD COLUMN tsv_keyed tsvector")
        op.execute(f"ALTER TABLE {table} ALTER COLUMN tsv SET EXPRESSION AS ({expression})")


def downgrade() -> None:
    for table, expression in (("messages", TSV_MESSAGES), ("memories", TSV_MEMORIES)):
        op.execute(f"ALTER TABLE {table} ALTER COLUMN tsv SET EXPRESSION AS ({expression})")
        op.execute(f"ALTER TABLE {table} DROP COLUMN tsv_keyed")
    op.execute("DROP TABLE forget_tombstones")
    op.execute("DROP TABLE data_keys")
