"""Recall indexes: the recency and importance channels of the context builder read active
memories of a tenant newest-first and by importance; without these they scan the tenant.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-22
"""

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        "CREATE INDEX memories_active_recent ON memories (namespace, created_at DESC) "
        "WHERE status = 'active'"
    )
    op.execute(
        "CREATE INDEX memories_active_importance ON memories "
        "(namespace, importance DESC, created_at DESC) WHERE status = 'active'"
    )


def downgrade() -> None:
    op.execute("DROP INDEX IF EXISTS memories_active_importance")
    op.execute("DROP INDEX IF EXISTS memories_active_recent")
