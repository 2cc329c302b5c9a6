"""Operator tokens: `api_tokens.ops` marks a token that may also read the pipeline's global
figures (queue depths, unacked messages, every tenant's dead letters and embedding backlog,
the last sync run) in `GET /v1/status` and Mission Control's Status view. Every other token
sees its own tenants' figures only. Existing tokens are not operators.

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-26
"""

from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE api_tokens ADD COLUMN ops boolean NOT NULL DEFAULT false")


def downgrade() -> None:
    op.execute("ALTER TABLE api_tokens DROP COLUMN ops")
