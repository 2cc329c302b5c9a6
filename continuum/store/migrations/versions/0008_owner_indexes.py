"""Owner-leading recall indexes: the context builder's seed-independent channels (recent
conversations, open threads, preferences, recency, importance) read a user's own rows and
the shared ones as separate ordered index ranges. With only namespace-leading indexes, a
user with few memories in a namespace shared with many made each range walk everybody
else's rows (at a million memories, 11.8 ms for the importance channel alone; 0.55 ms
with these).

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-23
"""

from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        "CREATE INDEX memories_owner_recent ON memories "
        "(namespace, user_id, status, kind, created_at DESC)"
    )
    op.execute(
        "CREATE INDEX memories_owner_importance ON memories "
        "(namespace, user_id, status, importance DESC, created_at DESC)"
    )


def downgrade() -> None:
    op.execute("DROP INDEX IF EXISTS memories_owner_importance")
    op.execute("DROP INDEX IF EXISTS memories_owner_recent")
