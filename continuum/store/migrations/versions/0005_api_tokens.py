"""API tokens: bearer tokens of the HTTP API, each bound to the namespaces it may read and
write. Only the sha256 of a token is stored; the token itself is shown once at creation.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23
"""

from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE api_tokens (
            id bigserial PRIMARY KEY,
            name text NOT NULL,
            namespaces text[] NOT NULL,
            token_hash text NOT NULL UNIQUE,
            created_at timestamptz NOT NULL DEFAULT now(),
            last_used_at timestamptz,
            revoked_at timestamptz,
            CHECK (cardinality(namespaces) > 0)
        )"""
    )


def downgrade() -> None:
    op.execute("DROP TABLE api_tokens")
